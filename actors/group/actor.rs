//! The group watcher actor.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use tracing::{debug, info};

use super::fanout::ReplyFrom;
use super::key::GroupKey;
use super::labeller::Labeller;
use super::list_assembly::ListAssembly;
use super::store::{Store, Upserted};
use super::subscribers::Subscribers;
use super::variant::{Audience, TargetVariant, VariantId, Variants};
use crate::api::{ResourceUrl, resource_urls};
use crate::backlog::Backlog;
use crate::config::EngineOptions;
use crate::flusher::FlushPace;
use crate::messages::{AwaitSyncOrFailure, GetUrlStatus, UrlStatusChanged, WatchUrlStatus};
use crate::messages::{
    FlushDirty, FlushReport, FlusherMembership, StopWatcher, Subscribe, TargetChange, Unsubscribe,
    UrlId, WatcherOutput,
};
use crate::metrics::METRICS;
use crate::model::{Object, ObjectKey, Role};
use crate::registry::Registry;
use crate::targets::Semantics;
use crate::url_watcher::{UrlError, UrlStatus, UrlWatcher, UrlWatcherSetup};
use crate::watch::WatchEvent;
use tokio::sync::oneshot;

/// Everything a group needs to start.
pub struct GroupSetup {
    /// Unique id of this group.
    pub id: u64,
    /// Its key.
    pub key: GroupKey,
    /// Engine timings and limits.
    pub options: EngineOptions,
    /// TLS settings for its watchers.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Starts a URL watcher and returns how to stop it.
    pub start_watcher: WatcherFactory,
    /// The dirty flusher, to join and leave.
    pub flusher: Recipient<FlusherMembership>,
    /// The registry, to leave when stopping.
    pub registry: Arc<Registry>,
}

/// Starts URL watchers: on the engine's watcher arbiter in production
/// ([`watchers_on`]); a recorder in message-level tests.
pub type WatcherFactory = Arc<dyn Fn(UrlWatcherSetup) -> WatcherLink + Send + Sync>;

/// How a group reaches one of its URL watchers.
#[derive(Clone, Debug)]
pub struct WatcherLink {
    /// Stops it (the group is stopping).
    pub stop: Recipient<StopWatcher>,
}

impl WatcherLink {
    /// The link to a running actor that handles [`StopWatcher`].
    pub fn to<A>(addr: &Addr<A>) -> WatcherLink
    where
        A: Actor<Context = Context<A>> + Handler<StopWatcher>,
    {
        WatcherLink {
            stop: addr.clone().recipient(),
        }
    }
}

/// The factory that starts real [`UrlWatcher`]s on `arbiter`.
pub fn watchers_on(arbiter: ArbiterHandle) -> WatcherFactory {
    Arc::new(move |setup| {
        WatcherLink::to(&UrlWatcher::start_in_arbiter(&arbiter, move |_| {
            UrlWatcher::new(setup)
        }))
    })
}

struct UrlSlot {
    url: ResourceUrl,
    watcher: WatcherLink,
    listed: bool,
    /// Its watcher's last reported state.
    status: Option<UrlStatus>,
}

/// The group watcher. See the module documentation.
pub struct GroupWatcher {
    setup: GroupSetup,
    /// The objects, their targets and who looked up whom.
    store: Store,
    /// The variants asked for, and the targets computed for them.
    labeller: Labeller,
    urls: Vec<UrlSlot>,
    /// The subscribers, registered or pending, and those waiting on the URLs.
    subscribers: Subscribers,
    /// The LISTs arriving in parts, and how each is applied.
    lists: ListAssembly,
    /// Whether dirty objects are flushed soon after a change or at the flusher's tick.
    pace: FlushPace,
    span: tracing::Span,
}

/// Changes for each variant of an [`Audience`], in its order.
type PerVariant = smallvec::SmallVec<[Vec<TargetChange>; 1]>;

/// Sent by a group to itself: serve the pending registrations in one pass.
#[derive(Message)]
#[rtype(result = "()")]
struct RegisterPending;

