//! The subscriber: one per scrape job. It turns label sets into the agent's own target
//! values with the agent's constructor (where relabelling lives; `None` drops a target),
//! keeps them by object, and hands them out two ways: [`GetTargets`], a shared snapshot
//! of all of them, and [`TakeChanges`], only the objects that changed since the last
//! call (for an agent that keeps its own per-object state, so that a change to k
//! objects costs it O(k)). It tells the agent when its targets changed.
//!
//! Its replies to the group's batches are the group's flow control: it does nothing
//! for it but handle them. Subscribers may run on other arbiters than their group, so
//! the constructors of many jobs run on several cores.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Instant;

use actix::prelude::*;
use tokio::sync::{mpsc, oneshot};

use crate::backlog::{SlotSet, for_latest_per_slot};
use crate::labels::Labels;
use crate::messages::{ObjectSlot, Push, SubscriberId, TargetChange, TargetsPush, TargetsUpdated};
use crate::metrics::Metrics;
use crate::model::ObjectKey;

/// What a subscriber can hold: the agent's own target type.
pub trait TargetValue: Clone + Send + Sync + Unpin + 'static {}

impl<T: Clone + Send + Sync + Unpin + 'static> TargetValue for T {}

/// The agent's constructor: a label set to a target value, or `None` to drop it.
pub type Constructor<T> = Arc<dyn Fn(&Labels) -> Option<T> + Send + Sync>;

/// A scrape job's view of its targets.
pub struct Subscriber<T: TargetValue> {
    id: SubscriberId,
    /// The engine's metrics, which count running subscribers.
    metrics: Arc<Metrics>,
    constructor: Constructor<T>,
    /// Each object's key (for the snapshot's order) and values, at its slot
    /// ([`crate::messages::ObjectSlot`]); `None` where no object with
    /// targets is.
    by_slot: Vec<Option<(ObjectKey, Vec<T>)>>,
    /// The last snapshot handed out; `None` after a change, rebuilt on demand.
    snapshot: Option<Arc<Vec<T>>>,
    synced: bool,
    sync_waiters: Vec<oneshot::Sender<()>>,
    on_change: Option<Recipient<TargetsUpdated>>,
    /// A change notice was sent and the agent has not asked for targets since.
    notice_outstanding: bool,
    /// Streams of updates (`kubesd::Subscription::updates`): each holds at most one
    /// pending wake-up, so a slow reader sees the latest set, not every change.
    update_streams: Vec<mpsc::Sender<()>>,
    /// Kept between catch-ups, so that reading a backlog does not allocate.
    seen: SlotSet,
    /// What [`TakeChanges`] has not handed out yet.
    changes: ChangeLog,
}

/// The slots changed since the last [`TakeChanges`], each once.
#[derive(Default)]
struct ChangeLog {
    /// Off until the first [`TakeChanges`] (which hands out everything): a subscriber
    /// read only through snapshots keeps no log.
    on: bool,
    /// Everything was replaced: the next take hands out every object.
    reset: bool,
    slots: Vec<ObjectSlot>,
    logged: SlotSet,
    /// When the group received the events of the oldest change not handed out.
    oldest: Option<Instant>,
}

impl ChangeLog {
    fn record(&mut self, slot: ObjectSlot) {
        if self.on && !self.reset && self.logged.insert(slot) {
            self.slots.push(slot);
        }
    }

    fn received(&mut self, at: Instant) {
        if self.on {
            self.oldest = Some(self.oldest.map_or(at, |o| o.min(at)));
        }
    }

    fn replaced(&mut self) {
        if self.on {
            self.reset = true;
            self.slots.clear();
            self.logged.clear();
        }
    }
}

impl<T: TargetValue> Subscriber<T> {
    /// A subscriber with `constructor`, counted in `metrics`.
    pub fn new(id: SubscriberId, constructor: Constructor<T>, metrics: Arc<Metrics>) -> Self {
        Subscriber {
            id,
            metrics,
            constructor,
            by_slot: Vec::new(),
            snapshot: None,
            synced: false,
            sync_waiters: Vec::new(),
            on_change: None,
            notice_outstanding: false,
            update_streams: Vec::new(),
            seen: SlotSet::default(),
            changes: ChangeLog::default(),
        }
    }

    fn construct(&self, targets: &[Labels]) -> Vec<T> {
        // Sized up front: `filter_map` cannot tell `collect` how many it will keep, and
        // growing 0 -> 4 -> 8 cost two allocations per object per subscriber.
        let mut values = Vec::with_capacity(targets.len());
        values.extend(targets.iter().filter_map(|l| (self.constructor)(l)));
        values
    }

