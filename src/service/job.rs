//! One scrape job: its pipelines (one per `kubernetes_sd_configs` entry, perhaps shared
//! with other jobs), and its targets in HTTP SD form, assembled from the pipelines'
//! per-object parts only when asked and kept until they change.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;
use tracing::{info, warn};

use super::file_name::job_file;
use super::latency::LatencyHistogram;
use super::pipeline::{
    AwaitPipelineSynced, GetList, GetViewCounts, Join, Leave, Pipeline, PipelineChanged, ReaderId,
    RelabelAll, TargetCount, ViewAsked,
};
use super::views::{Bucket, PublishedViews, ViewKind, ViewQuery};
use crate::labels::Labels;
use crate::relabel::{ADDRESS_LABEL, Relabeller, ScrapeSettings, Target};
use crate::sd_output::ListSummary;
pub use crate::sd_output::SdBody;
use crate::sd_output::write_file_atomically;

/// A running job.
pub struct JobActor {
    name: String,
    /// How its pipelines know it.
    id: ReaderId,
    pipelines: Vec<Addr<Pipeline>>,
    /// Each pipeline's targets, as its latest word said.
    targets: Vec<TargetCount>,
    /// The body, until a pipeline's groups change.
    body: Option<SdBody>,
    /// Bumped at every change, so that a body assembled across one is not kept.
    generation: u64,
    synced: bool,
    file: Option<PathBuf>,
    file_pending: bool,
    changes: u64,
    applied: u64,
    latency: LatencyHistogram,
    /// Each pipeline's views as it published them, in pipeline order.
    views: Vec<PublishedViews>,
}

impl JobActor {
    /// A job serving `pipelines`' targets (each with the views it publishes), known
    /// to them as `id`; with `output_dir`, also written to
    /// `<output_dir>/<encoded name>.json` as Prometheus file SD (see
    /// [`super::file_name`]).
    pub fn new(
        name: String,
        id: ReaderId,
        pipelines: Vec<(Addr<Pipeline>, PublishedViews)>,
        output_dir: Option<PathBuf>,
    ) -> JobActor {
        let (pipelines, views): (Vec<_>, Vec<_>) = pipelines.into_iter().unzip();
        let file = output_dir.map(|d| job_file(&d, &name));
        JobActor {
            name,
            id,
            targets: vec![TargetCount::default(); pipelines.len()],
            pipelines,
            body: None,
            generation: 0,
            synced: false,
            file,
            file_pending: true,
            changes: 0,
            applied: 0,
            latency: LatencyHistogram::default(),
            views,
        }
    }

    /// Bucket `bucket` of partition `kind` as the pipelines published it; `None` if a
    /// pipeline does not keep the partition (yet).
    fn published(&self, kind: ViewKind, bucket: &Bucket) -> Option<SdBody> {
        let mut parts = Vec::with_capacity(self.views.len());
        for views in &self.views {
            let views = views.read().ok()?;
            let part = match views.get(&kind)?.get(bucket) {
                Some(view) => (Arc::clone(&view.list), view.summary),
                None => (Arc::from([]), ListSummary::default()),
            };
            parts.push(part);
        }
        Some(SdBody::from_summaries(&self.name, parts))
    }

    /// A view's body, read from what the pipelines published, without waiting for
    /// them; the first request for a partition has them build it first.
    fn view(&mut self, kind: ViewKind, bucket: Bucket) -> ResponseActFuture<Self, SdBody> {
        if let Some(body) = self.published(kind, &bucket) {
            // Noted for the partitions' eviction order; the answer needs no reply.
            for p in &self.pipelines {
                p.do_send(ViewAsked(kind));
            }
            return Box::pin(async move { body }.into_actor(self));
        }
        let asked: Vec<_> = self
            .pipelines
            .iter()
            .map(|p| p.send(ViewAsked(kind)))
            .collect();
        Box::pin(
            async move {
                for a in asked {
                    let _ = a.await;
                }
            }
            .into_actor(self)
            .map(move |(), act, _| {
                act.published(kind, &bucket)
                    .unwrap_or_else(|| SdBody::from_summaries(&act.name, Vec::new()))
            }),
        )
    }

