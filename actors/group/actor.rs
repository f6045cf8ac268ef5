//! The group watcher actor: the composition of the group's plain parts (its [`Urls`],
//! [`ListAssembly`], [`Store`], [`Labeller`] and [`Subscribers`]) and the handlers that
//! route each message through them; it adds the mailbox, the flush pace and the logs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use tracing::{debug, info};

use super::fanout::ReplyFrom;
use super::labeller::{Changes, Labeller};
use super::list_assembly::ListAssembly;
use super::setup::GroupSetup;
use super::store::Store;
use super::subscribers::Subscribers;
use super::urls::Urls;
use super::variant::{TargetVariant, VariantId};
use crate::backlog::Backlog;
use crate::flusher::FlushPace;
use crate::messages::{AwaitSyncOrFailure, GetUrlStatus, WatchUrlStatus};
use crate::messages::{
    FlushDirty, FlushReport, FlusherMembership, StopWatcher, Subscribe, TargetChange, Unsubscribe,
    UrlId, WatcherOutput,
};
use crate::model::{Object, Role};
use crate::url_watcher::UrlError;
use crate::wire::json::WatchEvent;

/// The group watcher. See the module documentation.
pub struct GroupWatcher {
    setup: GroupSetup,
    /// The objects, their targets and who looked up whom.
    store: Store,
    /// The variants asked for, and the targets computed for them.
    labeller: Labeller,
    /// The URLs watched, and their state.
    urls: Urls,
    /// The subscribers, registered or pending, and those waiting on the URLs.
    subscribers: Subscribers,
    /// The LISTs arriving in parts, and how each is applied.
    lists: ListAssembly,
    /// Whether dirty objects are flushed soon after a change or at the flusher's tick.
    pace: FlushPace,
    span: tracing::Span,
}

/// Sent by a group to itself: serve the pending registrations in one pass.
#[derive(Message)]
#[rtype(result = "()")]
struct RegisterPending;

impl GroupWatcher {
    /// A group; it starts URL watchers as subscribers arrive.
    pub fn new(setup: GroupSetup) -> GroupWatcher {
        let span =
            tracing::info_span!("group", id = setup.id, api_server = %setup.key.endpoint.base_url);
        let (options, semantics) = (&setup.options, setup.key.semantics);
        GroupWatcher {
            store: Store::new(setup.metrics.api_server(&setup.key.endpoint.base_url)),
            labeller: Labeller::new(semantics),
            urls: Urls::new(semantics),
            subscribers: Subscribers::new(options.subscriber_in_flight, Arc::clone(&setup.metrics)),
            lists: ListAssembly::default(),
            pace: FlushPace::new(options.flush_soon_delay, options.flush_soon_max),
            setup,
            span,
        }
    }

    /// Answers the sync waiters of variants that are synced now.
    fn answer_sync_waiters(&mut self) {
        let variants = self.labeller.variants();
        self.urls.answer_synced(|wants| variants.is_synced(wants));
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
        self.setup
            .metrics
            .engine
            .target_updates
            .add(changes.len() as u64);
        let synced = self.labeller.variants().synced(variant);
        let bound = Backlog::bound(self.store.len(role));
        let batch: Arc<[TargetChange]> = changes.into();
        self.subscribers
            .push((role, variant), &batch, synced, received, bound);
    }

    /// Makes one batch of changes to `role`'s objects with `apply`, and sends each of
    /// its variants its changes.
    fn apply(
        &mut self,
        role: Role,
        received: Instant,
        apply: impl FnOnce(&mut Labeller, &mut Store, &mut Changes),
    ) {
        let urls = &self.urls;
        let mut changes = (self.labeller).changes(role, |wants| urls.others_listed(wants));
        apply(&mut self.labeller, &mut self.store, &mut changes);
        for (to, batch, force) in changes.into_batches() {
            self.push(to, batch, force, received);
        }
    }

