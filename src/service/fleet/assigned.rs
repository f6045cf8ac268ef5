//! The targets each member is served (`?member=`) and each collector's share (the
//! target allocator's `/jobs/{job}/targets`), decided when they are asked for, from a
//! job actor's published snapshot ([`AssignedViews`]).
//!
//! The job actor does nothing per event for them: once a member view was first asked
//! for, it keeps in its body, per object, what assigning reads (a [`PlacedGroups`]:
//! each kept target's relabelled address hashed, its address's place in the groups and
//! its discovered label set). Assigning brings the two partitions up to date with a
//! snapshot: the objects whose entry changed since the body they were made from (both
//! bodies are persistent maps, and their difference costs the changed objects, not
//! all of them), and, when the members changed, the objects of the zones whose members
//! changed, each re-placed only when its owners did. One walk over an object's owners
//! makes both its parts: some of its addresses for each member's view (cut from its
//! bytes, byte for byte the member's groups), some of its discovered label sets for
//! each collector (written only when sent).
//!
//! Assigned partitions are published and shared by every request until the snapshot
//! or the members change. When the members change, the job actor has the partitions
//! assigned by them in the background before its snapshots name them, so a request
//! never waits for that (meanwhile it is served by the members before or after). When
//! only objects changed, a request serves the published partitions if they were made
//! at most [`RECENT`] ago or newer ones are being assigned, and has newer ones assigned
//! meanwhile in the background; older ones it waits for. So assigning happens at
//! most once per snapshot (a snapshot is published at most once per publish interval
//! while changes keep coming) and per membership, off the requests' way but for a view
//! nobody asked for in a while.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use arcstr::ArcStr;
use smallvec::SmallVec;

use super::handover::MovedZones;
use super::{Fleet, FleetCounts};
use crate::labels::Labels;
use crate::model::ObjectKey;
use crate::relabel::ReadableMeta;
use crate::sd_output::{
    Change, DiscoveredShare, KeptTarget, KeyedGroups, MAX_PICKED, ObjectGroups, PlacedGroups, Share,
};
use crate::service::views::index::{Partition, ViewIndex};
use crate::service::views::{Bucket, ObjectParts, ViewKind, node_of, one_node};

/// How old published partitions may be to serve a request while newer ones are
/// assigned: consumers that refresh every few seconds or minutes do not see it.
pub const RECENT: Duration = Duration::from_secs(2);

/// A job actor's member and allocator partitions, made from its snapshots when asked
/// for. Shared by the requests that read the actor's snapshots.
#[derive(Default)]
pub struct AssignedViews {
    /// The `__meta_*` labels collectors are served: those the actor's rules read;
    /// `None`: every one.
    readable: Option<Arc<ReadableMeta>>,
    /// What assigning works on; held while it assigns.
    working: Mutex<Option<Assigned>>,
    /// The partitions assigned last.
    published: ArcSwapOption<Published>,
    /// True while partitions are assigned in the background for a request.
    running: AtomicBool,
    /// The members the job actor has partitions assigned by, before its snapshots
    /// name them; `None` when it is not switching.
    switching: ArcSwapOption<Fleet>,
}

/// Partitions assigned from one snapshot, as requests read them.
pub struct Published {
    /// The body they were made from.
    body: KeyedGroups,
    /// The fleet they were made by.
    pub fleet: Arc<Fleet>,
    /// When they were made.
    at: Instant,
    /// `?member=`, once asked for.
    member: Option<Partition>,
    /// The allocator's shares, once asked for.
    allocator: Option<Partition>,
    /// What the member partition counts.
    pub counts: MemberCounts,
}

impl Published {
    /// Partition `kind`, if kept.
    pub fn partition(&self, kind: ViewKind) -> Option<&Partition> {
        match kind {
            ViewKind::Member => self.member.as_ref(),
            ViewKind::Allocator => self.allocator.as_ref(),
            _ => None,
        }
    }
}

/// What a job's member partition counts, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberCounts {
    /// Targets across zones, and targets gained when the members changed.
    pub fleet: FleetCounts,
    /// Targets served, a target in handover once per member.
    pub served: usize,
    /// Targets of the body they were assigned from.
    pub targets: usize,
}

