//! A job actor's objects, one slot each (the group's [`ObjectSlot`]): the object's key,
//! its discovered label sets (the group's `Arc`, nothing copied), its serialized groups
//! and its parts in each view partition kept (shards, nodes). Applying an object's
//! change relabels it only when the rules can see the change
//! ([`crate::relabel::Visibility`]), and updates the body and the partitions for that
//! object alone: O(log n) each.
//!
//! Once member views are served ([`JobState::keep_placements`]) each object's entry in
//! the body also carries what assigning its targets to members reads
//! ([`PlacedGroups`]); the assigning itself is done when a member or collector asks
//! (`service::fleet::assigned`), not here.
//!
//! Pure and synchronous: the actor ([`crate::service::jobs::job_actor`]) feeds it the
//! group's messages and publishes what it holds.

use std::borrow::Borrow;
use std::sync::Arc;

use crate::actors::messages::{ObjectSlot, ObjectTargets as Discovered, TargetChange};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::relabel::Relabeller;
use crate::sd_output::{ADDRESS_LABEL, KeptTarget, KeyedGroups, ObjectGroups, PlacedGroups, Share};
use crate::service::jobs::relabel_ahead::{AHEAD_FROM, AHEAD_STEP, Relabelled, relabel_ahead};
use crate::service::jobs::relabelling::{Relabelling, Scratch};
use crate::service::jobs::snapshot::JobWork;
use crate::service::views::index::ViewIndex;
use crate::service::views::{
    MAX_INDEXES, ObjectParts, ObjectTargets, ViewKind, address_hash, needs_nodes, same_nodes,
    split, split_by_address,
};

