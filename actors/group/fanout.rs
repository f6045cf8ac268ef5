//! Pushing target changes to a group's subscribers without letting a slow one cost
//! memory or time.
//!
//! Policy: a batch is built once and shared (`Arc`) by every subscriber. Each subscriber
//! may have `subscriber_in_flight` batches unhandled; beyond that the group stops sending
//! it batches and *coalesces*: it keeps, per object, only the latest targets, in a map
//! bounded by the number of objects, not by the number of events. When the subscriber
//! has drained its queue it says so ([`SubscriberDrained`]) and gets the coalesced map as
//! one batch. Other subscribers are never held up.

use foldhash::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use crate::actors::messages::{
    ObjectSlot, SubscriberLink, TargetChange, TargetsChanged, TargetsReplaced,
};
use crate::metrics::{METRICS, inc};

/// One subscriber, as its group sees it.
pub struct SubscriberSlot {
    /// How to reach it.
    pub link: SubscriberLink,
    /// Changes kept back while it lags (latest per object).
    coalesced: Option<HashMap<ObjectSlot, TargetChange>>,
}

impl SubscriberSlot {
    /// A slot for a newly registered subscriber.
    pub fn new(link: SubscriberLink) -> SubscriberSlot {
        SubscriberSlot {
            link,
            coalesced: None,
        }
    }

    /// Sends the full set of targets, replacing what the subscriber had.
    pub fn replace(&mut self, targets: Arc<[TargetChange]>, synced: bool) {
        self.coalesced = None;
        self.link.lagging.store(false, SeqCst);
        self.link.in_flight.fetch_add(1, SeqCst);
        // `do_send` ignores the mailbox's capacity: the in-flight count is the bound.
        self.link
            .replaced
            .do_send(TargetsReplaced { targets, synced });
    }

    /// True while the subscriber has more than `unhandled` batches waiting, or the group
    /// is coalescing for it.
    pub fn is_behind(&self, unhandled: usize) -> bool {
        self.coalesced.is_some() || self.link.in_flight.load(SeqCst) > unhandled
    }

    /// Sends a batch, or coalesces it if the subscriber is behind.
    pub fn push(&mut self, batch: &Arc<[TargetChange]>, synced: bool, limit: usize) {
        if let Some(map) = &mut self.coalesced {
            merge(map, batch);
        } else if self.link.in_flight.load(SeqCst) >= limit {
            inc(&METRICS.subscriber_coalesced);
            let mut map = HashMap::with_capacity_and_hasher(batch.len(), Default::default());
            merge(&mut map, batch);
            self.coalesced = Some(map);
            self.link.lagging.store(true, SeqCst);
        } else {
            self.send(Arc::clone(batch), synced);
            return;
        }
        // The subscriber may have emptied its queue between our check and `lagging`
        // being set; then it will not say so, and we must flush ourselves.
        if self.link.in_flight.load(SeqCst) == 0 {
            self.flush_coalesced(synced);
        }
    }

    /// Sends the coalesced changes as one batch, if there are any and the subscriber's
    /// queue is empty.
    pub fn flush_coalesced(&mut self, synced: bool) {
        if self.link.in_flight.load(SeqCst) != 0 {
            return;
        }
        if let Some(map) = self.coalesced.take() {
            self.link.lagging.store(false, SeqCst);
            let batch: Arc<[TargetChange]> = map.into_values().collect();
            self.send(batch, synced);
        }
    }

    fn send(&mut self, changes: Arc<[TargetChange]>, synced: bool) {
        self.link.in_flight.fetch_add(1, SeqCst);
        // `do_send` ignores the mailbox's capacity: the in-flight count is the bound. A
        // subscriber that is gone drops it; its Unsubscribe is on the way.
        self.link
            .changed
            .do_send(TargetsChanged { changes, synced });
    }
}

/// Keeps the latest change of each slot: what the subscriber must hold there now. By
/// slot, not by name: a deleted object and its re-created namesake may sit in two
/// slots, and the subscriber must hear about both.
fn merge(map: &mut HashMap<ObjectSlot, TargetChange>, batch: &[TargetChange]) {
    for change in batch {
        map.insert(change.slot, change.clone());
    }
}