/// What the published partitions are to a snapshot ([`AssignedViews::lookup`]).
pub enum Lookup {
    /// Assigned from it.
    Current(Partition),
    /// Assigned from an earlier one with the same members at most [`RECENT`] ago, or
    /// while newer ones are assigned, or by the members the job actor is switching to
    /// or from: to serve while newer ones are assigned.
    Recent(Partition),
    /// None, assigned by other members, or too old: to assign now.
    Missing,
}

impl AssignedViews {
    /// Nothing assigned yet; collectors are served the `__meta_*` labels `readable`
    /// keeps (every one when `None`).
    pub fn new(readable: Option<Arc<ReadableMeta>>) -> AssignedViews {
        AssignedViews {
            readable,
            ..AssignedViews::default()
        }
    }

    /// The published partition `kind` as it is to `body` by `fleet`.
    pub fn lookup(&self, kind: ViewKind, body: &KeyedGroups, fleet: &Arc<Fleet>) -> Lookup {
        let published = self.published.load();
        let Some(p) = published.as_ref() else {
            return Lookup::Missing;
        };
        let Some(partition) = p.partition(kind) else {
            return Lookup::Missing;
        };
        let under_way = self.switching.load().is_some();
        // Other members: those the snapshot named before the switch under way, or
        // those it is switching to; else they are assigned now.
        if !Arc::ptr_eq(&p.fleet, fleet) {
            return match under_way {
                true => Lookup::Recent(partition.clone()),
                false => Lookup::Missing,
            };
        }
        if p.body.same_map(body) {
            return Lookup::Current(partition.clone());
        }
        let under_way = under_way || self.running.load(Ordering::Acquire);
        match under_way || p.at.elapsed() <= RECENT {
            true => Lookup::Recent(partition.clone()),
            false => Lookup::Missing,
        }
    }

    /// Notes that the job actor has the partitions assigned by new members `to`, or
    /// (`None`) that its snapshots name them.
    pub fn switching(&self, to: Option<Arc<Fleet>>) {
        self.switching.store(to);
    }

    /// The members to assign by for a snapshot naming `fleet`: those the job actor is
    /// switching to, if it is (assigning by the members before would undo the switch).
    pub fn members_for(&self, fleet: &Arc<Fleet>) -> Arc<Fleet> {
        self.switching
            .load_full()
            .unwrap_or_else(|| Arc::clone(fleet))
    }

    /// Partition `kind` of `body` by `fleet`, assigned now (made whole when first
    /// asked for, else from what changed since) and published; waits while another
    /// thread assigns. Takes time in proportion to what changed: not for an async
    /// thread.
    pub fn assign(&self, kind: ViewKind, body: &KeyedGroups, fleet: &Arc<Fleet>) -> Partition {
        let mut working = self.lock();
        let assigned = working.get_or_insert_with(|| Assigned::new(fleet));
        assigned.bring_up_to_date(Some(kind), body, fleet);
        let published = assigned.publish();
        let partition = published.partition(kind).cloned().unwrap_or_default();
        self.published.store(Some(Arc::new(published)));
        partition
    }

    /// The partitions kept, assigned from `body` by `fleet` and published, unless none
    /// was asked for yet.
    pub fn assign_kept(&self, body: &KeyedGroups, fleet: &Arc<Fleet>) {
        let mut working = self.lock();
        if let Some(assigned) = working.as_mut() {
            assigned.bring_up_to_date(None, body, fleet);
            self.published.store(Some(Arc::new(assigned.publish())));
        }
    }

    /// True once a member view was asked for (partitions are kept and published).
    pub fn kept(&self) -> bool {
        self.published.load().is_some()
    }

    /// True when the caller should assign the kept partitions in the background
    /// ([`AssignedViews::assign_kept`], then [`AssignedViews::assigned_apart`]): some
    /// were asked for and no thread does it already.
    pub fn start_apart(&self) -> bool {
        self.kept() && !self.running.swap(true, Ordering::AcqRel)
    }

    /// Ends what [`AssignedViews::start_apart`] started.
    pub fn assigned_apart(&self) {
        self.running.store(false, Ordering::Release);
    }

