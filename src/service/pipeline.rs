//! A pipeline: one discovery (a `kubernetes_sd_configs` entry) with one job's
//! relabelling and sharding, kept as each object's serialized target groups, ready to
//! be joined into HTTP SD bodies.
//!
//! Work is proportional to what changed: on a change notice the pipeline takes only the
//! objects that changed from its subscription ([`Subscription::take_changes`]),
//! relabels their targets, and re-serializes their groups; an object whose groups come
//! out the same bytes changes nothing downstream. Jobs whose discovery and rules are
//! the same and whose rules never read `job` share one pipeline (the `job` label is a
//! hole in the bytes that each job fills with its name, see [`ObjectGroups`]), so
//! twenty such jobs relabel each change once.
//!
//! A change the rules cannot see is not relabelled at all: most updates of a pod move
//! annotations and status fields no rule reads, which relabel to the same bytes (see
//! [`crate::relabel::Visibility`]). The pipeline keeps each object's discovered label
//! sets to compare with (shared with the group's cache, nothing copied); the
//! relabelled targets live only while an object is serialized.
//!
//! The pipeline also keeps the views consumers asked for ([`super::views`]): each
//! partition (shards, nodes, members) an index of its objects' parts, updated with the
//! object when it is relabelled.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use arcstr::ArcStr;

use super::shard::Shard;
use super::views::{
    Bucket, MAX_INDEXES, ObjectParts, ObjectTargets, PublishedViews, ViewIndex, ViewKind, node_of,
    same_nodes, split,
};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::relabel::{ADDRESS_LABEL, CompiledRule, Relabeller, ScrapeSettings, Target, process};
use crate::sd_output::{ObjectGroups, ObjectGroupsList};
use crate::{Subscription, TargetChanges, TargetsUpdated};

/// Identifies a job among a pipeline's readers.
pub type ReaderId = u64;

/// How a pipeline relabels: the rules, the shard, and the scrape settings its targets
/// are seeded with.
pub struct Relabelling {
    /// The job's compiled `relabel_configs`.
    pub rules: Arc<Vec<CompiledRule>>,
    /// This replica's share of the targets.
    pub shard: Shard,
    /// The job's scrape settings. Its `job_name` is the job's name or, when the
    /// pipeline is shared by jobs whose rules never read `job`, a placeholder string
    /// that each job's body replaces (recognised by pointer).
    pub scrape: ScrapeSettings,
}

impl Relabelling {
    /// True when `rules` give the same targets, but for the `job` label's value, for
    /// every job name: then jobs that differ only in name may share a pipeline.
    pub fn shareable(rules: &[CompiledRule]) -> bool {
        !rules.iter().any(|r| r.reads_label("job"))
    }

    /// One object's targets after relabelling (by `relabeller`, these rules) and
    /// sharding, as serialized groups. The targets are left in `scratch.targets`, and
    /// with `nodes`, each one's node in `scratch.nodes`.
    fn object_groups(
        &self,
        relabeller: &mut Relabeller,
        discovered: &[Labels],
        scratch: &mut Scratch,
        nodes: bool,
    ) -> ObjectGroups {
        scratch.targets.clear();
        scratch.nodes.clear();
        let mut i = 0;
        relabeller.process_object(discovered, &self.scrape, |target| {
            // One call per discovered label set, in order.
            let from = discovered.get(i);
            i += 1;
            if let Target::Keep(target) = target
                && self.shard.keeps(target.get(ADDRESS_LABEL).unwrap_or(""))
            {
                scratch.targets.push(target);
                if nodes {
                    scratch.nodes.push(from.map(node_of).unwrap_or_default());
                }
            }
        });
        if !nodes {
            scratch
                .nodes
                .resize(scratch.targets.len(), ArcStr::default());
        }
        ObjectGroups::new(&scratch.targets, &self.scrape.job_name)
    }

    /// Every target of `discovered` after relabelling, with `job_name` as `job`.
    fn targets_for(&self, job_name: &str, discovered: &[Labels]) -> Vec<Labels> {
        let scrape = ScrapeSettings {
            job_name: ArcStr::from(job_name),
            ..self.scrape.clone()
        };
        discovered
            .iter()
            .filter_map(|labels| match process(labels, &scrape, &self.rules) {
                Target::Keep(t) if self.shard.keeps(t.get(ADDRESS_LABEL).unwrap_or("")) => Some(t),
                _ => None,
            })
            .collect()
    }
}