impl GroupWatcher {
    /// A group; it starts URL watchers as subscribers arrive.
    pub fn new(setup: GroupSetup) -> GroupWatcher {
        let span =
            tracing::info_span!("group", id = setup.id, api_server = %setup.key.endpoint.base_url);
        let store = Store::new(METRICS.api_server(&setup.key.endpoint.base_url));
        let labeller = Labeller::new(setup.key.semantics);
        let pace = FlushPace::new(setup.options.flush_soon_delay, setup.options.flush_soon_max);
        let subscribers = Subscribers::new(setup.options.subscriber_in_flight);
        GroupWatcher {
            pace,
            setup,
            store,
            labeller,
            urls: Vec::new(),
            subscribers,
            lists: ListAssembly::default(),
            span,
        }
    }

    /// The roles `wants`' targets are built from.
    fn watched_roles(&self, wants: &TargetVariant) -> Vec<Role> {
        wants.watched_roles(self.setup.key.semantics)
    }

    /// The variants of `role` with subscribers, to compute its objects' targets for.
    fn audience(&self, role: Role) -> Audience {
        self.labeller.audience(role)
    }

    /// Starts the URL watchers that `wants`' targets need and are not running yet.
    fn ensure_watchers(&mut self, wants: &TargetVariant, ctx: &mut Context<Self>) {
        let key = &self.setup.key;
        for watched in wants.watched_roles(key.semantics) {
            for url in resource_urls(watched, &key.namespaces, &key.selectors) {
                if self.urls.iter().any(|u| u.url == url) {
                    continue;
                }
                let id = UrlId(u32::try_from(self.urls.len()).unwrap_or(u32::MAX));
                let setup = UrlWatcherSetup {
                    id,
                    url: url.clone(),
                    endpoint: key.endpoint.clone(),
                    tls: self.setup.tls.clone(),
                    options: self.setup.options.clone(),
                    group: ctx.address().recipient(),
                    group_id: self.setup.id,
                };
                let watcher = (self.setup.start_watcher)(setup);
                debug!(parent: &self.span, %url, "url watcher started");
                self.urls.push(UrlSlot {
                    url,
                    watcher,
                    listed: false,
                    status: None,
                });
            }
        }
    }

    /// The state of every URL `wants` needs (those that reported one).
    fn url_statuses(&self, wants: &TargetVariant) -> Vec<UrlStatus> {
        url_statuses(&self.urls, self.setup.key.semantics, wants)
    }

    /// A URL's state changed: tells the subscriptions whose variant needs it, and
    /// answers those waiting for a sync that a configuration problem now rules out.
    fn url_status_changed(&mut self, url: UrlId, status: UrlStatus) {
        let Some(slot) = self.urls.get_mut(url.0 as usize) else {
            return;
        };
        let url_role = slot.url.role;
        let problem = status.last_error.clone().filter(|e| e.configuration);
        slot.status = Some(status);
        let semantics = self.setup.key.semantics;
        let needs = |wants: &TargetVariant| wants.watched_roles(semantics).contains(&url_role);
        let (urls, variants) = (&self.urls, self.labeller.variants());
        let waiting = self.subscribers.waiting();
        waiting.status_changed(needs, |wants| url_statuses(urls, semantics, wants));
        if let Some(problem) = problem {
            waiting.fail(&problem, |wants| {
                needs(wants) && !is_synced(variants, wants)
            });
        }
    }

    /// Answers the sync waiters of variants that are synced now.
    fn answer_sync_waiters(&mut self) {
        let variants = self.labeller.variants();
        let waiting = self.subscribers.waiting();
        waiting.answer_synced(|wants| is_synced(variants, wants));
    }

    /// Whether every URL `wants` needs has been listed once.
    fn listed(&self, wants: &TargetVariant) -> bool {
        let needed = self.watched_roles(wants);
        self.urls
            .iter()
            .filter(|u| needed.contains(&u.url.role))
            .all(|u| u.listed)
    }

