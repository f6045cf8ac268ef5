//! Which member a target is assigned to: weighted rendezvous hashing, restricted to the
//! members in the target's zone when the fleet is zone-aware.
//!
//! Each member scores `-weight / ln(u)`, `u` a number in (0, 1) drawn from a fixed hash
//! of the target's address and the member's name
//! ([`crate::service::views::rendezvous_weight`]); the highest
//! score wins. A member's chance of winning is its weight over the candidates' total,
//! and a member joining or leaving moves only the targets it wins or won. The hash has
//! no seed and `ln` is IEEE arithmetic on the same inputs, so two replicas of one build
//! that see the same members assign every target alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use arcstr::ArcStr;

use crate::service::views::{address_hash, member_key, rendezvous_keyed};

/// Each node's zone (`topology.kubernetes.io/zone`), by node name; nodes without one
/// are absent.
pub type NodeZones = Arc<BTreeMap<ArcStr, ArcStr>>;

/// One Ready member.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Its pod's name: what it asks for with `?member=`.
    pub name: ArcStr,
    /// Its pod's node (empty: not yet scheduled, or unknown).
    pub node: ArcStr,
    /// Its weight, positive and finite; its share is proportional to it.
    pub weight: f64,
}

/// A member as a candidate for targets: the member, with the half of its rendezvous
/// hash that depends on its name alone, computed once.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The member.
    pub member: Member,
    /// Its name's part of its rendezvous hash ([`member_key`]).
    key: u64,
    /// Its zone (empty: none).
    zone: ArcStr,
}

impl Candidate {
    /// Its score for a target whose address hashes to `address_hash`: `-weight / ln(u)`,
    /// `u` from the target's and its name's hashes (see the module documentation).
    pub fn score(&self, address_hash: u64) -> f64 {
        score_keyed(address_hash, self.key, self.member.weight)
    }

    /// True when it wins over `other` for a target it scores `mine` and `other`
    /// scores `theirs`: the higher score, the first by name among equals (as
    /// [`Pool`] picks).
    pub fn beats(&self, mine: f64, other: &Candidate, theirs: f64) -> bool {
        mine > theirs || (mine == theirs && self.member.name < other.member.name)
    }
}

/// The candidates a target chooses among (a zone's members, or everyone), sorted by
/// name. Shared between assignments that have the very same candidates there, so that
/// a fleet's [`crate::service::fleet::owners::OwnersPlan`] tells equal pools by pointer.
#[derive(Clone, Debug, Default)]
pub struct Pool(Arc<[Candidate]>);

impl Pool {
    fn new(candidates: Vec<Candidate>) -> Pool {
        Pool(candidates.into())
    }

    /// Where it is in memory: equal for pools that are [`Pool::same`].
    pub fn address(&self) -> *const () {
        Arc::as_ptr(&self.0) as *const ()
    }

    /// True when `other` is this very pool (shared, not merely equal).
    pub fn same(&self, other: &Pool) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The candidate a target whose address hashes to `address_hash` goes to: the
    /// highest score, the first by name among equals.
    fn best(&self, address_hash: u64) -> Option<&Candidate> {
        self.best_scored(address_hash).map(|(c, _)| c)
    }

    /// The candidate a target whose address hashes to `address_hash` goes to, with its
    /// score.
    pub fn best_scored(&self, address_hash: u64) -> Option<(&Candidate, f64)> {
        // Among members of one weight the score grows with `u`: only each weight's
        // highest `u` (the first by name among equals) is scored, one `ln` per weight,
        // and the highest score wins, the first by name among equals.
        let mut tops: smallvec::SmallVec<[(f64, u64, usize); 4]> = smallvec::SmallVec::new();
        for (i, c) in self.0.iter().enumerate() {
            let bits = u_bits(address_hash, c.key);
            match tops.iter_mut().find(|(w, ..)| *w == c.member.weight) {
                Some(top) if bits > top.1 => *top = (top.0, bits, i),
                Some(_) => {}
                None => tops.push((c.member.weight, bits, i)),
            }
        }
        let mut best: Option<(f64, usize)> = None;
        for &(weight, bits, i) in &tops {
            let s = score_of(bits, weight);
            if best.is_none_or(|(bs, bi)| s > bs || (s == bs && i < bi)) {
                best = Some((s, i));
            }
        }
        best.map(|(s, i)| (&self.0[i], s))
    }

    /// The candidates, sorted by name.
    pub fn candidates(&self) -> &[Candidate] {
        &self.0
    }
}

/// The members at one moment and how targets are assigned among them.
#[derive(Clone, Debug, Default)]
pub struct Assignment {
    /// Sorted by name, each once.
    members: Box<[Member]>,
    zone_aware: bool,
    zones: NodeZones,
    /// The members in each zone that has any.
    by_zone: BTreeMap<ArcStr, Pool>,
    /// Every member, the candidates of a target with no zone of its own.
    everyone: Pool,
}

impl PartialEq for Assignment {
    fn eq(&self, other: &Assignment) -> bool {
        self.members == other.members
            && self.zone_aware == other.zone_aware
            && (!self.zone_aware || self.zones == other.zones)
    }
}

/// Where a target went.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Owner<'a> {
    /// The member.
    pub member: &'a Member,
    /// True when the target has a zone and the member is in another (its zone had no
    /// member).
    pub cross_zone: bool,
}

