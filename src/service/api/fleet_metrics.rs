//! The fleet's assignment in `/metrics`, per job whose member views were asked for, as
//! last assigned: targets assigned across zones, targets in handover (served to more
//! than one member), and targets members gained when the fleet changed.

use std::fmt::Write;

use crate::metrics::escape_label_value;
use crate::service::fleet::FleetCounts;
use crate::service::jobs::job::Job;

/// A job's member partition counted now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FleetStatus {
    /// Summed over the job's actors.
    pub counts: FleetCounts,
    /// Copies of targets beyond one per target in the member views: a target at two
    /// members (its handover) counts once.
    pub in_handover: u64,
}

/// `job`'s placements counted; `None` before a member view or a collector's share was
/// asked for.
pub fn fleet_status(job: &Job) -> Option<FleetStatus> {
    let mut status = FleetStatus::default();
    for part in job.parts() {
        let published = part.cell.assigned.published()?;
        let counts = published.counts;
        // With a member every target is served at least once; with none, to nobody.
        let assigned = if counts.served == 0 {
            0
        } else {
            counts.targets
        };
        status.in_handover += counts.served.saturating_sub(assigned) as u64;
        status.counts = status.counts.plus(counts.fleet);
    }
    Some(status)
}

/// A metric's name, type, help and value of a job's status.
type Metric = (
    &'static str,
    &'static str,
    &'static str,
    fn(&FleetStatus) -> u64,
);

/// Appends the fleet's metrics of `jobs` (name and job) to `out`.
pub fn render(out: &mut String, jobs: &[(String, Job)]) {
    let status: Vec<(String, FleetStatus)> = jobs
        .iter()
        .filter_map(|(name, job)| Some((escape_label_value(name), fleet_status(job)?)))
        .collect();
    if status.is_empty() {
        return;
    }
    let metrics: [Metric; 3] = [
        (
            "kubesd_job_member_targets_cross_zone",
            "gauge",
            "Targets of a job assigned to a member outside their zone (their zone has no Ready member).",
            |s| s.counts.cross_zone,
        ),
        (
            "kubesd_job_member_targets_in_handover",
            "gauge",
            "Targets of a job served to more than one member: kept at their old member for the handover.",
            |s| s.in_handover,
        ),
        (
            "kubesd_job_member_target_moves_total",
            "counter",
            "Targets of a job a member gained when the members changed (moves and handover copies).",
            |s| s.counts.moves,
        ),
    ];
    for (name, kind, help, value) in metrics {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (job, s) in &status {
            let _ = writeln!(out, "{name}{{job=\"{job}\"}} {}", value(s));
        }
    }
}