    /// Sends `changes` to every subscriber of `variant` of `role` (nothing if empty,
    /// unless `force`), whose events the group received at `received`.
    fn push(
        &mut self,
        (role, variant): (Role, VariantId),
        changes: Vec<TargetChange>,
        force: bool,
        received: Instant,
    ) {
        if changes.is_empty() && !force {
            return;
        }
        METRICS.engine.target_updates.add(changes.len() as u64);
        let synced = self.labeller.variants().synced(variant);
        let bound = Backlog::bound(self.store.len(role));
        let batch: Arc<[TargetChange]> = changes.into();
        self.subscribers
            .push((role, variant), &batch, synced, received, bound);
    }

    /// Sends each variant of `audience` its changes (`changes`, in the same order).
    fn push_each(
        &mut self,
        role: Role,
        audience: &Audience,
        changes: PerVariant,
        received: Instant,
    ) {
        for ((variant, _), changes) in audience.iter().zip(changes) {
            self.push((role, *variant), changes, false, received);
        }
    }

    /// Stores an object from `url` and computes its targets for each variant of
    /// `audience`, adding what changed to that variant's `changes`.
    fn apply_upsert(
        &mut self,
        url: UrlId,
        object: Object,
        audience: &Audience,
        changes: &mut [Vec<TargetChange>],
    ) {
        let role = object.role();
        let key = object.key();
        // A replaced object leaves its entry without targets: with no subscriber to
        // compute them for now, a later one's snapshot computes them afresh.
        let (upserted, previous) = self.labeller.upsert(&mut self.store, url, object);
        if upserted == Upserted::Unchanged {
            return;
        }
        for ((variant, options), changes) in audience.iter().zip(changes) {
            let (store, previous) = (&mut self.store, previous.as_ref());
            if let Some(change) = (self.labeller)
                .compute_targets_after(store, role, &key, *variant, *options, previous)
            {
                changes.push(change);
            }
        }
    }

    /// Per variant of `audience`, an empty list of changes.
    fn no_changes(audience: &Audience) -> PerVariant {
        audience.iter().map(|_| Vec::new()).collect()
    }

    fn apply_delete(
        &mut self,
        role: Role,
        key: ObjectKey,
        audience: &Audience,
        changes: &mut [Vec<TargetChange>],
    ) {
        let Some(entry) = self.labeller.remove(&mut self.store, role, &key) else {
            return;
        };
        for ((variant, _), changes) in audience.iter().zip(changes) {
            if entry.targets(*variant).is_some_and(|t| !t.is_empty()) {
                changes.push(TargetChange {
                    slot: entry.slot,
                    key: key.clone(),
                    targets: None,
                });
            }
        }
    }

    /// The variants whose dirty objects a flush recomputes: those whose every URL has
    /// been listed. Until then a variant's dependencies are still arriving (a 100k-pod
    /// list comes in parts), and recomputing its objects at every tick would redo them
    /// once per tick; the flush that completes its sync computes them once.
    fn ready_variants(&self) -> Vec<VariantId> {
        self.labeller
            .variants()
            .iter()
            .filter(|v| v.synced || self.listed(&v.wants))
            .map(|v| v.id)
            .collect()
    }

    /// Flushes dirty objects ([`GroupWatcher::flush`]) and counts it.
    fn flush_counted(&mut self) -> FlushReport {
        let start = Instant::now();
        let recomputed = self.flush();
        let took = start.elapsed();
        METRICS.engine.flushes.inc();
        METRICS.engine.flush_recomputed.add(recomputed as u64);
        FlushReport { recomputed, took }
    }

    /// After a change: schedules a flush of its dirty objects soon, if the pace says so
    /// (few dirty, not under load); otherwise they wait for the flusher's tick.
    fn flush_soon_if_few(&mut self, ctx: &mut Context<Self>) {
        if let Some(delay) = self.pace.after_change(self.labeller.dirty_len()) {
            ctx.run_later(delay, |act, _| {
                if act.pace.due(act.labeller.dirty_len()) {
                    let report = act.flush_counted();
                    act.pace.flushed(report.recomputed, report.took);
                }
                act.pace.settle();
            });
        }
    }

