//! Pushing target changes to a group's subscribers without letting a slow one cost
//! memory or time.
//!
//! Policy: a batch is built once and shared (`Arc`) by every subscriber. Each subscriber
//! may have `subscriber_in_flight` batches unhandled; beyond that the group stops sending
//! it batches and holds them back in a [`Backlog`] (a pointer per batch, compacted to the
//! latest change per object when it outgrows [`Backlog::bound`], so bounded by the
//! number of objects, not of events). When the subscriber has drained its queue it says
//! so ([`SubscriberDrained`]) and gets the whole backlog in one message
//! ([`TargetsCaughtUp`]). Other subscribers are never held up.

use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use crate::actors::backlog::Backlog;
use crate::actors::messages::{
    SubscriberLink, TargetChange, TargetsCaughtUp, TargetsChanged, TargetsReplaced,
};
use crate::metrics::METRICS;

/// One subscriber, as its group sees it.
pub struct SubscriberSlot {
    /// How to reach it.
    pub link: SubscriberLink,
    /// Batches held back while it lags.
    backlog: Option<Backlog>,
}

impl SubscriberSlot {
    /// A slot for a newly registered subscriber.
    pub fn new(link: SubscriberLink) -> SubscriberSlot {
        SubscriberSlot {
            link,
            backlog: None,
        }
    }

    /// Sends the full set of targets, replacing what the subscriber had.
    pub fn replace(&mut self, targets: Arc<[TargetChange]>, synced: bool) {
        self.backlog = None;
        self.link.lagging.store(false, SeqCst);
        self.link.in_flight.fetch_add(1, SeqCst);
        // `do_send` ignores the mailbox's capacity: the in-flight count is the bound.
        self.link
            .replaced
            .do_send(TargetsReplaced { targets, synced });
    }

    /// True while the subscriber has more than `unhandled` batches waiting, or the group
    /// holds batches back for it.
    pub fn is_behind(&self, unhandled: usize) -> bool {
        self.backlog.is_some() || self.link.in_flight.load(SeqCst) > unhandled
    }

    /// Sends a batch, or holds it back if the subscriber is behind. `limit` is how many
    /// batches it may have unhandled, `bound` how many changes its backlog may hold
    /// before it is compacted ([`Backlog::bound`]).
    pub fn push(&mut self, batch: &Arc<[TargetChange]>, synced: bool, limit: usize, bound: usize) {
        if let Some(backlog) = &mut self.backlog {
            backlog.push(batch);
            if backlog.changes() > bound {
                backlog.compact();
            }
        } else if self.link.in_flight.load(SeqCst) >= limit {
            METRICS.engine.subscriber_coalesced.inc();
            let mut backlog = Backlog::default();
            backlog.push(batch);
            self.backlog = Some(backlog);
            self.link.lagging.store(true, SeqCst);
        } else {
            self.send(Arc::clone(batch), synced);
            return;
        }
        // The subscriber may have emptied its queue between our check and `lagging`
        // being set; then it will not say so, and we must flush ourselves.
        if self.link.in_flight.load(SeqCst) == 0 {
            self.flush_backlog(synced);
        }
    }

    /// Sends the held-back batches in one message, if there are any and the
    /// subscriber's queue is empty.
    pub fn flush_backlog(&mut self, synced: bool) {
        if self.link.in_flight.load(SeqCst) != 0 {
            return;
        }
        if let Some(backlog) = self.backlog.take() {
            self.link.lagging.store(false, SeqCst);
            self.link.in_flight.fetch_add(1, SeqCst);
            // As in `send`: the in-flight count is the bound.
            self.link.caught_up.do_send(TargetsCaughtUp {
                batches: backlog.into_batches(),
                synced,
            });
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
