//! The job actor: the subscriber of one discovery (one `kubernetes_sd_configs` entry)
//! on the service path. The group pushes it its targets' changes ([`TargetsPush`]); it
//! relabels and serializes each changed
//! object as it arrives ([`JobState`]) and, after a message that changed something,
//! publishes a [`crate::service::jobs::snapshot::JobSnapshot`] in its [`SnapshotCell`], which HTTP
//! handlers and the file SD writer read without a message. The event's walk ends here:
//! watcher → group → job actor.
//!
//! Publishing is paced: at once when the last snapshot is at least `publish_every`
//! old, else once at the end of that interval for every change in it. A snapshot
//! shares the body's and the views' persistent maps, so the first change after a
//! publish copies each path it touches; pacing lets a burst of changes copy each path
//! once per interval instead of once per batch. HTTP SD consumers refresh every few
//! seconds or minutes, so a fraction of a second of delay is not seen.
//!
//! Jobs whose discovery and rules are the same and whose rules never read `job` share
//! one actor (the `job` label is a hole in the bytes each job fills with its name):
//! twenty such jobs relabel each change once.
//!
//! Its replies to the group's batches are the group's flow control: it does nothing
//! for it but handle them.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::info;

use crate::ActorSubscription;
use crate::actors::backlog::{SlotSet, for_latest_per_slot};
use crate::actors::messages::{Push, TargetsPush};
use crate::actors::subscriber::MAILBOX_CAPACITY;
use crate::labels::Labels;
use crate::service::fleet::members::Members;
use crate::service::jobs::background::run_in_background_then;
use crate::service::jobs::job_state::JobState;
use crate::service::jobs::relabelling::Relabelling;
use crate::service::jobs::snapshot::{JobSnapshot, JobStats, SnapshotCell};
use crate::service::views::ViewKind;

/// The actor. See the module documentation.
pub struct JobActor {
    /// The jobs it serves, for logs.
    name: String,
    state: JobState,
    cell: Arc<SnapshotCell>,
    synced: bool,
    stats: JobStats,
    /// Kept between catch-ups, so that reading a backlog does not allocate.
    seen: SlotSet,
    /// Its registration with the group; set once subscribed.
    subscription: Option<ActorSubscription>,
    /// Where the members' changes come from.
    members: Option<watch::Receiver<Members>>,
    /// The members its snapshots name: the member views asked for are assigned by
    /// them.
    fleet: Members,
    /// The members heard last, published once the views are assigned by them.
    wanted: Members,
    /// True while the member views are assigned by `wanted` in the background.
    assigning: bool,
    /// The least time between two snapshots while changes keep coming.
    publish_every: Duration,
    /// When the last snapshot was published.
    published_at: Instant,
    /// Changes not yet published: `Some(body_changed)`.
    unpublished: Option<bool>,
    /// True while a publish is scheduled for the end of the interval.
    publish_scheduled: bool,
    /// When the group received each message whose changes are not yet published.
    unpublished_since: Vec<std::time::Instant>,
}

impl JobActor {
    /// An actor for jobs `name` relabelling with `relabelling`, publishing in `cell` at
    /// most once per `publish_every` while changes keep coming, its member views
    /// following `members`.
    pub fn new(
        name: String,
        relabelling: Relabelling,
        cell: Arc<SnapshotCell>,
        members: watch::Receiver<Members>,
        publish_every: Duration,
    ) -> JobActor {
        let fleet = members.borrow().clone();
        JobActor {
            name,
            state: JobState::new(relabelling),
            cell,
            synced: false,
            stats: JobStats::default(),
            seen: SlotSet::default(),
            subscription: None,
            members: Some(members),
            wanted: Arc::clone(&fleet),
            fleet,
            assigning: false,
            publish_every,
            published_at: Instant::now(),
            unpublished: None,
            publish_scheduled: false,
            unpublished_since: Vec::new(),
        }
    }

    /// Its registration with the group, once subscribed, for the API's URL states.
    pub(crate) fn subscription(&self) -> Option<&ActorSubscription> {
        self.subscription.as_ref()
    }

    /// Its objects, for handlers defined with the API (`crate::service::api`).
    pub(crate) fn state_mut(&mut self) -> &mut JobState {
        &mut self.state
    }

