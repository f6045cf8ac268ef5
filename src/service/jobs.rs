//! The set of running jobs, and how a new config is applied to it: jobs whose discovery
//! and relabelling are unchanged keep running untouched; a changed job is started anew
//! before the old one stops, so the groups both use (and their caches) stay up; removed
//! jobs stop, and a group whose last job left stops with them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use actix::prelude::*;
use tracing::info;

use super::job::{JobActor, StopJob, job_constructor};
use super::shard::Shard;
use crate::promconfig::{Job, LoadedConfig};
use crate::{Discovery, SubscribeError};

/// How jobs run.
#[derive(Clone, Debug)]
pub struct JobSetOptions {
    /// Which targets this replica keeps.
    pub shard: Shard,
    /// Where to write file SD output, if anywhere.
    pub output_dir: Option<PathBuf>,
}

struct RunningJob {
    fingerprint: String,
    addr: Addr<JobActor>,
}

/// The running jobs.
pub struct JobSet {
    discovery: Discovery,
    options: JobSetOptions,
    running: BTreeMap<String, RunningJob>,
    /// Shared with the HTTP server.
    published: Arc<RwLock<BTreeMap<String, Addr<JobActor>>>>,
}

/// A job that could not start, named.
#[derive(Debug, thiserror::Error)]
#[error("job {job:?}: kubernetes_sd_configs[{index}]: {source}")]
pub struct JobStartError {
    /// The job.
    pub job: String,
    /// Which `kubernetes_sd_configs` entry.
    pub index: usize,
    /// Why.
    #[source]
    pub source: SubscribeError,
}

impl JobSet {
    /// No jobs yet; `published` is what the HTTP server reads.
    pub fn new(
        discovery: Discovery,
        options: JobSetOptions,
        published: Arc<RwLock<BTreeMap<String, Addr<JobActor>>>>,
    ) -> JobSet {
        JobSet {
            discovery,
            options,
            running: BTreeMap::new(),
            published,
        }
    }

    /// Makes the running jobs those of `config`. On error, every job that was running
    /// before keeps running (a bad reload must not take discovery down).
    pub async fn apply(&mut self, config: &LoadedConfig) -> Result<(), JobStartError> {
        let mut started: Vec<(String, RunningJob)> = Vec::new();
        for job in &config.jobs {
            let fingerprint = fingerprint(job);
            if self
                .running
                .get(&job.name)
                .is_some_and(|r| r.fingerprint == fingerprint)
            {
                continue;
            }
            match self.start(job).await {
                Ok(addr) => started.push((job.name.clone(), RunningJob { fingerprint, addr })),
                Err(e) => {
                    for (_, new) in started {
                        let _ = new.addr.send(StopJob).await;
                    }
                    return Err(e);
                }
            }
        }
        let wanted: std::collections::BTreeSet<&str> =
            config.jobs.iter().map(|j| j.name.as_str()).collect();
        let mut old = Vec::new();
        for (name, job) in started {
            info!(job = %name, "job started");
            if let Some(previous) = self.running.insert(name, job) {
                old.push(previous.addr);
            }
        }
        let removed: Vec<String> = self
            .running
            .keys()
            .filter(|n| !wanted.contains(n.as_str()))
            .cloned()
            .collect();
        for name in removed {
            if let Some(job) = self.running.remove(&name) {
                info!(job = %name, "job removed");
                old.push(job.addr);
            }
        }
        self.publish();
        // Stopped only now, after their successors subscribed: a group both use never
        // sees its subscriber count reach zero, so its cache survives the reload.
        for addr in old {
            let _ = addr.send(StopJob).await;
        }
        Ok(())
    }

    async fn start(&self, job: &Job) -> Result<Addr<JobActor>, JobStartError> {
        let rules = Arc::new(job.rules.clone());
        let scrape = Arc::new(job.scrape.clone());
        let mut subscriptions = Vec::new();
        for (index, sd) in job.sd_configs.iter().enumerate() {
            let ctor = job_constructor(Arc::clone(&scrape), Arc::clone(&rules), self.options.shard);
            match self.discovery.subscribe(sd, ctor).await {
                Ok(s) => subscriptions.push(s),
                Err(source) => {
                    for s in subscriptions {
                        s.stop().await;
                    }
                    return Err(JobStartError {
                        job: job.name.clone(),
                        index,
                        source,
                    });
                }
            }
        }
        let (name, dir) = (job.name.clone(), self.options.output_dir.clone());
        Ok(JobActor::new(name, subscriptions, dir).start())
    }

    fn publish(&self) {
        let map = self
            .running
            .iter()
            .map(|(n, j)| (n.clone(), j.addr.clone()))
            .collect();
        match self.published.write() {
            Ok(mut guard) => *guard = map,
            Err(poisoned) => *poisoned.into_inner() = map,
        }
    }

    /// The running jobs.
    pub fn jobs(&self) -> Vec<(String, Addr<JobActor>)> {
        self.running
            .iter()
            .map(|(n, j)| (n.clone(), j.addr.clone()))
            .collect()
    }

    /// Stops every job.
    pub async fn stop_all(&mut self) {
        let running = std::mem::take(&mut self.running);
        self.publish();
        for (_, job) in running {
            let _ = job.addr.send(StopJob).await;
        }
    }
}

/// What identifies a job's behaviour: its discovery configs, its rules (and the dialect
/// they are read in), and the scrape settings its targets are seeded with.
fn fingerprint(job: &Job) -> String {
    serde_json::to_string(&(&job.sd_configs, &job.relabel, &job.dialect, &job.scrape))
        .unwrap_or_default()
}