/// What a pipeline has done, for tests and benchmarks: work counted, not timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PipelineWork {
    /// Objects relabelled and serialized.
    pub objects_relabelled: u64,
    /// Objects whose change the rules cannot see (values of labels no rule reads and
    /// the output drops, see [`crate::relabel::Visibility`]): not relabelled.
    pub objects_unseen: u64,
    /// Objects whose groups came out different (or appeared, or left).
    pub objects_changed: u64,
    /// Times the ordered list of every object was rebuilt (at most once per request
    /// after a change).
    pub lists_built: u64,
    /// Change sets taken from the subscription.
    pub takes: u64,
    /// Times a view index was filled from every object (first asked for, or its
    /// members changed).
    pub indexes_filled: u64,
}

/// One object's relabelled targets while it is serialized and split, reused.
#[derive(Default)]
struct Scratch {
    targets: Vec<Labels>,
    /// Each target's node (empty unless a node view is kept).
    nodes: Vec<ArcStr>,
}

/// One object as a pipeline holds it.
struct SlotState {
    key: ObjectKey,
    /// Its discovered targets (shared with the group's cache): what the next change is
    /// compared with, to tell whether the rules can see it.
    discovered: Vec<Labels>,
    /// Its groups; `None` when no target is left after relabelling.
    groups: Option<Arc<ObjectGroups>>,
    /// Its parts in each kept view index, in the pipeline's index order.
    parts: Vec<ObjectParts>,
}

/// The pipeline actor. See the module documentation.
pub struct Pipeline {
    subscription: Option<Subscription<Labels>>,
    relabelling: Relabelling,
    /// The relabelling's rules, remembering their decisions per label name.
    relabeller: Relabeller,
    /// Each object at its slot.
    by_slot: Vec<Option<SlotState>>,
    /// The objects in body order: by key, to their slot.
    order: BTreeMap<ObjectKey, u32>,
    /// The ordered list, until the next change.
    list: Option<ObjectGroupsList>,
    targets: usize,
    /// Bumped at every applied take, so that a reader can tell an older count from a
    /// newer one (a `Join` reply and a notice may arrive in either order).
    version: u64,
    readers: Vec<Join>,
    /// A take is under way; `notice_waiting`: a notice came meanwhile.
    taking: bool,
    notice_waiting: bool,
    /// Reused for each object's relabelled targets.
    scratch: Scratch,
    work: PipelineWork,
    /// The view indexes consumers asked for, at most [`MAX_INDEXES`].
    indexes: Vec<ViewIndex>,
    /// View requests so far: the clock of [`ViewIndex::last_asked`].
    asked: u64,
    /// The Ready members, sorted, and where their changes come from.
    members: Arc<[ArcStr]>,
    members_rx: Option<tokio::sync::watch::Receiver<Arc<[ArcStr]>>>,
    /// The indexes' lists as jobs read them.
    published: PublishedViews,
    /// A publication is planned ([`Pipeline::publish_soon`]).
    publish_planned: bool,
}

/// How long a change waits before the views' lists are published: at most this much
/// later in a view than in the whole job's list.
const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

impl Pipeline {
    /// How many targets it serves now, at its current version.
    fn target_count(&self) -> TargetCount {
        TargetCount {
            version: self.version,
            targets: self.targets,
        }
    }

    /// A pipeline over `subscription` (whose constructor keeps the discovered label
    /// sets as they are).
    pub fn new(subscription: Subscription<Labels>, relabelling: Relabelling) -> Pipeline {
        Pipeline::over(Some(subscription), relabelling)
    }

    /// With the members (Ready scraper pods) the member views assign targets to, as
    /// `members` says now and whenever it changes.
    pub fn with_members(
        mut self,
        members: tokio::sync::watch::Receiver<Arc<[ArcStr]>>,
    ) -> Pipeline {
        self.members = members.borrow().clone();
        self.members_rx = Some(members);
        self
    }

    /// Publishing its views' lists in `published`, which its jobs read.
    pub fn publishing_to(mut self, published: PublishedViews) -> Pipeline {
        self.published = published;
        self
    }

