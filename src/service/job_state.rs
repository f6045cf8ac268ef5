//! A job actor's objects, one slot each (the group's [`ObjectSlot`]): the object's key,
//! its discovered label sets (the group's `Arc`, nothing copied), its serialized groups
//! and its parts in each view partition kept. Applying an object's change relabels it
//! only when the rules can see the change ([`crate::relabel::Visibility`]), and updates
//! the body and the partitions for that object alone: O(log n) each.
//!
//! Pure and synchronous: the actor ([`super::job_actor`]) feeds it the group's
//! messages and publishes what it holds.

use std::sync::Arc;

use arcstr::ArcStr;

use super::relabelling::{Relabelling, Scratch};
use super::snapshot::JobWork;
use super::view_index::ViewIndex;
use super::views::{
    MAX_INDEXES, ObjectParts, ObjectTargets, ViewKind, same_nodes, split, split_by_address,
};
use crate::actors::messages::{ObjectTargets as Discovered, TargetChange};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::relabel::Relabeller;
use crate::sd_output::{KeyedGroups, ObjectGroups, Share};

/// `held`'s parts in the partition at `at` (of `kind`), moved to `new`, when they stay
/// where they are: a partition by address (shards, members), an object of one group
/// whose addresses are `held`'s very ones (its labels changed), and parts that are all
/// shares of `held`'s groups. Splitting anew would hash every address again to find
/// the same buckets. `None` when they must be split.
fn same_addresses_parts(
    kind: ViewKind,
    held: &Slot,
    at: usize,
    new: &Arc<ObjectGroups>,
) -> Option<ObjectParts> {
    let old = held.groups.as_ref()?;
    if kind == ViewKind::Node || !old.same_addresses(new) {
        return None;
    }
    held.parts
        .get(at)?
        .iter()
        .map(|(bucket, share)| {
            Arc::ptr_eq(share.groups(), old).then(|| (bucket.clone(), share.of(new)))
        })
        .collect()
}

/// One object as a job actor holds it.
struct Slot {
    key: ObjectKey,
    /// Its discovered targets, shared with the group's cache: what the next change is
    /// compared with, to tell whether the rules can see it.
    discovered: Discovered,
    /// Its groups; `None` when no target is left after relabelling.
    groups: Option<Arc<ObjectGroups>>,
    /// Its parts in each kept partition, in the order of [`JobState::indexes`].
    parts: Vec<ObjectParts>,
}

/// The objects of one discovery, relabelled, in body order and in each kept partition.
pub struct JobState {
    relabelling: Relabelling,
    /// The relabelling's rules, remembering their decisions per label name.
    relabeller: Relabeller,
    slots: Vec<Option<Slot>>,
    /// Every object with targets, in body order.
    pub body: KeyedGroups,
    /// The view partitions consumers asked for, at most [`MAX_INDEXES`].
    pub indexes: Vec<ViewIndex>,
    /// The Ready members, sorted, for the member partition.
    members: Arc<[ArcStr]>,
    scratch: Scratch,
    /// What it has done.
    pub work: JobWork,
}

impl JobState {
    /// No objects yet.
    pub fn new(relabelling: Relabelling) -> JobState {
        JobState {
            relabeller: Relabeller::new(Arc::clone(&relabelling.rules)),
            relabelling,
            slots: Vec::new(),
            body: KeyedGroups::default(),
            indexes: Vec::new(),
            members: Arc::new([]),
            scratch: Scratch::default(),
            work: JobWork::default(),
        }
    }

    /// Applies one object's change to its slot; true if its groups changed.
    pub fn change(&mut self, change: &TargetChange) -> bool {
        let slot = change.slot.0 as usize;
        let held = self.slots.get_mut(slot).and_then(Option::take);
        let Some(discovered) = &change.targets else {
            return held.is_some_and(|h| self.unlist(&h));
        };
        match held {
            Some(held) if self.unseen(&held, &change.key, discovered) => {
                self.work.objects_unseen += 1;
                let discovered = Arc::clone(discovered);
                self.put(slot, Slot { discovered, ..held });
                false
            }
            held => self.relabel(slot, held, &change.key, discovered),
        }
    }

    /// Replaces every object by `targets` (the group's whole cache): objects whose
    /// change the rules cannot see stay as they are, others are relabelled, those not
    /// in `targets` are gone. Returns how many objects' groups changed.
    pub fn replace(&mut self, targets: &[TargetChange]) -> usize {
        let mut previous = std::mem::take(&mut self.slots);
        let mut pending = Vec::new();
        for change in targets {
            let Some(discovered) = &change.targets else {
                continue;
            };
            let slot = change.slot.0 as usize;
            match previous.get_mut(slot).and_then(Option::take) {
                Some(held) if self.unseen(&held, &change.key, discovered) => {
                    self.work.objects_unseen += 1;
                    let discovered = Arc::clone(discovered);
                    self.put(slot, Slot { discovered, ..held });
                }
                held => pending.push((change, discovered, held)),
            }
        }
        // What is gone leaves before what changed is placed: a key may have moved to
        // another slot.
        let mut changed = 0;
        for gone in previous.into_iter().flatten() {
            changed += usize::from(self.unlist(&gone));
        }
        for (change, discovered, held) in pending {
            let slot = change.slot.0 as usize;
            changed += usize::from(self.relabel(slot, held, &change.key, discovered));
        }
        changed
    }

