//! The targets each member is served (`?member=`) and each collector's share (the
//! target allocator's `/jobs/{job}/targets`), decided when they are asked for, from a
//! job actor's published snapshot ([`AssignedViews`]).
//!
//! The job actor does nothing per event for them: once a member view was first asked
//! for, it keeps in its body, per object, what assigning reads (a [`PlacedGroups`]:
//! each kept target's relabelled address hashed, its address's place in the groups and
//! its discovered label set). From a snapshot's body and members, the objects are
//! placed ([`Placements`]: each object's members and the targets each is served),
//! brought up to date from the placements before, and published. A request's body is
//! cut from the published placements as it is written ([`CutObjects`]): it walks the
//! objects, [`AHEAD`] of those its member may be served at a time, and takes, from each
//! its member is served, some of its addresses (cut from its bytes, byte for byte the
//! member's groups) or some of its discovered label sets.
//! Its length and ETag are read first from the sums the placements keep per member of
//! each object's part of a digest, added and taken out as objects are placed anew. No
//! map of objects is kept per member.
//!
//! When the members change, the job actor has the placements made by them in the
//! background before its snapshots name them, so a request never waits for that
//! (meanwhile it is served by the members before or after). When only objects changed,
//! a request serves the published placements if they were made at most [`RECENT`] ago
//! or newer ones are being made, and has newer ones made meanwhile in the background;
//! older ones it waits for. While views are in use (one was asked for within
//! [`IN_USE`]), the job actor has placements made in the background as it publishes a
//! snapshot whose body changed, so that a request seldom finds them older. So placing
//! happens at most once per snapshot (a snapshot is published at most once per publish
//! interval while changes keep coming) and per membership, off the requests' way but
//! for a view nobody asked for in a while.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use arc_swap::ArcSwapOption;
use arcstr::ArcStr;
use imbl::OrdMap;
use smallvec::SmallVec;

use super::placements::{
    AHEAD, Entry, Owned, Placements, ServedDigests, collector_share, member_bit, member_share, warm,
};
use super::{Fleet, FleetCounts};
use crate::model::ObjectKey;
use crate::relabel::ReadableMeta;
use crate::sd_output::{CutObjects, Digest, KeyedGroups, ObjectDigest, Share};
use crate::service::views::ViewKind;

/// How old published placements may be to serve a request while newer ones are made:
/// consumers that refresh every few seconds or minutes do not see it.
pub const RECENT: Duration = Duration::from_secs(2);

/// How long after a member view or a collector's share was last asked for the job
/// actor keeps the placements up to date as it publishes: consumers ask again every
/// refresh interval (Prometheus' HTTP SD: 60 s by default; the collector: 30 s), and
/// each then finds placements made from a recent snapshot instead of waiting while
/// the changes since the request before are placed.
pub const IN_USE: Duration = Duration::from_secs(120);

/// A job actor's objects placed by its members, from its snapshots when asked for.
/// Shared by the requests that read the actor's snapshots.
#[derive(Default)]
pub struct AssignedViews {
    /// The `__meta_*` labels collectors are served: those the actor's rules read;
    /// `None`: every one.
    readable: Option<Arc<ReadableMeta>>,
    /// What placing works on; held while it places.
    working: Mutex<Option<Placements>>,
    /// The placements made last.
    published: ArcSwapOption<Published>,
    /// True while placements are made in the background for a request.
    running: AtomicBool,
    /// The members the job actor has placements made by, before its snapshots name
    /// them; `None` when it is not switching.
    switching: ArcSwapOption<Fleet>,
    /// When a member view or a collector's share was last asked for.
    asked: Mutex<Option<Instant>>,
}

/// Placements made from one snapshot, as requests read them.
pub struct Published {
    /// The body they were made from.
    body: KeyedGroups,
    /// The fleet they were made by.
    pub fleet: Arc<Fleet>,
    /// When they were made.
    at: Instant,
    /// Each object placed, in body order.
    objects: OrdMap<ObjectKey, Entry>,
    /// What they count.
    pub counts: MemberCounts,
    /// What each member and its collector are served, summed.
    by_member: BTreeMap<ArcStr, ServedDigests>,
}

impl Published {
    /// Member `member`'s view of partition `kind` (its `?member=`, or its collector's
    /// share), cut from these placements as a body is written from it.
    pub fn view(&self, kind: ViewKind, member: &ArcStr) -> Arc<dyn CutObjects> {
        let collector = kind == ViewKind::Allocator;
        let served = self.by_member.get(member).copied().unwrap_or_default();
        Arc::new(CutView {
            objects: self.objects.clone(),
            member: member.clone(),
            bit: member_bit(member),
            collector,
            digest: match collector {
                true => served.collector,
                false => served.member,
            },
        })
    }

