//! The set of running jobs, and how a new config is applied to it: jobs whose discovery
//! and relabelling are unchanged keep running untouched; a changed job is started anew
//! before the old one stops, so the groups both use (and their caches) stay up; removed
//! jobs stop, and a group whose last job left stops with them.
//!
//! Jobs' discoveries run as [`JobActor`]s, one per `kubernetes_sd_configs` entry,
//! shared by jobs with the same discovery and rules when their rules never read `job`
//! ([`Relabelling::shareable`]), and spread over one arbiter per core: relabelling is
//! the service's per-event work. Each actor subscribes to its group itself
//! ([`Discovery::subscribe_actor`]).

pub mod background;
pub mod file_name;
pub mod file_sd;
pub mod job;
pub mod job_actor;
pub mod job_state;
pub mod latency;
pub mod relabel_ahead;
pub mod relabelling;
pub mod snapshot;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix::prelude::*;
use arcstr::ArcStr;
use tracing::info;

use crate::arbiter_pool::ArbiterPool;
use crate::config::SdConfig;
use crate::promconfig::{self, LoadedConfig};
use crate::relabel::{ReadableMeta, ScrapeSettings};
use crate::service::fleet::members::{MemberWatch, Members};
use crate::service::jobs::file_name::job_file;
use crate::service::jobs::file_sd::spawn_file_writer;
use crate::service::jobs::job::{Job, JobPart};
use crate::service::jobs::job_actor::{JobActor, StopJobActor, Subscribed};
use crate::service::jobs::relabelling::Relabelling;
use crate::service::jobs::snapshot::{JobWork, SnapshotCell};
use crate::service::views::shard::Shard;
use crate::{Discovery, SubscribeError};

/// How jobs run.
#[derive(Clone, Debug)]
pub struct JobSetOptions {
    /// Which targets this replica keeps.
    pub shard: Shard,
    /// Where to write file SD output, if anywhere.
    pub output_dir: Option<PathBuf>,
    /// The least time between two snapshots of a job actor while changes keep coming
    /// (see `service::jobs::job_actor`); zero publishes after every batch.
    pub publish_interval: Duration,
}

impl JobSetOptions {
    /// `kubesd run`'s default [`JobSetOptions::publish_interval`].
    pub const DEFAULT_PUBLISH_INTERVAL: Duration = Duration::from_millis(250);
}

/// Which discovered labels the target allocator's API serves collectors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CollectorLabels {
    /// Every label but the `__meta_*` labels no rule of the job reads
    /// ([`ReadableMeta`]): they change nothing the collector computes.
    #[default]
    Readable,
    /// Every discovered label.
    All,
}

struct RunningJob {
    fingerprint: String,
    job: Job,
    /// The keys of its actors.
    actors: Vec<String>,
    /// Its file SD writer, with an output directory.
    file_writer: Option<actix_rt::task::JoinHandle<()>>,
}

/// A job actor and how many running jobs use it.
struct SharedActor {
    part: JobPart,
    users: usize,
}