    /// Publishes the views' changed buckets [`PUBLISH_EVERY`] from now, unless that is
    /// already planned: under a flood, a bucket's list is rebuilt once per period, not
    /// once per change set.
    fn publish_soon(&mut self, ctx: &mut Context<Self>) {
        if self.indexes.is_empty() || self.publish_planned {
            return;
        }
        self.publish_planned = true;
        ctx.run_later(PUBLISH_EVERY, |act, _| {
            act.publish_planned = false;
            act.publish();
        });
    }

    /// Writes the changed buckets' lists of every kept index for the jobs to read, and
    /// forgets the partitions no longer kept.
    fn publish(&mut self) {
        let mut published = match self.published.write() {
            Ok(guard) => guard,
            // A reader that panicked cannot have left the lists half written.
            Err(poisoned) => poisoned.into_inner(),
        };
        published.retain(|kind, _| self.indexes.iter().any(|i| i.kind == *kind));
        for index in &mut self.indexes {
            index.publish(published.entry(index.kind).or_default());
        }
    }

    fn over(subscription: Option<Subscription<Labels>>, relabelling: Relabelling) -> Pipeline {
        Pipeline {
            subscription,
            relabeller: Relabeller::new(Arc::clone(&relabelling.rules)),
            relabelling,
            by_slot: Vec::new(),
            order: BTreeMap::new(),
            list: None,
            targets: 0,
            version: 0,
            readers: Vec::new(),
            taking: false,
            notice_waiting: false,
            scratch: Scratch::default(),
            work: PipelineWork::default(),
            indexes: Vec::new(),
            asked: 0,
            members: Arc::new([]),
            members_rx: None,
            published: PublishedViews::default(),
            publish_planned: false,
        }
    }

    fn take(&mut self, ctx: &mut Context<Self>) {
        let Some(subscription) = &self.subscription else {
            return;
        };
        if self.taking {
            self.notice_waiting = true;
            return;
        }
        self.taking = true;
        ctx.spawn(
            subscription
                .take_changes()
                .into_actor(self)
                .map(|changes, act, ctx| {
                    act.taking = false;
                    act.apply(changes);
                    act.publish_soon(ctx);
                    if std::mem::take(&mut act.notice_waiting) {
                        act.take(ctx);
                    }
                }),
        );
    }

    /// Applies what changed, and tells the readers.
    fn apply(&mut self, changes: TargetChanges<Labels>) {
        self.work.takes += 1;
        let taken = changes.objects.len();
        let reset = changes.reset;
        // After a reset the objects handed out are all there is: what was held is only
        // compared with (a relist that changed nothing relabels nothing), and what is
        // not handed out again is gone.
        let mut previous = Vec::new();
        if reset {
            previous = std::mem::take(&mut self.by_slot);
            self.order.clear();
            self.targets = 0;
            for index in &mut self.indexes {
                index.clear();
            }
        }
        let mut changed = 0;
        for object in changes.objects {
            let slot = object.slot.0 as usize;
            let held = if reset {
                previous.get_mut(slot).and_then(Option::take)
            } else {
                self.by_slot.get_mut(slot).and_then(Option::take)
            };
            let Some((key, discovered)) = object.object else {
                if let Some(held) = held {
                    if !reset {
                        self.unlist(&held);
                    }
                    changed += usize::from(held.groups.is_some());
                }
                continue;
            };
            let held = match held {
                Some(mut held)
                    if held.key == key
                        && self.relabeller.same_targets(&held.discovered, &discovered)
                        && (!self.keeps_node_index()
                            || same_nodes(&held.discovered, &discovered)) =>
                {
                    self.work.objects_unseen += 1;
                    held.discovered = discovered;
                    if reset {
                        self.place(slot, held);
                    } else {
                        // Still listed and counted where it was.
                        self.by_slot[slot] = Some(held);
                    }
                    continue;
                }
                held => held,
            };
            if let Some(held) = &held
                && !reset
            {
                self.unlist(held);
            }
            let (state, differs) = self.relabel(key, discovered, held);
            changed += usize::from(differs);
            self.place(slot, state);
        }
        changed += previous
            .iter()
            .flatten()
            .filter(|h| h.groups.is_some())
            .count();
        if taken == 0 && changed == 0 {
            return;
        }
        if changed > 0 {
            self.work.objects_changed += changed as u64;
            self.list = None;
        }
        self.version += 1;
        // Not `try_send`: a notice lost to a full mailbox would leave a job serving a
        // stale body. There is one per take, however many objects changed.
        for join in &self.readers {
            join.reader.do_send(PipelineChanged {
                index: join.index,
                applied: taken,
                changed,
                oldest: changes.oldest,
                targets: self.target_count(),
            });
        }
        self.readers.retain(|join| join.reader.connected());
    }

