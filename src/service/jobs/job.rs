//! One scrape job as the HTTP handlers and the file SD writer read it: its name and
//! its job actors' snapshot cells (one actor per `kubernetes_sd_configs` entry, perhaps
//! shared with other jobs). Its body is the actors' published snapshots joined in
//! config order ([`SdBody`]); reading it crosses no mailbox. Only a view partition's
//! first request asks the actors to build it ([`KeepView`]); a member's or collector's
//! view is assigned from the snapshots as it is asked for
//! ([`crate::service::fleet::assigned`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use actix::Addr;
use arcstr::ArcStr;

use crate::labels::Labels;
use crate::promconfig::{self, ServedConfig};
pub use crate::sd_output::SdBody;
use crate::service::fleet::assigned::{Lookup, Published};
use crate::service::jobs::job_actor::{JobActor, KeepView, RelabelAll};
use crate::service::jobs::latency::LatencyHistogram;
use crate::service::jobs::snapshot::{JobSnapshot, JobWork, SnapshotCell};
use crate::service::views::index::counts;
use crate::service::views::{Bucket, ViewKind, ViewQuery};

/// One job actor a job reads: where it publishes, and where to ask it for a partition.
#[derive(Clone)]
pub struct JobPart {
    /// The actor.
    pub addr: Addr<JobActor>,
    /// Its snapshots.
    pub cell: Arc<SnapshotCell>,
}

/// A running job, as readers hold it. Cheap to clone.
#[derive(Clone)]
pub struct Job {
    name: Arc<str>,
    parts: Arc<[JobPart]>,
    /// Its scrape config as the target allocator's `/scrape_configs` serves it.
    served: ServedConfig,
    /// Its config, for the targets API and `/api/v1/status/config` (none for a job
    /// made without one, as tests and benchmarks make them).
    config: Option<Arc<promconfig::Job>>,
}

/// A job's state, for readiness, `/metrics` and the demo's summary. Never touches the
/// targets' bodies.
#[derive(Clone, Debug)]
pub struct JobStatus {
    /// Every discovery has listed once.
    pub synced: bool,
    /// Messages with changes its actors handled.
    pub changes: u64,
    /// Object changes applied (relabelled and made visible in `/sd`).
    pub applied: u64,
    /// Targets it serves.
    pub targets: usize,
    /// Time from an event's arrival to its change being visible in `/sd`.
    pub latency: LatencyHistogram,
    /// When its targets last changed (the latest of its actors').
    pub last_change: Option<std::time::SystemTime>,
}

/// Targets per bucket of each view kind a job's actors keep, summed over them.
pub type JobViewCounts = BTreeMap<ViewKind, BTreeMap<Bucket, usize>>;

impl Job {
    /// Job `name`, reading `parts` in config order.
    pub fn new(name: &str, parts: Vec<JobPart>) -> Job {
        Job {
            name: Arc::from(name),
            parts: parts.into(),
            served: ServedConfig::default(),
            config: None,
        }
    }

    /// The job, its scrape config served as `served` by `/scrape_configs`.
    pub fn serving(self, served: ServedConfig) -> Job {
        Job { served, ..self }
    }

    /// Its scrape config as `/scrape_configs` serves it (`null` for a job built
    /// without one).
    pub fn served_config(&self) -> &ServedConfig {
        &self.served
    }

    /// The same job, with the config it runs.
    pub fn with_config(self, config: Arc<promconfig::Job>) -> Job {
        Job {
            config: Some(config),
            ..self
        }
    }

    /// The config it runs, if it was given.
    pub fn config(&self) -> Option<&Arc<promconfig::Job>> {
        self.config.as_ref()
    }

    /// The job's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its actors.
    pub fn parts(&self) -> &[JobPart] {
        &self.parts
    }

    fn snapshots(&self) -> Vec<Arc<JobSnapshot>> {
        self.parts.iter().map(|p| p.cell.load()).collect()
    }

    /// Its HTTP SD body now.
    pub fn sd(&self) -> SdBody {
        let bodies = self.snapshots().iter().map(|s| s.body.clone()).collect();
        SdBody::new(&self.name, bodies)
    }

    /// The body of the view `query` asks for; the first request for a partition waits
    /// for the actors to build it.
    pub async fn view(&self, query: &ViewQuery) -> SdBody {
        let (Some(kind), Some(bucket)) = (query.kind(), query.bucket()) else {
            return self.sd();
        };
        if matches!(kind, ViewKind::Member | ViewKind::Allocator) {
            return self.assigned_view(kind, bucket).await;
        }
        for part in self.parts.iter() {
            part.cell.note_asked(kind);
        }
        if let Some(body) = self.published_view(kind, &bucket) {
            return body;
        }
        self.keep_view(kind).await;
        self.published_view(kind, &bucket)
            .unwrap_or_else(|| SdBody::new(&self.name, Vec::new()))
    }

    /// Asks every actor to keep partition `kind` (answered once published).
    async fn keep_view(&self, kind: ViewKind) {
        for part in self.parts.iter() {
            // An actor that stopped (the job is stopping) serves nothing.
            let _ = part.addr.send(KeepView(kind)).await;
        }
    }