    /// Recomputes dirty objects of ready variants and pushes what changed; returns how
    /// many were recomputed. Dirty objects of variants still syncing stay dirty.
    fn flush(&mut self) -> usize {
        let received = Instant::now();
        let ready = self.ready_variants();
        let flushed = self.labeller.flush(&mut self.store, &ready);
        for (to, changes) in flushed.changes {
            self.push(to, changes, false, received);
        }
        flushed.recomputed
    }

    /// Marks variants synced whose URLs have all been listed; returns them, so their
    /// subscribers can be told.
    fn update_synced(&mut self) -> Vec<(Role, VariantId)> {
        let newly: Vec<(Role, VariantId)> = (self.labeller.variants())
            .iter()
            .filter(|v| !v.synced && self.listed(&v.wants))
            .map(|v| (v.wants.role, v.id))
            .collect();
        for (role, id) in &newly {
            if let Some(v) = self.labeller.variants_mut().get_mut(*id) {
                v.synced = true;
                let attach = v.wants.attach;
                let objects = self.store.len(*role);
                info!(parent: &self.span, %role, ?attach, objects, "synced");
            }
        }
        newly
    }
}

impl Actor for GroupWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // Watchers are throttled by their own in-flight window; this only has to hold
        // every watcher's window plus the control messages.
        ctx.set_mailbox_capacity(4096);
        if let Some(answered) = self.subscribers.answered() {
            ctx.add_stream(answered);
        }
        METRICS.engine.groups.inc();
        self.setup.flusher.do_send(FlusherMembership::Join(
            self.setup.id,
            ctx.address().recipient(),
        ));
        info!(parent: &self.span, "group started");
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        for u in &self.urls {
            u.watcher.stop.do_send(StopWatcher);
        }
        self.store.clear();
        self.setup.registry.remove(&self.setup.key, self.setup.id);
        self.setup
            .flusher
            .do_send(FlusherMembership::Leave(self.setup.id));
        METRICS.engine.groups.dec();
        info!(parent: &self.span, "group stopped");
    }
}

impl Handler<WatcherOutput> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, output: WatcherOutput, ctx: &mut Context<Self>) {
        let received = Instant::now();
        match output {
            WatcherOutput::Deltas { url, deltas } => self.on_deltas(url, deltas, received, ctx),
            WatcherOutput::ListPart {
                url,
                objects,
                first,
            } => self.on_list_part(url, objects, first, received, ctx),
            WatcherOutput::ListAbandoned { url } => self.on_list_abandoned(url, received, ctx),
            WatcherOutput::Status { url, status } => self.url_status_changed(url, status),
            WatcherOutput::Relisted { url, objects } => self.on_relisted(url, objects, received),
        }
    }
}

