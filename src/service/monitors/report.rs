//! What became of each monitor, as the status page, kubesd's JSON API and `/metrics`
//! show it: its jobs, or why it has none, and the state of the watches that read the
//! monitors. Made by the [`super::MonitorWatch`] at each publish; never holds a secret.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::metrics::escape_label_value;
use crate::monitors::MonitorKind;

/// Where a selected monitor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MonitorState {
    /// Translated; its jobs run (those kubesd runs: see [`MonitorReport::not_run`]).
    Active,
    /// Not translated, or its jobs could not be loaded or started: it has no jobs.
    Rejected,
}

impl MonitorState {
    /// Its name, as the `state` label and the JSON API write it.
    pub fn as_str(self) -> &'static str {
        match self {
            MonitorState::Active => "active",
            MonitorState::Rejected => "rejected",
        }
    }
}

/// Why a monitor has no jobs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejection {
    /// A short name of the reason's kind (the `reason` label of
    /// `kubesd_monitor_rejections_total`), e.g. `secret_not_found`.
    pub reason: &'static str,
    /// The sentence logged, naming the monitor's field at fault.
    pub message: String,
}

/// One selected monitor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MonitorReport {
    /// Its kind.
    #[serde(serialize_with = "kind_name")]
    pub kind: MonitorKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Active or rejected.
    pub state: MonitorState,
    /// Why it is rejected.
    pub rejection: Option<Rejection>,
    /// The names of its jobs that run, in order.
    pub jobs: Vec<String>,
    /// Its jobs kubesd translates but does not run (static, file or HTTP discovery).
    pub not_run: Vec<String>,
    /// What the operator would warn about (a scrape class's Secret that is missing).
    pub warnings: Vec<String>,
}

fn kind_name<S: serde::Serializer>(kind: &MonitorKind, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(kind)
}

/// The state of one watch of configuration (a kind of monitor, the Namespaces, a
/// namespace's Secrets or ConfigMaps).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WatchReport {
    /// The URL watched.
    pub url: String,
    /// Listed at least once.
    pub listed: bool,
    /// The API server does not serve the kind: its CRD is not installed (checked
    /// again at the longest backoff).
    pub not_installed: bool,
    /// Its last problem (e.g. the CRD not installed), until it is healthy again.
    pub problem: Option<String>,
}

/// Every selected monitor and every watch, at one publish.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MonitorsReport {
    /// Whether every watch of monitors and Namespaces has listed (or failed) once:
    /// before, the monitors' jobs are not published.
    pub synced: bool,
    /// The selected monitors, in the order of their jobs.
    pub monitors: Vec<MonitorReport>,
    /// The watches.
    pub watches: Vec<WatchReport>,
}

impl MonitorsReport {
    /// How many monitors of each kind are in each state.
    pub fn counts(&self) -> BTreeMap<(MonitorKind, MonitorState), u64> {
        let mut counts = BTreeMap::new();
        for m in &self.monitors {
            *counts.entry((m.kind, m.state)).or_insert(0) += 1;
        }
        counts
    }
}

/// The four kinds, in job order.
pub const KINDS: [MonitorKind; 4] = [
    MonitorKind::ServiceMonitor,
    MonitorKind::PodMonitor,
    MonitorKind::Probe,
    MonitorKind::ScrapeConfig,
];

/// The monitors' last report, which the status page and kubesd's JSON API show, and
/// their metrics: `kubesd_monitors{kind,state}` (from the last report) and
/// `kubesd_monitor_rejections_total{kind,reason}` (each rejection once per change of
/// the monitor or what it names). Held by the service's metrics, which every handler
/// can reach.
#[derive(Debug, Default)]
pub struct MonitorMetrics {
    report: Mutex<Option<Arc<MonitorsReport>>>,
    rejections: Mutex<BTreeMap<(MonitorKind, &'static str), u64>>,
}

impl MonitorMetrics {
    /// Keeps `report` (`None`: the config has no `monitors:` section any more).
    pub fn set_report(&self, report: Option<Arc<MonitorsReport>>) {
        *self.report.lock().unwrap_or_else(|e| e.into_inner()) = report;
    }

    /// The last report, if the config has a `monitors:` section.
    pub fn report(&self) -> Option<Arc<MonitorsReport>> {
        self.report
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Counts one rejection of a monitor of `kind` for `reason`.
    pub fn rejected(&self, kind: MonitorKind, reason: &'static str) {
        let mut map = self.rejections.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry((kind, reason)).or_insert(0) += 1;
    }

    /// Appends the metrics to `out` in Prometheus text format; nothing when the config
    /// has no `monitors:` section.
    pub fn render(&self, out: &mut String) {
        let Some(report) = self.report() else { return };
        let counts = report.counts();
        let _ = writeln!(
            out,
            "# HELP kubesd_monitors Selected monitors (ServiceMonitor, PodMonitor, Probe, ScrapeConfig) by state: active (translated, jobs running) or rejected.\n\
             # TYPE kubesd_monitors gauge"
        );
        for kind in KINDS {
            for state in [MonitorState::Active, MonitorState::Rejected] {
                let n = counts.get(&(kind, state)).copied().unwrap_or(0);
                let _ = writeln!(
                    out,
                    "kubesd_monitors{{kind=\"{kind}\",state=\"{}\"}} {n}",
                    state.as_str()
                );
            }
        }
        let rejections = self
            .rejections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let _ = writeln!(
            out,
            "# HELP kubesd_monitor_rejections_total Monitors rejected, once per change of the monitor or of what it names, by reason.\n\
             # TYPE kubesd_monitor_rejections_total counter"
        );
        for ((kind, reason), n) in rejections {
            let _ = writeln!(
                out,
                "kubesd_monitor_rejections_total{{kind=\"{kind}\",reason=\"{}\"}} {n}",
                escape_label_value(reason)
            );
        }
    }
}
