//! Property tests of the assignment: replicas agree, zones are kept while they have a
//! member, shares follow weights, and a member joining moves about its own share.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

/// A member as a test draws it: its number, zone (0..4; zones 0..3 have nodes, 3 has
/// none of the targets') and weight.
fn members() -> impl Strategy<Value = Vec<(u16, u8, u8)>> {
    prop::collection::vec((0u16..500, 0u8..4, 1u8..4), 1..12)
}

/// Nodes `node-0` … `node-11`, node `i` in zone `i % 3`.
fn zones() -> NodeZones {
    Arc::new(
        (0..12)
            .map(|i| {
                (
                    ArcStr::from(format!("node-{i}")),
                    ArcStr::from(format!("zone-{}", i % 3)),
                )
            })
            .chain([(ArcStr::from("node-far"), ArcStr::from("zone-3"))])
            .collect(),
    )
}

fn member(id: u16, zone: u8, weight: f64) -> Member {
    let node = if zone == 3 {
        "node-far".to_string()
    } else {
        format!("node-{zone}")
    };
    Member {
        name: ArcStr::from(format!("scraper-{id}")),
        node: ArcStr::from(node),
        weight,
    }
}

fn assignment(drawn: &[(u16, u8, u8)], zone_aware: bool) -> Assignment {
    let members = drawn
        .iter()
        .map(|&(id, zone, w)| member(id, zone, f64::from(w)))
        .collect();
    Assignment::new(members, zone_aware, zones())
}

fn address(i: u32) -> String {
    format!(
        "10.{}.{}.{}:{}",
        i / 65_536,
        (i / 256) % 256,
        i % 256,
        8000 + i % 7
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Two replicas that see the same members, listed in any order, assign every
    /// target alike.
    #[test]
    fn replicas_assign_alike(drawn in members(), zone_aware in any::<bool>(), seed in 0u32..1000) {
        let one = assignment(&drawn, zone_aware);
        let mut reversed = drawn.clone();
        reversed.reverse();
        let two = assignment(&reversed, zone_aware);
        prop_assert_eq!(&one, &two);
        for i in seed..seed + 500 {
            let node = format!("node-{}", i % 13);
            let a = one.owner(&address(i), &node).map(|o| o.member.name.clone());
            let b = two.owner(&address(i), &node).map(|o| o.member.name.clone());
            prop_assert_eq!(a, b);
        }
    }

    /// Zone-aware: a target on a node of a zone with a member is assigned within that
    /// zone; one whose zone has none (or with no zone) goes to any member, counted as
    /// crossing only when it has a zone.
    #[test]
    fn no_target_crosses_zones_while_its_zone_has_a_member(drawn in members(), seed in 0u32..1000) {
        let a = assignment(&drawn, true);
        for i in seed..seed + 500 {
            let node = match i % 14 { 12 => "node-far".to_string(), 13 => "no-zone".to_string(), n => format!("node-{n}") };
            let zone = a.zone_of(&node).to_string();
            let owner = a.owner(&address(i), &node).expect("there are members");
            let owner_zone = a.zone_of(&owner.member.node).to_string();
            let zone_has_member = !zone.is_empty()
                && a.members().iter().any(|m| a.zone_of(&m.node) == zone);
            if zone_has_member {
                prop_assert_eq!(&owner_zone, &zone);
            }
            prop_assert_eq!(owner.cross_zone, !zone.is_empty() && owner_zone != zone);
            prop_assert_eq!(owner.cross_zone, !zone.is_empty() && !zone_has_member);
        }
    }

    /// Each member's share of 20,000 targets is within 10% of its weight's share of
    /// the total (plus 0.5% of the targets, for the smallest shares).
    #[test]
    fn shares_follow_weights(drawn in members()) {
        let a = assignment(&drawn, false);
        let total: f64 = a.members().iter().map(|m| m.weight).sum();
        let n = 20_000u32;
        let mut counts: BTreeMap<ArcStr, u32> = BTreeMap::new();
        for i in 0..n {
            let owner = a.owner(&address(i), "").expect("there are members");
            *counts.entry(owner.member.name.clone()).or_default() += 1;
        }
        for m in a.members() {
            let got = f64::from(counts.get(&m.name).copied().unwrap_or(0)) / f64::from(n);
            let want = m.weight / total;
            prop_assert!((got - want).abs() <= 0.1 * want + 0.005,
                "{} weighs {} of {}: share {} for {}", m.name, m.weight, total, got, want);
        }
    }

    /// Ten members become eleven (weights drawn): at most 1.1 times the newcomer's
    /// weighted share of the targets moves, and only to it.
    #[test]
    fn a_member_joining_moves_about_its_share(weights in prop::collection::vec(1u8..4, 11), base in 0u16..400) {
        let drawn: Vec<(u16, u8, u8)> = weights.iter().enumerate()
            .map(|(i, &w)| (base + i as u16, 0, w))
            .collect();
        let ten = assignment(&drawn[..10], false);
        let eleven = assignment(&drawn, false);
        let newcomer = ArcStr::from(format!("scraper-{}", base + 10));
        let n = 20_000u32;
        let mut moved = 0u32;
        for i in 0..n {
            let before = ten.owner(&address(i), "").map(|o| o.member.name.clone());
            let after = eleven.owner(&address(i), "").map(|o| o.member.name.clone());
            if before != after {
                prop_assert_eq!(after.as_ref(), Some(&newcomer));
                moved += 1;
            }
        }
        let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        let share = f64::from(weights[10]) / total;
        prop_assert!(f64::from(moved) / f64::from(n) <= 1.1 * share, "{} moved, share {}", moved, share);
    }
}

#[test]
fn no_member_assigns_nobody_and_one_takes_all() {
    let none = Assignment::new(Vec::new(), true, zones());
    assert_eq!(none.owner("10.0.0.1:80", "node-1"), None);
    let one = Assignment::new(vec![member(1, 2, 1.0)], true, zones());
    let owner = one.owner("10.0.0.1:80", "node-1").expect("one member");
    assert_eq!(owner.member.name, "scraper-1");
    assert!(
        owner.cross_zone,
        "node-1 is in zone-1, the member in zone-2"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A pool's best candidate, scoring each weight's highest `u` alone, is the one
    /// scoring every candidate gives: the highest score, the first by name among equals,
    /// and its score; an assignment's owners and whether they cross zones agree.
    #[test]
    fn scoring_each_weights_best_alone_finds_the_best_of_all(drawn in members(), seed in 0u32..1000) {
        let a = assignment(&drawn, true);
        for i in 0..200 {
            let hash = address_hash(&address(seed * 1000 + i));
            for pool in a.by_zone.values().chain([&a.everyone]) {
                let mut all: Option<(f64, &Candidate)> = None;
                for c in pool.candidates() {
                    let s = c.score(hash);
                    if all.is_none_or(|(bs, _)| s > bs) {
                        all = Some((s, c));
                    }
                }
                let best = pool.best_scored(hash).map(|(c, s)| (s, &c.member.name));
                prop_assert_eq!(best, all.map(|(s, c)| (s, &c.member.name)));
            }
            for node in ["node-0", "node-4", "node-far", ""] {
                let across = a.owner_hashed(hash, node).is_some_and(|o| o.cross_zone);
                prop_assert_eq!(a.assigns_across(node), across, "{}", node);
            }
        }
    }
}