/// The handling of each [`WatcherOutput`].
impl GroupWatcher {
    /// Watch events: applied to the cache, their targets pushed.
    fn on_deltas(
        &mut self,
        url: UrlId,
        deltas: Vec<WatchEvent>,
        received: Instant,
        ctx: &mut Context<Self>,
    ) {
        let Some(role) = self.urls.get(url.0 as usize).map(|u| u.url.role) else {
            return;
        };
        let audience = self.audience(role);
        let mut changes = Self::no_changes(&audience);
        for event in deltas {
            match event {
                WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                    self.apply_upsert(url, object, &audience, &mut changes)
                }
                WatchEvent::Deleted(object) => {
                    self.apply_delete(role, object.key(), &audience, &mut changes)
                }
                // The watcher acts on these itself and never hands them on.
                WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {}
            }
        }
        self.push_each(role, &audience, changes, received);
        self.flush_soon_if_few(ctx);
    }

    /// A part of a LIST: applied at once on a URL's first list, held until the end on
    /// a relist (so that a relist is applied whole or not at all).
    fn on_list_part(
        &mut self,
        url: UrlId,
        objects: Vec<Object>,
        first: bool,
        received: Instant,
        ctx: &mut Context<Self>,
    ) {
        let Some(slot) = self.urls.get(url.0 as usize) else {
            return;
        };
        let (role, relist) = (slot.url.role, slot.listed);
        if let Some(objects) = self.lists.part(url, objects, first, relist) {
            let audience = self.audience(role);
            let mut changes = Self::no_changes(&audience);
            for object in objects {
                self.apply_upsert(url, object, &audience, &mut changes);
            }
            self.push_each(role, &audience, changes, received);
        }
        self.flush_soon_if_few(ctx);
    }

    /// A LIST that failed midway.
    fn on_list_abandoned(&mut self, url: UrlId, received: Instant, ctx: &mut Context<Self>) {
        let Some(slot) = self.urls.get(url.0 as usize) else {
            return;
        };
        let role = slot.url.role;
        if self.lists.abandoned(url) {
            // A first LIST that failed midway: what its parts brought goes.
            let audience = self.audience(role);
            let mut changes = Self::no_changes(&audience);
            for key in self.store.keys_of_url(role, url) {
                self.apply_delete(role, key, &audience, &mut changes);
            }
            self.push_each(role, &audience, changes, received);
            self.flush_soon_if_few(ctx);
        }
    }

    /// A complete LIST: what it did not list is gone; roles that became synced are told.
    fn on_relisted(&mut self, url: UrlId, objects: Vec<Object>, received: Instant) {
        let Some(role) = self.urls.get(url.0 as usize).map(|u| u.url.role) else {
            return;
        };
        let audience = self.audience(role);
        let cached = self.store.keys_of_url(role, url);
        let complete = self.lists.end(url, objects, cached);
        let mut changes = Self::no_changes(&audience);
        for object in complete.upserts {
            self.apply_upsert(url, object, &audience, &mut changes);
        }
        for key in complete.vanished {
            self.apply_delete(role, key, &audience, &mut changes);
        }
        if let Some(slot) = self.urls.get_mut(url.0 as usize) {
            slot.listed = true;
        }
        // A dependency that was listed after its dependents fixes their targets
        // now, not at the next tick: the first synced view is complete. (Not a
        // sign of load for the pace: a relist is a one-off.)
        self.flush_counted();
        let newly_synced = self.update_synced();
        self.answer_sync_waiters();
        for ((variant, _), changes) in audience.iter().zip(changes) {
            let newly = newly_synced.contains(&(role, *variant));
            self.push((role, *variant), changes, newly, received);
        }
        // The other variants that synced now are told so, with no change.
        for to in newly_synced {
            if !audience.iter().any(|(variant, _)| to == (role, *variant)) {
                self.push(to, Vec::new(), true, received);
            }
        }
    }
}

impl Handler<Subscribe> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) {
        self.ensure_watchers(&msg.variant, ctx);
        if self.subscribers.queue(msg.variant, msg.link) {
            // Handled after the messages already queued: subscribers that arrive
            // together are registered together, with one pass over the cache.
            ctx.notify(RegisterPending);
        }
    }
}

impl Handler<RegisterPending> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, _: RegisterPending, _: &mut Context<Self>) {
        let pending = self.subscribers.take_pending();
        let mut snapshots: HashMap<VariantId, Arc<[TargetChange]>> = HashMap::new();
        for (wants, link) in pending {
            let variant = self.labeller.variants_mut().add(wants);
            let snapshot = match snapshots.get(&variant) {
                Some(s) => Arc::clone(s),
                None => {
                    let options = wants.target_options(self.setup.key.semantics);
                    let store = &mut self.store;
                    let s = (self.labeller).snapshot(store, wants.role, variant, options);
                    snapshots.insert(variant, Arc::clone(&s));
                    s
                }
            };
            let listed = self.listed(&wants) && !self.urls.is_empty();
            let synced = match self.labeller.variants_mut().get_mut(variant) {
                Some(v) => {
                    v.synced |= listed;
                    v.synced
                }
                None => false,
            };
            self.subscribers
                .add((wants.role, variant), link, snapshot, synced);
        }
        // A variant whose URLs were all listed for others is synced as it registers.
        self.answer_sync_waiters();
        debug!(parent: &self.span, variants = snapshots.len(), "registered subscribers");
    }
}

