//! What a group holds back for a subscriber that fell behind, and how it is read.
//!
//! The group keeps the *batches* it would have sent (each shared with every other
//! subscriber), not the changes in them: holding one back costs the group's thread a
//! pointer per batch per lagging subscriber. Inserting every change into a map per
//! lagging subscriber instead (a hash and three reference counts per change per
//! subscriber) would cost that thread more than sending; with a hundred subscribers on
//! it, a lag would make the group slower and so feed itself.
//!
//! Whoever reads a backlog keeps only the latest change of each slot (see
//! [`ObjectSlot`]): that is the slot's state now, whatever came before. The subscriber
//! does so when it catches up, on its own thread; the group does so only when a backlog
//! outgrows [`Backlog::bound`], so that memory stays bounded by the number of objects,
//! not by the number of events.

use std::sync::Arc;
use std::time::Instant;

use crate::messages::{ObjectSlot, TargetChange};

/// Batches held back for one subscriber, oldest first.
#[derive(Debug)]
pub struct Backlog {
    batches: Vec<Arc<[TargetChange]>>,
    changes: usize,
    /// When the group received the events of the oldest batch held.
    received: Instant,
}

impl Backlog {
    /// How many changes a backlog may hold before the group compacts it, for a role
    /// with `objects` cached objects. Twice the objects, so that a compaction (which
    /// leaves at most one change per object) is followed by at least as many pushes
    /// before the next: compacting costs a constant per change, however long the lag.
    /// The floor keeps small roles from compacting at every batch.
    pub fn bound(objects: usize) -> usize {
        2 * objects.max(1024)
    }

    /// An empty backlog whose first batch's events the group received at `received`.
    pub fn new(received: Instant) -> Backlog {
        Backlog {
            batches: Vec::new(),
            changes: 0,
            received,
        }
    }

    /// When the group received the events of the oldest batch held.
    pub fn received(&self) -> Instant {
        self.received
    }

    /// Holds back `batch`.
    pub fn push(&mut self, batch: &Arc<[TargetChange]>) {
        self.changes += batch.len();
        self.batches.push(Arc::clone(batch));
    }

    /// Changes held, counting each slot's superseded ones.
    pub fn changes(&self) -> usize {
        self.changes
    }

    /// Replaces the held batches by one with the latest change of each slot. Drops the
    /// superseded changes (and the targets only they kept alive).
    pub fn compact(&mut self) {
        let mut latest = Vec::new();
        for_latest_per_slot(&self.batches, &mut SlotSet::default(), |c| {
            latest.push(c.clone())
        });
        self.changes = latest.len();
        self.batches = vec![latest.into()];
    }

    /// The held batches, oldest first.
    pub fn into_batches(self) -> Vec<Arc<[TargetChange]>> {
        self.batches
    }
}

/// A set of slots, kept between uses so that reading a backlog does not allocate.
#[derive(Debug, Default)]
pub struct SlotSet {
    bits: Vec<u64>,
}

impl SlotSet {
    /// Adds `slot`; false if it was already in.
    pub fn insert(&mut self, ObjectSlot(slot): ObjectSlot) -> bool {
        let (word, bit) = (slot as usize / 64, 1u64 << (slot % 64));
        if word >= self.bits.len() {
            self.bits.resize(word + 1, 0);
        }
        let new = self.bits[word] & bit == 0;
        self.bits[word] |= bit;
        new
    }

    /// Empties the set, keeping its memory.
    pub fn clear(&mut self) {
        self.bits.fill(0);
    }
}

/// Calls `f` with the latest change of each slot found in `batches` (oldest first), the
/// newest change first. `seen` is left empty.
pub fn for_latest_per_slot<'a>(
    batches: &'a [Arc<[TargetChange]>],
    seen: &mut SlotSet,
    mut f: impl FnMut(&'a TargetChange),
) {
    for change in batches.iter().rev().flat_map(|b| b.iter().rev()) {
        if seen.insert(change.slot) {
            f(change);
        }
    }
    seen.clear();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ObjectKey;

    fn change(slot: u32, name: &str, targets: usize) -> TargetChange {
        TargetChange {
            slot: ObjectSlot(slot),
            key: ObjectKey::new(&"ns".into(), &name.into()),
            targets: (targets > 0).then(|| vec![crate::labels::Labels::default(); targets].into()),
        }
    }

    fn latest(batches: &[Arc<[TargetChange]>]) -> Vec<(u32, String, usize)> {
        let mut out = Vec::new();
        for_latest_per_slot(batches, &mut SlotSet::default(), |c| {
            out.push((
                c.slot.0,
                c.key.to_string(),
                c.targets.as_ref().map_or(0, |t| t.len()),
            ))
        });
        out.sort();
        out
    }

    #[test]
    fn only_the_latest_change_of_each_slot_is_read() {
        let batches: Vec<Arc<[TargetChange]>> = vec![
            vec![change(0, "a", 1), change(1, "b", 1), change(0, "a", 2)].into(),
            // "a" leaves slot 0; "c" takes slot 200 (past the first word of the set).
            vec![change(0, "a", 0), change(200, "c", 3)].into(),
            vec![change(1, "b", 4)].into(),
        ];
        assert_eq!(
            latest(&batches),
            [
                (0, "ns/a".to_string(), 0),
                (1, "ns/b".to_string(), 4),
                (200, "ns/c".to_string(), 3)
            ]
        );
    }

    #[test]
    fn a_slot_set_is_empty_again_after_a_read() {
        let mut seen = SlotSet::default();
        let first: Vec<Arc<[TargetChange]>> = vec![vec![change(5, "a", 1)].into()];
        for_latest_per_slot(&first, &mut seen, |_| {});
        let mut read = 0;
        for_latest_per_slot(&first, &mut seen, |_| read += 1);
        assert_eq!(read, 1, "slot 5 is read again by the next reader");
    }

    #[test]
    fn compacting_keeps_each_slots_latest_change_and_counts_them() {
        let mut backlog = Backlog::new(Instant::now());
        for targets in 1..=5 {
            backlog.push(&vec![change(0, "a", targets), change(1, "b", targets)].into());
        }
        assert_eq!(backlog.changes(), 10);
        let before = latest(&backlog.batches);
        backlog.compact();
        assert_eq!(backlog.changes(), 2);
        assert_eq!(backlog.batches.len(), 1);
        assert_eq!(latest(&backlog.batches), before);
        assert_eq!(
            before,
            [(0, "ns/a".to_string(), 5), (1, "ns/b".to_string(), 5)]
        );
    }

    #[test]
    fn the_bound_leaves_room_for_as_many_pushes_as_a_compaction_keeps() {
        assert_eq!(Backlog::bound(0), 2048);
        assert_eq!(Backlog::bound(100_000), 200_000);
    }
}
