//! prometheus-operator's monitors turned into scrape jobs exactly as the operator's
//! config generator (`pkg/prometheus/promcfg.go`, 0.87) turns them, and as the
//! OpenTelemetry target allocator runs it (endpoint slices, credentials inline).
//!
//! [`translate`] is a pure function: a monitor, the `monitors:` section's
//! [`Settings`], and the Secrets and ConfigMaps it names (through a
//! [`CredentialStore`]) give its jobs, each a `scrape_configs` entry as the operator
//! writes it (job names `serviceMonitor/<namespace>/<name>/<endpoint>`,
//! `podMonitor/…/<endpoint>`, `probe/<namespace>/<name>`, `scrapeConfig/<namespace>/<name>`;
//! the generated relabelling in the operator's order), or a [`MonitorError`] naming the
//! monitor and why the operator would refuse it. [`jobs::load_jobs`] hands the entries
//! to kubesd's config loader, so a monitor's jobs run, are served and are listed as a
//! hand-written job is.
//!
//! The section itself is read by [`section`].

mod error;
mod http;
pub mod jobs;
mod pod_monitor;
mod probe;
mod relabel;
mod scrape;
mod scrape_class;
mod scrape_config;
mod sd;
pub mod section;
mod selection;
mod service_monitor;
mod settings;
mod store;
mod validate;
mod yaml;

use kubesd_core::monitors::{PodMonitor, Probe, ScrapeConfig, ServiceMonitor};
use serde_norway::Value;

pub use error::{MonitorError, MonitorKind, Reason};
pub use kubesd_core::monitors as model;
pub use scrape_class::ScrapeClasses;
pub use selection::NamespaceLabels;
pub use settings::{EndpointRole, Settings};
pub use store::{CredentialStore, Credentials, MemoryStore};

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

/// Translates `monitor` as prometheus-operator does: checks it, then generates its
/// jobs. Credentials are read from `store`, in the monitor's namespace.
pub fn translate(
    monitor: &Monitor,
    settings: &Settings,
    store: &dyn CredentialStore,
) -> Result<Translated, MonitorError> {
    let (namespace, name) = monitor.namespace_and_name();
    let creds = Credentials { store, namespace };
    let fail = |reason| MonitorError {
        kind: monitor.kind(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        reason: Box::new(reason),
    };
    let mut w = http::Writer {
        creds,
        warnings: Vec::new(),
    };
    let jobs = match monitor {
        Monitor::ServiceMonitor(m) => {
            service_monitor::check(m, settings, creds).map_err(fail)?;
            let endpoints = m.spec.endpoints.iter().enumerate();
            endpoints
                .map(|(i, ep)| service_monitor::job(m, ep, i, settings, &mut w))
                .collect::<Result<Vec<_>, _>>()
        }
        Monitor::PodMonitor(m) => {
            pod_monitor::check(m, settings, creds).map_err(fail)?;
            let endpoints = m.spec.pod_metrics_endpoints.iter().enumerate();
            endpoints
                .map(|(i, ep)| pod_monitor::job(m, ep, i, settings, &mut w))
                .collect::<Result<Vec<_>, _>>()
        }
        Monitor::Probe(p) => {
            probe::check(p, settings, creds).map_err(fail)?;
            probe::job(p, settings, &mut w).map(|j| vec![j])
        }
        Monitor::ScrapeConfig(c) => {
            scrape_config::check(c, settings, creds).map_err(fail)?;
            scrape_config::job(c, settings, &mut w).map(|j| vec![j])
        }
    }
    .map_err(fail)?;
    Ok(Translated {
        jobs,
        warnings: w.warnings,
    })
}