/// The running jobs.
pub struct JobSet {
    discovery: Discovery,
    options: JobSetOptions,
    running: BTreeMap<String, RunningJob>,
    actors: BTreeMap<String, SharedActor>,
    /// Where job actors run, in turn.
    arbiters: ArbiterPool,
    /// Shared with the HTTP server.
    published: Arc<RwLock<BTreeMap<String, Job>>>,
    /// The Ready members, read by every job actor.
    members: tokio::sync::watch::Sender<Members>,
    /// The watch of the config's `membership` pods, if it names them.
    member_watch: Option<MemberWatch>,
    /// What collectors are served.
    collectors: CollectorLabels,
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
        published: Arc<RwLock<BTreeMap<String, Job>>>,
    ) -> JobSet {
        JobSet {
            discovery,
            options,
            running: BTreeMap::new(),
            actors: BTreeMap::new(),
            arbiters: ArbiterPool::per_core(false),
            published,
            members: tokio::sync::watch::Sender::new(Members::default()),
            member_watch: None,
            collectors: CollectorLabels::default(),
        }
    }

    /// The same job set, serving collectors `labels` (for the jobs it starts from now).
    pub fn serving_collectors(self, labels: CollectorLabels) -> JobSet {
        JobSet {
            collectors: labels,
            ..self
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
                self.members.send_replace(Members::default());
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
                Ok((running, actors)) => {
                    let running = self.running_job(running, actors, fingerprint);
                    started.push((job.name.clone(), running));
                }
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

    /// A job just started, with its file SD writer if there is an output directory.
    fn running_job(&self, job: Job, actors: Vec<String>, fingerprint: String) -> RunningJob {
        let file_writer = self
            .options
            .output_dir
            .as_ref()
            .map(|dir| spawn_file_writer(job.clone(), job_file(dir, job.name())));
        RunningJob {
            fingerprint,
            job,
            actors,
            file_writer,
        }
    }

    /// Stops a job's file writer, then the actors no job uses any more.
    async fn stop_job(&mut self, job: RunningJob) {
        if let Some(writer) = job.file_writer {
            writer.abort();
        }
        for key in job.actors {
            self.release_actor(&key).await;
        }
    }

    async fn release_actor(&mut self, key: &str) {
        let Some(shared) = self.actors.get_mut(key) else {
            return;
        };
        shared.users -= 1;
        if shared.users == 0
            && let Some(shared) = self.actors.remove(key)
        {
            let _ = shared.part.addr.send(StopJobActor).await;
        }
    }

    /// Starts a job, with its actors (new ones, or shared ones it joins); returns it
    /// and its actors' keys.
    async fn start(&mut self, job: &promconfig::Job) -> Result<(Job, Vec<String>), JobStartError> {
        let rules = Arc::new(job.rules.clone());
        let shareable = Relabelling::shareable(&rules);
        let mut keys: Vec<String> = Vec::new();
        let mut parts = Vec::new();
        for (index, sd) in job.sd_configs.iter().enumerate() {
            let key = actor_key(sd, job, shareable);
            let part = match self.actors.get_mut(&key) {
                Some(shared) => {
                    shared.users += 1;
                    shared.part.clone()
                }
                None => match self.start_actor(sd, job, &rules, shareable).await {
                    Ok(part) => {
                        let shared = SharedActor {
                            part: part.clone(),
                            users: 1,
                        };
                        self.actors.insert(key.clone(), shared);
                        part
                    }
                    Err(source) => {
                        for key in keys {
                            self.release_actor(&key).await;
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
            parts.push(part);
        }
        let config = Arc::new(job.clone());
        let running = Job::new(&job.name, parts)
            .serving(job.served.clone())
            .with_config(config);
        Ok((running, keys))
    }

    /// A new job actor for `sd` with `job`'s rules, on the next arbiter in turn,
    /// subscribed to its group.
    async fn start_actor(
        &mut self,
        sd: &SdConfig,
        job: &promconfig::Job,
        rules: &Arc<Vec<crate::relabel::CompiledRule>>,
        shareable: bool,
    ) -> Result<JobPart, SubscribeError> {
        let arbiter = self.arbiters.next();
        let relabelling = Relabelling {
            rules: Arc::clone(rules),
            shard: self.options.shard,
            scrape: ScrapeSettings {
                // When shared, a placeholder each job writes its own name in place of:
                // a string of its own (recognised by pointer), not empty (which would
                // remove the label).
                job_name: if shareable {
                    ArcStr::from(format!("{} and the jobs sharing its actor", job.name))
                } else {
                    ArcStr::from(job.name.as_str())
                },
                ..job.scrape.clone()
            },
        };
        let readable = match self.collectors {
            CollectorLabels::Readable => Some(Arc::new(ReadableMeta::new(Arc::clone(rules)))),
            CollectorLabels::All => None,
        };
        let cell = Arc::new(SnapshotCell::new(readable));
        let members = self.members.subscribe();
        let (name, published) = (job.name.clone(), Arc::clone(&cell));
        let every = self.options.publish_interval;
        let addr = JobActor::start_in_arbiter(&arbiter, move |_| {
            JobActor::new(name, relabelling, published, members, every)
        });
        match self.discovery.subscribe_actor(sd, &addr).await {
            Ok(subscription) => {
                addr.do_send(Subscribed(subscription));
                Ok(JobPart { addr, cell })
            }
            Err(e) => {
                addr.do_send(StopJobActor);
                Err(e)
            }
        }
    }

    fn publish(&self) {
        let map = self
            .running
            .iter()
            .map(|(n, j)| (n.clone(), j.job.clone()))
            .collect();
        match self.published.write() {
            Ok(mut guard) => *guard = map,
            Err(poisoned) => *poisoned.into_inner() = map,
        }
    }

    /// The discovery engine its jobs subscribe to.
    pub fn discovery(&self) -> &Discovery {
        &self.discovery
    }

    /// The running jobs.
    pub fn jobs(&self) -> Vec<(String, Job)> {
        self.running
            .iter()
            .map(|(n, j)| (n.clone(), j.job.clone()))
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

    /// How many job actors run (jobs that share one count once).
    pub fn job_actors(&self) -> usize {
        self.actors.len()
    }

    /// What every job actor has done so far, summed, as their snapshots say: work
    /// counted for tests and benchmarks.
    pub fn work(&self) -> JobWork {
        self.actors.values().fold(JobWork::default(), |sum, a| {
            sum.plus(a.part.cell.load().work)
        })
    }
}

/// What identifies a job's behaviour: its discovery configs, its rules (and the dialect
/// they are read in), and the scrape settings its targets are seeded with.
fn fingerprint(job: &promconfig::Job) -> String {
    let served = &*job.served.with_secrets;
    serde_json::to_string(&(
        &job.sd_configs,
        &job.relabel,
        &job.dialect,
        &job.scrape,
        served,
    ))
    .unwrap_or_default()
}

/// What identifies a job actor: the discovery, the rules and their dialect, and the
/// scrape settings but for the job's name, which counts only when the rules read it.
fn actor_key(sd: &SdConfig, job: &promconfig::Job, shareable: bool) -> String {
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
