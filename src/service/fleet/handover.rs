//! Gap-free handover: when the members change, a target that moves is served to its
//! new member at once and, for `membership.handover`, to its old member too, so the
//! old one scrapes it until the new one has read its share and scraped it.
//!
//! [`Handover`] keeps the current [`Assignment`] and the ones it replaced less than a
//! handover ago; a target is served to its owner under each ([`Fleet::each_owner`]).
//! A member that turns NotReady and back within the handover never loses a target:
//! the assignment from before it left is still held while it is away, and once it is
//! back that assignment is the current one again. An older assignment equal to the
//! current one serves nothing more and is dropped.
//!
//! The member watch (`service::fleet::members`) owns the one [`Handover`] and its
//! clock (tokio's, so tests pause it); every job actor receives the [`Fleet`] it
//! publishes and reassigns its targets by it, so all jobs switch together.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arcstr::ArcStr;
use tokio::time::Instant;

use smallvec::SmallVec;

use super::assignment::Assignment;
use super::owners::{OwnersPlan, Step, walk};

/// The most assignments kept in handover beside the current one. A rolling restart
/// changes the members three times per member (NotReady, gone, Ready); past this many
/// changes within one handover the oldest stops being served (its targets are served
/// by the newer assignments already).
pub const MAX_IN_HANDOVER: usize = 16;

/// What job actors assign targets by: the current assignment and the earlier ones
/// still in handover, newest first.
#[derive(Clone, Debug, Default)]
pub struct Fleet {
    /// The Ready members now.
    current: Arc<Assignment>,
    /// Assignments replaced less than a handover ago, newest first.
    previous: Box<[Arc<Assignment>]>,
    /// How [`Fleet::each_owner`] walks them, made when first needed (so the two above
    /// never change once made).
    plan: OnceLock<Option<OwnersPlan>>,
}

impl PartialEq for Fleet {
    fn eq(&self, other: &Fleet) -> bool {
        self.current == other.current && self.previous == other.previous
    }
}

impl Fleet {
    /// `current` with `previous` in handover (newest first).
    pub fn new(current: Arc<Assignment>, previous: Box<[Arc<Assignment>]>) -> Fleet {
        Fleet {
            current,
            previous,
            plan: OnceLock::new(),
        }
    }

    /// The Ready members now.
    pub fn current(&self) -> &Arc<Assignment> {
        &self.current
    }

    /// Assignments replaced less than a handover ago, newest first.
    pub fn previous(&self) -> &[Arc<Assignment>] {
        &self.previous
    }

    /// A fleet with no handover in progress.
    pub fn now(current: Assignment) -> Fleet {
        Fleet::new(Arc::new(current), Box::new([]))
    }

    fn plan(&self) -> Option<&OwnersPlan> {
        let plan = self.plan.get_or_init(|| {
            let all: Vec<&Assignment> = std::iter::once(&*self.current)
                .chain(self.previous.iter().map(|a| &**a))
                .collect();
            OwnersPlan::new(&all)
        });
        plan.as_ref()
    }

    /// True when a target's zone (from its node) decides its candidates.
    pub fn zone_aware(&self) -> bool {
        self.current.zone_aware()
    }

    /// Calls `f` with each member a target at an address hashing to `address_hash`
    /// (on `node`) is served to, each once: its current owner first, then its owners
    /// under the assignments in handover, walked by the fleet's [`OwnersPlan`]. Only
    /// assignments that do not share one map of nodes' zones (the zones changed within
    /// a handover) are scored one by one.
    pub fn each_owner(&self, address_hash: u64, node: &str, mut f: impl FnMut(&ArcStr)) {
        if let Some(plan) = self.plan()
            && plan.each_owner(address_hash, node, &mut f)
        {
            return;
        }
        let mut told: SmallVec<[&ArcStr; 8]> = SmallVec::new();
        for assignment in std::iter::once(&self.current).chain(self.previous.iter()) {
            if let Some(o) = assignment.owner_hashed(address_hash, node)
                && !told.contains(&&o.member.name)
            {
                told.push(&o.member.name);
                f(&o.member.name);
            }
        }
    }

    /// [`Fleet::each_owner`] for targets on `node`, the node's zone looked up once for
    /// all of them (an object's targets are usually on one node).
    pub fn on_node<'a>(&'a self, node: &'a str) -> NodeOwners<'a> {
        let steps = self.plan().and_then(|p| p.steps_on(node));
        NodeOwners {
            fleet: self,
            node,
            steps,
        }
    }