    /// The object `key` with its `discovered` targets relabelled and serialized, and
    /// whether its groups differ from those `held` had (or it is another object): the
    /// same bytes keep the groups already in the list, shared.
    fn relabel(
        &mut self,
        key: ObjectKey,
        discovered: Vec<Labels>,
        held: Option<SlotState>,
    ) -> (SlotState, bool) {
        self.work.objects_relabelled += 1;
        let nodes = self.keeps_node_index();
        let groups = self.relabelling.object_groups(
            &mut self.relabeller,
            &discovered,
            &mut self.scratch,
            nodes,
        );
        let groups = (!groups.is_empty()).then_some(groups);
        let (state, differs) = match held {
            Some(held) if held.key == key && held.groups.as_deref() == groups.as_ref() => (
                SlotState {
                    key: held.key,
                    discovered,
                    groups: held.groups,
                    parts: Vec::new(),
                },
                false,
            ),
            held => {
                let differs = held.is_some_and(|h| h.groups.is_some()) || groups.is_some();
                let state = SlotState {
                    key,
                    discovered,
                    groups: groups.map(Arc::new),
                    parts: Vec::new(),
                };
                (state, differs)
            }
        };
        let kinds: Vec<ViewKind> = self.indexes.iter().map(|i| i.kind).collect();
        let parts = kinds
            .into_iter()
            .map(|kind| self.split_scratch(kind, state.groups.as_ref()))
            .collect();
        (SlotState { parts, ..state }, differs)
    }

    /// The parts in partition `kind` of the object whose relabelled targets are in the
    /// scratch and whose groups are `whole`.
    fn split_scratch(&self, kind: ViewKind, whole: Option<&Arc<ObjectGroups>>) -> ObjectParts {
        let Some(whole) = whole else {
            return Box::new([]);
        };
        let object = ObjectTargets {
            targets: &self.scratch.targets,
            nodes: &self.scratch.nodes,
            whole,
            placeholder: &self.relabelling.scrape.job_name,
        };
        split(kind, &object, &self.members)
    }

    /// Takes `held` (just removed from its slot) out of the body order, the count and
    /// the view indexes.
    fn unlist(&mut self, held: &SlotState) {
        if let Some(groups) = &held.groups {
            self.order.remove(&held.key);
            self.targets -= groups.targets();
        }
        for (index, parts) in self.indexes.iter_mut().zip(&held.parts) {
            index.remove(&held.key, parts);
        }
    }

    /// Puts `state` at `slot`, in the body order and the view indexes if it has
    /// targets.
    fn place(&mut self, slot: usize, state: SlotState) {
        if let Some(groups) = &state.groups {
            self.order.insert(state.key.clone(), slot as u32);
            self.targets += groups.targets();
        }
        for (index, parts) in self.indexes.iter_mut().zip(&state.parts) {
            index.insert(&state.key, parts);
        }
        if slot >= self.by_slot.len() {
            self.by_slot.resize_with(slot + 1, || None);
        }
        self.by_slot[slot] = Some(state);
    }

    /// True when a node view is kept: a change of node alone (which the rules may not
    /// see) must then be relabelled and split anew.
    fn keeps_node_index(&self) -> bool {
        self.indexes.iter().any(|i| i.kind == ViewKind::Node)
    }

    /// The position of the index of partition `kind`, built now if it is not kept
    /// (dropping the one asked for least recently when [`MAX_INDEXES`] are kept).
    fn index_for(&mut self, kind: ViewKind) -> usize {
        self.asked += 1;
        let at = match self.indexes.iter().position(|i| i.kind == kind) {
            Some(at) => at,
            None => {
                if self.indexes.len() >= MAX_INDEXES {
                    self.drop_least_asked_index();
                }
                self.indexes.push(ViewIndex::new(kind));
                for state in self.by_slot.iter_mut().flatten() {
                    state.parts.push(Box::new([]));
                }
                let at = self.indexes.len() - 1;
                self.refill(at);
                self.publish();
                at
            }
        };
        self.indexes[at].last_asked = self.asked;
        at
    }

