//! A monitor of any kind, and what translating it gives: its jobs, each a
//! `scrape_configs` entry as the operator writes it.

use kubesd_core::monitors::{PodMonitor, Probe, ScrapeConfig, ServiceMonitor};
use serde_norway::Value;

use super::error::MonitorKind;

/// One monitor of any kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Monitor {
    /// A ServiceMonitor.
    ServiceMonitor(ServiceMonitor),
    /// A PodMonitor.
    PodMonitor(PodMonitor),
    /// A Probe.
    Probe(Probe),
    /// A ScrapeConfig.
    ScrapeConfig(ScrapeConfig),
}

impl Monitor {
    /// Its kind.
    pub fn kind(&self) -> MonitorKind {
        match self {
            Monitor::ServiceMonitor(_) => MonitorKind::ServiceMonitor,
            Monitor::PodMonitor(_) => MonitorKind::PodMonitor,
            Monitor::Probe(_) => MonitorKind::Probe,
            Monitor::ScrapeConfig(_) => MonitorKind::ScrapeConfig,
        }
    }

    /// Its namespace and name.
    pub fn namespace_and_name(&self) -> (&str, &str) {
        let meta = match self {
            Monitor::ServiceMonitor(m) => &m.metadata,
            Monitor::PodMonitor(m) => &m.metadata,
            Monitor::Probe(m) => &m.metadata,
            Monitor::ScrapeConfig(m) => &m.metadata,
        };
        (&meta.namespace, &meta.name)
    }
}

/// One generated job: its name and its `scrape_configs` entry, credentials inline.
#[derive(Clone, PartialEq)]
pub struct GeneratedJob {
    /// `job_name`.
    pub name: String,
    /// The entry, as the operator writes it.
    pub config: Value,
}

/// Names the job only: its entry holds credentials.
impl std::fmt::Debug for GeneratedJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneratedJob")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A monitor's translation: its jobs, and what the operator would log about them.
#[derive(Clone, Debug, PartialEq)]
pub struct Translated {
    /// Its jobs, in the operator's order (a monitor's endpoints in order).
    pub jobs: Vec<GeneratedJob>,
    /// References the checks let through that did not resolve (a scrape class's
    /// Secret), each left out of the job, as the operator leaves it out.
    pub warnings: Vec<String>,
}
