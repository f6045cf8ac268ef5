//! The monitors in `kubesd run`'s loop: the watch started, restarted or stopped as each
//! config's `monitors:` section says, and each config applied with the monitors' jobs
//! after its own, by fingerprint, so that a monitor's change adds, replaces or removes
//! exactly its jobs and every other job runs on untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tracing::info;

use super::actor::{HandWritten, MonitorWatch, MonitorWatchSetup, NotStarted, StopMonitorWatch};
use super::report::{MonitorMetrics, MonitorsReport};
use super::{MonitorJobs, MonitorsOut};
use crate::Discovery;
use crate::monitors::section::MonitorsSection;
use crate::promconfig::{LoadOptions, LoadedConfig};
use crate::service::{ApplyError, JobSet};

/// How often one apply is tried again without a monitor's job that could not start,
/// before the monitors' jobs are left out together.
const START_RETRIES: usize = 3;

/// The monitors of the run loop. See the module documentation.
pub struct Monitors {
    out: Arc<MonitorsOut>,
    published: tokio::sync::watch::Receiver<Arc<MonitorJobs>>,
    running: Option<Running>,
    metrics: Arc<MonitorMetrics>,
    publish_interval: Duration,
    /// The last config applied, which the monitors' jobs are applied beside.
    config: Option<LoadedConfig>,
}

struct Running {
    section: MonitorsSection,
    options: LoadOptions,
    watch: Addr<MonitorWatch>,
}

impl Monitors {
    /// No watch yet; `metrics` are where the watch counts, `publish_interval` the least
    /// time between two of its passes.
    pub fn new(metrics: Arc<MonitorMetrics>, publish_interval: Duration) -> Monitors {
        let (out, published) = tokio::sync::watch::channel(Arc::default());
        Monitors {
            out: Arc::new(out),
            published,
            running: None,
            metrics,
            publish_interval,
            config: None,
        }
    }

    /// Where the watch publishes: the web server reads the report there.
    pub fn out(&self) -> Arc<MonitorsOut> {
        Arc::clone(&self.out)
    }

    /// What became of each monitor at the last publish.
    pub fn report(&self) -> Arc<MonitorsReport> {
        Arc::clone(&self.out.borrow().report)
    }

    /// Starts, restarts or stops the watch as `config`'s section says (an unchanged
    /// section keeps its watch and caches), and tells it the hand-written jobs' names.
    pub async fn configure(
        &mut self,
        discovery: &Discovery,
        config: &LoadedConfig,
        options: &LoadOptions,
    ) -> Result<(), String> {
        let same = self
            .running
            .as_ref()
            .is_some_and(|r| Some(&r.section) == config.monitors.as_ref() && &r.options == options);
        if !same {
            if let Some(old) = self.running.take() {
                old.watch.do_send(StopMonitorWatch);
                self.out.send_replace(Arc::default());
                self.metrics.set_report(None);
                info!("monitors: watch stopped");
            }
            if let Some(section) = &config.monitors {
                self.running = Some(self.start(discovery, section, options).await?);
            }
        }
        if let Some(running) = &self.running {
            let names = config.jobs.iter().map(|j| j.name.clone()).collect();
            running.watch.do_send(HandWritten(names));
        }
        Ok(())
    }

    async fn start(
        &self,
        discovery: &Discovery,
        section: &MonitorsSection,
        options: &LoadOptions,
    ) -> Result<Running, String> {
        let watchers = (discovery.config_watchers(&section.connection).await)
            .map_err(|e| format!("monitors: {e}"))?;
        let setup = MonitorWatchSetup {
            section: section.clone(),
            options: options.clone(),
            watchers,
            publish_interval: self.publish_interval,
            out: Arc::clone(&self.out),
            metrics: Arc::clone(&self.metrics),
        };
        info!("monitors: watching");
        Ok(Running {
            section: section.clone(),
            options: options.clone(),
            watch: MonitorWatch::new(setup).start(),
        })
    }

    /// Waits until the watch publishes anew (forever without a watch).
    pub async fn changed(&mut self) {
        if self.running.is_none() || self.published.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// Applies `config`'s jobs and the monitors' last published ones to `jobs`, and
    /// keeps `config` for the next publish. A monitor's job that cannot start is left
    /// out and its monitor reported; a hand-written job that cannot start fails the
    /// whole apply, as a reload does.
    pub async fn apply(
        &mut self,
        jobs: &mut JobSet,
        config: &LoadedConfig,
    ) -> Result<(), ApplyError> {
        let monitors = Arc::clone(&self.out.borrow());
        let mut left_out: BTreeMap<String, String> = BTreeMap::new();
        let outcome = loop {
            let all_out = left_out.len() >= START_RETRIES;
            let merged = merged(config, &monitors, &left_out, all_out);
            match jobs.apply(&merged).await {
                Err(ApplyError::Job(e)) if is_monitor_job(&monitors, &e.job) && !all_out => {
                    left_out.insert(e.job.clone(), e.to_string());
                }
                Err(ApplyError::Job(e)) if is_monitor_job(&monitors, &e.job) => {
                    break Err(ApplyError::Job(e));
                }
                other => {
                    if all_out {
                        for job in &monitors.jobs {
                            left_out.entry(job.name.clone()).or_insert_with(|| "left out with the other monitors' jobs after jobs could not start".into());
                        }
                    }
                    break other;
                }
            }
        };
        if !left_out.is_empty()
            && let Some(running) = &self.running
        {
            running.watch.do_send(NotStarted(left_out));
        }
        if outcome.is_ok() {
            self.config = Some(config.clone());
        }
        outcome
    }

    /// Applies the last config with the monitors' jobs just published.
    pub async fn reapply(&mut self, jobs: &mut JobSet) -> Result<(), ApplyError> {
        match self.config.clone() {
            Some(config) => self.apply(jobs, &config).await,
            None => Ok(()),
        }
    }

    /// Stops the watch.
    pub fn stop(&mut self) {
        if let Some(old) = self.running.take() {
            old.watch.do_send(StopMonitorWatch);
            self.metrics.set_report(None);
        }
    }
}

fn is_monitor_job(monitors: &MonitorJobs, name: &str) -> bool {
    monitors.jobs.iter().any(|j| j.name == name)
}

/// `config` with the monitors' jobs after its own, numbered on; a monitor's job whose
/// name a hand-written job has, or that is left out, is not taken.
fn merged(
    config: &LoadedConfig,
    monitors: &MonitorJobs,
    left_out: &BTreeMap<String, String>,
    all_out: bool,
) -> LoadedConfig {
    let mut merged = config.clone();
    if all_out {
        return merged;
    }
    let hand_written: BTreeSet<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
    let next = config
        .jobs
        .iter()
        .map(|j| j.position + 1)
        .max()
        .unwrap_or(0);
    let taken = (monitors.jobs.iter())
        .filter(|j| !hand_written.contains(j.name.as_str()) && !left_out.contains_key(&j.name));
    for (i, job) in taken.enumerate() {
        let mut job = job.clone();
        job.position = next + i;
        merged.jobs.push(job);
    }
    merged
}
