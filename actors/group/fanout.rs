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
//!
//! A slot looks at its replies when the group next sends it something, not as each
//! comes back: a reply that wakes the group costs a pass of its context, and with a
//! hundred subscribers those passes were most of the group's thread. Only a slot that
//! holds batches back needs to hear of its reply at once; it hands the newest to the
//! group's [`ReplyStream`] (a subscriber answers in order, so the newest coming back
//! means all have).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
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
    /// Replies to messages sent, oldest first, not yet seen to have come back.
    outstanding: VecDeque<HeldReply>,
    /// Whether one more reply is with the group's [`ReplyStream`], which wakes the group
    /// when it comes (while batches are held back).
    awaited: bool,
    /// Batches held back while it lags.
    backlog: Option<Backlog>,
}

/// The reply to one message a group sent a subscriber: kept by its slot, or awaited by
/// the group (the actor's context polls it), which then calls
/// [`SubscriberSlot::replied`]. An error (the subscriber stopped) counts as a reply: its
/// `Unsubscribe` is on the way.
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

/// A reply as a slot keeps it: pinned on the heap, since actix's request futures are not
/// `Unpin`.
pub type HeldReply = Pin<Box<Reply>>;

type Tagged = Join<HeldReply, Ready<ReplyFrom>>;

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
    pub fn push(&self, from: ReplyFrom, reply: HeldReply) {
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
            outstanding: VecDeque::new(),
            awaited: false,
            backlog: None,
        }
    }

    /// Messages sent whose replies have not been seen.
    fn unanswered(&self) -> usize {
        self.outstanding.len() + usize::from(self.awaited)
    }

    /// Drops the replies that have come back, oldest first. Polled without a waker:
    /// nothing is woken when the rest come; the slot looks again next time.
    fn forget_answered(&mut self) {
        let mut cx = Context::from_waker(Waker::noop());
        while let Some(oldest) = self.outstanding.front_mut() {
            if oldest.as_mut().poll(&mut cx).is_pending() {
                break;
            }
            self.outstanding.pop_front();
        }
    }

    /// Hands the newest reply to the group to await, so that it hears when the
    /// subscriber has handled everything sent.
    fn await_newest(&mut self) -> Option<HeldReply> {
        if self.awaited {
            return None;
        }
        let newest = self.outstanding.pop_back()?;
        self.awaited = true;
        Some(newest)
    }

    /// Sends the full set of targets, replacing what the subscriber had.
    pub fn replace(&mut self, targets: Arc<[TargetChange]>, synced: bool) {
        self.backlog = None;
        self.outstanding
            .push_back(Box::pin(Either::Right(Either::Left(
                self.link.replaced.send(TargetsReplaced { targets, synced }),
            ))));
    }

    /// True while the subscriber has more than `unhandled` messages unanswered, or the
    /// group holds batches back for it.
    pub fn is_behind(&mut self, unhandled: usize) -> bool {
        self.forget_answered();
        self.backlog.is_some() || self.unanswered() > unhandled
    }

    /// Sends a batch, or holds it back if the subscriber is behind. `limit` is how many
    /// messages it may have unanswered, `bound` how many changes its backlog may hold
    /// before it is compacted ([`Backlog::bound`]). `received` is when the group
    /// received the batch's events. Returns a reply for the group to await when the
    /// slot starts holding batches back.
    pub fn push(
        &mut self,
        batch: &Arc<[TargetChange]>,
        synced: bool,
        received: Instant,
        limit: usize,
        bound: usize,
    ) -> Option<HeldReply> {
        if let Some(backlog) = &mut self.backlog {
            backlog.push(batch);
            if backlog.changes() > bound {
                backlog.compact();
            }
            return None;
        }
        self.forget_answered();
        if self.unanswered() >= limit {
            METRICS.engine.subscriber_coalesced.inc();
            let mut backlog = Backlog::new(received);
            backlog.push(batch);
            self.backlog = Some(backlog);
            self.await_newest()
        } else {
            self.outstanding
                .push_back(Box::pin(Either::Left(self.link.changed.send(
                    TargetsChanged {
                        changes: Arc::clone(batch),
                        synced,
                        received,
                    },
                ))));
            None
        }
    }

    /// The reply the group awaited came back. Once none is outstanding, the held-back
    /// batches go in one message; if some still are, the newest of them is returned for
    /// the group to await.
    pub fn replied(&mut self, synced: bool) -> Option<HeldReply> {
        self.awaited = false;
        self.forget_answered();
        self.backlog.as_ref()?;
        if !self.outstanding.is_empty() {
            return self.await_newest();
        }
        let backlog = self.backlog.take()?;
        self.outstanding
            .push_back(Box::pin(Either::Right(Either::Right(
                self.link.caught_up.send(TargetsCaughtUp {
                    received: backlog.received(),
                    batches: backlog.into_batches(),
                    synced,
                }),
            ))));
        None
    }
}
