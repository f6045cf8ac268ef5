//! Where a job actor's objects are in a fleet: for each object of a snapshot's body,
//! the members its kept targets are served to ([`Placements`]), kept up to date from
//! snapshot to snapshot and from fleet to fleet, and published as one persistent map
//! that requests cut their member's view or collector's share from (see
//! [`super::assigned`]).
//!
//! Bringing placements up to date costs what changed: the objects whose body entry
//! changed (both bodies are persistent maps, and their difference costs the changed
//! objects), and, when the members changed, a walk of the owners of the objects of the
//! zones whose pools changed, an object placed anew only when its owners did. No map
//! is kept per member: a placement keeps, per member of the object, only what that
//! member's part adds to a body's digest; the part itself is cut when a request writes
//! it.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;

use arcstr::ArcStr;
use imbl::OrdMap;
use smallvec::SmallVec;

use super::handover::MovedZones;
use super::{Fleet, FleetCounts};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::sd_output::{
    Change, Digest, DiscoveredShare, KeptTarget, KeyedGroups, MAX_PICKED, ObjectDigest,
    PlacedGroups, Share,
};
use crate::service::views::{member_key, node_of, one_node};

/// One member's targets of an object: bit `i` of word `i / 64` set when the object's
/// kept target `i` is served to it.
type KeptBits = SmallVec<[u64; 1]>;

/// One member and the kept targets of an object it is served.
#[derive(Clone, Debug, PartialEq)]
pub struct Owned {
    /// The member's name.
    pub member: ArcStr,
    kept: KeptBits,
}

/// One object placed: what it was placed from and the members it is served to.
#[derive(Debug)]
pub struct Placement {
    /// What it was placed from.
    pub placed: Arc<PlacedGroups>,
    /// The one node of its targets (`None`: several), read once from its labels,
    /// whether the fleet reads zones or not (it may later).
    node: Option<ArcStr>,
    /// That node's zone, by the fleet it was placed by.
    zone: ArcStr,
    /// Its members and the targets each is served, by name.
    pub owned: Box<[Owned]>,
    /// What each of `owned` is served, as a body's digest counts it: made once here,
    /// so that a body cut for a member gets its length and ETag without cutting.
    pub digests: Box<[OwnedDigests]>,
    /// Its addresses served outside their zone.
    cross_zone: u32,
}

/// What one member is served of an object, as a body's digest counts it.
#[derive(Clone, Copy, Debug)]
pub struct OwnedDigests {
    /// Its share in the member's view ([`member_share`]), if any.
    pub member: Option<ObjectDigest>,
    /// Its share in the collector's ([`collector_share`]), if any.
    pub collector: Option<ObjectDigest>,
}

/// What one member and its collector are served of every object, as a body's digest
/// counts it: the sums of its [`OwnedDigests`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ServedDigests {
    /// Its view's.
    pub member: Digest,
    /// Its collector's share's.
    pub collector: Digest,
}

impl ServedDigests {
    /// Adds (`add`) or takes out one object's part.
    fn count(&mut self, part: &OwnedDigests, add: bool) {
        for (sum, object) in [
            (&mut self.member, part.member),
            (&mut self.collector, part.collector),
        ] {
            match (object, add) {
                (Some(object), true) => sum.add_object(&object),
                (Some(object), false) => sum.remove_object(&object),
                (None, _) => {}
            }
        }
    }
}

impl Placement {
    /// What member `member` is served of this object, if anything, with its digests.
    pub fn owned_by(&self, member: &str) -> Option<(&Owned, &OwnedDigests)> {
        let at = self.owned.iter().position(|o| o.member == member)?;
        Some((&self.owned[at], self.digests.get(at)?))
    }
}

/// An object's entry among the placements: its placement, and its members' names
/// hashed into one word, so that cutting a member's view passes over most other
/// members' objects without reading their placements.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Bit `member_key(name) % 64` set for each of its members' names.
    owners: u64,
    /// The placement.
    pub placement: Arc<Placement>,
}