    /// True when `held` is the object `key` and `discovered` gives the same targets
    /// (and, with a node partition kept, the same nodes).
    fn unseen(&mut self, held: &Slot, key: &ObjectKey, discovered: &Discovered) -> bool {
        if !(held.key.same_strings(key) || held.key == *key) {
            return false;
        }
        if Arc::ptr_eq(&held.discovered, discovered) {
            return true;
        }
        self.relabeller.same_targets(&held.discovered, discovered)
            && (!self.keeps_node_index() || same_nodes(&held.discovered, discovered))
    }

    /// Relabels object `key` into `slot`, replacing `held` (what the slot held); true
    /// if its groups differ from `held`'s. The same bytes keep the groups already in
    /// the body, untouched.
    fn relabel(
        &mut self,
        slot: usize,
        held: Option<Slot>,
        key: &ObjectKey,
        discovered: &Discovered,
    ) -> bool {
        self.work.objects_relabelled += 1;
        let nodes = self.keeps_node_index();
        let groups = self.relabelling.object_groups(
            &mut self.relabeller,
            discovered,
            &mut self.scratch,
            nodes,
        );
        let groups = (!groups.is_empty()).then(|| Arc::new(groups));
        let (groups, changed) = match &held {
            Some(h) if h.key == *key && h.groups.as_deref() == groups.as_deref() => {
                (h.groups.clone(), false)
            }
            h => {
                let had = h.as_ref().is_some_and(|h| h.groups.is_some());
                let changed = had || groups.is_some();
                (groups, changed)
            }
        };
        let same_key = held.as_ref().is_some_and(|h| h.key == *key);
        if changed {
            self.place_body(held.as_ref(), key, groups.as_ref(), same_key);
        }
        let parts = match held {
            // The same bytes on the same nodes: the same parts, the views untouched.
            Some(h)
                if !changed
                    && (!self.keeps_node_index() || same_nodes(&h.discovered, discovered)) =>
            {
                h.parts
            }
            held => self.place_parts(held.as_ref(), key, groups.as_ref(), same_key),
        };
        self.work.objects_changed += u64::from(changed);
        let discovered = Arc::clone(discovered);
        let key = key.clone();
        self.put(
            slot,
            Slot {
                key,
                discovered,
                groups,
                parts,
            },
        );
        changed
    }

    /// Puts `groups` in the body for `key`, in place of what `held` had there (replaced
    /// in one step when it is the same key).
    fn place_body(
        &mut self,
        held: Option<&Slot>,
        key: &ObjectKey,
        groups: Option<&Arc<ObjectGroups>>,
        same_key: bool,
    ) {
        if let Some(h) = held
            && let Some(g) = &h.groups
            && !(same_key && groups.is_some())
        {
            self.body.remove(&h.key, &Share::whole(g));
        }
        if let Some(g) = groups {
            self.body.insert(key, &Share::whole(g));
        }
    }

    /// Splits the object whose targets are in the scratch into every kept partition,
    /// in place of `held`'s parts; returns its parts.
    fn place_parts(
        &mut self,
        held: Option<&Slot>,
        key: &ObjectKey,
        groups: Option<&Arc<ObjectGroups>>,
        same_key: bool,
    ) -> Vec<ObjectParts> {
        let parts: Vec<ObjectParts> = (0..self.indexes.len())
            .map(|at| {
                let kind = self.indexes[at].kind;
                let kept = held.filter(|_| same_key).zip(groups);
                kept.and_then(|(h, new)| same_addresses_parts(kind, h, at, new))
                    .unwrap_or_else(|| self.split_scratch(kind, groups))
            })
            .collect();
        for (at, new) in parts.iter().enumerate() {
            let index = &mut self.indexes[at];
            match held.and_then(|h| h.parts.get(at).map(|old| (h, old))) {
                Some((_, old)) if same_key => index.replace(key, old, new),
                Some((h, old)) => {
                    index.remove(&h.key, old);
                    index.insert(key, new);
                }
                None => index.insert(key, new),
            }
        }
        parts
    }

    /// Takes `held` (just removed from its slot) out of the body and the partitions;
    /// true if it had groups.
    fn unlist(&mut self, held: &Slot) -> bool {
        for (index, parts) in self.indexes.iter_mut().zip(&held.parts) {
            index.remove(&held.key, parts);
        }
        let Some(groups) = &held.groups else {
            return false;
        };
        self.body.remove(&held.key, &Share::whole(groups));
        self.work.objects_changed += 1;
        true
    }

