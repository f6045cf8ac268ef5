//! A job actor's objects, one slot each (the group's [`ObjectSlot`]): the object's key,
//! its discovered label sets (the group's `Arc`, nothing copied), its serialized groups
//! and its parts in each view partition kept. Applying an object's change relabels it
//! only when the rules can see the change ([`crate::relabel::Visibility`]), and updates
//! the body and the partitions for that object alone: O(log n) each.
//!
//! Pure and synchronous: the actor ([`crate::service::jobs::job_actor`]) feeds it the group's
//! messages and publishes what it holds.

use std::borrow::Borrow;
use std::cell::Cell;
use std::sync::Arc;

use arcstr::ArcStr;

use crate::actors::messages::{ObjectSlot, ObjectTargets as Discovered, TargetChange};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::relabel::Relabeller;
use crate::sd_output::{KeyedGroups, ObjectGroups, Share};
use crate::service::fleet::handover::MovedZones;
use crate::service::fleet::target_allocator::{self, KeptTarget};
use crate::service::fleet::{Fleet, FleetCounts};
use crate::service::jobs::relabel_ahead::{AHEAD_FROM, AHEAD_STEP, Relabelled, relabel_ahead};
use crate::service::jobs::relabelling::{Relabelling, Scratch};
use crate::service::jobs::snapshot::JobWork;
use crate::service::views::index::ViewIndex;
use crate::service::views::{
    MAX_INDEXES, ObjectParts, ObjectTargets, ViewKind, address_hash, needs_nodes, one_node,
    same_nodes, split, split_by_address,
};