    /// Applies one object's change to its slot. A changed object's values are rebuilt
    /// in the vector it already has (the usual case: no allocation, no key copied).
    fn update(&mut self, change: &TargetChange) {
        self.changes.record(change.slot);
        let slot = change.slot.0 as usize;
        if slot >= self.by_slot.len() {
            if change.targets.is_none() {
                return;
            }
            self.by_slot.resize_with(slot + 1, || None);
        }
        let Some(targets) = change.targets.as_deref() else {
            self.by_slot[slot] = None;
            return;
        };
        let constructor = &self.constructor;
        match &mut self.by_slot[slot] {
            Some((key, values)) => {
                // The same object changed, or (its deletion superseded in a backlog)
                // another took its slot. The group sends an object's key as the same
                // shared strings every time, so pointers tell, without reading them.
                if !key.same_strings(&change.key) {
                    *key = change.key.clone();
                }
                values.clear();
                values.extend(targets.iter().filter_map(|l| constructor(l)));
                if values.is_empty() {
                    self.by_slot[slot] = None;
                }
            }
            None => {
                let values = self.construct(targets);
                if !values.is_empty() {
                    self.by_slot[slot] = Some((change.key.clone(), values));
                }
            }
        }
    }

    fn changed(&mut self, synced: bool) {
        self.snapshot = None;
        if synced && !self.synced {
            self.synced = true;
            for waiter in self.sync_waiters.drain(..) {
                let _ = waiter.send(());
            }
        }
        if !self.notice_outstanding
            && let Some(recipient) = &self.on_change
        {
            self.notice_outstanding = true;
            recipient.do_send(TargetsUpdated {
                subscriber: self.id,
            });
        }
        // A full channel already holds a wake-up; a closed one lost its reader.
        self.update_streams
            .retain(|tx| !matches!(tx.try_send(()), Err(mpsc::error::TrySendError::Closed(()))));
    }
}

/// Room for any window of in-flight batches the group uses, plus the agent's requests.
pub const MAILBOX_CAPACITY: usize = 1 << 16;

impl<T: TargetValue> Actor for Subscriber<T> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        // The group sends at most `subscriber_in_flight` batches before it waits for
        // replies; the mailbox must never make it wait otherwise (a request to a full
        // mailbox is parked, not queued).
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        self.metrics.engine.subscribers.inc();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.metrics.engine.subscribers.dec();
    }
}

impl<T: TargetValue> Handler<TargetsPush> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsPush, _: &mut Context<Self>) {
        let any = match &msg.push {
            Push::Changed(changes) => {
                for change in changes.iter() {
                    self.update(change);
                }
                !changes.is_empty()
            }
            Push::CaughtUp(batches) => {
                // Only each slot's latest change: what came before it is its past, and
                // running the constructor on it would be work thrown away.
                let mut seen = std::mem::take(&mut self.seen);
                for_latest_per_slot(batches, &mut seen, |change| self.update(change));
                self.seen = seen;
                batches.iter().any(|b| !b.is_empty())
            }
            Push::Replaced(targets) => {
                self.by_slot.clear();
                self.changes.replaced();
                for change in targets.iter() {
                    self.update(change);
                }
                return self.changed(msg.synced);
            }
        };
        if any {
            self.changes.received(msg.received);
        }
        if any || (msg.synced && !self.synced) {
            self.changed(msg.synced);
        }
    }
}

/// Sent by the agent (through `kubesd::Subscription::targets`) to its subscriber: the
/// job's current targets. Cheap: a shared snapshot, rebuilt only after a change.
#[derive(Message)]
#[rtype(result = "Arc<Vec<T>>")]
pub struct GetTargets<T: 'static>(pub PhantomData<T>);

impl<T: TargetValue> Handler<GetTargets<T>> for Subscriber<T> {
    type Result = MessageResult<GetTargets<T>>;

    fn handle(&mut self, _: GetTargets<T>, _: &mut Context<Self>) -> Self::Result {
        self.notice_outstanding = false;
        let snapshot = match &self.snapshot {
            Some(s) => Arc::clone(s),
            None => {
                // Deterministic order: by object, then as the object listed them.
                let mut objects: Vec<&(ObjectKey, Vec<T>)> =
                    self.by_slot.iter().flatten().collect();
                objects.sort_by(|a, b| a.0.cmp(&b.0));
                let all: Vec<T> = objects
                    .into_iter()
                    .flat_map(|(_, values)| values.iter().cloned())
                    .collect();
                let s = Arc::new(all);
                self.snapshot = Some(Arc::clone(&s));
                s
            }
        };
        MessageResult(snapshot)
    }
}

/// One object's targets now, as [`TakeChanges`] hands them out.
#[derive(Clone, Debug)]
pub struct SlotTargets<T> {
    /// The object's slot ([`ObjectSlot`]): an object keeps it while it exists, and a
    /// later one may get it after it is gone.
    pub slot: ObjectSlot,
    /// The object in the slot now and its values; `None` if no object with values is
    /// there any more.
    pub object: Option<(ObjectKey, Vec<T>)>,
}

