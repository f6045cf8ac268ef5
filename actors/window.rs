//! A window of messages in flight to one receiver: the engine's flow control, kept by
//! the runtime rather than by hand.
//!
//! A [`Window`] is a semaphore of `size` permits. A message in flight holds one: the
//! sender takes a permit before it sends, and the future that awaits the receiver's
//! reply drops it when the reply comes (or the receiver is gone). So "how many are
//! unanswered" is the permits taken, "room for one more" is a permit to take, and
//! "everything answered" is every permit back; tokio wakes whoever waits for them, and
//! no reply is ever polled by hand.
//!
//! The URL watcher waits for a permit before it decodes the next piece of its stream
//! (a slow group stops it reading, and TCP slows the API server); the group takes one
//! per batch it sends a subscriber, and holds batches back for one that has none left
//! (see `crate::backlog`). A receiver that answers in order lets one awaited reply
//! give back the permits of the messages before it ([`InOrder`], `group/fanout.rs`).

use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::LocalBoxFuture;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// A permit of a [`Window`]: held by a message in flight, given back when dropped.
pub type Permit = OwnedSemaphorePermit;

/// Room for `size` messages in flight. Clones share the same permits.
#[derive(Clone, Debug)]
pub struct Window {
    permits: Arc<Semaphore>,
    size: u32,
}

impl Window {
    /// A window of `size` permits (at least one: a window of none would never send).
    pub fn new(size: usize) -> Window {
        let size = u32::try_from(size.max(1)).unwrap_or(u32::MAX);
        Window {
            permits: Arc::new(Semaphore::new(size as usize)),
            size,
        }
    }

    /// A permit if one is free now.
    pub fn try_permit(&self) -> Option<Permit> {
        Arc::clone(&self.permits).try_acquire_owned().ok()
    }

    /// A permit, once one is free. (`None` only if the window were closed, which
    /// nothing does: the message then goes without one.)
    pub async fn permit(&self) -> Option<Permit> {
        Arc::clone(&self.permits).acquire_owned().await.ok()
    }

    /// Messages in flight: permits taken and not given back.
    pub fn in_flight(&self) -> usize {
        (self.size as usize).saturating_sub(self.permits.available_permits())
    }

    /// True while every permit is taken: the next message waits.
    pub fn is_full(&self) -> bool {
        self.permits.available_permits() == 0
    }

    /// Resolves once every message sent has been answered (every permit is back).
    pub fn drained(&self) -> impl Future<Output = ()> + 'static {
        let (permits, size) = (Arc::clone(&self.permits), self.size);
        async move {
            let _all = permits.acquire_many_owned(size).await;
        }
    }
}

/// Awaits `reply` on the current thread's runtime and then gives `permit` back: the
/// message's place in its window is freed when its receiver has handled it. What the
/// reply says is dropped; a sender that needs it awaits the reply itself.
pub fn release_on_reply<R: 'static>(
    reply: impl Future<Output = R> + 'static,
    permit: Option<Permit>,
) {
    actix_rt::spawn(async move {
        let _answer = reply.await;
        drop(permit);
    });
}

/// A reply on its way back, with the permit its message holds.
type Pending = (LocalBoxFuture<'static, ()>, Option<Permit>);

/// Awaits the replies of one receiver in the order its messages were sent, on one task
/// of the current thread, and gives each message's permit back as its reply comes.
///
/// One task per receiver rather than one per message ([`release_on_reply`]): a
/// receiver handles its mailbox in order, so when one reply wakes the task the next
/// ones are often ready too, and a burst of replies costs one wake-up, not one task
/// each. The task ends once this is dropped and the replies sent are in.
///
/// Its queue is bounded by the window it serves: every entry holds at least one of the
/// window's permits, so there are never more entries than permits. A reply that holds
/// no permit has nothing to give back in order and is awaited on a task of its own.
pub struct InOrder {
    tx: mpsc::Sender<Pending>,
}

impl InOrder {
    /// Starts the task on the current thread's runtime, for a window of `permits`.
    pub fn start(permits: usize) -> InOrder {
        let (tx, mut rx) = mpsc::channel::<Pending>(permits.max(1));
        actix_rt::spawn(async move {
            while let Some((reply, permit)) = rx.recv().await {
                reply.await;
                drop(permit);
            }
        });
        InOrder { tx }
    }

    /// Awaits `reply` after those pushed before it, then gives `permit` back. What the
    /// reply says is dropped.
    pub fn push<R: 'static>(
        &self,
        reply: impl Future<Output = R> + 'static,
        permit: Option<Permit>,
    ) {
        let Some(permit) = permit else {
            return release_on_reply(reply, None);
        };
        let pending = (reply.map(drop).boxed_local(), Some(permit));
        if let Err(e) = self.tx.try_send(pending) {
            // Not reached while entries hold the window's permits; should it be, the
            // reply still gives its permit back, on a task of its own.
            let (reply, permit) = e.into_inner();
            release_on_reply(reply, permit);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix_rt::test]
    async fn a_permit_is_taken_per_message_and_given_back_with_its_reply() {
        let window = Window::new(2);
        let first = window.try_permit();
        let second = window.try_permit();
        assert!(first.is_some() && second.is_some());
        assert!(
            window.try_permit().is_none(),
            "two in flight fill a window of two"
        );
        assert_eq!(window.in_flight(), 2);

        let (answer, reply) = tokio::sync::oneshot::channel::<()>();
        release_on_reply(reply, first);
        tokio::task::yield_now().await;
        assert_eq!(window.in_flight(), 2, "not answered yet");
        let _ = answer.send(());
        let third = window.permit().await;
        assert!(third.is_some(), "the reply gave its permit back");
        assert_eq!(window.in_flight(), 2);
    }

    #[actix_rt::test]
    async fn drained_waits_for_every_permit() {
        let window = Window::new(3);
        let held = window.try_permit();
        let drained = actix_rt::spawn(window.drained());
        tokio::task::yield_now().await;
        assert!(!drained.is_finished(), "one message is still in flight");
        drop(held);
        assert!(drained.await.is_ok());
        assert_eq!(window.in_flight(), 0, "drained gives the permits back");
    }

    #[actix_rt::test]
    async fn replies_awaited_in_order_give_their_permits_back_in_order() {
        let window = Window::new(2);
        let replies = InOrder::start(2);
        let (first_answer, first) = tokio::sync::oneshot::channel::<()>();
        let (second_answer, second) = tokio::sync::oneshot::channel::<()>();
        replies.push(first, window.try_permit());
        replies.push(second, window.try_permit());
        let _ = second_answer.send(());
        tokio::task::yield_now().await;
        assert_eq!(window.in_flight(), 2, "the first is still unanswered");
        let _ = first_answer.send(());
        window.drained().await;
        assert_eq!(window.in_flight(), 0);
    }

    #[test]
    fn a_window_of_none_has_room_for_one() {
        let window = Window::new(0);
        assert!(window.try_permit().is_some());
    }
}