    /// Member `bucket`'s view of partition `kind` (its `?member=` or its allocator
    /// share), cut from each actor's placements of its snapshots (see
    /// [`crate::service::fleet::assigned`]); the first asks the actors to make their
    /// body entries carry what placing reads.
    async fn assigned_view(&self, kind: ViewKind, bucket: Bucket) -> SdBody {
        if self.parts.iter().any(|p| !p.cell.load().placing) {
            self.keep_view(kind).await;
        }
        let Bucket::Name(member) = bucket else {
            return SdBody::new(&self.name, Vec::new());
        };
        let mut placed = Vec::with_capacity(self.parts.len());
        for part in self.parts.iter() {
            placed.extend(published_placements(&part.cell).await);
        }
        // The job's actors share its rules: the first's labels read are theirs.
        let readable = self.parts.first().and_then(|p| p.cell.assigned.readable());
        let views = placed.iter().map(|p| p.view(kind, &member)).collect();
        SdBody::cut(&self.name, views).pruned(readable.cloned())
    }

    /// Bucket `bucket` of partition `kind` as the actors published it; `None` if one
    /// does not keep the partition.
    fn published_view(&self, kind: ViewKind, bucket: &Bucket) -> Option<SdBody> {
        let mut parts = Vec::with_capacity(self.parts.len());
        for snapshot in self.snapshots() {
            let partition = snapshot.partition(kind)?;
            parts.push(partition.get(bucket).cloned().unwrap_or_default());
        }
        Some(SdBody::new(&self.name, parts))
    }

    /// Its status now.
    pub fn status(&self) -> JobStatus {
        let mut status = JobStatus {
            synced: true,
            changes: 0,
            applied: 0,
            targets: 0,
            latency: LatencyHistogram::default(),
            last_change: None,
        };
        for snapshot in self.snapshots() {
            status.synced &= snapshot.synced;
            status.changes += snapshot.stats.changes;
            status.applied += snapshot.stats.applied;
            status.targets += snapshot.body.targets();
            status.latency.merge(&snapshot.stats.latency);
            status.last_change = status.last_change.max(snapshot.stats.last_change);
        }
        status
    }

    /// The targets of each view asked for so far (the member views' as last
    /// placed).
    pub fn views(&self) -> JobViewCounts {
        let mut all = JobViewCounts::new();
        for part in self.parts.iter() {
            let snapshot = part.cell.load();
            for (kind, partition) in snapshot.partitions.iter() {
                let into = all.entry(*kind).or_default();
                for (bucket, n) in counts(partition) {
                    *into.entry(bucket).or_default() += n;
                }
            }
            if let Some(placed) = part.cell.assigned.published() {
                let into = all.entry(ViewKind::Member).or_default();
                for (member, n) in placed.per_member() {
                    *into.entry(Bucket::Name(member)).or_default() += n;
                }
            }
        }
        all
    }

    /// Targets per zone of the members its member views assign them to (a member of no
    /// known zone counts under ""; a target in handover counts at both its members),
    /// summed over its actors, as last placed; empty when no member view was asked
    /// for.
    pub fn member_zones(&self) -> BTreeMap<ArcStr, usize> {
        let mut zones = BTreeMap::new();
        for part in self.parts.iter() {
            let Some(placed) = part.cell.assigned.published() else {
                continue;
            };
            let assignment = placed.fleet.current();
            for (member, n) in placed.per_member() {
                let node = assignment.members().iter().find(|m| m.name == *member);
                let zone = node.map_or("", |m| assignment.zone_of(&m.node));
                *zones.entry(ArcStr::from(zone)).or_default() += n;
            }
        }
        zones
    }

    /// What its actors have done, summed.
    pub fn work(&self) -> JobWork {
        self.snapshots()
            .iter()
            .fold(JobWork::default(), |sum, s| sum.plus(s.work))
    }

    /// Every target after relabelling, for the demo's summary and tests. Relabels
    /// every target: not for a hot path.
    pub async fn targets(&self) -> Vec<Labels> {
        let mut all = Vec::new();
        for part in self.parts.iter() {
            let job = self.name.to_string();
            all.extend(part.addr.send(RelabelAll { job }).await.unwrap_or_default());
        }
        all
    }
}

/// `cell`'s placements for its snapshot now: the published ones if they were made from
/// it, or recently (newer ones then made in the background meanwhile); else made now,
/// on a blocking thread, and waited for (`None` if placing them panicked).
async fn published_placements(cell: &Arc<SnapshotCell>) -> Option<Arc<Published>> {
    cell.assigned.note_asked();
    let snapshot = cell.load();
    match cell.assigned.lookup(&snapshot.body, &snapshot.members) {
        Lookup::Current(published) => Some(published),
        Lookup::Recent(published) => {
            cell.assign_soon();
            Some(published)
        }
        Lookup::Missing => {
            let cell = Arc::clone(cell);
            actix_rt::task::spawn_blocking(move || {
                let snapshot = cell.load();
                let members = cell.assigned.members_for(&snapshot.members);
                cell.assigned.assign(&snapshot.body, &members)
            })
            .await
            .ok()
        }
    }
}