    /// Publishes what it holds, now if the last snapshot is `publish_every` old, else
    /// at the end of that interval; `body_changed`: its body differs from the last
    /// snapshot's.
    fn publish_soon(&mut self, body_changed: bool, ctx: &mut Context<Self>) {
        self.unpublished = Some(self.unpublished.unwrap_or(false) || body_changed);
        if self.publish_scheduled {
            return;
        }
        let since = self.published_at.elapsed();
        if since >= self.publish_every {
            self.publish_pending();
            return;
        }
        self.publish_scheduled = true;
        ctx.run_later(self.publish_every - since, |actor, _| {
            actor.publish_scheduled = false;
            actor.publish_pending();
        });
    }

    /// Publishes the changes not yet published, if any.
    fn publish_pending(&mut self) {
        if let Some(body_changed) = self.unpublished {
            self.publish(body_changed);
        }
    }

    /// Publishes what it holds now; `body_changed`: its body differs from the last
    /// snapshot's (or an unpublished change's did).
    fn publish(&mut self, body_changed: bool) {
        let pending = self.unpublished.take().unwrap_or(false);
        let body_changed = body_changed || pending;
        self.published_at = Instant::now();
        self.state.work.bodies_changed += u64::from(body_changed);
        if body_changed {
            self.stats.last_change = Some(std::time::SystemTime::now());
        }
        for received in self.unpublished_since.drain(..) {
            self.stats.latency.observe(received.elapsed());
        }
        self.cell.publish(JobSnapshot {
            body: self.state.body.clone(),
            partitions: self
                .state
                .indexes
                .iter()
                .map(|i| (i.kind, i.buckets.clone()))
                .collect(),
            synced: self.synced,
            stats: self.stats.clone(),
            work: self.state.work,
            members: Arc::clone(&self.fleet),
            placing: self.state.placing(),
        });
        // While member views are in use their placements follow the snapshots, in
        // the background, so that a request finds them made from a recent one.
        if body_changed && self.cell.assigned.in_use() {
            self.cell.assign_soon();
        }
    }

    /// Notes `synced` from the group; true if it is news.
    fn note_synced(&mut self, synced: bool) -> bool {
        if !synced || self.synced {
            return false;
        }
        self.synced = true;
        info!(jobs = %self.name, "discovery synced");
        true
    }

    /// Counts a message's `applied` changes, received at `received`.
    fn count(&mut self, applied: usize, received: std::time::Instant) {
        self.state.work.batches += 1;
        if applied == 0 {
            return;
        }
        self.stats.changes += 1;
        self.stats.applied += applied as u64;
        // Visible once published: observed then.
        self.unpublished_since.push(received);
    }
}

impl Actor for JobActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The group sends at most `subscriber_in_flight` batches before it waits for
        // replies; the mailbox must never make it wait otherwise.
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        self.publish(false);
        if let Some(mut rx) = self.members.take() {
            let me = ctx.address();
            ctx.spawn(
                async move {
                    while rx.changed().await.is_ok() {
                        let members = rx.borrow_and_update().clone();
                        me.do_send(MembersChanged(members));
                    }
                }
                .into_actor(self),
            );
        }
    }
}

impl Handler<TargetsPush> for JobActor {
    type Result = ();

    fn handle(&mut self, msg: TargetsPush, ctx: &mut Context<Self>) {
        let (applied, changed) = match &msg.push {
            Push::Changed(changes) => (changes.len(), self.state.change_all(changes)),
            Push::CaughtUp(batches) => {
                // Only each slot's latest change: what came before it is its past.
                let mut latest = Vec::new();
                for_latest_per_slot(batches, &mut self.seen, |change| latest.push(change));
                (latest.len(), self.state.change_all(&latest))
            }
            Push::Replaced(targets) => {
                let changed = self.state.replace(targets);
                self.state.work.batches += 1;
                if self.note_synced(msg.synced) {
                    self.publish(changed > 0);
                } else {
                    self.publish_soon(changed > 0, ctx);
                }
                return;
            }
        };
        self.count(applied, msg.received);
        if self.note_synced(msg.synced) {
            self.publish(changed > 0);
        } else if applied > 0 {
            self.publish_soon(changed > 0, ctx);
        }
    }
}

