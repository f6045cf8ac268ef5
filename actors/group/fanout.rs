//! Pushing target changes to a group's subscribers without letting a slow one cost
//! memory or time.
//!
//! Policy: a batch is built once and shared (`Arc`) by every subscriber. Each
//! subscriber has a [`Window`] of `subscriber_in_flight` permits: a message to it holds
//! one until its reply comes back. A subscriber answers in order, so the group awaits
//! only every [`AWAIT_EVERY`]-th reply (and the one that fills the window), on one
//! task per subscriber ([`InOrder`]); that reply gives back the permits of the
//! messages before it too, and those go with `do_send`, no reply to wake anyone. With no permit left the group stops sending it batches and
//! holds them back in a [`Backlog`] (a pointer per batch, compacted to the latest
//! change per object when it outgrows [`Backlog::bound`], so bounded by the number of
//! objects, not of events). Once every permit is back the subscriber gets the whole
//! backlog in one message ([`crate::messages::Push::CaughtUp`]). Other subscribers are never held up,
//! and nothing travels upstream but the replies.

use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::Stream;
use tokio::sync::mpsc;

use crate::backlog::Backlog;
use crate::messages::{SubscriberId, SubscriberLink, TargetChange, TargetsPush};
use crate::model::Role;
use crate::window::{InOrder, Permit, Window};

/// One subscriber, as its group sees it.
pub struct SubscriberSlot {
    /// How to reach it.
    pub link: SubscriberLink,
    /// Its messages in flight, at most `subscriber_in_flight`.
    window: Window,
    /// The permits of the messages sent since the last one whose reply is awaited,
    /// merged: they come back with the next awaited reply.
    unawaited: Option<Permit>,
    /// Awaits the replies awaited.
    replies: InOrder,
    /// Batches held back while it lags.
    backlog: Option<Backlog>,
}

/// Whose replies have all come back: the subscriber, its role, and where it was among
/// the role's subscribers when the group started holding batches back for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyFrom {
    /// The subscriber's role.
    pub role: Role,
    /// Its index among the role's subscribers then (a hint: an unsubscribe may move it).
    pub index: usize,
    /// The subscriber.
    pub id: SubscriberId,
}

/// How a group hears that a subscriber it holds batches back for has answered every
/// message: a task waits for the slot's window to drain and then says so here; the
/// group's context reads the other end ([`AnsweredAll::stream`]) and calls
/// [`SubscriberSlot::replied`].
///
/// A slot watches once per run of held-back batches, so there is at most one word per
/// subscriber on its way; the channel's bound holds [`ANSWERED_BOUND`] of them, and a
/// task past it waits for room (the group reads them as it runs).
pub struct AnsweredAll {
    tx: mpsc::Sender<ReplyFrom>,
    rx: Option<mpsc::Receiver<ReplyFrom>>,
}

/// How many "answered everything" words wait for the group at most; more lagging
/// subscribers' tasks wait their turn.
const ANSWERED_BOUND: usize = 64;

impl Default for AnsweredAll {
    fn default() -> AnsweredAll {
        let (tx, rx) = mpsc::channel(ANSWERED_BOUND);
        AnsweredAll { tx, rx: Some(rx) }
    }
}

impl AnsweredAll {
    /// Tells the group, as `from`, once every message in `window` has been answered.
    fn watch(&self, from: ReplyFrom, window: &Window) {
        let (drained, tx) = (window.drained(), self.tx.clone());
        actix_rt::spawn(async move {
            drained.await;
            // The group is gone if nobody reads: nothing to tell.
            let _ = tx.send(from).await;
        });
    }

    /// The subscribers that answered everything, as they do (once; `None` after).
    pub fn stream(&mut self) -> Option<impl Stream<Item = ReplyFrom> + 'static> {
        let mut rx = self.rx.take()?;
        Some(futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }
}

impl SubscriberSlot {
    /// A slot for a newly registered subscriber that may have `limit` messages
    /// unanswered.
    pub fn new(link: SubscriberLink, limit: usize) -> SubscriberSlot {
        SubscriberSlot {
            link,
            window: Window::new(limit),
            unawaited: None,
            replies: InOrder::start(limit),
            backlog: None,
        }
    }

    /// Sends the full set of targets, replacing what the subscriber had.
    pub fn replace(&mut self, targets: Arc<[TargetChange]>, synced: bool) {
        self.backlog = None;
        let reply = self.link.push.send(TargetsPush::replaced(targets, synced));
        let permits = self.with_unawaited(self.window.try_permit());
        self.replies.push(reply, permits);
    }

    /// Sends a batch, or holds it back if the subscriber has no permit left. `bound` is
    /// how many changes its backlog may hold before it is compacted
    /// ([`Backlog::bound`]). `received` is when the group received the batch's events.
    /// When the slot starts holding batches back, `answered` will say when the
    /// subscriber has answered everything (as `from`), and it returns true.
    pub fn push(
        &mut self,
        batch: &Arc<[TargetChange]>,
        synced: bool,
        received: Instant,
        bound: usize,
        answered: &AnsweredAll,
        from: ReplyFrom,
    ) -> bool {
        if let Some(backlog) = &mut self.backlog {
            backlog.push(batch);
            if backlog.changes() > bound {
                backlog.compact();
            }
            return false;
        }
        let Some(permit) = self.window.try_permit() else {
            let mut backlog = Backlog::new(received);
            backlog.push(batch);
            self.backlog = Some(backlog);
            answered.watch(from, &self.window);
            return true;
        };
        let changes = TargetsPush::changed(Arc::clone(batch), synced, received);
        let permits = self.with_unawaited(Some(permit));
        let count = permits.as_ref().map_or(0, Permit::num_permits);
        if count < AWAIT_EVERY && !self.window.is_full() {
            self.link.push.do_send(changes);
            self.unawaited = permits;
        } else {
            self.replies.push(self.link.push.send(changes), permits);
        }
        false
    }

    /// `permit` with those of the messages sent since the last awaited reply.
    fn with_unawaited(&mut self, permit: Option<Permit>) -> Option<Permit> {
        match (self.unawaited.take(), permit) {
            (Some(mut all), Some(permit)) => {
                all.merge(permit);
                Some(all)
            }
            (all, permit) => all.or(permit),
        }
    }

    /// Every message sent has been answered: the held-back batches go in one message.
    pub fn replied(&mut self, synced: bool) {
        let Some(backlog) = self.backlog.take() else {
            return;
        };
        let received = backlog.received();
        let caught_up = TargetsPush::caught_up(backlog.into_batches(), synced, received);
        let reply = self.link.push.send(caught_up);
        let permits = self.with_unawaited(self.window.try_permit());
        self.replies.push(reply, permits);
    }
}

/// Every this-many-th batch to a subscriber has its reply awaited; the ones between go
/// without, and their permits come back with that reply. Awaiting each would wake the
/// group's thread once per batch and subscriber, most of its time with a hundred
/// subscribers; a window of 64 still has most of its room when these are counted as
/// unanswered.
const AWAIT_EVERY: usize = 8;