impl Entry {
    /// False when member `bit` ([`member_bit`]) is surely not among its members.
    pub fn may_be_owned_by(&self, bit: u64) -> bool {
        self.owners & bit != 0
    }
}

/// The bit a member's name sets in the [`Entry`] of an object it owns.
pub fn member_bit(member: &str) -> u64 {
    1 << (member_key(member) % 64)
}

/// A job actor's objects placed by a fleet, from one snapshot's body.
pub struct Placements {
    /// The body they were placed from.
    pub body: KeyedGroups,
    /// The fleet they were placed by.
    pub fleet: Arc<Fleet>,
    /// Each object placed, in body order; published as it is.
    pub objects: OrdMap<ObjectKey, Entry>,
    /// Targets across zones, and targets gained when the members changed.
    pub counts: FleetCounts,
    /// What each member (with a part of an object) is served, summed as objects are
    /// placed and taken out: a view's length and ETag without walking the objects.
    pub by_member: BTreeMap<ArcStr, ServedDigests>,
    /// Reused while an object's owners are walked.
    scratch: Vec<Owned>,
}

impl Placements {
    /// Every object of `body` placed by `fleet`.
    pub fn new(body: &KeyedGroups, fleet: &Arc<Fleet>) -> Placements {
        let mut placements = Placements {
            body: body.clone(),
            fleet: Arc::clone(fleet),
            objects: OrdMap::new(),
            counts: FleetCounts::default(),
            by_member: BTreeMap::new(),
            scratch: Vec::new(),
        };
        for (key, share) in body.iter() {
            if let Some(placed) = share.placed_groups() {
                placements.place(key, placed);
            }
        }
        placements
    }

    /// Targets served, a target in handover once per member.
    pub fn served(&self) -> usize {
        (self.by_member.values()).map(|s| s.member.targets()).sum()
    }

    /// Makes them the placements of `body` by `fleet`.
    pub fn bring_up_to_date(&mut self, body: &KeyedGroups, fleet: &Arc<Fleet>) {
        if !Arc::ptr_eq(&self.fleet, fleet) {
            let moved = self.fleet.moved_zones(fleet);
            self.fleet = Arc::clone(fleet);
            self.move_zones(&moved);
        }
        if !self.body.same_map(body) {
            self.apply_changes(body);
        }
    }

    /// Walks anew the owners of the objects whose zone's members changed (`moved`):
    /// those whose owners, zone and count of targets across zones came out the same
    /// stay as they are, the others are placed anew, counting what each member gained.
    fn move_zones(&mut self, moved: &MovedZones) {
        let fleet = Arc::clone(&self.fleet);
        let any = moved != &MovedZones::Some(Default::default());
        let zone_aware = fleet.zone_aware();
        let mut changed = Vec::new();
        for (key, entry) in self.objects.iter() {
            let p = &entry.placement;
            let may_have_moved = match (zone_aware, &p.node) {
                (false, _) => moved.includes(""),
                (true, Some(_)) => moved.includes(&p.zone),
                (true, None) => any,
            };
            if !may_have_moved {
                continue;
            }
            let node = walked_node(&fleet, p.node.as_deref());
            walk_owners(&fleet, &p.placed, node, &mut self.scratch);
            let zone = zone_of(&fleet, p.node.as_deref());
            let crossing = crossing(&fleet, &p.placed, node);
            if *p.owned != *self.scratch || p.zone != zone || p.cross_zone != crossing {
                let owned: Box<[Owned]> = self.scratch.drain(..).collect();
                changed.push((key.clone(), Arc::clone(p), owned));
            }
        }
        for (key, held, owned) in changed {
            let moving = *held.owned != *owned;
            let node = held.node.clone();
            let placed = Arc::clone(&held.placed);
            self.place_owned(&key, &placed, (node, owned), Some(&held), moving);
        }
    }

