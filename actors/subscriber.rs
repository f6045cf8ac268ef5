//! The subscriber: one per scrape job. It turns label sets into the agent's own target
//! values with the agent's constructor (where relabelling lives; `None` drops a target),
//! keeps them by object, answers [`GetTargets`] with a shared snapshot, and tells the
//! agent when its targets changed.
//!
//! Subscribers may run on other arbiters than their group, so the constructors of many
//! jobs run on several cores.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use actix::prelude::*;
use tokio::sync::oneshot;

use crate::actors::backlog::{SlotSet, for_latest_per_slot};
use crate::actors::messages::{
    SubscriberDrained, SubscriberId, TargetChange, TargetsCaughtUp, TargetsChanged,
    TargetsReplaced, TargetsUpdated,
};
use crate::labels::Labels;
use crate::metrics::METRICS;
use crate::model::ObjectKey;

/// What a subscriber can hold: the agent's own target type.
pub trait TargetValue: Clone + Send + Sync + Unpin + 'static {}

impl<T: Clone + Send + Sync + Unpin + 'static> TargetValue for T {}

/// The agent's constructor: a label set to a target value, or `None` to drop it.
pub type Constructor<T> = Arc<dyn Fn(&Labels) -> Option<T> + Send + Sync>;

/// A scrape job's view of its targets.
pub struct Subscriber<T: TargetValue> {
    id: SubscriberId,
    constructor: Constructor<T>,
    /// Each object's key (for the snapshot's order) and values, at its slot
    /// ([`crate::actors::messages::ObjectSlot`]); `None` where no object with
    /// targets is.
    by_slot: Vec<Option<(ObjectKey, Vec<T>)>>,
    /// The last snapshot handed out; `None` after a change, rebuilt on demand.
    snapshot: Option<Arc<Vec<T>>>,
    synced: bool,
    sync_waiters: Vec<oneshot::Sender<()>>,
    on_change: Option<Recipient<TargetsUpdated>>,
    /// A change notice was sent and the agent has not asked for targets since.
    notice_outstanding: bool,
    in_flight: Arc<AtomicUsize>,
    lagging: Arc<AtomicBool>,
    group: Option<Recipient<SubscriberDrained>>,
    /// Kept between catch-ups, so that reading a backlog does not allocate.
    seen: SlotSet,
}

impl<T: TargetValue> Subscriber<T> {
    /// A subscriber with `constructor`; `in_flight` and `lagging` are shared with the
    /// group's link to it.
    pub fn new(
        id: SubscriberId,
        constructor: Constructor<T>,
        in_flight: Arc<AtomicUsize>,
        lagging: Arc<AtomicBool>,
    ) -> Self {
        Subscriber {
            id,
            constructor,
            by_slot: Vec::new(),
            snapshot: None,
            synced: false,
            sync_waiters: Vec::new(),
            on_change: None,
            notice_outstanding: false,
            in_flight,
            lagging,
            group: None,
            seen: SlotSet::default(),
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
    }

    /// One queued batch is handled: tell the group if it waits for our queue to empty.
    fn batch_done(&mut self) {
        if self.in_flight.fetch_sub(1, SeqCst) == 1
            && self.lagging.load(SeqCst)
            && let Some(group) = &self.group
        {
            group.do_send(SubscriberDrained(self.id));
        }
    }
}

impl<T: TargetValue> Actor for Subscriber<T> {
    type Context = Context<Self>;

    fn started(&mut self, _: &mut Context<Self>) {
        METRICS.engine.subscribers.inc();
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        METRICS.engine.subscribers.dec();
    }
}

impl<T: TargetValue> Handler<TargetsChanged> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsChanged, _: &mut Context<Self>) {
        for change in msg.changes.iter() {
            self.update(change);
        }
        if !msg.changes.is_empty() || (msg.synced && !self.synced) {
            self.changed(msg.synced);
        }
        self.batch_done();
    }
}