    /// Member `member`'s view of partition `kind`, cut now into a map (for tests and
    /// benchmarks: walks every object).
    pub fn cut_view(&self, kind: ViewKind, member: &ArcStr) -> KeyedGroups {
        let mut view = KeyedGroups::default();
        self.view(kind, member).each_from(None, &mut |key, share| {
            view.insert(key, share);
            true
        });
        view
    }

    /// The targets each member is served (a target in handover at both its members).
    pub fn per_member(&self) -> BTreeMap<ArcStr, usize> {
        (self.by_member.iter())
            .map(|(member, served)| (member.clone(), served.member.targets()))
            .filter(|(_, targets)| *targets > 0)
            .collect()
    }
}

/// One member's view or its collector's share of published placements, cut as a body
/// is written from it.
#[derive(Debug)]
struct CutView {
    objects: OrdMap<ObjectKey, Entry>,
    member: ArcStr,
    /// The member's bit in an entry's owners.
    bit: u64,
    /// Its collector's share (discovered label sets), not its view.
    collector: bool,
    /// What the placements summed of the objects it serves.
    digest: Digest,
}

impl CutView {
    /// What it serves of `entry`, if anything: the member's part of the object and its
    /// digest.
    fn part<'a>(&self, entry: &'a Entry) -> Option<(&'a Owned, ObjectDigest)> {
        if !entry.may_be_owned_by(self.bit) {
            return None;
        }
        let (owned, digests) = entry.placement.owned_by(&self.member)?;
        let digest = match self.collector {
            true => digests.collector,
            false => digests.member,
        };
        Some((owned, digest?))
    }

    /// Cuts each of `batch` and gives it to `f`; false when `f` wants no more.
    fn cut_batch(
        &self,
        batch: &[(&ObjectKey, &Entry)],
        f: &mut dyn FnMut(&ObjectKey, &Share) -> bool,
    ) -> bool {
        warm(batch.iter().map(|(_, e)| &*e.placement), self.collector);
        for &(key, entry) in batch {
            let Some((owned, _)) = self.part(entry) else {
                continue;
            };
            let placed = &entry.placement.placed;
            let share = match self.collector {
                true => collector_share(placed, owned),
                false => member_share(placed, owned),
            };
            // The digest counted the share that `part` gave a digest: the same one.
            if let Some(share) = share
                && !f(key, &share)
            {
                return false;
            }
        }
        true
    }

    /// Its digest summed anew from every object (what the placements keep summed).
    fn walked_digest(&self) -> Digest {
        let mut digest = Digest::default();
        for entry in self.objects.values() {
            if let Some((_, object)) = self.part(entry) {
                digest.add_object(&object);
            }
        }
        digest
    }
}

impl CutObjects for CutView {
    fn each_from(&self, from: Option<&ObjectKey>, f: &mut dyn FnMut(&ObjectKey, &Share) -> bool) {
        let from = from.cloned().map_or(Bound::Unbounded, Bound::Included);
        let mut batch: SmallVec<[(&ObjectKey, &Entry); AHEAD]> = SmallVec::new();
        for (key, entry) in self.objects.range((from, Bound::Unbounded)) {
            if !entry.may_be_owned_by(self.bit) {
                continue;
            }
            batch.push((key, entry));
            if batch.len() == AHEAD {
                if !self.cut_batch(&batch, f) {
                    return;
                }
                batch.clear();
            }
        }
        self.cut_batch(&batch, f);
    }

    fn digest(&self) -> Digest {
        debug_assert_eq!(self.digest, self.walked_digest(), "{}", self.member);
        self.digest
    }
}

/// What a job's placements count, for `/metrics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberCounts {
    /// Targets across zones, and targets gained when the members changed.
    pub fleet: FleetCounts,
    /// Targets served, a target in handover once per member.
    pub served: usize,
    /// Targets of the body they were made from.
    pub targets: usize,
}

/// What the published placements are to a snapshot ([`AssignedViews::lookup`]).
pub enum Lookup {
    /// Made from it.
    Current(Arc<Published>),
    /// Made from an earlier one with the same members at most [`RECENT`] ago, or
    /// while newer ones are made, or by the members the job actor is switching to
    /// or from: to serve while newer ones are made.
    Recent(Arc<Published>),
    /// None, made by other members, or too old: to make now.
    Missing,
}

