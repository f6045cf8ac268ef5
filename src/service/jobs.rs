//! The set of running jobs, and how a new config is applied to it: jobs whose discovery
//! and relabelling are unchanged keep running untouched; a changed job is started anew
//! before the old one stops, so the groups both use (and their caches) stay up; removed
//! jobs stop, and a group whose last job left stops with them.
//!
//! Jobs' discoveries run as [`Pipeline`]s, shared by jobs with the same discovery and
//! rules when their rules never read `job` ([`Relabelling::shareable`]), and spread
//! over one arbiter per core: relabelling is the service's per-event work.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use actix::prelude::*;
use arcstr::ArcStr;
use tracing::info;

use super::job::{JobActor, StopJob};
use super::members::{MemberWatch, Members};
use super::pipeline::{Pipeline, Relabelling, StopPipeline};
use super::shard::Shard;
use super::views::PublishedViews;
use crate::config::SdConfig;
use crate::promconfig::{Job, LoadedConfig};
use crate::relabel::ScrapeSettings;
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
    /// The keys of its pipelines.
    pipelines: Vec<String>,
}

/// A pipeline and how many running jobs use it.
struct SharedPipeline {
    addr: Addr<Pipeline>,
    /// The views it publishes.
    views: PublishedViews,
    users: usize,
}

/// The running jobs.
pub struct JobSet {
    discovery: Discovery,
    options: JobSetOptions,
    running: BTreeMap<String, RunningJob>,
    pipelines: BTreeMap<String, SharedPipeline>,
    /// Where pipelines run, in turn.
    arbiters: Vec<Arbiter>,
    next_arbiter: usize,
    next_job_id: u64,
    /// Shared with the HTTP server.
    published: Arc<RwLock<BTreeMap<String, Addr<JobActor>>>>,
    /// The Ready members, read by every pipeline.
    members: tokio::sync::watch::Sender<Members>,
    /// The watch of the config's `membership` pods, if it names them.
    member_watch: Option<MemberWatch>,
}

impl Drop for JobSet {
    fn drop(&mut self) {
        for a in &self.arbiters {
            a.stop();
        }
    }
}