    /// Applies what changed from the body they were placed from to `body`.
    fn apply_changes(&mut self, body: &KeyedGroups) {
        let old = std::mem::take(&mut self.body);
        for change in old.diff(body) {
            match change {
                Change::Added(key, share) | Change::Changed(key, share) => {
                    match share.placed_groups() {
                        Some(placed) => self.place(key, placed),
                        None => self.unplace(key),
                    }
                }
                Change::Removed(key, _) => self.unplace(key),
            }
        }
        self.body = body.clone();
    }

    /// Takes object `key` out.
    fn unplace(&mut self, key: &ObjectKey) {
        let Some(gone) = self.objects.remove(key) else {
            return;
        };
        self.forget(&gone.placement);
    }

    /// Takes `gone`'s counts out of the sums.
    fn forget(&mut self, gone: &Placement) {
        let crossing = u64::from(gone.cross_zone);
        self.counts.cross_zone = self.counts.cross_zone.saturating_sub(crossing);
        self.count_by_member(gone, false);
    }

    /// Adds (`add`) `placement`'s parts to its members' sums, or takes them out; a
    /// member left with nothing is forgotten.
    fn count_by_member(&mut self, placement: &Placement, add: bool) {
        for (owned, part) in placement.owned.iter().zip(&placement.digests) {
            // Looked up first: a member's name is cloned when it is first counted, not
            // for every object. A member taken out was counted when added.
            let Some(sums) = self.by_member.get_mut(&owned.member) else {
                if add {
                    let mut sums = ServedDigests::default();
                    sums.count(part, true);
                    self.by_member.insert(owned.member.clone(), sums);
                }
                continue;
            };
            sums.count(part, add);
            if sums.member.is_empty() && sums.collector.is_empty() {
                self.by_member.remove(&owned.member);
            }
        }
    }

    /// Places object `key` from `placed` by the fleet, in place of where it was.
    fn place(&mut self, key: &ObjectKey, placed: &Arc<PlacedGroups>) {
        let held = self.objects.get(key).map(|e| Arc::clone(&e.placement));
        // A pod's targets are all on its node: read once per entry.
        let node = match &held {
            Some(h) if Arc::ptr_eq(&h.placed, placed) => h.node.clone(),
            _ => one_node(&placed.discovered),
        };
        let walked = walked_node(&self.fleet, node.as_deref());
        walk_owners(&self.fleet, placed, walked, &mut self.scratch);
        let owned: Box<[Owned]> = self.scratch.drain(..).collect();
        self.place_owned(key, placed, (node, owned), held.as_deref(), false);
    }

    /// [`Placements::place`] of an object whose one node and owners are known (`node`,
    /// `owned`), in place of `held`; `moving` (the members changed): counts the targets
    /// each member gained.
    fn place_owned(
        &mut self,
        key: &ObjectKey,
        placed: &Arc<PlacedGroups>,
        (node, owned): (Option<ArcStr>, Box<[Owned]>),
        held: Option<&Placement>,
        moving: bool,
    ) {
        let fleet = Arc::clone(&self.fleet);
        let walked = walked_node(&fleet, node.as_deref());
        let digest = |share: Option<Share>| {
            let share = share.filter(|s| !s.is_empty())?;
            Some(ObjectDigest::of(key, &share))
        };
        // A member served the same targets of the same object as before has the same
        // parts: a change of members re-places objects for the members that changed.
        let kept = |o: &Owned| {
            let held = held.filter(|h| Arc::ptr_eq(&h.placed, placed))?;
            let (had, digests) = held.owned_by(&o.member)?;
            (had == o).then_some(*digests)
        };
        let digests: Box<[OwnedDigests]> = (owned.iter())
            .map(|o| {
                kept(o).unwrap_or_else(|| OwnedDigests {
                    member: digest(member_share(placed, o)),
                    collector: digest(collector_share(placed, o)),
                })
            })
            .collect();
        if let Some(held) = held {
            if moving {
                self.counts.moves += gained(held, &owned, &digests);
            }
            self.forget(held);
        }
        let cross_zone = crossing(&fleet, placed, walked);
        self.counts.cross_zone += u64::from(cross_zone);
        let placement = Placement {
            placed: Arc::clone(placed),
            zone: zone_of(&fleet, node.as_deref()),
            node,
            owned,
            digests,
            cross_zone,
        };
        self.count_by_member(&placement, true);
        let owners = (placement.owned.iter()).fold(0, |bits, o| bits | member_bit(&o.member));
        let placement = Arc::new(placement);
        self.objects
            .insert(key.clone(), Entry { owners, placement });
    }
}