    /// The `__meta_*` labels collectors are served: those the actor's rules read;
    /// `None`: every one.
    pub fn readable(&self) -> Option<&Arc<ReadableMeta>> {
        self.readable.as_ref()
    }

    /// The partitions assigned last; `None` before a member view was asked for.
    pub fn published(&self) -> Option<Arc<Published>> {
        self.published.load_full()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Assigned>> {
        // A thread that panicked while assigning leaves partitions that may miss an
        // object's change: start over.
        self.working.lock().unwrap_or_else(|poisoned| {
            let mut working = poisoned.into_inner();
            *working = None;
            working
        })
    }
}

/// The partitions and where each object is in them.
struct Assigned {
    /// The body they were made from.
    body: KeyedGroups,
    /// The fleet they were made by.
    fleet: Arc<Fleet>,
    /// `?member=`, once asked for.
    member: Option<ViewIndex>,
    /// The allocator's shares, once asked for.
    allocator: Option<ViewIndex>,
    /// Each object placed, by key.
    objects: HashMap<ObjectKey, Placement, foldhash::fast::RandomState>,
    counts: FleetCounts,
    /// The last number a listed discovered share was made with.
    stamps: u64,
    /// Reused while an object's owners are walked.
    scratch: Vec<Owned>,
}

/// One member's targets of an object: bit `i` of word `i / 64` set when the object's
/// kept target `i` is served to it.
type KeptBits = SmallVec<[u64; 1]>;

/// One member and the kept targets of an object it is served.
#[derive(Clone, Debug, PartialEq)]
struct Owned {
    member: ArcStr,
    kept: KeptBits,
}

/// One object as the partitions hold it.
struct Placement {
    /// What it was placed from.
    placed: Arc<PlacedGroups>,
    /// The one node of its targets (`None`: several), read once from its labels,
    /// whether the fleet reads zones or not (it may later).
    node: Option<ArcStr>,
    /// That node's zone, by the fleet it was placed by.
    zone: ArcStr,
    /// Its members and the targets each is served, by name.
    owned: Box<[Owned]>,
    /// Its parts in the member partition (empty unless kept).
    member: ObjectParts,
    /// Its parts in the allocator's (empty unless kept).
    allocator: ObjectParts,
    /// Its addresses served outside their zone.
    cross_zone: u32,
}

impl Assigned {
    fn new(fleet: &Arc<Fleet>) -> Assigned {
        Assigned {
            body: KeyedGroups::default(),
            fleet: Arc::clone(fleet),
            member: None,
            allocator: None,
            objects: HashMap::default(),
            counts: FleetCounts::default(),
            stamps: 0,
            scratch: Vec::new(),
        }
    }

    /// The partitions as requests read them, made now.
    fn publish(&self) -> Published {
        let member = self.member.as_ref().map(|i| i.buckets.clone());
        let served = (member.iter())
            .flat_map(|p| p.values())
            .map(KeyedGroups::targets)
            .sum();
        Published {
            body: self.body.clone(),
            fleet: Arc::clone(&self.fleet),
            at: Instant::now(),
            allocator: self.allocator.as_ref().map(|i| i.buckets.clone()),
            member,
            counts: MemberCounts {
                fleet: self.counts,
                served,
                targets: self.body.targets(),
            },
        }
    }

    /// Makes the partitions those of `body` by `fleet`, with `kind` among them.
    fn bring_up_to_date(&mut self, kind: Option<ViewKind>, body: &KeyedGroups, fleet: &Arc<Fleet>) {
        let new_kind = match kind {
            Some(ViewKind::Member) if self.member.is_none() => {
                self.member = Some(ViewIndex::new(ViewKind::Member));
                true
            }
            Some(ViewKind::Allocator) if self.allocator.is_none() => {
                self.allocator = Some(ViewIndex::new(ViewKind::Allocator));
                true
            }
            _ => false,
        };
        if new_kind {
            return self.rebuild(body, fleet);
        }
        if !Arc::ptr_eq(&self.fleet, fleet) {
            let moved = self.fleet.moved_zones(fleet);
            self.fleet = Arc::clone(fleet);
            self.move_zones(&moved);
        }
        if !self.body.same_map(body) {
            self.apply_changes(body);
        }
    }

