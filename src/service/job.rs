//! One scrape job: its subscriptions (one per `kubernetes_sd_configs` entry), its
//! relabelling, and its targets in HTTP SD form, rebuilt only after a change.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tracing::{info, warn};

use super::file_name::job_file;
use crate::labels::Labels;
use crate::relabel::{ScrapeSettings, Target, process};
use crate::sd_output::{etag, sd_json, write_file_atomically};
use crate::{Subscription, TargetsUpdated};

/// A job's targets in Prometheus HTTP SD JSON, with its ETag.
#[derive(Clone, Debug)]
pub struct SdBody {
    /// The JSON.
    pub json: Arc<Vec<u8>>,
    /// Its quoted ETag.
    pub etag: String,
    /// How many targets it holds.
    pub targets: usize,
}

/// A running job.
pub struct JobActor {
    name: String,
    subscriptions: Vec<Subscription<Labels>>,
    body: Option<SdBody>,
    synced: bool,
    file: Option<PathBuf>,
    file_pending: bool,
    changes: u64,
}

impl JobActor {
    /// A job serving `subscriptions`' targets; with `output_dir`, also written to
    /// `<output_dir>/<encoded name>.json` as Prometheus file SD (see
    /// [`super::file_name`]).
    pub fn new(
        name: String,
        subscriptions: Vec<Subscription<Labels>>,
        output_dir: Option<PathBuf>,
    ) -> JobActor {
        let file = output_dir.map(|d| job_file(&d, &name));
        JobActor {
            name,
            subscriptions,
            body: None,
            synced: false,
            file,
            file_pending: true,
            changes: 0,
        }
    }

    /// The current targets of every subscription, merged.
    fn gather(&self) -> impl Future<Output = Vec<Labels>> + 'static {
        let requests: Vec<_> = self.subscriptions.iter().map(|s| s.targets()).collect();
        async move {
            let mut all = Vec::new();
            for r in requests {
                all.extend(r.await.iter().cloned());
            }
            all
        }
    }

    fn rebuild(&mut self) -> ResponseActFuture<Self, SdBody> {
        if let Some(body) = &self.body {
            let body = body.clone();
            return Box::pin(async move { body }.into_actor(self));
        }
        let gather = self.gather();
        Box::pin(gather.into_actor(self).map(|targets, act, _| {
            let json = sd_json(targets.iter());
            let body = SdBody {
                etag: etag(&json),
                json: Arc::new(json),
                targets: targets.len(),
            };
            act.body = Some(body.clone());
            body
        }))
    }

    fn write_file(&mut self, ctx: &mut Context<Self>) {
        if !self.file_pending || !self.synced {
            return;
        }
        let Some(path) = self.file.clone() else {
            return;
        };
        self.file_pending = false;
        let build = self.rebuild();
        ctx.spawn(build.map(move |body, act, _| {
            if let Err(e) = write_file_atomically(&path, &body.json) {
                warn!(job = %act.name, path = %path.display(), "cannot write the file SD output: {e}");
                act.file_pending = true;
            }
        }));
    }
}

/// The relabelling and sharding a job applies to each discovered target: what its
/// subscriptions' constructor does.
pub fn job_constructor(
    scrape: Arc<ScrapeSettings>,
    rules: Arc<Vec<crate::relabel::CompiledRule>>,
    shard: super::Shard,
) -> impl Fn(&Labels) -> Option<Labels> + Send + Sync + 'static {
    move |labels| match process(labels, &scrape, &rules) {
        Target::Keep(target) if shard.keeps(target.get("__address__").unwrap_or("")) => {
            Some(target)
        }
        _ => None,
    }
}

impl Actor for JobActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address().recipient::<TargetsUpdated>();
        for s in &self.subscriptions {
            s.on_change(me.clone());
        }
        let waits: Vec<_> = self.subscriptions.iter().map(|s| s.synced()).collect();
        ctx.spawn(
            async move {
                for w in waits {
                    w.await;
                }
            }
            .into_actor(self)
            .map(|(), act, ctx| {
                act.synced = true;
                info!(job = %act.name, "job synced");
                act.write_file(ctx);
            }),
        );
        // File SD output is written at most once a second, however often targets change.
        ctx.run_interval(Duration::from_secs(1), |act, ctx| act.write_file(ctx));
    }
}

impl Handler<TargetsUpdated> for JobActor {
    type Result = ();

    fn handle(&mut self, _: TargetsUpdated, ctx: &mut Context<Self>) {
        self.body = None;
        self.file_pending = true;
        self.changes += 1;
        // Asking for the targets re-arms the subscription's (coalesced) notices; the
        // shared snapshots are dropped at once, nothing is copied.
        let requests: Vec<_> = self.subscriptions.iter().map(|s| s.targets()).collect();
        ctx.spawn(
            async move {
                for r in requests {
                    r.await;
                }
            }
            .into_actor(self),
        );
    }
}

/// Sent by the HTTP server to a job: its HTTP SD body.
#[derive(Message)]
#[rtype(result = "SdBody")]
pub struct GetSd;

impl Handler<GetSd> for JobActor {
    type Result = ResponseActFuture<Self, SdBody>;

    fn handle(&mut self, _: GetSd, _: &mut Context<Self>) -> Self::Result {
        self.rebuild()
    }
}

/// A job's state, for readiness and the demo's summary.
#[derive(Clone, Debug)]
pub struct JobStatus {
    /// Every subscription has listed once.
    pub synced: bool,
    /// Change notices received.
    pub changes: u64,
}

/// Sent to a job: its status.
#[derive(Message)]
#[rtype(result = "JobStatus")]
pub struct GetStatus;

impl Handler<GetStatus> for JobActor {
    type Result = MessageResult<GetStatus>;
    fn handle(&mut self, _: GetStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(JobStatus {
            synced: self.synced,
            changes: self.changes,
        })
    }
}

/// Sent to a job: its targets (after relabelling), for the demo's summary.
#[derive(Message)]
#[rtype(result = "Vec<Labels>")]
pub struct JobTargets;

impl Handler<JobTargets> for JobActor {
    type Result = ResponseFuture<Vec<Labels>>;
    fn handle(&mut self, _: JobTargets, _: &mut Context<Self>) -> Self::Result {
        Box::pin(self.gather())
    }
}

/// Sent to a job that is being removed: stop its subscriptions, then itself.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopJob;

impl Handler<StopJob> for JobActor {
    type Result = ResponseActFuture<Self, ()>;
    fn handle(&mut self, _: StopJob, _: &mut Context<Self>) -> Self::Result {
        let subs = std::mem::take(&mut self.subscriptions);
        Box::pin(
            async move {
                for s in subs {
                    s.stop().await;
                }
            }
            .into_actor(self)
            .map(|(), _, ctx| ctx.stop()),
        )
    }
}
