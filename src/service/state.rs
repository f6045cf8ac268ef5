//! What the HTTP handlers share: the running jobs, the metrics, the way to a reload.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use tokio::sync::{mpsc, oneshot};

use crate::metrics::Metrics;
use crate::service::jobs::job::Job;
use crate::service::metrics::ServiceMetrics;

/// What the HTTP handlers read: the running jobs, replaced on reload. Each job's
/// targets are read from its actors' published snapshots: no request waits on a
/// mailbox (but a view partition's first, which has the actors build it).
pub struct ServiceState {
    /// Jobs by name.
    pub jobs: Arc<RwLock<BTreeMap<String, Job>>>,
    /// Where `POST /-/reload` asks the run loop to reload the config (run mode only;
    /// without it the endpoint answers 404).
    pub reload: Option<mpsc::Sender<ReloadRequest>>,
    /// The discovery engine's metrics, rendered on `/metrics`.
    pub engine_metrics: Arc<Metrics>,
    /// The service's own, rendered after them.
    pub service_metrics: Arc<ServiceMetrics>,
}

/// Sent by `POST /-/reload` to the run loop (`cli::run`), which reloads the config
/// file and answers on `done`: `Ok`, or the reason the new config was not applied.
pub struct ReloadRequest {
    /// The outcome, a sentence on failure.
    pub done: oneshot::Sender<Result<(), String>>,
}

impl ServiceState {
    /// The running job `name`.
    pub(crate) fn job(&self, name: &str) -> Option<Job> {
        self.jobs.read().ok()?.get(name).cloned()
    }

    /// Every running job with its name.
    pub(crate) fn all(&self) -> Vec<(String, Job)> {
        self.jobs
            .read()
            .map(|m| m.iter().map(|(n, a)| (n.clone(), a.clone())).collect())
            .unwrap_or_default()
    }
}