    /// Places every object of `body` anew by `fleet`.
    fn rebuild(&mut self, body: &KeyedGroups, fleet: &Arc<Fleet>) {
        self.fleet = Arc::clone(fleet);
        for index in [&mut self.member, &mut self.allocator]
            .into_iter()
            .flatten()
        {
            index.clear();
        }
        self.objects.clear();
        self.counts.cross_zone = 0;
        for (key, share) in body.iter() {
            if let Some(placed) = share.placed_groups() {
                self.place(key, placed, false);
            }
        }
        self.body = body.clone();
    }

    /// Walks anew the owners of the objects whose zone's members changed (`moved`):
    /// those whose owners came out the same stay as they are (but for their count of
    /// targets across zones), the others are placed anew, counting what each member
    /// gained.
    fn move_zones(&mut self, moved: &MovedZones) {
        let fleet = Arc::clone(&self.fleet);
        let any = moved != &MovedZones::Some(Default::default());
        let zone_aware = fleet.zone_aware();
        let mut changed = Vec::new();
        let mut cross_zone = self.counts.cross_zone;
        for (key, p) in self.objects.iter_mut() {
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
            if *p.owned != *self.scratch {
                let owned: Box<[Owned]> = self.scratch.drain(..).collect();
                changed.push((key.clone(), Arc::clone(&p.placed), owned));
                continue;
            }
            let crossing = crossing(&fleet, &p.placed, node);
            cross_zone = (cross_zone + u64::from(crossing)).saturating_sub(u64::from(p.cross_zone));
            p.cross_zone = crossing;
            p.zone = zone_of(&fleet, node);
        }
        self.counts.cross_zone = cross_zone;
        for (key, placed, owned) in changed {
            if let Some(held) = self.objects.remove(&key) {
                let node = held.node.clone();
                self.place_owned(&key, &placed, (node, owned), Some(held), true);
            }
        }
    }

    /// Applies what changed from the body they were made from to `body`.
    fn apply_changes(&mut self, body: &KeyedGroups) {
        let old = std::mem::take(&mut self.body);
        for change in old.diff(body) {
            match change {
                Change::Added(key, share) | Change::Changed(key, share) => {
                    match share.placed_groups() {
                        Some(placed) => self.place(key, placed, false),
                        None => self.unplace(key),
                    }
                }
                Change::Removed(key, _) => self.unplace(key),
            }
        }
        self.body = body.clone();
    }

    /// Takes object `key` out of the partitions.
    fn unplace(&mut self, key: &ObjectKey) {
        let Some(gone) = self.objects.remove(key) else {
            return;
        };
        if let Some(index) = &mut self.member {
            index.remove(key, &gone.member);
        }
        if let Some(index) = &mut self.allocator {
            index.remove(key, &gone.allocator);
        }
        let crossing = u64::from(gone.cross_zone);
        self.counts.cross_zone = self.counts.cross_zone.saturating_sub(crossing);
    }

    /// Places object `key` from `placed` by the fleet, in place of where it was;
    /// `moving` (the members changed): counts the targets each member gained. A
    /// member's part that holds what it held keeps its share.
    fn place(&mut self, key: &ObjectKey, placed: &Arc<PlacedGroups>, moving: bool) {
        let held = self.objects.remove(key);
        // A pod's targets are all on its node: read once per entry.
        let node = match &held {
            Some(h) if Arc::ptr_eq(&h.placed, placed) => h.node.clone(),
            _ => one_node(&placed.discovered),
        };
        let walked = walked_node(&self.fleet, node.as_deref());
        walk_owners(&self.fleet, placed, walked, &mut self.scratch);
        let owned: Box<[Owned]> = self.scratch.drain(..).collect();
        self.place_owned(key, placed, (node, owned), held, moving);
    }