impl AssignedViews {
    /// Nothing placed yet; collectors are served the `__meta_*` labels `readable`
    /// keeps (every one when `None`).
    pub fn new(readable: Option<Arc<ReadableMeta>>) -> AssignedViews {
        AssignedViews {
            readable,
            ..AssignedViews::default()
        }
    }

    /// The published placements as they are to `body` by `fleet`.
    pub fn lookup(&self, body: &KeyedGroups, fleet: &Arc<Fleet>) -> Lookup {
        let Some(p) = self.published.load_full() else {
            return Lookup::Missing;
        };
        let under_way = self.switching.load().is_some();
        // Other members: those the snapshot named before the switch under way, or
        // those it is switching to; else they are placed now.
        if !Arc::ptr_eq(&p.fleet, fleet) {
            return match under_way {
                true => Lookup::Recent(p),
                false => Lookup::Missing,
            };
        }
        if p.body.same_map(body) {
            return Lookup::Current(p);
        }
        let under_way = under_way || self.running.load(Ordering::Acquire);
        match under_way || p.at.elapsed() <= RECENT {
            true => Lookup::Recent(p),
            false => Lookup::Missing,
        }
    }

    /// Notes that the job actor has the placements made by new members `to`, or
    /// (`None`) that its snapshots name them.
    pub fn switching(&self, to: Option<Arc<Fleet>>) {
        self.switching.store(to);
    }

    /// The members to place by for a snapshot naming `fleet`: those the job actor is
    /// switching to, if it is (placing by the members before would undo the switch).
    pub fn members_for(&self, fleet: &Arc<Fleet>) -> Arc<Fleet> {
        self.switching
            .load_full()
            .unwrap_or_else(|| Arc::clone(fleet))
    }

    /// The objects of `body` placed by `fleet` now (all of them when first asked
    /// for, else from what changed since) and published; waits while another thread
    /// places. Takes time in proportion to what changed: not for an async thread.
    pub fn assign(&self, body: &KeyedGroups, fleet: &Arc<Fleet>) -> Arc<Published> {
        let mut working = self.lock();
        let placements = match working.take() {
            Some(mut placements) => {
                placements.bring_up_to_date(body, fleet);
                placements
            }
            None => Placements::new(body, fleet),
        };
        let published = Arc::new(publish(&placements));
        *working = Some(placements);
        self.published.store(Some(Arc::clone(&published)));
        published
    }

    /// The placements, made from `body` by `fleet` and published, unless no view was
    /// asked for yet.
    pub fn assign_kept(&self, body: &KeyedGroups, fleet: &Arc<Fleet>) {
        let mut working = self.lock();
        if let Some(placements) = working.as_mut() {
            placements.bring_up_to_date(body, fleet);
            self.published.store(Some(Arc::new(publish(placements))));
        }
    }

    /// True once a member view was asked for (placements are kept and published).
    pub fn kept(&self) -> bool {
        self.published.load().is_some()
    }

    /// Notes that a member view or a collector's share is asked for now.
    pub fn note_asked(&self) {
        // A reader that panicked cannot have left an instant half written.
        let mut asked = self.asked.lock().unwrap_or_else(|p| p.into_inner());
        *asked = Some(Instant::now());
    }

    /// True when placements are kept and a view was asked for within [`IN_USE`]: the
    /// job actor then has them made as it publishes.
    pub fn in_use(&self) -> bool {
        let asked = *self.asked.lock().unwrap_or_else(|p| p.into_inner());
        self.kept() && asked.is_some_and(|at| at.elapsed() <= IN_USE)
    }

    /// True when the caller should place in the background
    /// ([`AssignedViews::assign_kept`], then [`AssignedViews::assigned_apart`] whether
    /// it returned or panicked): a view was asked for and no thread does it already.
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

    /// The placements published last; `None` before a member view was asked for.
    pub fn published(&self) -> Option<Arc<Published>> {
        self.published.load_full()
    }

    fn lock(&self) -> MutexGuard<'_, Option<Placements>> {
        // A thread that panicked while placing leaves placements that may miss an
        // object's change: start over.
        self.working.lock().unwrap_or_else(|poisoned| {
            let mut working = poisoned.into_inner();
            *working = None;
            working
        })
    }
}

/// `placements` as requests read them, now.
fn publish(placements: &Placements) -> Published {
    Published {
        body: placements.body.clone(),
        fleet: Arc::clone(&placements.fleet),
        at: Instant::now(),
        objects: placements.objects.clone(),
        counts: MemberCounts {
            fleet: placements.counts,
            served: placements.served(),
            targets: placements.body.targets(),
        },
        by_member: placements.by_member.clone(),
    }
}