impl Assignment {
    /// `members` (sorted here; of a name given twice, the first by node and weight
    /// kept, so that the order given does not matter) assigned among with their zones
    /// from `zones`; with `zone_aware`, each target among its zone's.
    pub fn new(mut members: Vec<Member>, zone_aware: bool, zones: NodeZones) -> Assignment {
        members.sort_by(|a, b| {
            (a.name.cmp(&b.name))
                .then_with(|| a.node.cmp(&b.node))
                .then_with(|| a.weight.total_cmp(&b.weight))
        });
        members.dedup_by(|a, b| a.name == b.name);
        let candidates: Vec<Candidate> = members
            .iter()
            .map(|m| Candidate {
                member: m.clone(),
                key: member_key(&m.name),
                zone: zones.get(&m.node).cloned().unwrap_or_default(),
            })
            .collect();
        let mut by_zone: BTreeMap<ArcStr, Vec<Candidate>> = BTreeMap::new();
        for c in candidates.iter().filter(|c| !c.zone.is_empty()) {
            by_zone.entry(c.zone.clone()).or_default().push(c.clone());
        }
        Assignment {
            everyone: Pool::new(candidates),
            members: members.into(),
            zone_aware,
            zones,
            by_zone: by_zone
                .into_iter()
                .map(|(z, c)| (z, Pool::new(c)))
                .collect(),
        }
    }

    /// Shares `earlier`'s pools that have the very same candidates as this one's (see
    /// [`Pool`]); what targets are assigned to does not change.
    pub fn share_pools(&mut self, earlier: &Assignment) {
        if self.everyone.0 == earlier.everyone.0 {
            self.everyone = earlier.everyone.clone();
        }
        for (zone, pool) in self.by_zone.iter_mut() {
            if let Some(theirs) = earlier.by_zone.get(zone)
                && theirs.0 == pool.0
            {
                *pool = theirs.clone();
            }
        }
    }

    /// The members, sorted by name.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// True when targets are assigned within their zone.
    pub fn zone_aware(&self) -> bool {
        self.zone_aware
    }

    /// The zone of `node` (empty: none known).
    pub fn zone_of(&self, node: &str) -> &str {
        self.zones.get(node).map_or("", |z| z.as_str())
    }

    /// True when a target on `node` is assigned outside its zone: zone-aware, the
    /// node has a zone, and no member is in it (the same as [`Owner::cross_zone`]
    /// without scoring anyone).
    pub fn assigns_across(&self, node: &str) -> bool {
        self.crosses_from(self.zone_of(node))
    }

    /// True when targets of `zone` are assigned outside it: [`Assignment::assigns_across`]
    /// for the nodes of `zone`.
    pub fn crosses_from(&self, zone: &str) -> bool {
        self.zone_aware
            && !zone.is_empty()
            && !self.by_zone.contains_key(zone)
            && !self.members.is_empty()
    }

    /// The nodes' zones it assigns by.
    pub fn zones(&self) -> &NodeZones {
        &self.zones
    }

    /// The member a target at `address` whose object is on `node` is assigned to;
    /// `None` when there is no member.
    pub fn owner(&self, address: &str, node: &str) -> Option<Owner<'_>> {
        self.owner_hashed(address_hash(address), node)
    }

    /// [`Assignment::owner`] of an address already hashed ([`address_hash`]).
    pub fn owner_hashed(&self, address_hash: u64, node: &str) -> Option<Owner<'_>> {
        let zone = if self.zone_aware {
            self.zone_of(node)
        } else {
            ""
        };
        self.owner_in_zone(address_hash, zone)
    }

    /// The pool a target of `zone` (from [`Assignment::zone_of`], empty when the
    /// fleet is not zone-aware) chooses among: its zone's members, or everyone.
    pub fn pool(&self, zone: &str) -> &Pool {
        match self.by_zone.get(zone) {
            Some(local) if !zone.is_empty() => local,
            _ => &self.everyone,
        }
    }

    /// [`Assignment::owner_hashed`] of a target whose zone is known: `zone`.
    fn owner_in_zone(&self, address_hash: u64, zone: &str) -> Option<Owner<'_>> {
        let best = self.pool(zone).best(address_hash)?;
        Some(Owner {
            member: &best.member,
            cross_zone: !zone.is_empty() && best.zone != zone,
        })
    }
}

/// A member's score for a target whose address hashes to `address_hash`, from its
/// name's `key` ([`member_key`]) and its `weight`: `-weight / ln(u)` with `u` in (0, 1)
/// the top 53 bits of [`crate::service::views::rendezvous_weight`], offset by half a
/// step so that it is never 0 nor 1.
fn score_keyed(address_hash: u64, key: u64, weight: f64) -> f64 {
    score_of(u_bits(address_hash, key), weight)
}

/// The top 53 bits of the rendezvous hash of a target (`address_hash`) and a member
/// (`key`): `u`'s numerator, so that a larger one is a larger `u`.
fn u_bits(address_hash: u64, key: u64) -> u64 {
    rendezvous_keyed(address_hash, key) >> 11
}

/// The score of a member of `weight` whose `u` has numerator `bits` ([`u_bits`]).
fn score_of(bits: u64, weight: f64) -> f64 {
    let u = (bits as f64 + 0.5) / (1u64 << 53) as f64;
    -weight / u.ln()
}

#[cfg(test)]
#[path = "assignment_tests.rs"]
mod tests;