    fn put(&mut self, slot: usize, state: Slot) {
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot] = Some(state);
    }

    /// The parts in partition `kind` of the object whose relabelled targets are in the
    /// scratch and whose groups are `whole`.
    fn split_scratch(&self, kind: ViewKind, whole: Option<&Arc<ObjectGroups>>) -> ObjectParts {
        let Some(whole) = whole else {
            return Box::new([]);
        };
        let object = ObjectTargets {
            targets: &self.scratch.targets,
            nodes: &self.scratch.nodes,
            whole,
            placeholder: &self.relabelling.scrape.job_name,
        };
        split(kind, &object, &self.members)
    }

    /// True when a node partition is kept: a change of node alone (which the rules
    /// may not see) must then be relabelled and split anew.
    fn keeps_node_index(&self) -> bool {
        self.indexes.iter().any(|i| i.kind == ViewKind::Node)
    }

    /// Keeps partition `kind`, built now from every object if it is not kept
    /// (dropping the one `last_asked` says was asked for least recently when
    /// [`MAX_INDEXES`] are kept); true if it was built.
    pub fn keep_index(&mut self, kind: ViewKind, last_asked: impl Fn(ViewKind) -> u64) -> bool {
        if self.indexes.iter().any(|i| i.kind == kind) {
            return false;
        }
        if self.indexes.len() >= MAX_INDEXES
            && let Some(at) =
                (0..self.indexes.len()).min_by_key(|&i| last_asked(self.indexes[i].kind))
        {
            self.indexes.remove(at);
            for slot in self.slots.iter_mut().flatten() {
                if at < slot.parts.len() {
                    slot.parts.remove(at);
                }
            }
        }
        self.indexes.push(ViewIndex::new(kind));
        for slot in self.slots.iter_mut().flatten() {
            slot.parts.push(Box::new([]));
        }
        self.refill(self.indexes.len() - 1);
        true
    }

    /// Sets the members the member partition assigns targets to; true if that
    /// partition is kept and was filled anew.
    pub fn set_members(&mut self, members: Arc<[ArcStr]>) -> bool {
        if members == self.members {
            return false;
        }
        self.members = members;
        match self.indexes.iter().position(|i| i.kind == ViewKind::Member) {
            Some(at) => {
                self.refill(at);
                true
            }
            None => false,
        }
    }

    /// Splits every object anew into the partition at `at` (just built, or its
    /// members changed): each object with targets relabelled once.
    fn refill(&mut self, at: usize) {
        self.work.indexes_filled += 1;
        let kind = self.indexes[at].kind;
        self.indexes[at].clear();
        let mut slots = std::mem::take(&mut self.slots);
        for slot in slots.iter_mut().flatten() {
            let by_address =
                (slot.groups.as_ref()).and_then(|g| split_by_address(kind, g, &self.members));
            let parts = match (&slot.groups, by_address) {
                (None, _) => Box::new([]) as ObjectParts,
                // Its addresses are in its bytes: no need to relabel it.
                (Some(_), Some(parts)) => parts,
                (Some(_), None) => {
                    self.relabelling.object_groups(
                        &mut self.relabeller,
                        &slot.discovered,
                        &mut self.scratch,
                        kind == ViewKind::Node,
                    );
                    self.split_scratch(kind, slot.groups.as_ref())
                }
            };
            self.indexes[at].insert(&slot.key, &parts);
            if let Some(p) = slot.parts.get_mut(at) {
                *p = parts;
            }
        }
        self.slots = slots;
    }

    /// Hands `each` every object's discovered label sets, in key order, with the
    /// relabelling and its remembering rules: for the targets API, which reads what the
    /// job holds instead of keeping a copy of every target.
    pub fn each_object(&mut self, mut each: impl FnMut(&Relabelling, &mut Relabeller, &[Labels])) {
        let mut objects: Vec<&Slot> = self.slots.iter().flatten().collect();
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        for slot in objects {
            each(&self.relabelling, &mut self.relabeller, &slot.discovered);
        }
    }

    /// Every target, relabelled with `job` as the job's name, in body order. Relabels
    /// every object: for listings, not for a hot path.
    pub fn targets_named(&mut self, job: &str) -> Vec<Labels> {
        let mut objects: Vec<&Slot> = self.slots.iter().flatten().collect();
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Vec::new();
        for slot in objects {
            let targets =
                self.relabelling
                    .targets_named(&mut self.relabeller, job, &slot.discovered);
            out.extend(targets);
        }
        out
    }
}

#[cfg(test)]
#[path = "job_state_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "job_state_views_tests.rs"]
mod views_tests;