impl<T: TargetValue> Handler<TargetsCaughtUp> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsCaughtUp, _: &mut Context<Self>) {
        // Only each slot's latest change: what came before it is its past, and running
        // the constructor on it would be work thrown away.
        let mut seen = std::mem::take(&mut self.seen);
        for_latest_per_slot(&msg.batches, &mut seen, |change| self.update(change));
        self.seen = seen;
        let any = msg.batches.iter().any(|b| !b.is_empty());
        if any || (msg.synced && !self.synced) {
            self.changed(msg.synced);
        }
        self.batch_done();
    }
}

impl<T: TargetValue> Handler<TargetsReplaced> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsReplaced, _: &mut Context<Self>) {
        self.by_slot.clear();
        for change in msg.targets.iter() {
            self.update(change);
        }
        self.changed(msg.synced);
        self.batch_done();
    }
}

/// Sent by the agent (through [`crate::Subscription::targets`]) to its subscriber: the
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

/// Sent by the facade to a subscriber: where to send change notices, and which group to
/// tell when it has drained.
#[derive(Message)]
#[rtype(result = "()")]
pub enum Configure {
    /// Notices of changed targets go to this recipient.
    OnChange(Recipient<TargetsUpdated>),
    /// The group that feeds this subscriber.
    Group(Recipient<SubscriberDrained>),
}

impl<T: TargetValue> Handler<Configure> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: Configure, _: &mut Context<Self>) {
        match msg {
            Configure::OnChange(r) => {
                self.notice_outstanding = false;
                self.on_change = Some(r);
            }
            Configure::Group(g) => self.group = Some(g),
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
    use super::*;
    use crate::actors::messages::ObjectSlot;
    use crate::model::ObjectKey;

    fn change(slot: u32, name: &str, address: Option<&str>) -> TargetChange {
        TargetChange {
            slot: ObjectSlot(slot),
            key: ObjectKey::new(&"ns".into(), &name.into()),
            targets: address.map(|a| vec![Labels::from_pairs([("__address__", a)])].into()),
        }
    }

    async fn apply(sub: &Addr<Subscriber<String>>, changes: Vec<TargetChange>) {
        sub.send(TargetsChanged {
            changes: changes.into(),
            synced: true,
        })
        .await
        .expect("subscriber alive");
    }

    #[actix_rt::test]
    async fn catching_up_constructs_only_each_slots_latest_targets() {
        let calls = Arc::new(AtomicUsize::new(0));
        let constructor: Constructor<String> = {
            let calls = Arc::clone(&calls);
            Arc::new(move |l: &Labels| {
                calls.fetch_add(1, SeqCst);
                l.get("__address__").map(str::to_string)
            })
        };
        let in_flight = Arc::new(AtomicUsize::new(1));
        let sub = Subscriber::new(
            SubscriberId(1),
            constructor,
            Arc::clone(&in_flight),
            Arc::new(AtomicBool::new(false)),
        )
        .start();
        let batches: Vec<Arc<[TargetChange]>> = vec![
            vec![change(0, "a", Some("a:1")), change(1, "b", Some("b:1"))].into(),
            vec![change(0, "a", Some("a:2")), change(1, "b", None)].into(),
            vec![change(0, "a", Some("a:3")), change(2, "c", Some("c:1"))].into(),
        ];
        sub.send(TargetsCaughtUp {
            batches,
            synced: true,
        })
        .await
        .expect("subscriber alive");
        assert_eq!(targets(&sub).await, ["a:3", "c:1"]);
        assert_eq!(calls.load(SeqCst), 2, "a:3 and c:1 only");
        assert_eq!(in_flight.load(SeqCst), 0, "one message handled");
    }

    async fn targets(sub: &Addr<Subscriber<String>>) -> Vec<String> {
        let targets = sub.send(GetTargets(PhantomData)).await.expect("alive");
        targets.to_vec()
    }

    #[actix_rt::test]
    async fn changes_apply_by_slot_in_any_order_and_slots_are_reused() {
        let constructor: Constructor<String> =
            Arc::new(|l: &Labels| l.get("__address__").map(str::to_string));
        let sub = Subscriber::new(
            SubscriberId(1),
            constructor,
            Arc::new(AtomicUsize::new(usize::MAX / 2)),
            Arc::new(AtomicBool::new(false)),
        )
        .start();
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
}