/// `held`'s parts in the partition at `at` (of `kind`), moved to `new`, when they stay
/// where they are: a partition by address (shards, members), an object of one group
/// whose addresses are `held`'s very ones (its labels changed) on the same nodes (when
/// the partition reads them: `same_nodes`), and parts that are all shares of `held`'s
/// groups. Splitting anew would hash every address again to find the same buckets.
/// `None` when they must be split.
fn same_addresses_parts(
    kind: ViewKind,
    fleet: &Fleet,
    held: &Slot,
    at: usize,
    new: &Arc<ObjectGroups>,
    same_nodes: bool,
) -> Option<ObjectParts> {
    let old = held.groups.as_ref()?;
    // The allocator's parts are of discovered labels: split anew.
    let moved = needs_nodes(kind, fleet) && !same_nodes;
    if moved || kind == ViewKind::Allocator || !old.same_addresses(new) {
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

/// The targets `new` serves to a bucket beyond those `old` served to it: what the
/// members gained when `old` became `new`.
fn gained(old: &ObjectParts, new: &ObjectParts) -> u64 {
    new.iter()
        .map(|(bucket, share)| {
            let had = old
                .iter()
                .find(|(b, _)| b == bucket)
                .map_or(0, |(_, s)| s.targets());
            share.targets().saturating_sub(had) as u64
        })
        .sum()
}

/// Allocator `parts` as shares of the same picks of `discovered` (the object's label
/// sets after a change that kept its targets and their places), made at `stamp`;
/// `None` if one is not a share of discovered label sets.
fn rebased(parts: &ObjectParts, discovered: &Discovered, stamp: u64) -> Option<ObjectParts> {
    (parts.iter())
        .map(|(bucket, share)| {
            let d = share.discovered_share()?;
            Some((bucket.clone(), Share::discovered(d.of(discovered, stamp))))
        })
        .collect()
}

/// True when `new` puts the same targets in the same buckets as `old`.
fn same_parts(old: &ObjectParts, new: &ObjectParts) -> bool {
    old.len() == new.len()
        && (old.iter().zip(new.iter())).all(|((a, x), (b, y))| a == b && x.same_targets(y))
}

/// An object's change being placed in the partitions.
#[derive(Clone, Copy)]
struct Placing<'a> {
    key: &'a ObjectKey,
    /// Its groups now; `None` when no target is left.
    groups: Option<&'a Arc<ObjectGroups>>,
    /// True when the slot held this very key before.
    same_key: bool,
    /// True when every discovered label set names the node it named before, or no
    /// kept partition reads nodes.
    same_nodes: bool,
    /// Its discovered label sets now.
    discovered: &'a Discovered,
    /// Its kept targets, for the allocator's partition.
    kept: &'a [KeptTarget],
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
    /// Its targets assigned to a member outside their zone (zone-aware fleets).
    cross_zone: u32,
    /// Its kept targets as the allocator's partition assigns them (empty unless that
    /// partition is kept).
    kept: Box<[KeptTarget]>,
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
    /// The view partitions consumers asked for, at most [`MAX_INDEXES`].
    pub indexes: Vec<ViewIndex>,
    /// The members (and those in handover) for the member partition.
    pub fleet: Arc<Fleet>,
    scratch: Scratch,
    /// What it has done.
    pub work: JobWork,
    /// Its fleet's assignment counted.
    pub fleet_counts: FleetCounts,
    /// The last number [`JobState::stamp`] gave.
    stamps: Cell<u64>,
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
            fleet: Arc::default(),
            scratch: Scratch::default(),
            work: JobWork::default(),
            fleet_counts: FleetCounts::default(),
            stamps: Cell::new(0),
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
        let (nodes, sources) = (self.reads_nodes(), self.keeps_sources());
        let (mine, helper) = (&mut self.relabeller, &mut self.helper);
        let relabelled = relabel_ahead(&self.relabelling, mine, helper, &objects, nodes, sources);
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
    /// targets, so the same parts, but for the allocator's, whose labels are the
    /// discovered ones.
    fn put_unseen(&mut self, slot: usize, mut held: Slot, discovered: &Discovered) {
        self.rebase_discovered(&held.key, &mut held.parts, discovered);
        let discovered = Arc::clone(discovered);
        self.put(slot, Slot { discovered, ..held });
    }

    /// Makes the allocator's parts in `parts` (object `key`'s) shares of `discovered`,
    /// the object's label sets after a change that kept its targets and their places.
    fn rebase_discovered(
        &mut self,
        key: &ObjectKey,
        parts: &mut [ObjectParts],
        discovered: &Discovered,
    ) {
        let Some(at) = self
            .indexes
            .iter()
            .position(|i| i.kind == ViewKind::Allocator)
        else {
            return;
        };
        let Some(old) = parts.get_mut(at) else {
            return;
        };
        let Some(mut new) = rebased(old, discovered, self.stamp()) else {
            return;
        };
        self.indexes[at].replace(key, old, &mut new);
        *old = new;
    }

    /// `held`'s allocator parts (at `at`) as shares of the object's label sets now,
    /// when its kept targets are the same, with the same addresses, on the same nodes:
    /// they are assigned alike. `None` when they must be split.
    fn same_kept_parts(&self, held: &Slot, at: usize, placing: &Placing) -> Option<ObjectParts> {
        let moved = !placing.same_nodes && self.fleet.zone_aware();
        if moved || *held.kept != *placing.kept {
            return None;
        }
        rebased(held.parts.get(at)?, placing.discovered, self.stamp())
    }

    /// A number no discovered share of this job state had: see
    /// [`crate::sd_output::DiscoveredShare::new`].
    fn stamp(&self) -> u64 {
        let stamp = self.stamps.get() + 1;
        self.stamps.set(stamp);
        stamp
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
        let (nodes, sources) = (self.reads_nodes(), self.keeps_sources());
        let groups = self.relabelling.object_groups(
            &mut self.relabeller,
            discovered,
            &mut self.scratch,
            nodes,
            sources,
        );
        self.relabelled(slot, held, key, discovered, groups)
    }

    /// Whether the allocator's partition is kept (it reads each kept target's
    /// discovered label set).
    fn keeps_sources(&self) -> bool {
        self.indexes.iter().any(|i| i.kind == ViewKind::Allocator)
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
        let (nodes, sources) = (self.reads_nodes(), self.keeps_sources());
        let groups = (!groups.is_empty()).then(|| Arc::new(groups));
        let kept = match sources {
            true => target_allocator::kept_targets(&self.scratch, discovered),
            false => Box::default(),
        };
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
        // Nodes are read only when a kept partition reads them.
        let nodes_same =
            (held.as_ref()).is_some_and(|h| !nodes || same_nodes(&h.discovered, discovered));
        let parts = match held {
            // The same bytes on the same nodes: the same parts, the views untouched.
            Some(mut h) if !changed && h.kept == kept && nodes_same => {
                self.rebase_discovered(key, &mut h.parts, discovered);
                (h.parts, h.cross_zone)
            }
            held => {
                let placing = Placing {
                    key,
                    groups: groups.as_ref(),
                    same_key,
                    same_nodes: nodes_same,
                    discovered,
                    kept: &kept,
                };
                self.place_counted(held.as_ref(), &placing)
            }
        };
        let (parts, cross_zone) = parts;
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
                cross_zone,
                kept,
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
    fn place_parts(&mut self, held: Option<&Slot>, placing: &Placing) -> Vec<ObjectParts> {
        let Placing { key, groups, .. } = *placing;
        let mut parts: Vec<ObjectParts> = (0..self.indexes.len())
            .map(|at| {
                let kind = self.indexes[at].kind;
                let kept = held.filter(|_| placing.same_key).zip(groups);
                kept.and_then(|(h, new)| match kind {
                    ViewKind::Allocator => self.same_kept_parts(h, at, placing),
                    _ => same_addresses_parts(kind, &self.fleet, h, at, new, placing.same_nodes),
                })
                .unwrap_or_else(|| self.split_scratch(kind, placing))
            })
            .collect();
        for (at, new) in parts.iter_mut().enumerate() {
            let index = &mut self.indexes[at];
            match held.and_then(|h| h.parts.get(at).map(|old| (h, old))) {
                Some((_, old)) if placing.same_key => index.replace(key, old, new),
                Some((h, old)) => {
                    index.remove(&h.key, old);
                    index.insert(key, new);
                }
                None => index.insert(key, new),
            }
        }
        parts
    }

    /// [`JobState::place_parts`], and the object's targets assigned across zones
    /// counted in place of `held`'s (kept when its addresses and nodes are).
    fn place_counted(&mut self, held: Option<&Slot>, placing: &Placing) -> (Vec<ObjectParts>, u32) {
        let parts = self.place_parts(held, placing);
        let same_place = held
            .filter(|_| placing.same_key && placing.same_nodes)
            .and_then(|h| h.groups.as_ref().zip(placing.groups))
            .is_some_and(|(old, new)| old.same_addresses(new));
        let cross_zone = match held {
            Some(h) if same_place => h.cross_zone,
            _ => self.scratch_cross_zone(placing.groups.is_some()),
        };
        self.fleet_counts.cross_zone += u64::from(cross_zone);
        let before = u64::from(held.map_or(0, |h| h.cross_zone));
        self.fleet_counts.cross_zone = self.fleet_counts.cross_zone.saturating_sub(before);
        (parts, cross_zone)
    }

    /// Takes `held` (just removed from its slot) out of the body and the partitions;
    /// true if it had groups.
    fn unlist(&mut self, held: &Slot) -> bool {
        for (index, parts) in self.indexes.iter_mut().zip(&held.parts) {
            index.remove(&held.key, parts);
        }
        let before = u64::from(held.cross_zone);
        self.fleet_counts.cross_zone = self.fleet_counts.cross_zone.saturating_sub(before);
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

    /// The parts in partition `kind` of the object being placed, whose relabelled
    /// targets are in the scratch.
    fn split_scratch(&self, kind: ViewKind, placing: &Placing) -> ObjectParts {
        let Some(whole) = placing.groups else {
            return Box::new([]);
        };
        let placeholder = &self.relabelling.scrape.job_name;
        if kind == ViewKind::Allocator {
            let (kept, discovered) = (placing.kept, placing.discovered);
            return target_allocator::split(kept, discovered, &self.fleet, self.stamp());
        }
        let object = ObjectTargets {
            targets: &self.scratch.targets,
            nodes: &self.scratch.nodes,
            whole,
            placeholder,
        };
        split(kind, &object, &self.fleet)
    }

    /// The targets in the scratch (an object's, `with_groups`: it has some) that are
    /// assigned to a member outside their zone; 0 unless a zone-aware member partition
    /// is kept.
    fn scratch_cross_zone(&self, with_groups: bool) -> u32 {
        let kept = self.indexes.iter().any(|i| i.kind == ViewKind::Member);
        if !(with_groups && kept && self.fleet.zone_aware()) {
            return 0;
        }
        let crossing = (self.scratch.targets.iter().zip(&self.scratch.nodes))
            .filter(|(t, node)| {
                let address = t.get(crate::sd_output::ADDRESS_LABEL).unwrap_or("");
                self.fleet.cross_zone(address_hash(address), node)
            })
            .count();
        u32::try_from(crossing).unwrap_or(u32::MAX)
    }

    /// The addresses of `groups` (an object of one group) on `node` whose member is
    /// outside their zone.
    fn crossing_addresses(&self, groups: &ObjectGroups, node: &ArcStr) -> u32 {
        let Some(addresses) = groups.one_group_addresses() else {
            return 0;
        };
        let crossing = addresses
            .iter()
            .filter(|a| self.fleet.cross_zone(address_hash(a), node))
            .count();
        u32::try_from(crossing).unwrap_or(u32::MAX)
    }

    /// True when a kept partition reads each target's node (the node partition, a
    /// zone-aware member partition): a change of node alone (which the rules may not
    /// see) must then be relabelled and split anew.
    fn reads_nodes(&self) -> bool {
        self.indexes
            .iter()
            .any(|i| needs_nodes(i.kind, &self.fleet))
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
            let dropped = self.indexes.remove(at);
            let member = dropped.kind == ViewKind::Member;
            for slot in self.slots.iter_mut().flatten() {
                if at < slot.parts.len() {
                    slot.parts.remove(at);
                }
                if member {
                    slot.cross_zone = 0;
                }
            }
            if member {
                self.fleet_counts.cross_zone = 0;
            }
        }
        self.indexes.push(ViewIndex::new(kind));
        for slot in self.slots.iter_mut().flatten() {
            slot.parts.push(Box::new([]));
        }
        self.refill(self.indexes.len() - 1, None);
        true
    }

    /// Sets the fleet the member and allocator partitions assign targets by; true if
    /// one is kept and was filled anew. Counts the targets each member gained.
    pub fn set_members(&mut self, fleet: Arc<Fleet>) -> bool {
        if fleet == self.fleet {
            return false;
        }
        let moved_zones = self.fleet.moved_zones(&fleet);
        self.fleet = fleet;
        let by_member: Vec<usize> = (0..self.indexes.len())
            .filter(|&at| {
                matches!(
                    self.indexes[at].kind,
                    ViewKind::Member | ViewKind::Allocator
                )
            })
            .collect();
        if by_member.is_empty() {
            return false;
        }
        // Which objects may have moved, read once for every partition by member.
        let moved: Vec<bool> = (self.slots.iter())
            .map(|s| {
                s.as_ref()
                    .is_some_and(|s| self.may_have_moved(s, &moved_zones))
            })
            .collect();
        for &at in &by_member {
            self.refill(at, Some(&moved));
        }
        true
    }

    /// Splits every object anew into the partition at `at`: just built (`moved` is
    /// `None`), or its members changed and the objects `moved` marks (by slot) may
    /// have moved. Then another object is left as it is, and one whose parts come out
    /// the same keeps them, so that the buckets it is in keep their digest. For the
    /// member partition, counts the targets assigned across zones anew and, when
    /// moving, the targets each member gained.
    fn refill(&mut self, at: usize, moved: Option<&[bool]>) {
        self.work.indexes_filled += 1;
        let kind = self.indexes[at].kind;
        let member = kind == ViewKind::Member;
        let moving = moved.is_some();
        if !moving {
            self.indexes[at].clear();
        }
        let (mut cross_zone, mut gains) = (0, 0);
        let mut slots = std::mem::take(&mut self.slots);
        for (i, slot) in slots.iter_mut().enumerate() {
            let Some(slot) = slot else {
                continue;
            };
            if moved.is_some_and(|m| !m.get(i).copied().unwrap_or(true)) {
                cross_zone += u64::from(slot.cross_zone);
                continue;
            }
            let (mut parts, crossing) = self.slot_parts(kind, slot, moving);
            if let Some(old) = slot.parts.get_mut(at) {
                if moving && member {
                    gains += gained(old, &parts);
                }
                if !moving {
                    self.indexes[at].insert(&slot.key, &parts);
                    *old = parts;
                } else if !same_parts(old, &parts) {
                    self.indexes[at].replace(&slot.key, old, &mut parts);
                    *old = parts;
                }
            }
            if member {
                slot.cross_zone = crossing;
                cross_zone += u64::from(crossing);
            }
        }
        self.slots = slots;
        if member {
            self.fleet_counts.cross_zone = cross_zone;
            self.fleet_counts.moves += gains;
        }
    }

    /// True when `slot`'s targets may be in one of the `moved` zones: an object on one
    /// node is in that node's zone; any other may have targets anywhere.
    fn may_have_moved(&self, slot: &Slot, moved: &MovedZones) -> bool {
        if !self.fleet.zone_aware() {
            return moved.includes("");
        }
        match one_node(&slot.discovered) {
            Some(node) => moved.includes(self.fleet.current().zone_of(&node)),
            None => moved != &MovedZones::Some(Default::default()),
        }
    }

    /// `slot`'s parts in partition `kind` now, with its targets assigned across zones
    /// (member partition). The allocator's are split from the slot's kept targets,
    /// found by relabelling the object when the partition is new (not `moving`).
    fn slot_parts(&mut self, kind: ViewKind, slot: &mut Slot, moving: bool) -> (ObjectParts, u32) {
        let Some(groups) = slot.groups.clone() else {
            return (Box::new([]), 0);
        };
        let placeholder = &self.relabelling.scrape.job_name;
        if kind == ViewKind::Allocator {
            if !moving {
                let discovered = &slot.discovered;
                (self.relabelling).object_groups(
                    &mut self.relabeller,
                    discovered,
                    &mut self.scratch,
                    false,
                    true,
                );
                slot.kept = target_allocator::kept_targets(&self.scratch, discovered);
            }
            let stamp = self.stamp();
            let parts = target_allocator::split(&slot.kept, &slot.discovered, &self.fleet, stamp);
            return (parts, 0);
        }
        let nodes = needs_nodes(kind, &self.fleet);
        // A pod's targets are all on its node: read from its discovered labels.
        let node = nodes.then(|| one_node(&slot.discovered)).flatten();
        // Its addresses are in its bytes: no need to relabel it.
        if let Some(parts) = split_by_address(kind, &groups, &self.fleet, node.as_ref()) {
            let crossing = match (&node, kind == ViewKind::Member) {
                (Some(node), true) => self.crossing_addresses(&groups, node),
                _ => 0,
            };
            return (parts, crossing);
        }
        let discovered = &slot.discovered;
        (self.relabelling).object_groups(
            &mut self.relabeller,
            discovered,
            &mut self.scratch,
            nodes,
            false,
        );
        let crossing = self.scratch_cross_zone(true);
        let object = ObjectTargets {
            targets: &self.scratch.targets,
            nodes: &self.scratch.nodes,
            whole: &groups,
            placeholder,
        };
        (split(kind, &object, &self.fleet), crossing)
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