/// What changed since the last [`TakeChanges`].
#[derive(Clone, Debug)]
pub struct TargetChanges<T> {
    /// True: `objects` is every object, replacing whatever the agent held (the first
    /// take, and after the group resent everything).
    pub reset: bool,
    /// The slots that changed, each once, with their state now.
    pub objects: Vec<SlotTargets<T>>,
    /// When the group received the events of the oldest of these changes (`None` for a
    /// reset or when nothing changed).
    pub oldest: Option<Instant>,
}

/// Sent by the agent (through `kubesd::Subscription::take_changes`) to its subscriber:
/// the objects whose values changed since the last take (every object at the first).
/// Costs O(changed objects); re-arms change notices as [`GetTargets`] does.
#[derive(Message)]
#[rtype(result = "TargetChanges<T>")]
pub struct TakeChanges<T: 'static>(pub PhantomData<T>);

impl<T: TargetValue> Handler<TakeChanges<T>> for Subscriber<T> {
    type Result = MessageResult<TakeChanges<T>>;

    fn handle(&mut self, _: TakeChanges<T>, _: &mut Context<Self>) -> Self::Result {
        self.notice_outstanding = false;
        let log = &mut self.changes;
        let reset = !log.on || log.reset;
        log.on = true;
        log.reset = false;
        let oldest = log.oldest.take();
        let objects = if reset {
            log.slots.clear();
            log.logged.clear();
            self.by_slot
                .iter()
                .enumerate()
                .filter_map(|(slot, object)| {
                    Some(SlotTargets {
                        slot: ObjectSlot(u32::try_from(slot).ok()?),
                        object: Some(object.clone()?),
                    })
                })
                .collect()
        } else {
            let objects = log
                .slots
                .iter()
                .map(|&slot| SlotTargets {
                    slot,
                    object: self.by_slot.get(slot.0 as usize).cloned().flatten(),
                })
                .collect();
            log.slots.clear();
            log.logged.clear();
            objects
        };
        MessageResult(TargetChanges {
            reset,
            objects,
            oldest: if reset { None } else { oldest },
        })
    }
}

/// Sent by the facade to a subscriber: where to send change notices.
#[derive(Message)]
#[rtype(result = "()")]
pub enum Configure {
    /// Notices of changed targets go to this recipient.
    OnChange(Recipient<TargetsUpdated>),
    /// A stream of updates reads this channel: wake it now (its first item is the
    /// targets as they are) and after every change.
    Updates(mpsc::Sender<()>),
}

impl<T: TargetValue> Handler<Configure> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: Configure, _: &mut Context<Self>) {
        match msg {
            Configure::OnChange(r) => {
                self.notice_outstanding = false;
                self.on_change = Some(r);
            }
            Configure::Updates(tx) => {
                if tx.try_send(()).is_ok() {
                    self.update_streams.push(tx);
                }
            }
        }
    }
}

/// Sent by the facade to a subscriber: answer once every URL its role needs has been
/// listed (at once if that is already so).
#[derive(Message)]
#[rtype(result = "()")]
pub struct WaitSynced;

impl<T: TargetValue> Handler<WaitSynced> for Subscriber<T> {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: WaitSynced, _: &mut Context<Self>) -> Self::Result {
        if self.synced {
            return Box::pin(async {});
        }
        let (tx, rx) = oneshot::channel();
        self.sync_waiters.push(tx);
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

/// Sent by the facade to stop a subscriber.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopSubscriber;

impl<T: TargetValue> Handler<StopSubscriber> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, _: StopSubscriber, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::SeqCst;

    use super::*;
    use crate::model::ObjectKey;

    fn change(slot: u32, name: &str, address: Option<&str>) -> TargetChange {
        TargetChange {
            slot: ObjectSlot(slot),
            key: ObjectKey::new(&"ns".into(), &name.into()),
            targets: address.map(|a| vec![Labels::from_pairs([("__address__", a)])].into()),
        }
    }

    async fn apply(sub: &Addr<Subscriber<String>>, changes: Vec<TargetChange>) {
        sub.send(TargetsPush::changed(changes.into(), true, Instant::now()))
            .await
            .expect("subscriber alive");
    }

    /// A subscriber whose constructor keeps each target's address, and how many times
    /// the constructor ran.
    fn counting_subscriber() -> (Addr<Subscriber<String>>, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let constructor: Constructor<String> = {
            let calls = Arc::clone(&calls);
            Arc::new(move |l: &Labels| {
                calls.fetch_add(1, SeqCst);
                l.get("__address__").map(str::to_string)
            })
        };
        (
            Subscriber::new(SubscriberId(1), constructor, Arc::default()).start(),
            calls,
        )
    }