    fn drop_least_asked_index(&mut self) {
        let Some(at) = (0..self.indexes.len()).min_by_key(|&i| self.indexes[i].last_asked) else {
            return;
        };
        self.indexes.remove(at);
        for state in self.by_slot.iter_mut().flatten() {
            if at < state.parts.len() {
                state.parts.remove(at);
            }
        }
    }

    /// Splits every object anew into the index at `at` (just built, or its members
    /// changed): each object relabelled once.
    fn refill(&mut self, at: usize) {
        self.work.indexes_filled += 1;
        let kind = self.indexes[at].kind;
        self.indexes[at].clear();
        let mut slots = std::mem::take(&mut self.by_slot);
        for state in slots.iter_mut().flatten() {
            let parts = match &state.groups {
                None => Box::new([]) as ObjectParts,
                Some(_) => {
                    self.relabelling.object_groups(
                        &mut self.relabeller,
                        &state.discovered,
                        &mut self.scratch,
                        kind == ViewKind::Node,
                    );
                    self.split_scratch(kind, state.groups.as_ref())
                }
            };
            self.indexes[at].insert(&state.key, &parts);
            if let Some(p) = state.parts.get_mut(at) {
                *p = parts;
            }
        }
        self.by_slot = slots;
    }

    fn list(&mut self) -> ObjectGroupsList {
        if let Some(list) = &self.list {
            return Arc::clone(list);
        }
        self.work.lists_built += 1;
        let list: ObjectGroupsList = self
            .order
            .values()
            .filter_map(|&slot| {
                let groups = self.by_slot.get(slot as usize)?.as_ref()?.groups.as_ref()?;
                Some(Arc::clone(groups))
            })
            .collect();
        self.list = Some(Arc::clone(&list));
        list
    }
}

impl Actor for Pipeline {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if let Some(s) = &self.subscription {
            s.on_change(ctx.address().recipient());
        }
        // The first take hands out everything there already is, and starts the log
        // of changes.
        self.take(ctx);
        if let Some(mut rx) = self.members_rx.clone() {
            let me = ctx.address();
            ctx.spawn(
                async move {
                    while rx.changed().await.is_ok() {
                        me.do_send(MembersChanged);
                    }
                }
                .into_actor(self),
            );
        }
    }
}

/// Sent to a pipeline by itself when the members changed: reassigns the member view.
#[derive(Message)]
#[rtype(result = "()")]
struct MembersChanged;

impl Handler<MembersChanged> for Pipeline {
    type Result = ();

    fn handle(&mut self, _: MembersChanged, _: &mut Context<Self>) {
        let Some(rx) = &self.members_rx else {
            return;
        };
        let members = rx.borrow().clone();
        if members == self.members {
            return;
        }
        self.members = members;
        if let Some(at) = self.indexes.iter().position(|i| i.kind == ViewKind::Member) {
            self.refill(at);
            self.publish();
        }
    }
}

/// Sent by a job to a pipeline when a view of partition `0` was asked for: the
/// pipeline builds and publishes the partition's index if it does not keep it, and
/// notes the request (the least recently asked partition is the one dropped when
/// [`MAX_INDEXES`] are kept). Answered once the partition is published.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ViewAsked(pub ViewKind);

impl Handler<ViewAsked> for Pipeline {
    type Result = ();

    fn handle(&mut self, ViewAsked(kind): ViewAsked, _: &mut Context<Self>) {
        self.index_for(kind);
    }
}

/// Targets per bucket of each view index a pipeline keeps.
pub type ViewCounts = Vec<(ViewKind, BTreeMap<Bucket, usize>)>;

/// Sent by a job to a pipeline (for `/metrics` and `/sd?views`): targets per bucket of
/// each kept view index.
#[derive(Message)]
#[rtype(result = "ViewCounts")]
pub struct GetViewCounts;

impl Handler<GetViewCounts> for Pipeline {
    type Result = MessageResult<GetViewCounts>;

    fn handle(&mut self, _: GetViewCounts, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.indexes.iter().map(|i| (i.kind, i.counts())).collect())
    }
}

impl Handler<TargetsUpdated> for Pipeline {
    type Result = ();

    fn handle(&mut self, _: TargetsUpdated, ctx: &mut Context<Self>) {
        self.take(ctx);
    }
}

