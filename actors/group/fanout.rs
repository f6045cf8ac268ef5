//! Pushing target changes to a group's subscribers without letting a slow one cost
//! memory or time.
//!
//! Policy: a batch is built once and shared (`Arc`) by every subscriber. Flow control
//! rides the replies: the group holds the reply future of every batch it sent a
//! subscriber, and a subscriber may have `subscriber_in_flight` of them unanswered;
//! beyond that the group stops sending it batches and holds them back in a [`Backlog`]
//! (a pointer per batch, compacted to the latest change per object when it outgrows
//! [`Backlog::bound`], so bounded by the number of objects, not of events). When its
//! last reply comes back the subscriber gets the whole backlog in one message
//! ([`TargetsCaughtUp`]). Other subscribers are never held up, and nothing travels
//! upstream but the replies.

use std::sync::Arc;
use std::time::Instant;

use actix::dev::RecipientRequest;
use futures_util::future::Either;

use crate::actors::backlog::Backlog;
use crate::actors::messages::{
    SubscriberLink, TargetChange, TargetsCaughtUp, TargetsChanged, TargetsReplaced,
};
use crate::metrics::{METRICS, inc};

/// One subscriber, as its group sees it.
pub struct SubscriberSlot {
    /// How to reach it.
    pub link: SubscriberLink,
    /// Messages sent whose replies have not come back.
    unanswered: usize,
    /// Batches held back while it lags.
    backlog: Option<Backlog>,
}

/// The reply to one message a group sent a subscriber. The group awaits it (the
/// actor's context polls it) and then calls [`SubscriberSlot::replied`]. An error (the
/// subscriber stopped) counts as a reply: its `Unsubscribe` is on the way.
pub type Reply = Either<
    RecipientRequest<TargetsChanged>,
    Either<RecipientRequest<TargetsReplaced>, RecipientRequest<TargetsCaughtUp>>,
>;

impl SubscriberSlot {
    /// A slot for a newly registered subscriber.
    pub fn new(link: SubscriberLink) -> SubscriberSlot {
        SubscriberSlot {
            link,
            unanswered: 0,
            backlog: None,
        }
    }

    /// Sends the full set of targets, replacing what the subscriber had.
    pub fn replace(&mut self, targets: Arc<[TargetChange]>, synced: bool) -> Reply {
        self.backlog = None;
        self.unanswered += 1;
        Either::Right(Either::Left(
            self.link.replaced.send(TargetsReplaced { targets, synced }),
        ))
    }

    /// True while the subscriber has more than `unhandled` messages unanswered, or the
    /// group holds batches back for it.
    pub fn is_behind(&self, unhandled: usize) -> bool {
        self.backlog.is_some() || self.unanswered > unhandled
    }

    /// Sends a batch, or holds it back if the subscriber is behind. `limit` is how many
    /// messages it may have unanswered, `bound` how many changes its backlog may hold
    /// before it is compacted ([`Backlog::bound`]). `received` is when the group
    /// received the batch's events.
    pub fn push(
        &mut self,
        batch: &Arc<[TargetChange]>,
        synced: bool,
        received: Instant,
        limit: usize,
        bound: usize,
    ) -> Option<Reply> {
        if let Some(backlog) = &mut self.backlog {
            backlog.push(batch);
            if backlog.changes() > bound {
                backlog.compact();
            }
            None
        } else if self.unanswered >= limit {
            inc(&METRICS.subscriber_coalesced);
            let mut backlog = Backlog::new(received);
            backlog.push(batch);
            self.backlog = Some(backlog);
            None
        } else {
            self.unanswered += 1;
            Some(Either::Left(self.link.changed.send(TargetsChanged {
                changes: Arc::clone(batch),
                synced,
                received,
            })))
        }
    }

    /// A reply came back. Once none is outstanding, the held-back batches go in one
    /// message, whose reply is returned for the group to await.
    pub fn replied(&mut self, synced: bool) -> Option<Reply> {
        self.unanswered = self.unanswered.saturating_sub(1);
        if self.unanswered != 0 {
            return None;
        }
        let backlog = self.backlog.take()?;
        self.unanswered += 1;
        Some(Either::Right(Either::Right(self.link.caught_up.send(
            TargetsCaughtUp {
                received: backlog.received(),
                batches: backlog.into_batches(),
                synced,
            },
        ))))
    }
}