    /// The zones whose targets may be served to other members under `next` than under
    /// this fleet, or counted across zones otherwise: the zones (`""`: targets of no
    /// known zone) whose set of pools differs, or whose targets the current assignment
    /// assigns outside them under one and not the other. A target's members are its
    /// owners under each pool, whichever is current. A roll step changes one member, so
    /// targets of other zones keep their members and need not be assigned again; nor
    /// need a member's zone when it is Ready again while the assignment from before it
    /// left is in handover (the pools are those of the step before, in another order).
    pub fn moved_zones(&self, next: &Fleet) -> MovedZones {
        let zones = self.current.zones();
        let all_share = (std::iter::once(&self.current).chain(self.previous.iter()))
            .chain(std::iter::once(&next.current).chain(next.previous.iter()))
            .all(|a| Arc::ptr_eq(a.zones(), zones));
        if !all_share || self.zone_aware() != next.zone_aware() {
            return MovedZones::All;
        }
        let mut names: Vec<&str> = match self.zone_aware() {
            true => zones.values().map(|z| z.as_str()).collect(),
            false => Vec::new(),
        };
        names.push("");
        names.sort_unstable();
        names.dedup();
        let moved = names
            .into_iter()
            .filter(|zone| {
                self.current.crosses_from(zone) != next.current.crosses_from(zone)
                    || self.pools(zone) != next.pools(zone)
            })
            .map(ArcStr::from)
            .collect();
        MovedZones::Some(moved)
    }

    /// The distinct pools a target of `zone` is scored in, as addresses, sorted.
    fn pools(&self, zone: &str) -> Vec<*const ()> {
        let mut pools: Vec<*const ()> = std::iter::once(&self.current)
            .chain(self.previous.iter())
            .map(|a| a.pool(zone).address())
            .collect();
        pools.sort_unstable();
        pools.dedup();
        pools
    }

    /// True when the target's current owner is outside its zone.
    pub fn cross_zone(&self, address_hash: u64, node: &str) -> bool {
        self.current
            .owner_hashed(address_hash, node)
            .is_some_and(|o| o.cross_zone)
    }
}

/// The owners of targets on one node ([`Fleet::on_node`]).
pub struct NodeOwners<'a> {
    fleet: &'a Fleet,
    node: &'a str,
    /// The node's zone's steps in the fleet's plan, if it has them.
    steps: Option<&'a [Step]>,
}

impl NodeOwners<'_> {
    /// Calls `f` with each member a target at an address hashing to `address_hash`
    /// on the node is served to, as [`Fleet::each_owner`] does.
    pub fn each(&self, address_hash: u64, f: impl FnMut(&ArcStr)) {
        match self.steps {
            Some(steps) => walk(steps, address_hash, f),
            None => self.fleet.each_owner(address_hash, self.node, f),
        }
    }
}

/// Whose targets a change of fleet may move (see [`Fleet::moved_zones`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MovedZones {
    /// Any target's.
    All,
    /// Those of these zones only (`""`: of no known zone).
    Some(BTreeSet<ArcStr>),
}

impl MovedZones {
    /// True when targets of `zone` may have moved.
    pub fn includes(&self, zone: &str) -> bool {
        match self {
            MovedZones::All => true,
            MovedZones::Some(zones) => zones.contains(zone),
        }
    }
}

/// The assignments in effect over time: see the module documentation.
#[derive(Debug)]
pub struct Handover {
    handover: Duration,
    current: Arc<Assignment>,
    /// Replaced assignments with the instant their handover ends, newest first.
    previous: VecDeque<(Arc<Assignment>, Instant)>,
}

impl Handover {
    /// No members yet; a replaced assignment is kept `handover` long.
    pub fn new(handover: Duration) -> Handover {
        Handover {
            handover,
            current: Arc::new(Assignment::default()),
            previous: VecDeque::new(),
        }
    }

    /// The members changed to `next` at `now`; true if the assignment did. The one it
    /// replaces is kept until `now + handover` (unless it had no member: nobody was
    /// served by it).
    pub fn change(&mut self, mut next: Assignment, now: Instant) -> bool {
        if *self.current == next {
            return false;
        }
        // Pools equal to those of an assignment in handover are shared with it too: a
        // member Ready again gets back the very pools of before it left, which tells
        // job actors its zone's owners are the same (see `Fleet::moved_zones`).
        for earlier in self.previous.iter().rev().map(|(a, _)| a) {
            next.share_pools(earlier);
        }
        next.share_pools(&self.current);
        let old = std::mem::replace(&mut self.current, Arc::new(next));
        if !self.handover.is_zero() && !old.members().is_empty() {
            self.previous.push_front((old, now + self.handover));
        }
        let current = &self.current;
        self.previous.retain(|(a, _)| **a != **current);
        self.previous.truncate(MAX_IN_HANDOVER);
        true
    }

    /// Drops the assignments whose handover has ended by `now`; true if any was.
    pub fn expire(&mut self, now: Instant) -> bool {
        let before = self.previous.len();
        self.previous.retain(|(_, until)| *until > now);
        self.previous.len() != before
    }

    /// When the next handover ends, if one is in progress.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.previous.iter().map(|(_, until)| *until).min()
    }

    /// The fleet to assign by now.
    pub fn fleet(&self) -> Fleet {
        let previous = self.previous.iter().map(|(a, _)| Arc::clone(a)).collect();
        Fleet::new(Arc::clone(&self.current), previous)
    }
}

#[cfg(test)]
#[path = "handover_tests.rs"]
mod tests;