/// The members `placed`'s kept targets are served to by `fleet`, with the targets
/// each is, sorted by name, into `owned`; `node` is the one node of every target, if
/// they have one.
fn walk_owners(fleet: &Fleet, placed: &PlacedGroups, node: Option<&str>, owned: &mut Vec<Owned>) {
    owned.clear();
    let words = placed.kept.len().div_ceil(64);
    let mut note = |i: usize, member: &ArcStr| {
        let at = match owned.iter().position(|o| o.member == *member) {
            Some(at) => at,
            None => {
                let kept = SmallVec::from_elem(0, words);
                owned.push(Owned {
                    member: member.clone(),
                    kept,
                });
                owned.len() - 1
            }
        };
        owned[at].kept[i / 64] |= 1 << (i % 64);
    };
    match node {
        Some(node) => {
            let owners = fleet.on_node(node);
            for (i, t) in placed.kept.iter().enumerate() {
                owners.each(t.hash, |m| note(i, m));
            }
        }
        None => {
            for (i, t) in placed.kept.iter().enumerate() {
                let node = target_node(&placed.discovered, t);
                fleet.each_owner(t.hash, &node, |m| note(i, m));
            }
        }
    }
    owned.sort_by(|a, b| a.member.cmp(&b.member));
}

/// How many of `placed`'s addresses `fleet` serves outside their zone (their zone has
/// no member); `node` as [`walk_owners`] takes it.
fn crossing(fleet: &Fleet, placed: &PlacedGroups, node: Option<&str>) -> u32 {
    let current = fleet.current();
    let places = |across: &dyn Fn(&KeptTarget) -> bool| {
        let mut places: SmallVec<[u32; 8]> = (placed.kept.iter())
            .filter(|t| across(t))
            .map(|t| t.place)
            .collect();
        places.sort_unstable();
        places.dedup();
        u32::try_from(places.len()).unwrap_or(u32::MAX)
    };
    match node {
        Some(node) if current.assigns_across(node) => places(&|_| true),
        Some(_) => 0,
        None => places(&|t| current.assigns_across(&target_node(&placed.discovered, t))),
    }
}

/// The node an object's targets are walked on: its one node (`None`: several), or, when
/// `fleet` reads no zones, any (the empty name).
fn walked_node<'a>(fleet: &Fleet, node: Option<&'a str>) -> Option<&'a str> {
    match fleet.zone_aware() {
        true => node,
        false => Some(""),
    }
}

/// The zone of `node` by `fleet`'s current assignment (empty: none, or several nodes).
fn zone_of(fleet: &Fleet, node: Option<&str>) -> ArcStr {
    let zones = fleet.current().zones();
    (node.and_then(|n| zones.get(n)).cloned()).unwrap_or_default()
}

/// The node of kept target `t`'s discovered label set.
fn target_node(discovered: &[Labels], t: &KeptTarget) -> ArcStr {
    (discovered.get(t.source as usize))
        .map(node_of)
        .unwrap_or_default()
}

/// Objects a view reads ahead of cutting them: what cutting each one reads is loaded
/// first across them, a level at a time, so that their loads overlap (see [`warm`]).
pub(super) const AHEAD: usize = 16;