/// `held`'s parts in the partition at `at` (of `kind`), moved to `new`, when they stay
/// where they are: a partition by address (shards), an object whose addresses are
/// `held`'s very ones (its labels changed), and parts that are all shares of `held`'s
/// groups. Splitting anew would hash every address again to find the same buckets.
/// `None` when they must be split.
fn same_addresses_parts(
    kind: ViewKind,
    held: &Slot,
    at: usize,
    new: &Arc<ObjectGroups>,
) -> Option<ObjectParts> {
    let old = held.groups.as_ref()?;
    if needs_nodes(kind) || !old.same_addresses(new) {
        return None;
    }
    held.parts
        .get(at)?
        .iter()
        .map(|(bucket, share)| {
            (share.groups().is_some_and(|g| Arc::ptr_eq(g, old)))
                .then(|| (bucket.clone(), share.of(new)))
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
    /// Its groups with what assigning them reads, its entry in the body, while
    /// placements are kept.
    placed: Option<Arc<PlacedGroups>>,
    /// Its parts in each kept partition, in the order of [`JobState::indexes`].
    parts: Vec<ObjectParts>,
}

impl Slot {
    /// Its entry in the body, if it has groups.
    fn entry(&self) -> Option<Share> {
        match (&self.placed, &self.groups) {
            (Some(p), _) => Some(Share::placed(p)),
            (None, Some(g)) => Some(Share::whole(g)),
            (None, None) => None,
        }
    }
}

/// The objects of one discovery, relabelled, in body order and in each kept partition.
pub struct JobState {
    relabelling: Relabelling,
    /// The relabelling's rules, remembering their decisions per label name.
    relabeller: Relabeller,
    /// The same for the thread that relabels half of a batch's new objects.
    helper: Relabeller,
    slots: Vec<Option<Slot>>,
    /// Every object with targets, in body order.
    pub body: KeyedGroups,
    /// The view partitions consumers asked for (shards, nodes), at most
    /// [`MAX_INDEXES`].
    pub indexes: Vec<ViewIndex>,
    /// True once member views are served: each body entry carries its placement.
    placing: bool,
    /// The last stamp a placement was made with.
    stamps: u64,
    scratch: Scratch,
    /// What it has done.
    pub work: JobWork,
}

impl JobState {
    /// No objects yet.
    pub fn new(relabelling: Relabelling) -> JobState {
        JobState {
            relabeller: Relabeller::new(Arc::clone(&relabelling.rules)),
            helper: Relabeller::new(Arc::clone(&relabelling.rules)),
            relabelling,
            slots: Vec::new(),
            body: KeyedGroups::default(),
            indexes: Vec::new(),
            placing: false,
            stamps: 0,
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
                self.put_unseen(slot, held, discovered);
                false
            }
            held => self.relabel(slot, held, &change.key, discovered),
        }
    }

    /// Applies a batch's changes in order, those that bring objects to empty slots
    /// relabelled on two threads when there are enough of them ([`relabel_ahead`]);
    /// returns how many objects' groups changed.
    pub fn change_all<C: Borrow<TargetChange>>(&mut self, changes: &[C]) -> usize {
        let mut changed = 0;
        for step in changes.chunks(AHEAD_STEP) {
            let mut ahead = self.relabel_new_ahead(step);
            for (i, change) in step.iter().map(Borrow::borrow).enumerate() {
                let groups_changed = match ahead.get_mut(i).and_then(Option::take) {
                    Some(relabelled) => self.place_new(change, relabelled),
                    None => self.change(change),
                };
                changed += usize::from(groups_changed);
            }
        }
        changed
    }

    /// The object `change` brings to an empty slot; `None` when it removes one or its
    /// slot holds one.
    fn new_object<'c>(&self, change: &'c TargetChange) -> Option<&'c Discovered> {
        (change.targets.as_ref()).filter(|_| self.slot_empty(change.slot))
    }

    /// Whether `slot` holds no object.
    fn slot_empty(&self, slot: ObjectSlot) -> bool {
        self.slots.get(slot.0 as usize).is_none_or(Option::is_none)
    }

    /// For each change of `step`, its relabelling, done on two threads, when it brings
    /// an object to an empty slot and the step has at least [`AHEAD_FROM`] such; empty
    /// (nothing allocated: a flood's small batches) when it has fewer.
    fn relabel_new_ahead<C: Borrow<TargetChange>>(
        &mut self,
        step: &[C],
    ) -> Vec<Option<Relabelled>> {
        let news = step
            .iter()
            .filter(|c| self.new_object((*c).borrow()).is_some());
        if news.count() < AHEAD_FROM {
            return Vec::new();
        }
        let mut ahead: Vec<Option<Relabelled>> = step.iter().map(|_| None).collect();
        let new: Vec<(usize, &Discovered)> = (step.iter().enumerate())
            .filter_map(|(i, c)| Some((i, self.new_object(c.borrow())?)))
            .collect();
        let objects: Vec<&Discovered> = new.iter().map(|(_, d)| *d).collect();
        let nodes = self.reads_nodes();
        let (mine, helper) = (&mut self.relabeller, &mut self.helper);
        let relabelled = relabel_ahead(&self.relabelling, mine, helper, &objects, nodes);
        for ((i, _), r) in new.into_iter().zip(relabelled) {
            ahead[i] = Some(r);
        }
        ahead
    }

    /// Places a new object relabelled ahead; one whose slot was filled meanwhile (a
    /// step with two changes of the slot) is applied as any change.
    fn place_new(&mut self, change: &TargetChange, mut ahead: Relabelled) -> bool {
        let Some(discovered) = self.new_object(change) else {
            return self.change(change);
        };
        std::mem::swap(&mut self.scratch, &mut ahead.scratch);
        let slot = change.slot.0 as usize;
        self.relabelled(slot, None, &change.key, discovered, ahead.groups)
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
                    self.put_unseen(slot, held, discovered);
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

    /// Puts `held` back with `discovered`, whose change the rules cannot see: the same
    /// targets, so the same groups and parts; a placement in the body takes the new
    /// label sets (collectors are served discovered labels).
    fn put_unseen(&mut self, slot: usize, mut held: Slot, discovered: &Discovered) {
        if let Some(p) = &held.placed {
            let placed = Arc::new(PlacedGroups {
                groups: Arc::clone(&p.groups),
                discovered: Arc::clone(discovered),
                kept: p.kept.clone(),
                stamp: self.stamp(),
            });
            self.body.insert(&held.key, &Share::placed(&placed));
            held.placed = Some(placed);
        }
        let discovered = Arc::clone(discovered);
        self.put(slot, Slot { discovered, ..held });
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
            && (!self.reads_nodes() || same_nodes(&held.discovered, discovered))
    }

    /// Relabels object `key` into `slot`, replacing `held` (what the slot held); true
    /// if its groups differ from `held`'s.
    fn relabel(
        &mut self,
        slot: usize,
        held: Option<Slot>,
        key: &ObjectKey,
        discovered: &Discovered,
    ) -> bool {
        let nodes = self.reads_nodes();
        let groups = (self.relabelling).object_groups(
            &mut self.relabeller,
            discovered,
            &mut self.scratch,
            nodes,
        );
        self.relabelled(slot, held, key, discovered, groups)
    }

    /// Puts object `key`, relabelled into `groups` (its kept targets in the scratch),
    /// into `slot`, replacing `held`; true if its groups differ from `held`'s. The same
    /// bytes keep the groups already in the body, untouched.
    fn relabelled(
        &mut self,
        slot: usize,
        held: Option<Slot>,
        key: &ObjectKey,
        discovered: &Discovered,
        groups: ObjectGroups,
    ) -> bool {
        self.work.objects_relabelled += 1;
        let groups = (!groups.is_empty()).then(|| Arc::new(groups));
        let same_key = held.as_ref().is_some_and(|h| h.key == *key);
        let (groups, changed) = match &held {
            Some(h) if same_key && h.groups.as_deref() == groups.as_deref() => {
                (h.groups.clone(), false)
            }
            h => {
                let had = h.as_ref().is_some_and(|h| h.groups.is_some());
                let changed = had || groups.is_some();
                (groups, changed)
            }
        };
        let placed = self.placement(held.as_ref(), groups.as_ref(), discovered);
        let entry_changed = changed
            || match (&held, &placed) {
                (Some(h), Some(p)) => !h.placed.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)),
                _ => false,
            };
        let new = Slot {
            key: key.clone(),
            discovered: Arc::clone(discovered),
            groups,
            placed,
            parts: Vec::new(),
        };
        if entry_changed {
            self.place_body(held.as_ref(), &new, same_key);
        }
        // Nodes are read only when a kept partition reads them.
        let nodes_same = (held.as_ref())
            .is_some_and(|h| !self.reads_nodes() || same_nodes(&h.discovered, discovered));
        let parts = match held {
            // The same bytes on the same nodes: the same parts, the views untouched.
            Some(h) if !changed && nodes_same => h.parts,
            held => self.place_parts(held.as_ref(), &new, same_key),
        };
        self.work.objects_changed += u64::from(changed);
        self.put(slot, Slot { parts, ..new });
        changed
    }

    /// The object's placement while placements are kept: `held`'s when it has the same
    /// groups, label sets and kept targets, else made from the scratch; `None` without
    /// groups or placements.
    fn placement(
        &mut self,
        held: Option<&Slot>,
        groups: Option<&Arc<ObjectGroups>>,
        discovered: &Discovered,
    ) -> Option<Arc<PlacedGroups>> {
        let groups = groups.filter(|_| self.placing)?;
        let kept = kept_targets(&self.scratch, discovered);
        if let Some(p) = held.and_then(|h| h.placed.as_ref())
            && Arc::ptr_eq(&p.groups, groups)
            && Arc::ptr_eq(&p.discovered, discovered)
            && *p.kept == *kept
        {
            return Some(Arc::clone(p));
        }
        Some(Arc::new(PlacedGroups {
            groups: Arc::clone(groups),
            discovered: Arc::clone(discovered),
            kept,
            stamp: self.stamp(),
        }))
    }

    /// A number no placement of this job state had.
    fn stamp(&mut self) -> u64 {
        self.stamps += 1;
        self.stamps
    }

    /// Puts `new`'s entry in the body, in place of what `held` had there (replaced in
    /// one step when it is the same key).
    fn place_body(&mut self, held: Option<&Slot>, new: &Slot, same_key: bool) {
        let entry = new.entry();
        if let Some(h) = held
            && let Some(old) = h.entry()
            && !(same_key && entry.is_some())
        {
            self.body.remove(&h.key, &old);
        }
        if let Some(e) = &entry {
            self.body.insert(&new.key, e);
        }
    }

    /// Splits the object whose targets are in the scratch (`new`) into every kept
    /// partition, in place of `held`'s parts; returns its parts.
    fn place_parts(&mut self, held: Option<&Slot>, new: &Slot, same_key: bool) -> Vec<ObjectParts> {
        let mut parts: Vec<ObjectParts> = (0..self.indexes.len())
            .map(|at| {
                let kind = self.indexes[at].kind;
                let kept = held.filter(|_| same_key).zip(new.groups.as_ref());
                kept.and_then(|(h, groups)| same_addresses_parts(kind, h, at, groups))
                    .unwrap_or_else(|| self.split_scratch(kind, new.groups.as_ref()))
            })
            .collect();
        for (at, parts) in parts.iter_mut().enumerate() {
            let index = &mut self.indexes[at];
            match held.and_then(|h| h.parts.get(at).map(|old| (h, old))) {
                Some((_, old)) if same_key => index.replace(&new.key, old, parts),
                Some((h, old)) => {
                    index.remove(&h.key, old);
                    index.insert(&new.key, parts);
                }
                None => index.insert(&new.key, parts),
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
        let Some(entry) = held.entry() else {
            return false;
        };
        self.body.remove(&held.key, &entry);
        self.work.objects_changed += 1;
        true
    }

    fn put(&mut self, slot: usize, state: Slot) {
        if slot >= self.slots.len() {
            self.slots.resize_with(slot + 1, || None);
        }
        self.slots[slot] = Some(state);
    }

    /// The parts in partition `kind` of the object being placed, whose relabelled
    /// targets are in the scratch and whose groups are `whole`.
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
        split(kind, &object)
    }

    /// True when a kept partition reads each target's node (the node partition): a
    /// change of node alone (which the rules may not see) must then be relabelled and
    /// split anew.
    fn reads_nodes(&self) -> bool {
        self.indexes.iter().any(|i| needs_nodes(i.kind))
    }

    /// Keeps partition `kind` (shards or nodes: member views are assigned when asked
    /// for, see [`JobState::keep_placements`]), built now from every object if it is
    /// not kept (dropping the one `last_asked` says was asked for least recently when
    /// [`MAX_INDEXES`] are kept); true if it was built.
    pub fn keep_index(&mut self, kind: ViewKind, last_asked: impl Fn(ViewKind) -> u64) -> bool {
        if matches!(kind, ViewKind::Member | ViewKind::Allocator) {
            return self.keep_placements();
        }
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
        self.fill(self.indexes.len() - 1);
        true
    }

    /// Makes every body entry carry what assigning its targets reads, and every later
    /// change keep it so (each object relabelled once now to find its kept targets);
    /// true if it did not already.
    pub fn keep_placements(&mut self) -> bool {
        if self.placing {
            return false;
        }
        self.placing = true;
        let mut slots = std::mem::take(&mut self.slots);
        for slot in slots.iter_mut().flatten() {
            let Some(groups) = slot.groups.clone() else {
                continue;
            };
            let discovered = &slot.discovered;
            (self.relabelling).object_groups(
                &mut self.relabeller,
                discovered,
                &mut self.scratch,
                false,
            );
            self.stamps += 1;
            let placed = Arc::new(PlacedGroups {
                groups,
                discovered: Arc::clone(discovered),
                kept: kept_targets(&self.scratch, discovered),
                stamp: self.stamps,
            });
            self.body.insert(&slot.key, &Share::placed(&placed));
            slot.placed = Some(placed);
        }
        self.slots = slots;
        true
    }

    /// True once every body entry carries its placement.
    pub fn placing(&self) -> bool {
        self.placing
    }

    /// Splits every object into the partition at `at`, just built.
    fn fill(&mut self, at: usize) {
        self.work.indexes_filled += 1;
        let kind = self.indexes[at].kind;
        self.indexes[at].clear();
        let mut slots = std::mem::take(&mut self.slots);
        for slot in slots.iter_mut().flatten() {
            let parts = self.slot_parts(kind, slot);
            if let Some(old) = slot.parts.get_mut(at) {
                self.indexes[at].insert(&slot.key, &parts);
                *old = parts;
            }
        }
        self.slots = slots;
    }

    /// `slot`'s parts in partition `kind` now.
    fn slot_parts(&mut self, kind: ViewKind, slot: &Slot) -> ObjectParts {
        let Some(groups) = slot.groups.clone() else {
            return Box::new([]);
        };
        // Its addresses are in its bytes: no need to relabel it.
        if let Some(parts) = split_by_address(kind, &groups) {
            return parts;
        }
        let discovered = &slot.discovered;
        let nodes = needs_nodes(kind);
        (self.relabelling).object_groups(
            &mut self.relabeller,
            discovered,
            &mut self.scratch,
            nodes,
        );
        self.split_scratch(kind, Some(&groups))
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

/// The kept targets in `scratch` (an object's, relabelled from `discovered`) that have
/// an address, as assigning reads them (see [`KeptTarget`]).
fn kept_targets(scratch: &Scratch, discovered: &Discovered) -> Box<[KeptTarget]> {
    let each = (scratch.targets.iter().zip(&scratch.sources)).zip(&scratch.places);
    each.filter(|(_, place)| **place != u32::MAX)
        .map(|((target, &source), &place)| {
            let collected = (discovered.get(source as usize))
                .and_then(|l| l.get(ADDRESS_LABEL))
                .is_some_and(|a| !a.is_empty());
            KeptTarget {
                source,
                place,
                hash: address_hash(target.get(ADDRESS_LABEL).unwrap_or("")),
                collected,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "job_state_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "job_state_views_tests.rs"]
mod views_tests;
