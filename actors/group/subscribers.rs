//! A group's subscribers: those registered, per role, each with the variant it asked
//! for and its [`SubscriberSlot`], and those waiting to be registered in the next pass.
//! The group hands it one batch per variant and
//! it reaches every subscriber of that variant through its slot, each slot holding
//! batches back while its subscriber lags (`fanout.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::Stream;

use super::fanout::{AnsweredAll, ReplyFrom, SubscriberSlot};
use super::variant::{TargetVariant, VariantId};
use crate::messages::{SubscriberId, SubscriberLink, TargetChange};
use crate::metrics::Metrics;
use crate::model::Role;

/// A registered subscriber: the variant it asked for, and its slot.
struct Subscribed {
    variant: VariantId,
    slot: SubscriberSlot,
}

/// The group's subscribers. See the module documentation.
pub struct Subscribers {
    /// Each role's registered subscribers.
    by_role: HashMap<Role, Vec<Subscribed>>,
    /// Subscribers that asked to register since the last pass.
    pending: Vec<(TargetVariant, SubscriberLink)>,
    /// Whether a registration pass is on its way.
    scheduled: bool,
    /// How many messages each subscriber may leave unanswered.
    in_flight: usize,
    /// Where a slot's holding batches back is counted.
    metrics: Arc<Metrics>,
    /// Says when a subscriber it holds batches back for has answered every message,
    /// which makes it due its backlog.
    answered: AnsweredAll,
}

impl Subscribers {
    /// No subscriber yet; each will be allowed `in_flight` unanswered messages.
    pub fn new(in_flight: usize, metrics: Arc<Metrics>) -> Subscribers {
        Subscribers {
            metrics,
            by_role: HashMap::new(),
            pending: Vec::new(),
            scheduled: false,
            in_flight,
            answered: AnsweredAll::default(),
        }
    }

    /// The subscribers that answered every message, as they do, for the group's
    /// context to read (once; `None` after).
    pub fn answered(&mut self) -> Option<impl Stream<Item = ReplyFrom> + 'static> {
        self.answered.stream()
    }

    /// `link` asks for `wants`: it waits for the next registration pass. True when no
    /// pass is on its way yet, so the caller schedules one.
    pub fn queue(&mut self, wants: TargetVariant, link: SubscriberLink) -> bool {
        self.pending.push((wants, link));
        !std::mem::replace(&mut self.scheduled, true)
    }

    /// The subscribers to register in this pass.
    pub fn take_pending(&mut self) -> Vec<(TargetVariant, SubscriberLink)> {
        self.scheduled = false;
        std::mem::take(&mut self.pending)
    }

    /// Registers `link` as a subscriber of `variant` of `role`, sending it `snapshot`
    /// (every target it starts from).
    pub fn add(
        &mut self,
        (role, variant): (Role, VariantId),
        link: SubscriberLink,
        snapshot: Arc<[TargetChange]>,
        synced: bool,
    ) {
        let mut slot = SubscriberSlot::new(link, self.in_flight);
        slot.replace(snapshot, synced);
        let subscribed = Subscribed { variant, slot };
        self.by_role.entry(role).or_default().push(subscribed);
    }

    /// Sends `batch` to every subscriber of `variant` of `role` (see
    /// [`SubscriberSlot::push`] for `synced`, `received` and `bound`).
    pub fn push(
        &mut self,
        (role, variant): (Role, VariantId),
        batch: &Arc<[TargetChange]>,
        synced: bool,
        received: Instant,
        bound: usize,
    ) {
        let Some(subscribed) = self.by_role.get_mut(&role) else {
            return;
        };
        for (index, s) in subscribed.iter_mut().enumerate() {
            if s.variant != variant {
                continue;
            }
            let id = s.slot.link.id;
            let from = ReplyFrom { role, index, id };
            let held = s
                .slot
                .push(batch, synced, received, bound, &self.answered, from);
            if held {
                self.metrics.engine.subscriber_coalesced.inc();
            }
        }
    }

    /// A subscriber answered every message: it is due the batches held back for it;
    /// `synced` says whether its variant has synced.
    pub fn replied(&mut self, from: ReplyFrom, synced: impl Fn(VariantId) -> bool) {
        let Some(subscribed) = self.by_role.get_mut(&from.role) else {
            return;
        };
        let Some(index) = locate(subscribed, from.index, |s| s.slot.link.id == from.id) else {
            return;
        };
        let s = &mut subscribed[index];
        s.slot.replied(synced(s.variant));
    }

    /// Forgets subscriber `id`, registered or pending.
    pub fn remove(&mut self, id: SubscriberId) {
        self.pending.retain(|(_, link)| link.id != id);
        for subscribed in self.by_role.values_mut() {
            subscribed.retain(|s| s.slot.link.id != id);
        }
        self.by_role.retain(|_, subscribed| !subscribed.is_empty());
    }

    /// True when no subscriber is registered or pending.
    pub fn is_empty(&self) -> bool {
        self.by_role.is_empty() && self.pending.is_empty()
    }

    /// Whether a registered subscriber asks for `variant` of `role`.
    pub fn want(&self, role: Role, variant: VariantId) -> bool {
        let subscribed = self.by_role.get(&role);
        subscribed.is_some_and(|s| s.iter().any(|s| s.variant == variant))
    }
}

/// Where the element that `is` names sits in `list`: at `hint`, where it was when a
/// slot started holding batches back, unless an unsubscribe has moved it since.
fn locate<T>(list: &[T], hint: usize, is: impl Fn(&T) -> bool) -> Option<usize> {
    match list.get(hint) {
        Some(at_hint) if is(at_hint) => Some(hint),
        _ => list.iter().position(is),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_finds_its_subscriber_where_it_was_or_where_it_moved() {
        let ids = [7, 3, 9];
        assert_eq!(locate(&ids, 1, |id| *id == 3), Some(1));
        // An unsubscribe before it moved it down by one.
        assert_eq!(locate(&ids[1..], 1, |id| *id == 9), Some(1));
        assert_eq!(locate(&ids[1..], 2, |id| *id == 9), Some(1));
        // It unsubscribed itself: nobody is due anything.
        assert_eq!(locate(&ids, 0, |id| *id == 4), None);
    }
}
