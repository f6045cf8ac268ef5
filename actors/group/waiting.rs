//! The subscriptions that wait on a group's URLs rather than on targets: those told of
//! every change in the state of the URLs their variant needs (`WatchUrlStatus`), and
//! those waiting for their variant's sync or the first configuration problem that
//! rules it out (`AwaitSyncOrFailure`). Plain bookkeeping: the group says what synced
//! and which URL changed, and this answers whom it concerns.

use actix::Recipient;
use tokio::sync::oneshot;

use super::variant::TargetVariant;
use crate::messages::{SubscriberId, UrlStatusChanged};
use crate::url_watcher::{UrlError, UrlStatus};

/// How a waiting subscription hears the outcome: synced, or the problem that keeps it
/// from syncing.
type SyncAnswer = oneshot::Sender<Result<(), UrlError>>;

/// A subscription told of its URLs' state.
struct StatusWatcher {
    subscriber: SubscriberId,
    wants: TargetVariant,
    recipient: Recipient<UrlStatusChanged>,
}

/// The group's subscriptions waiting on its URLs.
#[derive(Default)]
pub struct Waiting {
    status_watchers: Vec<StatusWatcher>,
    sync_waiters: Vec<(TargetVariant, SyncAnswer)>,
}

impl Waiting {
    /// `subscriber` (of `wants`) is to be told of every change in its URLs' state
    /// through `recipient`.
    pub fn watch_status(
        &mut self,
        subscriber: SubscriberId,
        wants: TargetVariant,
        recipient: Recipient<UrlStatusChanged>,
    ) {
        self.status_watchers.push(StatusWatcher {
            subscriber,
            wants,
            recipient,
        });
    }

    /// A URL's state changed: each watcher whose variant `needs` it is sent the state
    /// of all its URLs (`urls`).
    pub fn status_changed(
        &self,
        needs: impl Fn(&TargetVariant) -> bool,
        urls: impl Fn(&TargetVariant) -> Vec<UrlStatus>,
    ) {
        for w in self.status_watchers.iter().filter(|w| needs(&w.wants)) {
            w.recipient.do_send(UrlStatusChanged {
                subscriber: w.subscriber,
                urls: urls(&w.wants),
            });
        }
    }

    /// Waits for `wants` to sync, or for a problem that rules it out.
    pub fn await_sync(
        &mut self,
        wants: TargetVariant,
    ) -> impl Future<Output = Result<(), UrlError>> + 'static {
        let (answer, rx) = oneshot::channel();
        self.sync_waiters.push((wants, answer));
        async move {
            match rx.await {
                Ok(answer) => answer,
                // The group stopped first, so the variant never syncs: the
                // subscription's own deadline tells.
                Err(_) => std::future::pending().await,
            }
        }
    }

    /// Answers the waiters of the variants that `is_synced` now.
    pub fn answer_synced(&mut self, is_synced: impl Fn(&TargetVariant) -> bool) {
        self.answer(|wants| is_synced(wants).then_some(Ok(())));
    }

    /// A configuration `problem` rules out the sync of the waiters' variants that
    /// `ruled_out` names: they are answered with it.
    pub fn fail(&mut self, problem: &UrlError, ruled_out: impl Fn(&TargetVariant) -> bool) {
        self.answer(|wants| ruled_out(wants).then(|| Err(problem.clone())));
    }

    /// Answers each waiter that `outcome` has an answer for; keeps the others.
    fn answer(&mut self, outcome: impl Fn(&TargetVariant) -> Option<Result<(), UrlError>>) {
        let mut waiting = Vec::with_capacity(self.sync_waiters.len());
        for (wants, answer) in std::mem::take(&mut self.sync_waiters) {
            match outcome(&wants) {
                // The subscription may have given up waiting: nobody to tell.
                Some(result) => drop(answer.send(result)),
                None => waiting.push((wants, answer)),
            }
        }
        self.sync_waiters = waiting;
    }

    /// Forgets `subscriber`'s status notices (it unsubscribed).
    pub fn forget(&mut self, subscriber: SubscriberId) {
        self.status_watchers.retain(|w| w.subscriber != subscriber);
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::time::SystemTime;

    use futures_util::FutureExt;

    use super::*;
    use crate::model::Role;
    use crate::targets::AttachMetadata;
    use crate::url_watcher::Step;
    use crate::url_watcher::UrlProblem;

    fn variant(role: Role) -> TargetVariant {
        TargetVariant::new(role, AttachMetadata::default())
    }

    fn forbidden() -> UrlError {
        UrlError {
            step: Step::List,
            problem: UrlProblem::Gone,
            message: "403 Forbidden: pods is forbidden".into(),
            configuration: true,
            at: SystemTime::UNIX_EPOCH,
        }
    }

    /// The answer, if there is one yet (no runtime: an answered waiter is ready).
    fn answer(
        waiter: &mut Pin<Box<impl Future<Output = Result<(), UrlError>>>>,
    ) -> Option<Result<(), UrlError>> {
        waiter.as_mut().now_or_never()
    }

    #[test]
    fn a_waiter_is_answered_once_its_variant_syncs() {
        let mut waiting = Waiting::default();
        let mut pod = Box::pin(waiting.await_sync(variant(Role::Pod)));
        let mut service = Box::pin(waiting.await_sync(variant(Role::Service)));
        waiting.answer_synced(|w| w.role == Role::Pod);
        assert_eq!(answer(&mut pod), Some(Ok(())));
        assert_eq!(answer(&mut service), None, "still waiting");
        waiting.answer_synced(|_| true);
        assert_eq!(answer(&mut service), Some(Ok(())));
    }

    #[test]
    fn a_problem_fails_only_the_waiters_it_rules_out() {
        let mut waiting = Waiting::default();
        let mut pod = Box::pin(waiting.await_sync(variant(Role::Pod)));
        let mut node = Box::pin(waiting.await_sync(variant(Role::Node)));
        waiting.fail(&forbidden(), |w| w.role == Role::Pod);
        assert_eq!(answer(&mut pod), Some(Err(forbidden())));
        assert_eq!(answer(&mut node), None, "its URLs are fine");
        // A waiter that gave up is answered without a fuss.
        drop(node);
        waiting.answer_synced(|_| true);
        assert!(waiting.sync_waiters.is_empty());
    }

    #[test]
    fn a_waiter_of_a_group_that_stopped_waits_for_its_own_deadline() {
        let mut waiting = Waiting::default();
        let mut pod = Box::pin(waiting.await_sync(variant(Role::Pod)));
        drop(waiting);
        assert_eq!(answer(&mut pod), None);
    }
}