/// Sent by a pipeline to each of its readers (jobs) after it applied a set of changed
/// objects: now visible in the bodies built from it.
#[derive(Message, Clone, Copy, Debug)]
#[rtype(result = "()")]
pub struct PipelineChanged {
    /// Which of the job's pipelines this is (as it joined).
    pub index: usize,
    /// Objects whose changes were applied (relabelled and serialized).
    pub applied: usize,
    /// Objects whose groups came out different: a body built before is stale.
    pub changed: usize,
    /// When the group received the oldest event among them (`None` after a reset).
    pub oldest: Option<Instant>,
    /// The pipeline's targets now.
    pub targets: TargetCount,
}

/// How many targets a pipeline serves, at which of its versions: of two counts a
/// reader heard, the one of the later version is the current one (notices and the
/// answer to [`Join`] may cross).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct TargetCount {
    /// The pipeline's version (compared first).
    pub version: u64,
    /// Its targets at that version.
    pub targets: usize,
}

/// Sent by a job to a pipeline: tell it of changes from now on. Answered with the
/// pipeline's targets now.
#[derive(Message)]
#[rtype(result = "TargetCount")]
pub struct Join {
    /// The job.
    pub id: ReaderId,
    /// Which of the job's pipelines this one is (carried in each notice).
    pub index: usize,
    /// Where notices go.
    pub reader: Recipient<PipelineChanged>,
}

impl Handler<Join> for Pipeline {
    type Result = MessageResult<Join>;

    fn handle(&mut self, join: Join, _: &mut Context<Self>) -> Self::Result {
        self.readers.push(join);
        MessageResult(self.target_count())
    }
}

/// Sent by a job that stops to a pipeline: no more notices for `id`.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Leave(pub ReaderId);

impl Handler<Leave> for Pipeline {
    type Result = ();

    fn handle(&mut self, Leave(id): Leave, _: &mut Context<Self>) {
        self.readers.retain(|join| join.id != id);
    }
}

/// Sent by a job to a pipeline: its objects' groups in body order. Rebuilt only after
/// a change; otherwise the same shared list.
#[derive(Message)]
#[rtype(result = "ObjectGroupsList")]
pub struct GetList;

impl Handler<GetList> for Pipeline {
    type Result = MessageResult<GetList>;

    fn handle(&mut self, _: GetList, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.list())
    }
}

/// Sent by a job to a pipeline: answer once the discovery has listed everything once.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AwaitPipelineSynced;

impl Handler<AwaitPipelineSynced> for Pipeline {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: AwaitPipelineSynced, _: &mut Context<Self>) -> Self::Result {
        match &self.subscription {
            Some(s) => Box::pin(s.synced()),
            None => Box::pin(async {}),
        }
    }
}

/// Sent to a pipeline (the demo's summary, tests): every target, relabelled with
/// `job` as the job's name. Relabels them all: not for a hot path.
#[derive(Message)]
#[rtype(result = "Vec<Labels>")]
pub struct RelabelAll {
    /// The job's name.
    pub job: String,
}

impl Handler<RelabelAll> for Pipeline {
    type Result = ResponseActFuture<Self, Vec<Labels>>;

    fn handle(&mut self, msg: RelabelAll, _: &mut Context<Self>) -> Self::Result {
        let targets = self.subscription.as_ref().map(|s| s.targets());
        Box::pin(
            async move {
                match targets {
                    Some(t) => t.await,
                    None => Arc::default(),
                }
            }
            .into_actor(self)
            .map(move |discovered, act, _| act.relabelling.targets_for(&msg.job, &discovered)),
        )
    }
}

/// Sent to a pipeline: what it has done so far.
#[derive(Message)]
#[rtype(result = "PipelineWork")]
pub struct GetWork;

impl Handler<GetWork> for Pipeline {
    type Result = MessageResult<GetWork>;

    fn handle(&mut self, _: GetWork, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.work)
    }
}

/// Sent by the job set to a pipeline no job uses any more: stop its subscription (the
/// last one of a group stops the group), then itself.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopPipeline;

