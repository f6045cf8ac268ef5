//! The simulator's own metrics, served at `/metrics` (where the API server serves its
//! own) in Prometheus' text format: the pace its churn was asked for and the one it
//! achieves, and how many objects it holds. Written by the churn loops
//! ([`crate::churn::ChurnPace`]), read by the HTTP front.

use std::fmt::Write;

use kubesd_core::metrics::{Counter, Gauge};

use crate::resource::Resource;
use crate::store::Store;

/// The churn's counters, shared by every handle on one simulated cluster.
#[derive(Debug, Default)]
pub struct SimulatorMetrics {
    /// Pods the churn wrote: added, updated, marked terminating, deleted.
    pub churn_pod_changes: Counter,
    /// Pod changes a second the running churn loops were asked for.
    pub churn_asked: Gauge,
    /// Pod changes a second achieved in the last report window.
    pub churn_achieved: Gauge,
    /// Report windows in which the churn fell behind its pace by more than a tenth of
    /// the window's pod changes.
    pub churn_behind: Counter,
}

impl SimulatorMetrics {
    /// Every metric, and the number of objects of each resource in `store`, in
    /// Prometheus' text exposition format (version 0.0.4).
    pub fn render(&self, store: &Store) -> String {
        let mut out = String::with_capacity(2048);
        let mut family = |name: &str, kind: &str, help: &str, value: i64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        let count = |c: &Counter| i64::try_from(c.get()).unwrap_or(i64::MAX);
        family(
            "kubesd_simulator_churn_pod_changes_total",
            "counter",
            "Pods the churn wrote (added, updated, marked terminating, deleted): each one event on a pod watch.",
            count(&self.churn_pod_changes),
        );
        family(
            "kubesd_simulator_churn_asked_pod_changes_per_second",
            "gauge",
            "Pod changes a second the running churn was asked for (--churn).",
            self.churn_asked.get(),
        );
        family(
            "kubesd_simulator_churn_achieved_pod_changes_per_second",
            "gauge",
            "Pod changes a second the churn made in its last report window (10 s).",
            self.churn_achieved.get(),
        );
        family(
            "kubesd_simulator_churn_behind_windows_total",
            "counter",
            "Report windows (10 s) in which the churn fell behind its pace by more than a tenth of the window's pod changes.",
            count(&self.churn_behind),
        );
        let _ = writeln!(
            out,
            "# HELP kubesd_simulator_objects Objects the simulated cluster holds, by resource.\n\
             # TYPE kubesd_simulator_objects gauge"
        );
        for resource in Resource::ALL {
            let _ = writeln!(
                out,
                "kubesd_simulator_objects{{resource=\"{}\"}} {}",
                resource.plural(),
                store.count(resource)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_each_family_once_with_its_value() {
        let metrics = SimulatorMetrics::default();
        metrics.churn_pod_changes.add(42);
        metrics.churn_asked.add(50);
        let store = Store::new(10, 1);
        let text = metrics.render(&store);
        assert!(text.contains("\nkubesd_simulator_churn_pod_changes_total 42\n"));
        assert!(text.contains("\nkubesd_simulator_churn_asked_pod_changes_per_second 50\n"));
        assert!(text.contains("\nkubesd_simulator_objects{resource=\"pods\"} 0\n"));
        assert_eq!(text.matches("# TYPE ").count(), 5);
    }
}