    /// The body: the cached one, or assembled from the pipelines' lists.
    fn body(&mut self) -> ResponseActFuture<Self, SdBody> {
        if let Some(body) = &self.body {
            let body = body.clone();
            return Box::pin(async move { body }.into_actor(self));
        }
        let lists: Vec<_> = self.pipelines.iter().map(|p| p.send(GetList)).collect();
        let generation = self.generation;
        Box::pin(
            async move {
                let mut parts = Vec::with_capacity(lists.len());
                for list in lists {
                    // A pipeline that stopped (the job is stopping) has no targets.
                    parts.push(list.await.unwrap_or_else(|_| Arc::new([])));
                }
                parts
            }
            .into_actor(self)
            .map(move |parts, act, _| {
                let body = SdBody::new(&act.name, parts);
                if act.generation == generation {
                    act.body = Some(body.clone());
                }
                body
            }),
        )
    }

    fn write_file(&mut self, ctx: &mut Context<Self>) {
        if !self.file_pending || !self.synced {
            return;
        }
        let Some(path) = self.file.clone() else {
            return;
        };
        self.file_pending = false;
        let build = self.body();
        ctx.spawn(build.map(move |body, act, _| {
            if let Err(e) = write_file_atomically(&path, &body.to_vec()) {
                warn!(job = %act.name, path = %path.display(), "cannot write the file SD output: {e}");
                act.file_pending = true;
            }
        }));
    }
}

/// The relabelling and sharding a job applies to each discovered target, as one
/// function (for agents embedding kubesd with their own targets; the service itself
/// runs it per object in its pipelines).
pub fn job_constructor(
    scrape: Arc<ScrapeSettings>,
    rules: Arc<Vec<crate::relabel::CompiledRule>>,
    shard: super::Shard,
) -> impl Fn(&Labels) -> Option<Labels> + Send + Sync + 'static {
    // One relabeller, remembering its name-only rules' decisions across targets. A
    // subscriber calls its constructor from its own thread, one target at a time: the
    // lock is never contended.
    let relabeller = Mutex::new(Relabeller::new(rules));
    move |labels| {
        let target = match relabeller.lock() {
            Ok(mut r) => r.process(labels, &scrape),
            // A panic elsewhere cannot leave the memory wrong: it holds only decisions.
            Err(poisoned) => poisoned.into_inner().process(labels, &scrape),
        };
        match target {
            Target::Keep(target) if shard.keeps(target.get(ADDRESS_LABEL).unwrap_or("")) => {
                Some(target)
            }
            _ => None,
        }
    }
}

impl Actor for JobActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let me = ctx.address().recipient::<PipelineChanged>();
        for (i, p) in self.pipelines.iter().enumerate() {
            let join = p.send(Join {
                id: self.id,
                index: i,
                reader: me.clone(),
            });
            ctx.spawn(join.into_actor(self).map(move |targets, act, _| {
                if let (Ok(targets), Some(t)) = (targets, act.targets.get_mut(i)) {
                    *t = (*t).max(targets);
                }
            }));
        }
        let waits: Vec<_> = self
            .pipelines
            .iter()
            .map(|p| p.send(AwaitPipelineSynced))
            .collect();
        ctx.spawn(
            async move {
                for w in waits {
                    let _ = w.await;
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

impl Handler<PipelineChanged> for JobActor {
    type Result = ();

    fn handle(&mut self, msg: PipelineChanged, _: &mut Context<Self>) {
        if let Some(t) = self.targets.get_mut(msg.index) {
            *t = (*t).max(msg.targets);
        }
        self.changes += 1;
        self.applied += msg.applied as u64;
        if let Some(oldest) = msg.oldest {
            self.latency.observe(oldest.elapsed());
        }
        if msg.changed > 0 {
            self.body = None;
            self.generation += 1;
            self.file_pending = true;
        }
    }
}

/// Sent by the HTTP server to a job: its HTTP SD body.
#[derive(Message)]
#[rtype(result = "SdBody")]
pub struct GetSd;

impl Handler<GetSd> for JobActor {
    type Result = ResponseActFuture<Self, SdBody>;

    fn handle(&mut self, _: GetSd, _: &mut Context<Self>) -> Self::Result {
        self.body()
    }
}

/// Sent by the HTTP server to a job: the HTTP SD body of one view of its targets.
#[derive(Message)]
#[rtype(result = "SdBody")]
pub struct GetView(pub ViewQuery);

impl Handler<GetView> for JobActor {
    type Result = ResponseActFuture<Self, SdBody>;

    fn handle(&mut self, GetView(query): GetView, _: &mut Context<Self>) -> Self::Result {
        match (query.kind(), query.bucket()) {
            (Some(kind), Some(bucket)) => self.view(kind, bucket),
            _ => self.body(),
        }
    }
}

/// Targets per bucket of each view kind a job's pipelines keep, summed over them.
pub type JobViewCounts = BTreeMap<ViewKind, BTreeMap<Bucket, usize>>;

/// Sent by the HTTP server to a job (for `/metrics` and `/sd?views`): the targets of
/// each view asked for so far.
#[derive(Message)]
#[rtype(result = "JobViewCounts")]
pub struct GetJobViews;

impl Handler<GetJobViews> for JobActor {
    type Result = ResponseFuture<JobViewCounts>;

    fn handle(&mut self, _: GetJobViews, _: &mut Context<Self>) -> Self::Result {
        let requests: Vec<_> = self
            .pipelines
            .iter()
            .map(|p| p.send(GetViewCounts))
            .collect();
        Box::pin(async move {
            let mut all = JobViewCounts::new();
            for r in requests {
                for (kind, counts) in r.await.unwrap_or_default() {
                    let into = all.entry(kind).or_default();
                    for (bucket, n) in counts {
                        *into.entry(bucket).or_default() += n;
                    }
                }
            }
            all
        })
    }
}

/// A job's state, for readiness, `/metrics` and the demo's summary. Never touches the
/// targets' bodies.
#[derive(Clone, Debug)]
pub struct JobStatus {
    /// Every subscription has listed once.
    pub synced: bool,
    /// Change notices received.
    pub changes: u64,
    /// Object changes applied (relabelled and made visible in `/sd`).
    pub applied: u64,
    /// Targets it serves.
    pub targets: usize,
    /// Time from an event's arrival to its change being visible in `/sd`.
    pub latency: LatencyHistogram,
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
            applied: self.applied,
            targets: self.targets.iter().map(|t| t.targets).sum(),
            latency: self.latency.clone(),
        })
    }
}