impl Handler<StopPipeline> for Pipeline {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: StopPipeline, _: &mut Context<Self>) -> Self::Result {
        let subscription = self.subscription.take();
        Box::pin(
            async move {
                if let Some(s) = subscription {
                    s.stop().await;
                }
            }
            .into_actor(self)
            .map(|(), _, ctx| ctx.stop()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectSlot;
    use crate::relabel::{RelabelConfig, compile_all};
    use crate::sd_output::SdBody;
    use crate::{SlotTargets, TargetChanges};

    fn pipeline() -> Pipeline {
        pipeline_with("[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)}]")
    }

    /// A pipeline of job `pods` with the rules `yaml` (a list of relabel configs), no
    /// discovery behind it: the tests hand it changes themselves.
    pub(super) fn pipeline_with(yaml: &str) -> Pipeline {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
        let rules = Arc::new(compile_all(&configs).expect("rules are valid"));
        Pipeline::over(
            None,
            Relabelling {
                rules,
                shard: Shard::ALL,
                scrape: ScrapeSettings::new("pods"),
            },
        )
    }

    /// Pod `i` with two port targets, its `app` label and an annotation.
    fn pod(i: u32, app: &str, annotation: &str) -> SlotTargets<Labels> {
        let base = Labels::from_pairs([
            (
                "__meta_kubernetes_pod_annotation_seq",
                annotation.to_string(),
            ),
            ("__meta_kubernetes_pod_label_app", app.to_string()),
        ]);
        let targets = (1..=2)
            .map(|port| {
                let mut own = crate::labels::LabelsBuilder::new();
                own.add("__address__", format!("10.0.0.{i}:{port}"));
                base.merged(own)
            })
            .collect();
        SlotTargets {
            slot: ObjectSlot(i),
            object: Some((
                ObjectKey::new(&ArcStr::from("ns"), &ArcStr::from(format!("pod-{i}"))),
                targets,
            )),
        }
    }

    fn changes(reset: bool, objects: Vec<SlotTargets<Labels>>) -> TargetChanges<Labels> {
        TargetChanges {
            reset,
            objects,
            oldest: None,
        }
    }

    fn body(p: &mut Pipeline) -> Vec<u8> {
        SdBody::new("pods", vec![p.list()]).to_vec()
    }

    /// A reset hands out every object again: those whose change the rules cannot see
    /// are kept as they were, those that changed are relabelled, those not handed out
    /// are gone; the body is what relabelling everything anew would give.
    #[test]
    fn a_reset_relabels_only_what_changed_and_drops_what_is_gone() {
        let mut p = pipeline();
        p.apply(changes(true, (0..4).map(|i| pod(i, "web", "1")).collect()));
        assert_eq!(p.work.objects_relabelled, 4);
        assert_eq!(p.targets, 8);
        let first = body(&mut p);

        // The same pods, annotations moved: nothing relabelled, the same list.
        p.apply(changes(true, (0..4).map(|i| pod(i, "web", "2")).collect()));
        assert_eq!((p.work.objects_relabelled, p.work.objects_unseen), (4, 4));
        assert_eq!(p.work.lists_built, 1, "the list built before still serves");
        assert_eq!(body(&mut p), first);

        // Pod 1 relabelled, pod 3 gone.
        p.apply(changes(
            true,
            vec![pod(0, "web", "3"), pod(1, "api", "3"), pod(2, "web", "3")],
        ));
        assert_eq!((p.work.objects_relabelled, p.work.objects_unseen), (5, 6));
        assert_eq!(p.targets, 6);
        let mut fresh = pipeline();
        fresh.apply(changes(
            true,
            vec![pod(0, "web", "3"), pod(1, "api", "3"), pod(2, "web", "3")],
        ));
        assert_eq!(body(&mut p), body(&mut fresh));
    }

    /// Without a reset, a change only the output drops leaves the object where it is;
    /// a change that reaches the targets replaces its groups; a deletion removes them.
    #[test]
    fn changes_apply_to_their_objects_only() {
        let mut p = pipeline();
        p.apply(changes(true, (0..3).map(|i| pod(i, "web", "1")).collect()));
        let before = body(&mut p);
        p.apply(changes(false, vec![pod(1, "web", "2")]));
        assert_eq!(p.work.objects_unseen, 1);
        assert_eq!(body(&mut p), before);
        assert_eq!(p.work.lists_built, 1);
        p.apply(changes(false, vec![pod(1, "db", "2")]));
        assert_eq!(p.work.objects_relabelled, 4);
        assert_ne!(body(&mut p), before);
        p.apply(changes(
            false,
            vec![SlotTargets {
                slot: ObjectSlot(2),
                object: None,
            }],
        ));
        assert_eq!(p.targets, 4);
        assert_eq!(p.work.objects_changed, 3 + 1 + 1);
    }
}

#[cfg(test)]
#[path = "pipeline_views_tests.rs"]
mod views_tests;