    /// [`Assigned::place`] of an object whose one node and owners are known (`node`,
    /// `owned`), in place of `held`.
    fn place_owned(
        &mut self,
        key: &ObjectKey,
        placed: &Arc<PlacedGroups>,
        (node, owned): (Option<ArcStr>, Box<[Owned]>),
        held: Option<Placement>,
        moving: bool,
    ) {
        let fleet = Arc::clone(&self.fleet);
        let walked = walked_node(&fleet, node.as_deref());
        let mut member = match self.member {
            Some(_) => member_parts(placed, &owned),
            None => Box::default(),
        };
        let mut allocator = match self.allocator {
            Some(_) => self.allocator_parts(placed, &owned),
            None => Box::default(),
        };
        if let Some(index) = &mut self.member {
            match &held {
                Some(h) => {
                    if moving {
                        self.counts.moves += gained(&h.member, &member);
                    }
                    index.replace(key, &h.member, &mut member);
                }
                None => index.insert(key, &member),
            }
        }
        if let Some(index) = &mut self.allocator {
            match &held {
                Some(h) => index.replace(key, &h.allocator, &mut allocator),
                None => index.insert(key, &allocator),
            }
        }
        let cross_zone = crossing(&fleet, placed, walked);
        let before = held.map_or(0, |h| u64::from(h.cross_zone));
        let crossing = self.counts.cross_zone + u64::from(cross_zone);
        self.counts.cross_zone = crossing.saturating_sub(before);
        let placement = Placement {
            placed: Arc::clone(placed),
            zone: zone_of(&fleet, node.as_deref()),
            node,
            owned,
            member,
            allocator,
            cross_zone,
        };
        self.objects.insert(key.clone(), placement);
    }

    /// An object's parts in the allocator's partition: per member, its discovered label
    /// sets held (those with an address): by a mask for an object of at most
    /// [`MAX_PICKED`] sets, else listed.
    fn allocator_parts(&mut self, placed: &Arc<PlacedGroups>, owned: &[Owned]) -> ObjectParts {
        let by_mask = placed.discovered.len() <= MAX_PICKED;
        let mut parts = Vec::with_capacity(owned.len());
        for o in owned {
            let sources = (kept_of(&placed.kept, &o.kept))
                .filter(|t| t.collected)
                .map(|t| t.source);
            let share = if by_mask {
                let mask = sources.fold(0u64, |m, s| m | 1 << s);
                Share::collected(placed, mask)
            } else {
                let mut sources: Vec<u32> = sources.collect();
                sources.sort_unstable();
                sources.dedup();
                self.stamps += 1;
                let share = DiscoveredShare::new(&placed.discovered, sources, self.stamps);
                (share.targets() > 0).then(|| Share::discovered(share))
            };
            if let Some(share) = share {
                parts.push((Bucket::Name(o.member.clone()), share));
            }
        }
        parts.into()
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

/// The kept targets whose bits are set in `bits`.
fn kept_of<'a>(kept: &'a [KeptTarget], bits: &'a KeptBits) -> impl Iterator<Item = &'a KeptTarget> {
    (kept.iter().enumerate())
        .filter(move |(i, _)| bits.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 == 1))
        .map(|(_, t)| t)
}

/// An object's parts in the member partition: per member, its groups whole when it
/// holds every address, else the addresses it holds cut from them.
fn member_parts(placed: &PlacedGroups, owned: &[Owned]) -> ObjectParts {
    let groups = &placed.groups;
    let places = groups.address_places();
    (owned.iter())
        .filter_map(|o| {
            let mut picked: Vec<u32> = kept_of(&placed.kept, &o.kept).map(|t| t.place).collect();
            picked.sort_unstable();
            picked.dedup();
            let share = cut_share(groups, places, picked)?;
            Some((Bucket::Name(o.member.clone()), share))
        })
        .collect()
}

/// The share of `groups` (of `places` addresses' places) that holds the addresses at
/// `held` (ascending, each once): whole when it holds every one.
fn cut_share(groups: &Arc<ObjectGroups>, places: usize, held: Vec<u32>) -> Option<Share> {
    if places == 0 || held.len() == places {
        return Some(Share::whole(groups));
    }
    if places <= MAX_PICKED {
        let mask = held.iter().fold(0u64, |m, &p| m | 1 << p);
        return Share::picked(groups, mask);
    }
    Share::cut(groups, held)
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
