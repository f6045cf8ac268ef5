//! Which monitors the section selects, and in which order their jobs come, as
//! prometheus-operator's `ResourceSelector` and config generator decide: a monitor's
//! labels match its kind's selector (an absent selector matches none), its namespace's
//! labels match the kind's namespace selector, the namespace is allowed; then
//! ServiceMonitors, PodMonitors, Probes and ScrapeConfigs, each kind by
//! `namespace/name`.

use std::collections::BTreeMap;

use super::error::MonitorKind;
use super::monitor::Monitor;
use super::section::{KindSelection, MonitorsSection};

/// A namespace's labels, by name; a namespace not in it selects nothing (the operator
/// lists monitors in the namespaces it knows).
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

impl MonitorsSection {
    /// Whether monitors in namespace `ns` are watched at all (`allow_namespaces`,
    /// `deny_namespaces`).
    pub fn watches_namespace(&self, ns: &str) -> bool {
        let allowed =
            self.allow_namespaces.is_empty() || self.allow_namespaces.iter().any(|a| a == ns);
        allowed && !self.deny_namespaces.iter().any(|d| d == ns)
    }

    fn selection(&self, kind: MonitorKind) -> &KindSelection {
        match kind {
            MonitorKind::ServiceMonitor => &self.service_monitors,
            MonitorKind::PodMonitor => &self.pod_monitors,
            MonitorKind::Probe => &self.probes,
            MonitorKind::ScrapeConfig => &self.scrape_configs,
        }
    }

    /// Whether the section selects `monitor`, in a cluster whose namespaces have
    /// `namespaces`' labels.
    pub fn selects(&self, monitor: &Monitor, namespaces: &NamespaceLabels) -> bool {
        let (ns, _) = monitor.namespace_and_name();
        let selection = self.selection(monitor.kind());
        let Some(selector) = &selection.selector else {
            return false;
        };
        let Some(ns_labels) = namespaces.get(ns) else {
            return false;
        };
        self.enabled
            && self.watches_namespace(ns)
            && selection.namespace_selector.matches(ns_labels)
            && selector.matches(labels(monitor))
    }

    /// The monitors of `monitors` the section selects, in the order of their jobs.
    pub fn select<'m>(
        &self,
        monitors: &'m [Monitor],
        namespaces: &NamespaceLabels,
    ) -> Vec<&'m Monitor> {
        let mut selected: Vec<&Monitor> = monitors
            .iter()
            .filter(|m| self.selects(m, namespaces))
            .collect();
        selected.sort_by(|a, b| {
            let key = |m: &Monitor| {
                let (ns, name) = m.namespace_and_name();
                (m.kind(), format!("{ns}/{name}"))
            };
            key(a).cmp(&key(b))
        });
        selected
    }
}

fn labels(monitor: &Monitor) -> &BTreeMap<String, String> {
    match monitor {
        Monitor::ServiceMonitor(m) => &m.metadata.labels,
        Monitor::PodMonitor(m) => &m.metadata.labels,
        Monitor::Probe(m) => &m.metadata.labels,
        Monitor::ScrapeConfig(m) => &m.metadata.labels,
    }
}
