//! Which member a target is assigned to: weighted rendezvous hashing, restricted to the
//! members in the target's zone when the fleet is zone-aware.
//!
//! Each member scores `-weight / ln(u)`, `u` a number in (0, 1) drawn from a fixed hash
//! of the target's address and the member's name ([`rendezvous_weight`]); the highest
//! score wins. A member's chance of winning is its weight over the candidates' total,
//! and a member joining or leaving moves only the targets it wins or won. The hash has
//! no seed and `ln` is IEEE arithmetic on the same inputs, so two replicas of one build
//! that see the same members assign every target alike.

use std::collections::BTreeMap;
use std::sync::Arc;

use arcstr::ArcStr;

use crate::service::views::{address_hash, rendezvous_weight};

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

/// The members at one moment and how targets are assigned among them.
#[derive(Clone, Debug, Default)]
pub struct Assignment {
    /// Sorted by name, each once.
    members: Box<[Member]>,
    /// Each member's zone (empty: none), in the order of `members`.
    member_zones: Box<[ArcStr]>,
    zone_aware: bool,
    zones: NodeZones,
    /// The members (their index) in each zone that has any.
    by_zone: BTreeMap<ArcStr, Box<[usize]>>,
    /// Every member's index, the candidates of a target with no zone of its own.
    everyone: Box<[usize]>,
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
        let member_zones: Box<[ArcStr]> = members
            .iter()
            .map(|m| zones.get(&m.node).cloned().unwrap_or_default())
            .collect();
        let mut by_zone: BTreeMap<ArcStr, Vec<usize>> = BTreeMap::new();
        for (i, zone) in member_zones.iter().enumerate() {
            if !zone.is_empty() {
                by_zone.entry(zone.clone()).or_default().push(i);
            }
        }
        Assignment {
            everyone: (0..members.len()).collect(),
            members: members.into(),
            member_zones,
            zone_aware,
            zones,
            by_zone: by_zone.into_iter().map(|(z, m)| (z, m.into())).collect(),
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
        let candidates = match self.by_zone.get(zone) {
            Some(local) if !zone.is_empty() => local,
            _ => &self.everyone,
        };
        let mut best: Option<(f64, usize)> = None;
        for &i in candidates.iter() {
            let s = score(address_hash, &self.members[i]);
            if best.is_none_or(|(bs, _)| s > bs) {
                best = Some((s, i));
            }
        }
        let (_, i) = best?;
        Some(Owner {
            member: &self.members[i],
            cross_zone: !zone.is_empty() && self.member_zones[i] != zone,
        })
    }
}

/// `member`'s score for a target whose address hashes to `address_hash`: `-w / ln(u)`
/// with `u` in (0, 1) the top 53 bits of [`rendezvous_weight`], offset by half a step
/// so that it is never 0 nor 1.
pub fn score(address_hash: u64, member: &Member) -> f64 {
    let h = rendezvous_weight(address_hash, &member.name);
    let u = ((h >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    -member.weight / u.ln()
}

#[cfg(test)]
#[path = "assignment_tests.rs"]
mod tests;