/// Loads what cutting each of `placements` reads ([`member_share`], or for a
/// collector's share, `collector`, [`collector_share`] and the label sets it writes),
/// one level of pointers at a time across all of them. An object's placement, its
/// members, its placed groups and what they point to are allocations of their own,
/// seldom in the cache when a view is cut: read one object at a time, each load waits
/// for the one before it; read a level across several objects, their loads overlap.
pub(super) fn warm<'a>(placements: impl Iterator<Item = &'a Placement> + Clone, collector: bool) {
    for p in placements.clone() {
        black_box(p.cross_zone);
    }
    for p in placements.clone() {
        black_box(p.owned.first().map(|o| o.kept.len()));
        black_box(p.digests.first().map(|d| d.member.is_some()));
        black_box(p.placed.stamp);
    }
    for p in placements.clone() {
        black_box(p.placed.kept.first().map(|k| k.place));
        match collector {
            true => black_box(p.placed.discovered.first().map_or(0, |l| l.len())),
            false => black_box(p.placed.groups.address_places()),
        };
    }
    if collector {
        for p in placements.clone() {
            for labels in p.placed.discovered.iter() {
                black_box(labels.own_labels().len());
            }
        }
    }
}

/// The kept targets whose bits are set in `bits`.
fn kept_of<'a>(kept: &'a [KeptTarget], bits: &'a KeptBits) -> impl Iterator<Item = &'a KeptTarget> {
    (kept.iter().enumerate())
        .filter(move |(i, _)| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
        .map(|(_, t)| t)
}

/// What `owned`'s member is served of `placed` in its `?member=` view: the groups whole
/// when it holds every address, else the addresses it holds cut from them (by a mask
/// for an object of at most [`MAX_PICKED`] addresses, else listed).
pub fn member_share(placed: &PlacedGroups, owned: &Owned) -> Option<Share> {
    let groups = &placed.groups;
    let places = groups.address_places();
    let held = kept_of(&placed.kept, &owned.kept).map(|t| t.place);
    if places <= MAX_PICKED {
        let mask = held.fold(0u64, |m, p| m | 1 << p);
        return match places == 0 || mask.count_ones() as usize == places {
            true => Some(Share::whole(groups)),
            false => Share::picked(groups, mask),
        };
    }
    let mut held: Vec<u32> = held.collect();
    held.sort_unstable();
    held.dedup();
    match held.len() == places {
        true => Some(Share::whole(groups)),
        false => Share::cut(groups, held),
    }
}

/// What `owned`'s member's collector is served of `placed`: its discovered label sets
/// held (those with an address), by a mask for an object of at most [`MAX_PICKED`]
/// sets, else listed.
pub fn collector_share(placed: &Arc<PlacedGroups>, owned: &Owned) -> Option<Share> {
    let sources = (kept_of(&placed.kept, &owned.kept))
        .filter(|t| t.collected)
        .map(|t| t.source);
    if placed.discovered.len() <= MAX_PICKED {
        let mask = sources.fold(0u64, |m, s| m | 1 << s);
        return Share::collected(placed, mask);
    }
    let mut sources: Vec<u32> = sources.collect();
    sources.sort_unstable();
    sources.dedup();
    // The placement's stamp is unique among the job actor's, and the sets picked are in
    // the share's digest: the same share is made alike on every request.
    let share = DiscoveredShare::new(&placed.discovered, sources, placed.stamp);
    (share.targets() > 0).then(|| Share::discovered(share))
}

/// The targets each of `owned` (with their `digests`) is served beyond those `held`
/// served it: what the members gained when `held` became `owned`.
fn gained(held: &Placement, owned: &[Owned], digests: &[OwnedDigests]) -> u64 {
    let targets = |d: Option<&OwnedDigests>| d.and_then(|d| d.member).map_or(0, |m| m.targets());
    (owned.iter().zip(digests))
        .map(|(o, has)| {
            let had = targets(held.owned_by(&o.member).map(|(_, d)| d));
            targets(Some(has)).saturating_sub(had) as u64
        })
        .sum()
}
