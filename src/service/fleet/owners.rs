//! How a fleet finds a target's owners under every assignment in handover in a few
//! scores: an [`OwnersPlan`], made once per fleet.
//!
//! A rolling restart keeps up to [`super::handover::MAX_IN_HANDOVER`] assignments in
//! handover, and two that follow each other differ by one member in one zone. For
//! the targets of a zone, the plan walks the zone's pools newest first: the first is
//! scored whole; one with a member more only scores that member against the owner so
//! far; one with a member less keeps the owner unless it was that member. Rendezvous
//! hashing makes these exact: the owner among a pool is its highest score, and a
//! member joining or leaving changes only the targets it wins or won.

use std::collections::BTreeMap;

use arcstr::ArcStr;

use super::assignment::{Assignment, Candidate, NodeZones, Pool};

/// What one assignment's pool is to the pool of the assignment before it in the walk.
#[derive(Clone, Debug)]
pub(super) enum Step {
    /// Scored whole: the first, or more than one member apart from the one before.
    Whole(Pool),
    /// The pool before with this candidate added.
    Added(Candidate),
    /// The pool before without the member of this name: scored whole (this pool) only
    /// when that member was the owner.
    Removed(ArcStr, Pool),
    /// The same candidates as the pool before.
    Same,
}

/// Each zone's steps (`""`: targets of no known zone), for assignments that share one
/// map of nodes' zones.
#[derive(Clone, Debug)]
pub struct OwnersPlan {
    zone_aware: bool,
    zones: NodeZones,
    steps: BTreeMap<ArcStr, Box<[Step]>>,
}

impl OwnersPlan {
    /// The plan of `assignments` (newest first); `None` when they do not share their
    /// nodes' zones (then each is scored on its own).
    pub fn new(assignments: &[&Assignment]) -> Option<OwnersPlan> {
        let first = assignments.first()?;
        let zones = first.zones().clone();
        let shared = assignments.iter().all(|a| {
            std::sync::Arc::ptr_eq(a.zones(), &zones) && a.zone_aware() == first.zone_aware()
        });
        if !shared {
            return None;
        }
        let mut names: Vec<ArcStr> = match first.zone_aware() {
            true => zones.values().cloned().collect(),
            false => Vec::new(),
        };
        names.push(ArcStr::default());
        names.sort_unstable();
        names.dedup();
        let steps = names
            .into_iter()
            .map(|zone| {
                let pools: Vec<&Pool> = assignments.iter().map(|a| a.pool(&zone)).collect();
                (zone, steps_of(&pools))
            })
            .collect();
        Some(OwnersPlan {
            zone_aware: first.zone_aware(),
            zones,
            steps,
        })
    }

    /// Calls `f` with each owner of a target whose address hashes to `address_hash`
    /// on `node`, as [`super::Fleet::each_owner`] does; false (nothing called) when the
    /// node's zone has no steps.
    pub fn each_owner(&self, address_hash: u64, node: &str, f: impl FnMut(&ArcStr)) -> bool {
        let Some(steps) = self.steps_on(node) else {
            return false;
        };
        walk(steps, address_hash, f);
        true
    }

    /// The steps a target on `node` is walked through (its zone's); `None` when its
    /// zone has none.
    pub(super) fn steps_on(&self, node: &str) -> Option<&[Step]> {
        let zone = match self.zone_aware {
            true => self.zones.get(node).map_or("", |z| z.as_str()),
            false => "",
        };
        self.steps.get(zone).map(|s| &s[..])
    }
}

/// Calls `f` with each owner of a target whose address hashes to `address_hash`, walked
/// through its zone's `steps` (see [`OwnersPlan`]), each once.
pub(super) fn walk(steps: &[Step], address_hash: u64, mut f: impl FnMut(&ArcStr)) {
    let mut best: Option<(&Candidate, f64)> = None;
    let mut told: smallvec::SmallVec<[&ArcStr; 8]> = smallvec::SmallVec::new();
    for step in steps.iter() {
        best = match step {
            Step::Whole(pool) => pool.best_scored(address_hash),
            Step::Added(c) => {
                let s = c.score(address_hash);
                match best {
                    Some((b, bs)) if !c.beats(s, b, bs) => best,
                    _ => Some((c, s)),
                }
            }
            Step::Removed(name, pool) => match best {
                Some((b, _)) if b.member.name == *name => pool.best_scored(address_hash),
                _ => best,
            },
            Step::Same => best,
        };
        if let Some((c, _)) = best
            && !told.contains(&&c.member.name)
        {
            told.push(&c.member.name);
            f(&c.member.name);
        }
    }
}

/// The steps through `pools` (one per assignment, newest first).
fn steps_of(pools: &[&Pool]) -> Box<[Step]> {
    let mut steps = Vec::with_capacity(pools.len());
    for (i, pool) in pools.iter().enumerate() {
        let step = match i.checked_sub(1).map(|j| pools[j]) {
            None => Step::Whole((*pool).clone()),
            Some(before) if before.same(pool) => Step::Same,
            Some(before) => step_from(before, pool),
        };
        steps.push(step);
    }
    steps.into()
}

/// The step from pool `before` to `pool`.
fn step_from(before: &Pool, pool: &Pool) -> Step {
    let (a, b) = (before.candidates(), pool.candidates());
    let only_before: Vec<&Candidate> = a.iter().filter(|c| !b.contains(c)).collect();
    let only_now: Vec<&Candidate> = b.iter().filter(|c| !a.contains(c)).collect();
    match (only_before.as_slice(), only_now.as_slice()) {
        ([], []) => Step::Same,
        ([], [added]) => Step::Added((*added).clone()),
        ([removed], []) => Step::Removed(removed.member.name.clone(), pool.clone()),
        _ => Step::Whole(pool.clone()),
    }
}