impl JobActor {
    /// Publishes the members heard last once the member views asked for are assigned
    /// by them, in the background (so a request never waits for a change of
    /// members: the members a snapshot names have their views ready); at once when none
    /// was asked for. One assignment at a time: the end of the one under way switches
    /// again if the members changed meanwhile.
    fn switch_members(&mut self, ctx: &mut Context<Self>) {
        if self.assigning {
            return;
        }
        let wanted = Arc::clone(&self.wanted);
        if !self.cell.assigned.kept() {
            // Published even when no view by member is kept: the snapshot names the
            // fleet the actor assigns by, so a reader can tell which members a view it
            // asks for next is split among.
            self.fleet = wanted;
            self.publish(false);
            return;
        }
        self.assigning = true;
        self.cell.assigned.switching(Some(Arc::clone(&wanted)));
        let (cell, me, placing) = (Arc::clone(&self.cell), ctx.address(), Arc::clone(&wanted));
        run_in_background_then(
            move || {
                let body = cell.load().body.clone();
                cell.assigned.assign_kept(&body, &placing);
            },
            // Told even if placing panicked (the placements then start over when next
            // asked for): else it would wait for it, and never switch members again.
            move |_| me.do_send(MembersAssigned(wanted)),
        );
    }
}

/// Sent to a job actor by itself when the members changed: switches to them
/// ([`JobActor::switch_members`]).
#[derive(Message)]
#[rtype(result = "()")]
struct MembersChanged(Members);

impl Handler<MembersChanged> for JobActor {
    type Result = ();

    fn handle(&mut self, MembersChanged(members): MembersChanged, ctx: &mut Context<Self>) {
        if members != self.wanted {
            self.wanted = members;
            self.switch_members(ctx);
        }
    }
}

/// Sent to a job actor by the background thread that assigned its member views by
/// `members`: publishes them.
#[derive(Message)]
#[rtype(result = "()")]
struct MembersAssigned(Members);

impl Handler<MembersAssigned> for JobActor {
    type Result = ();

    fn handle(&mut self, MembersAssigned(members): MembersAssigned, ctx: &mut Context<Self>) {
        self.assigning = false;
        self.fleet = members;
        self.publish(false);
        self.cell.assigned.switching(None);
        if self.wanted != self.fleet {
            self.switch_members(ctx);
        }
    }
}

/// Sent by a job's handle ([`crate::service::jobs::job::Job`]) to a job actor when a view of partition
/// `0` was asked for and its snapshot does not hold it: the actor builds the partition
/// from every object (for the member views, makes each body entry carry what assigning
/// reads, see `JobState::keep_placements`) and publishes it. Answered once published.
/// Only a partition's first request (or the first after it was dropped) waits for
/// this.
#[derive(Message)]
#[rtype(result = "()")]
pub struct KeepView(pub ViewKind);

impl Handler<KeepView> for JobActor {
    type Result = ();

    fn handle(&mut self, KeepView(kind): KeepView, _: &mut Context<Self>) {
        let cell = Arc::clone(&self.cell);
        if self.state.keep_index(kind, |k| cell.last_asked(k)) {
            self.publish(false);
        }
    }
}

/// Sent by a job's handle to a job actor (the demo's summary, tests): every target,
/// relabelled with `job` as the job's name. Relabels them all: not for a hot path.
#[derive(Message)]
#[rtype(result = "Vec<Labels>")]
pub struct RelabelAll {
    /// The job's name.
    pub job: String,
}

impl Handler<RelabelAll> for JobActor {
    type Result = MessageResult<RelabelAll>;

    fn handle(&mut self, msg: RelabelAll, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.state.targets_named(&msg.job))
    }
}

/// Sent by the job set to a job actor once the discovery has accepted it: its
/// registration, which it ends when it stops.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribed(pub ActorSubscription);

impl Handler<Subscribed> for JobActor {
    type Result = ();

    fn handle(&mut self, Subscribed(s): Subscribed, _: &mut Context<Self>) {
        self.subscription = Some(s);
    }
}

/// Sent by the job set to a job actor no job uses any more: leave the group (the last
/// subscriber of a group stops it), then stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopJobActor;

impl Handler<StopJobActor> for JobActor {
    type Result = ResponseActFuture<Self, ()>;

    fn handle(&mut self, _: StopJobActor, _: &mut Context<Self>) -> Self::Result {
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
#[path = "job_actor_tests.rs"]
mod tests;