/// Sent to a job: its targets (after relabelling), for the demo's summary. Relabels
/// every target: not for a hot path.
#[derive(Message)]
#[rtype(result = "Vec<Labels>")]
pub struct JobTargets;

impl Handler<JobTargets> for JobActor {
    type Result = ResponseFuture<Vec<Labels>>;
    fn handle(&mut self, _: JobTargets, _: &mut Context<Self>) -> Self::Result {
        let requests: Vec<_> = self
            .pipelines
            .iter()
            .map(|p| {
                p.send(RelabelAll {
                    job: self.name.clone(),
                })
            })
            .collect();
        Box::pin(async move {
            let mut all = Vec::new();
            for r in requests {
                all.extend(r.await.unwrap_or_default());
            }
            all
        })
    }
}

/// Sent to a job that is being removed: it leaves its pipelines (the job set stops
/// those no job uses), then stops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopJob;

impl Handler<StopJob> for JobActor {
    type Result = ();
    fn handle(&mut self, _: StopJob, ctx: &mut Context<Self>) {
        for p in &self.pipelines {
            p.do_send(Leave(self.id));
        }
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relabel::{RelabelConfig, compile_all, process};

    /// The constructor keeps what `process` keeps, in this replica's shard, target
    /// after target (its relabeller's memory carried across them).
    #[test]
    fn the_constructor_relabels_as_process_does_within_its_shard() {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(
            r#"[{action: labelmap, regex: "l_(.+)"}, {source_labels: [l_app], regex: db, action: drop}]"#,
        )
        .expect("rules parse");
        let rules = Arc::new(compile_all(&configs).expect("rules are valid"));
        let scrape = Arc::new(ScrapeSettings::new("job"));
        let shards = [
            super::super::Shard::new(0, 2),
            super::super::Shard::new(1, 2),
        ]
        .map(|s| s.expect("valid shard"));
        let constructors =
            shards.map(|shard| job_constructor(Arc::clone(&scrape), Arc::clone(&rules), shard));
        for i in 0..40 {
            let labels = Labels::from_pairs([
                ("__address__", format!("10.0.0.{i}:80")),
                ("l_app", if i % 3 == 0 { "db" } else { "web" }.to_string()),
            ]);
            let want = match process(&labels, &scrape, &rules) {
                Target::Keep(t) => Some(t),
                _ => None,
            };
            let got: Vec<Labels> = constructors.iter().filter_map(|c| c(&labels)).collect();
            match want {
                Some(t) => assert_eq!(got, vec![t], "target {i}: in exactly one shard"),
                None => assert!(got.is_empty(), "target {i}: dropped"),
            }
        }
    }
}
