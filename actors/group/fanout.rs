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

use std::cell::RefCell;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use actix::dev::RecipientRequest;
use futures_util::future::{Either, Join, Ready, join, ready};
use futures_util::stream::{FuturesUnordered, Stream, StreamExt};

use crate::backlog::Backlog;
use crate::messages::{
    SubscriberId, SubscriberLink, TargetChange, TargetsCaughtUp, TargetsChanged, TargetsReplaced,
};
use crate::metrics::METRICS;
use crate::model::Role;

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

/// Whose reply came back: the subscriber, its role, and where it was among the role's
/// subscribers when the message went out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyFrom {
    /// The subscriber's role.
    pub role: Role,
    /// Its index among the role's subscribers then (a hint: an unsubscribe may move it).
    pub index: usize,
    /// The subscriber.
    pub id: SubscriberId,
}

type Tagged = Join<Reply, Ready<ReplyFrom>>;

/// The replies a group awaits, shared between the group (which adds them) and its
/// [`ReplyStream`] (which its context polls). Kept in one `FuturesUnordered` rather than
/// spawned one by one on the context, which polls every spawned future at each wake-up:
/// with a hundred subscribers and dozens of batches each outstanding, that was most of
/// the group's thread.
#[derive(Default)]
struct Pending {
    replies: FuturesUnordered<Tagged>,
    /// The stream's waker, woken when a reply is added.
    waker: Option<Waker>,
}

/// Where a group puts the replies it awaits.
#[derive(Clone, Default)]
pub struct Replies(Rc<RefCell<Pending>>);

impl Replies {
    /// Awaits `reply`; [`ReplyStream`] yields `from` once it has come.
    pub fn push(&self, from: ReplyFrom, reply: Reply) {
        let pending = self.0.borrow_mut();
        pending.replies.push(join(reply, ready(from)));
        if let Some(waker) = &pending.waker {
            waker.wake_by_ref();
        }
    }

    /// The stream of replies that came back, for the group's context to poll. It never
    /// ends: with nothing awaited it waits for the next push.
    pub fn stream(&self) -> ReplyStream {
        ReplyStream(Rc::clone(&self.0))
    }
}

/// Yields whose reply came back, as they come; see [`Replies`].
pub struct ReplyStream(Rc<RefCell<Pending>>);

impl Stream for ReplyStream {
    type Item = ReplyFrom;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ReplyFrom>> {
        let mut pending = self.0.borrow_mut();
        if !pending
            .waker
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            pending.waker = Some(cx.waker().clone());
        }
        match pending.replies.poll_next_unpin(cx) {
            Poll::Ready(Some((_, from))) => Poll::Ready(Some(from)),
            // Empty: wait for a push, which wakes us.
            Poll::Ready(None) | Poll::Pending => Poll::Pending,
        }
    }
}

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
            METRICS.engine.subscriber_coalesced.inc();
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