impl Handler<WatchUrlStatus> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, msg: WatchUrlStatus, _: &mut Context<Self>) {
        msg.recipient.do_send(UrlStatusChanged {
            subscriber: msg.subscriber,
            urls: self.url_statuses(&msg.variant),
        });
        let waiting = self.subscribers.waiting();
        waiting.watch_status(msg.subscriber, msg.variant, msg.recipient);
    }
}

impl Handler<GetUrlStatus> for GroupWatcher {
    type Result = MessageResult<GetUrlStatus>;

    fn handle(&mut self, msg: GetUrlStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.url_statuses(&msg.variant))
    }
}

impl Handler<AwaitSyncOrFailure> for GroupWatcher {
    type Result = ResponseFuture<Result<(), UrlError>>;

    fn handle(&mut self, msg: AwaitSyncOrFailure, _: &mut Context<Self>) -> Self::Result {
        let wants = msg.variant;
        if is_synced(self.labeller.variants(), &wants) {
            return Box::pin(async { Ok(()) });
        }
        let needed = self.watched_roles(&wants);
        let failing = self
            .urls
            .iter()
            .filter(|u| needed.contains(&u.url.role))
            .filter_map(|u| u.status.as_ref()?.last_error.clone())
            .find(|e| e.configuration);
        if let Some(problem) = failing {
            return Box::pin(async move { Err(problem) });
        }
        let (tx, rx) = oneshot::channel();
        self.subscribers.waiting().await_sync(wants, tx);
        Box::pin(async move {
            match rx.await {
                Ok(answer) => answer,
                // The group stopped first, so the variant never syncs: the
                // subscription's own deadline tells.
                Err(_) => std::future::pending().await,
            }
        })
    }
}

impl Handler<Unsubscribe> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, Unsubscribe(id): Unsubscribe, ctx: &mut Context<Self>) {
        self.subscribers.remove(id);
        self.drop_unwanted_variants();
        if self.subscribers.is_empty() {
            // The last subscriber left: stop the group, its watchers and connections.
            ctx.stop();
        }
    }
}

impl GroupWatcher {
    /// Forgets the variants no subscriber asks for any more, and their targets (the
    /// memory comes back). The URLs they needed are still watched: the objects stay
    /// cached for a subscriber that comes back, until the group stops.
    fn drop_unwanted_variants(&mut self) {
        let unwanted: Vec<(Role, VariantId)> = (self.labeller.variants())
            .iter()
            .filter(|v| !self.subscribers.want(v.wants.role, v.id))
            .map(|v| (v.wants.role, v.id))
            .collect();
        for (role, variant) in unwanted {
            self.labeller.variants_mut().remove(variant);
            self.labeller.drop_variant(&mut self.store, role, variant);
            debug!(parent: &self.span, %role, variant = variant.0, "variant dropped");
        }
    }
}

impl StreamHandler<ReplyFrom> for GroupWatcher {
    fn handle(&mut self, from: ReplyFrom, _: &mut Context<Self>) {
        let variants = self.labeller.variants();
        self.subscribers.replied(from, |v| variants.synced(v));
    }
}

impl Handler<FlushDirty> for GroupWatcher {
    type Result = FlushReport;

    fn handle(&mut self, _: FlushDirty, _: &mut Context<Self>) -> FlushReport {
        let start = Instant::now();
        let mut report = self.flush_counted();
        self.pace.flushed(report.recomputed, report.took);
        report.took = start.elapsed();
        report
    }
}

/// Whether subscribers ask for `wants` and it has synced.
fn is_synced(variants: &Variants, wants: &TargetVariant) -> bool {
    variants.find(wants).is_some_and(|v| v.synced)
}

/// The state of every URL in `urls` that `wants` needs (those that reported one).
fn url_statuses(urls: &[UrlSlot], semantics: Semantics, wants: &TargetVariant) -> Vec<UrlStatus> {
    let needed = wants.watched_roles(semantics);
    urls.iter()
        .filter(|u| needed.contains(&u.url.role))
        .filter_map(|u| u.status.clone())
        .collect()
}

#[cfg(test)]
#[path = "actor_tests.rs"]
mod actor_tests;