    #[actix_rt::test]
    async fn catching_up_constructs_only_each_slots_latest_targets() {
        let (sub, calls) = counting_subscriber();
        let batches: Vec<Arc<[TargetChange]>> = vec![
            vec![change(0, "a", Some("a:1")), change(1, "b", Some("b:1"))].into(),
            vec![change(0, "a", Some("a:2")), change(1, "b", None)].into(),
            vec![change(0, "a", Some("a:3")), change(2, "c", Some("c:1"))].into(),
        ];
        sub.send(TargetsPush::caught_up(batches, true, Instant::now()))
            .await
            .expect("subscriber alive");
        assert_eq!(targets(&sub).await, ["a:3", "c:1"]);
        assert_eq!(calls.load(SeqCst), 2, "a:3 and c:1 only");
    }

    async fn targets(sub: &Addr<Subscriber<String>>) -> Vec<String> {
        let targets = sub.send(GetTargets(PhantomData)).await.expect("alive");
        targets.to_vec()
    }

    #[actix_rt::test]
    async fn changes_apply_by_slot_in_any_order_and_slots_are_reused() {
        let constructor: Constructor<String> =
            Arc::new(|l: &Labels| l.get("__address__").map(str::to_string));
        let sub = Subscriber::new(SubscriberId(1), constructor, Arc::default()).start();
        apply(
            &sub,
            vec![change(0, "a", Some("a:1")), change(1, "b", Some("b:1"))],
        )
        .await;
        // A backlog is read newest first: "a" re-created in slot 2 may come before the
        // removal of the old "a" in slot 0, and must survive it.
        apply(
            &sub,
            vec![change(2, "a", Some("a:2")), change(0, "a", None)],
        )
        .await;
        assert_eq!(targets(&sub).await, ["a:2", "b:1"]);
        // "b" was deleted and "c" took its slot; the deletion was superseded, so
        // the slot's latest change is all that arrives. The snapshot orders by the new
        // key ("ns/0" sorts first).
        apply(&sub, vec![change(1, "0", Some("0:1"))]).await;
        assert_eq!(targets(&sub).await, ["0:1", "a:2"]);
        // An update in place, and a removal of a slot never filled.
        apply(
            &sub,
            vec![change(2, "a", Some("a:3")), change(9, "x", None)],
        )
        .await;
        assert_eq!(targets(&sub).await, ["0:1", "a:3"]);
    }

    async fn take(sub: &Addr<Subscriber<String>>) -> (bool, Vec<(u32, Option<Vec<String>>)>) {
        let c = sub.send(TakeChanges(PhantomData)).await.expect("alive");
        let mut objects: Vec<_> = c
            .objects
            .into_iter()
            .map(|o| (o.slot.0, o.object.map(|(_, values)| values)))
            .collect();
        objects.sort();
        (c.reset, objects)
    }

    #[actix_rt::test]
    async fn taking_changes_hands_out_each_changed_slot_once_and_everything_after_a_reset() {
        let (sub, calls) = counting_subscriber();
        apply(
            &sub,
            vec![change(0, "a", Some("a:1")), change(1, "b", Some("b:1"))],
        )
        .await;
        // The first take is everything.
        let all = (
            true,
            vec![
                (0, Some(vec!["a:1".to_string()])),
                (1, Some(vec!["b:1".to_string()])),
            ],
        );
        assert_eq!(take(&sub).await, all);
        // Then only what changed, each slot once, in its state now.
        apply(&sub, vec![change(0, "a", Some("a:2"))]).await;
        apply(
            &sub,
            vec![change(0, "a", Some("a:3")), change(1, "b", None)],
        )
        .await;
        let c = sub.send(TakeChanges(PhantomData)).await.expect("alive");
        assert!(c.oldest.is_some(), "the oldest change's arrival is kept");
        let mut got: Vec<_> = c
            .objects
            .into_iter()
            .map(|o| (o.slot.0, o.object.map(|(k, v)| (k.to_string(), v))))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                (0, Some(("ns/a".to_string(), vec!["a:3".to_string()]))),
                (1, None)
            ]
        );
        assert_eq!(take(&sub).await, (false, vec![]), "nothing since");
        // The group resends everything: the next take is a reset.
        sub.send(TargetsPush::replaced(
            vec![change(4, "c", Some("c:1"))].into(),
            true,
        ))
        .await
        .expect("alive");
        assert_eq!(
            take(&sub).await,
            (true, vec![(4, Some(vec!["c:1".to_string()]))])
        );
        // No constructor call was spent on any take.
        assert_eq!(calls.load(SeqCst), 5);
    }
}