    /// Recomputes the dirty objects of ready variants, pushes what changed and counts
    /// it. Dirty objects of variants still syncing stay dirty.
    fn flush_counted(&mut self) -> FlushReport {
        let start = Instant::now();
        let urls = &self.urls;
        let ready = self.labeller.ready(|wants| urls.listed(wants));
        let flushed = self.labeller.flush(&mut self.store, &ready);
        for (to, changes) in flushed.changes {
            self.push(to, changes, false, start);
        }
        let (recomputed, took) = (flushed.recomputed, start.elapsed());
        self.setup.metrics.engine.flushes.inc();
        self.setup
            .metrics
            .engine
            .flush_recomputed
            .add(recomputed as u64);
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

    /// Forgets the variants no subscriber asks for any more, and their targets (the
    /// memory comes back). The URLs they needed are still watched: the objects stay
    /// cached for a subscriber that comes back, until the group stops.
    fn drop_unwanted_variants(&mut self) {
        let subscribers = &self.subscribers;
        let wanted = |role, variant| subscribers.want(role, variant);
        for (role, variant) in self.labeller.drop_unwanted(&mut self.store, wanted) {
            debug!(parent: &self.span, %role, variant = variant.0, "variant dropped");
        }
    }

    /// Watch events: applied to the store, their targets pushed.
    fn on_deltas(
        &mut self,
        url: UrlId,
        deltas: Vec<WatchEvent>,
        received: Instant,
        ctx: &mut Context<Self>,
    ) {
        let Some((role, _)) = self.urls.get(url) else {
            return;
        };
        self.apply(role, received, |labeller, store, changes| {
            for event in deltas {
                labeller.apply_event(store, url, event, changes);
            }
        });
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
        let Some((role, relist)) = self.urls.get(url) else {
            return;
        };
        if let Some(objects) = self.lists.part(url, objects, first, relist) {
            self.apply(role, received, |labeller, store, changes| {
                for object in objects {
                    labeller.apply_upsert(store, url, object, changes);
                }
            });
        }
        self.flush_soon_if_few(ctx);
    }

    /// A LIST that failed midway.
    fn on_list_abandoned(&mut self, url: UrlId, received: Instant, ctx: &mut Context<Self>) {
        let Some((role, _)) = self.urls.get(url) else {
            return;
        };
        if self.lists.abandoned(url) {
            // A first LIST that failed midway: what its parts brought goes.
            self.apply(role, received, |labeller, store, changes| {
                for key in store.keys_of_url(role, url) {
                    labeller.apply_delete(store, key, changes);
                }
            });
            self.flush_soon_if_few(ctx);
        }
    }

    /// A complete LIST: what it did not list is gone; roles that became synced are told.
    fn on_relisted(&mut self, url: UrlId, objects: Vec<Object>, received: Instant) {
        let Some((role, _)) = self.urls.get(url) else {
            return;
        };
        let (store, labeller) = (&mut self.store, &mut self.labeller);
        let complete = self.lists.end(url, objects, store.keys_of_url(role, url));
        let urls = &self.urls;
        let mut changes = labeller.changes(role, |wants| urls.others_listed(wants));
        for object in complete.upserts {
            labeller.apply_upsert(store, url, object, &mut changes);
        }
        for key in complete.vanished {
            labeller.apply_delete(store, key, &mut changes);
        }
        self.urls.set_listed(url);
        // A dependency that was listed after its dependents fixes their targets
        // now, not at the next tick: the first synced view is complete. (Not a
        // sign of load for the pace: a relist is a one-off.)
        self.flush_counted();
        let urls = &self.urls;
        let listed = |wants: &TargetVariant| urls.listed(wants);
        let newly_synced = (self.labeller).mark_synced(&self.store, listed, &self.span);
        self.answer_sync_waiters();
        for (to, batch, force) in changes.with_synced(newly_synced) {
            self.push(to, batch, force, received);
        }
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
        self.setup.metrics.engine.groups.inc();
        self.setup.flusher.do_send(FlusherMembership::Join(
            self.setup.id,
            ctx.address().recipient(),
        ));
        info!(parent: &self.span, "group started");
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        for watcher in self.urls.watchers() {
            watcher.stop.do_send(StopWatcher);
        }
        self.store.clear();
        self.setup.registry.remove(&self.setup.key, self.setup.id);
        self.setup
            .flusher
            .do_send(FlusherMembership::Leave(self.setup.id));
        self.setup.metrics.engine.groups.dec();
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
            WatcherOutput::Status { url, status } => {
                let variants = self.labeller.variants();
                (self.urls).status_changed(url, status, |wants| variants.is_synced(wants));
            }
            WatcherOutput::Relisted { url, objects } => self.on_relisted(url, objects, received),
        }
    }
}

impl Handler<Subscribe> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, msg: Subscribe, ctx: &mut Context<Self>) {
        // The URL watchers its targets need that are not running yet start.
        let (setup, span) = (&self.setup, &self.span);
        self.urls.ensure(&msg.variant, &setup.key, |id, url| {
            let watcher = setup.start_url_watcher(id, url, ctx.address().recipient());
            debug!(parent: span, %url, "url watcher started");
            watcher
        });
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
        let mut snapshots = HashMap::new();
        for (wants, link) in pending {
            let listed = self.urls.listed(&wants) && !self.urls.is_empty();
            let store = &mut self.store;
            let (variant, snapshot, synced) =
                (self.labeller).admit(store, wants, listed, &mut snapshots);
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
        (self.urls).watch_status(msg.subscriber, msg.variant, msg.recipient);
    }
}

impl Handler<GetUrlStatus> for GroupWatcher {
    type Result = MessageResult<GetUrlStatus>;

    fn handle(&mut self, msg: GetUrlStatus, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.urls.statuses(&msg.variant))
    }
}

impl Handler<AwaitSyncOrFailure> for GroupWatcher {
    type Result = ResponseFuture<Result<(), UrlError>>;

    fn handle(&mut self, msg: AwaitSyncOrFailure, _: &mut Context<Self>) -> Self::Result {
        let synced = self.labeller.variants().is_synced(&msg.variant);
        self.urls.await_sync(msg.variant, synced)
    }
}

impl Handler<Unsubscribe> for GroupWatcher {
    type Result = ();

    fn handle(&mut self, Unsubscribe(id): Unsubscribe, ctx: &mut Context<Self>) {
        self.subscribers.remove(id);
        self.urls.forget(id);
        self.drop_unwanted_variants();
        if self.subscribers.is_empty() {
            // The last subscriber left: stop the group, its watchers and connections.
            ctx.stop();
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

#[cfg(test)]
#[path = "actor_tests.rs"]
mod actor_tests;
