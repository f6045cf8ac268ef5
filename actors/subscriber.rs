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

use crate::actors::messages::{
    SubscriberDrained, SubscriberId, TargetsChanged, TargetsReplaced, TargetsUpdated,
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
    by_object: foldhash::HashMap<ObjectKey, Vec<T>>,
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
            by_object: foldhash::HashMap::default(),
            snapshot: None,
            synced: false,
            sync_waiters: Vec::new(),
            on_change: None,
            notice_outstanding: false,
            in_flight,
            lagging,
            group: None,
        }
    }

    fn construct(&self, targets: &[Labels]) -> Vec<T> {
        // Sized up front: `filter_map` cannot tell `collect` how many it will keep, and
        // growing 0 -> 4 -> 8 cost two allocations per object per subscriber.
        let mut values = Vec::with_capacity(targets.len());
        values.extend(targets.iter().filter_map(|l| (self.constructor)(l)));
        values
    }

    /// The object at `key` now has `targets`: its values are rebuilt in the vector it
    /// already has (a changed object, the usual case: no allocation, no key copied).
    fn update(&mut self, key: &ObjectKey, targets: &[Labels]) {
        let constructor = &self.constructor;
        match self.by_object.get_mut(key) {
            Some(values) => {
                values.clear();
                values.extend(targets.iter().filter_map(|l| constructor(l)));
                if values.is_empty() {
                    self.by_object.remove(key);
                }
            }
            None => {
                let values = self.construct(targets);
                if !values.is_empty() {
                    self.by_object.insert(key.clone(), values);
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
        METRICS
            .subscribers
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        METRICS
            .subscribers
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<T: TargetValue> Handler<TargetsChanged> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsChanged, _: &mut Context<Self>) {
        for change in msg.changes.iter() {
            match change.targets.as_deref() {
                Some(targets) => self.update(&change.key, targets),
                None => {
                    self.by_object.remove(&change.key);
                }
            }
        }
        if !msg.changes.is_empty() || (msg.synced && !self.synced) {
            self.changed(msg.synced);
        }
        self.batch_done();
    }
}

impl<T: TargetValue> Handler<TargetsReplaced> for Subscriber<T> {
    type Result = ();

    fn handle(&mut self, msg: TargetsReplaced, _: &mut Context<Self>) {
        self.by_object.clear();
        for (key, targets) in msg.targets.iter() {
            self.update(key, targets);
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
                let mut keys: Vec<&ObjectKey> = self.by_object.keys().collect();
                keys.sort();
                let all: Vec<T> = keys
                    .into_iter()
                    .flat_map(|k| self.by_object[k].iter().cloned())
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
