//! Monitors watched live for `kubesd run`: the `monitors:` section's
//! ServiceMonitors, PodMonitors, Probes and ScrapeConfigs, the Namespaces their
//! selectors read and the Secrets and ConfigMaps they name, through the engine's URL
//! watchers ([`MonitorWatch`]); translated as prometheus-operator translates them
//! ([`crate::monitors`]) at most once per publish interval; their jobs handed to the
//! run loop ([`MonitorJobs`]), which applies them beside the hand-written ones by
//! fingerprint ([`running`]), and their state to the status page, kubesd's JSON API
//! and `/metrics` ([`report`]).

mod actor;
#[cfg(test)]
mod actor_tests;
mod cache;
pub mod report;
pub mod running;
mod translation;
mod urls;

use std::sync::Arc;

pub use actor::{HandWritten, MonitorWatch, MonitorWatchSetup, NotStarted, StopMonitorWatch};
pub use report::{MonitorMetrics, MonitorReport, MonitorState, MonitorsReport, WatchReport};

use crate::promconfig::Job;

/// What the monitors' watch publishes: the selected monitors' jobs, in the operator's
/// order, and what became of each monitor.
#[derive(Clone, Default)]
pub struct MonitorJobs {
    /// The jobs, credentials inline.
    pub jobs: Vec<Job>,
    /// Every selected monitor and watch.
    pub report: Arc<MonitorsReport>,
}

/// Where the monitors' watch publishes (the latest only: a slow reader skips to it).
pub type MonitorsOut = tokio::sync::watch::Sender<Arc<MonitorJobs>>;