/// Why a config could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// A job could not start.
    #[error(transparent)]
    Job(#[from] JobStartError),
    /// The `membership` pods cannot be watched.
    #[error("membership: {0}")]
    Membership(#[source] SubscribeError),
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
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        JobSet {
            discovery,
            options,
            running: BTreeMap::new(),
            pipelines: BTreeMap::new(),
            arbiters: (0..cores).map(|_| Arbiter::new()).collect(),
            next_arbiter: 0,
            next_job_id: 1,
            published,
            members: tokio::sync::watch::Sender::new(Arc::new([])),
            member_watch: None,
        }
    }

    /// Watches the config's `membership` pods, unless that watch already runs; stops
    /// it when the section is gone (the member views then serve nobody).
    async fn apply_membership(&mut self, config: &LoadedConfig) -> Result<(), ApplyError> {
        if self.member_watch.as_ref().map(|w| &w.membership) == config.membership.as_ref() {
            return Ok(());
        }
        if let Some(old) = self.member_watch.take() {
            old.stop().await;
        }
        match &config.membership {
            Some(m) => {
                let watch = MemberWatch::start(&self.discovery, m.clone(), self.members.clone())
                    .await
                    .map_err(ApplyError::Membership)?;
                self.member_watch = Some(watch);
            }
            None => {
                self.members.send_replace(Arc::new([]));
            }
        }
        Ok(())
    }

    /// Makes the running jobs those of `config`. On error, every job that was running
    /// before keeps running (a bad reload must not take discovery down).
    pub async fn apply(&mut self, config: &LoadedConfig) -> Result<(), ApplyError> {
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
                Ok((addr, pipelines)) => started.push((
                    job.name.clone(),
                    RunningJob {
                        fingerprint,
                        addr,
                        pipelines,
                    },
                )),
                Err(e) => {
                    for (_, new) in started {
                        self.stop_job(new).await;
                    }
                    return Err(e.into());
                }
            }
        }
        if let Err(e) = self.apply_membership(config).await {
            for (_, new) in started {
                self.stop_job(new).await;
            }
            return Err(e);
        }
        let wanted: std::collections::BTreeSet<&str> =
            config.jobs.iter().map(|j| j.name.as_str()).collect();
        let mut old = Vec::new();
        for (name, job) in started {
            info!(job = %name, "job started");
            if let Some(previous) = self.running.insert(name, job) {
                old.push(previous);
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
                old.push(job);
            }
        }
        self.publish();
        // Stopped only now, after their successors subscribed: a group both use never
        // sees its subscriber count reach zero, so its cache survives the reload.
        for job in old {
            self.stop_job(job).await;
        }
        Ok(())
    }

    /// Stops a job, then the pipelines no job uses any more.
    async fn stop_job(&mut self, job: RunningJob) {
        let _ = job.addr.send(StopJob).await;
        for key in job.pipelines {
            self.release_pipeline(&key).await;
        }
    }

    async fn release_pipeline(&mut self, key: &str) {
        let Some(shared) = self.pipelines.get_mut(key) else {
            return;
        };
        shared.users -= 1;
        if shared.users == 0
            && let Some(shared) = self.pipelines.remove(key)
        {
            let _ = shared.addr.send(StopPipeline).await;
        }
    }

    /// Starts a job, with its pipelines (new ones, or shared ones it joins); returns it
    /// and its pipelines' keys.
    async fn start(&mut self, job: &Job) -> Result<(Addr<JobActor>, Vec<String>), JobStartError> {
        let rules = Arc::new(job.rules.clone());
        let shareable = Relabelling::shareable(&rules);
        let mut keys: Vec<String> = Vec::new();
        let mut addrs = Vec::new();
        for (index, sd) in job.sd_configs.iter().enumerate() {
            let key = pipeline_key(sd, job, shareable);
            let addr = match self.pipelines.get_mut(&key) {
                Some(shared) => {
                    shared.users += 1;
                    (shared.addr.clone(), Arc::clone(&shared.views))
                }
                None => match self.start_pipeline(sd, job, &rules, shareable).await {
                    Ok((addr, views)) => {
                        let users = 1;
                        self.pipelines.insert(
                            key.clone(),
                            SharedPipeline {
                                addr: addr.clone(),
                                views: Arc::clone(&views),
                                users,
                            },
                        );
                        (addr, views)
                    }
                    Err(source) => {
                        for key in keys {
                            self.release_pipeline(&key).await;
                        }
                        return Err(JobStartError {
                            job: job.name.clone(),
                            index,
                            source,
                        });
                    }
                },
            };
            keys.push(key);
            addrs.push(addr);
        }
        let (name, dir) = (job.name.clone(), self.options.output_dir.clone());
        let id = self.next_job_id;
        self.next_job_id += 1;
        Ok((JobActor::new(name, id, addrs, dir).start(), keys))
    }

    /// A new pipeline for `sd` with `job`'s rules, on the next arbiter in turn (its
    /// subscriber on the same one, so that taking changes stays on one thread).
    async fn start_pipeline(
        &mut self,
        sd: &SdConfig,
        job: &Job,
        rules: &Arc<Vec<crate::relabel::CompiledRule>>,
        shareable: bool,
    ) -> Result<(Addr<Pipeline>, PublishedViews), SubscribeError> {
        let arbiter = self.arbiters[self.next_arbiter % self.arbiters.len()].handle();
        self.next_arbiter += 1;
        let subscription = self
            .discovery
            .subscribe_on(&arbiter, sd, |labels: &crate::Labels| Some(labels.clone()))
            .await?;
        let relabelling = Relabelling {
            rules: Arc::clone(rules),
            shard: self.options.shard,
            scrape: ScrapeSettings {
                // When shared, a placeholder each job writes its own name in place of:
                // a string of its own (recognised by pointer), not empty (which would
                // remove the label).
                job_name: if shareable {
                    ArcStr::from(format!("{} and the jobs sharing its pipeline", job.name))
                } else {
                    ArcStr::from(job.name.as_str())
                },
                ..job.scrape.clone()
            },
        };
        let members = self.members.subscribe();
        let views = PublishedViews::default();
        let published = Arc::clone(&views);
        let addr = Pipeline::start_in_arbiter(&arbiter, move |_| {
            Pipeline::new(subscription, relabelling)
                .with_members(members)
                .publishing_to(published)
        });
        Ok((addr, views))
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
        if let Some(watch) = self.member_watch.take() {
            watch.stop().await;
        }
        let running = std::mem::take(&mut self.running);
        self.publish();
        for (_, job) in running {
            self.stop_job(job).await;
        }
    }

    /// How many pipelines run (jobs that share one count once).
    pub fn pipelines(&self) -> usize {
        self.pipelines.len()
    }

    /// What each pipeline has done so far, summed: work counted for tests and
    /// benchmarks.
    pub async fn pipeline_work(&self) -> super::PipelineWork {
        let mut total = super::PipelineWork::default();
        for shared in self.pipelines.values() {
            if let Ok(w) = shared.addr.send(super::GetWork).await {
                total.objects_relabelled += w.objects_relabelled;
                total.objects_unseen += w.objects_unseen;
                total.objects_changed += w.objects_changed;
                total.lists_built += w.lists_built;
                total.takes += w.takes;
                total.indexes_filled += w.indexes_filled;
            }
        }
        total
    }
}

/// What identifies a job's behaviour: its discovery configs, its rules (and the dialect
/// they are read in), and the scrape settings its targets are seeded with.
fn fingerprint(job: &Job) -> String {
    serde_json::to_string(&(&job.sd_configs, &job.relabel, &job.dialect, &job.scrape))
        .unwrap_or_default()
}

/// What identifies a pipeline: the discovery, the rules and their dialect, and the
/// scrape settings but for the job's name, which counts only when the rules read it.
fn pipeline_key(sd: &SdConfig, job: &Job, shareable: bool) -> String {
    let scrape = ScrapeSettings {
        job_name: if shareable {
            ArcStr::default()
        } else {
            job.scrape.job_name.clone()
        },
        ..job.scrape.clone()
    };
    serde_json::to_string(&(sd, &job.relabel, &job.dialect, &scrape)).unwrap_or_default()
}
