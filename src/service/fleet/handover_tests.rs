//! Sequence tests of the handover: a rolling restart of every member leaves no target
//! without a member that has had it a whole handover, a target is served twice only
//! while a change is less than a handover old, and a member that flaps within the
//! handover never loses a target.

use std::collections::BTreeMap;
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::service::fleet::Member;
use crate::service::fleet::assignment::NodeZones;
use crate::service::views::address_hash;

const TARGETS: u32 = 300;

/// Nodes `node-0` … `node-5`, node `i` in zone `i % 3`: one map, shared by every
/// assignment as the member watch shares it.
fn zones() -> NodeZones {
    static ZONES: std::sync::LazyLock<NodeZones> = std::sync::LazyLock::new(|| {
        Arc::new(
            (0..6)
                .map(|i| {
                    (
                        ArcStr::from(format!("node-{i}")),
                        ArcStr::from(format!("zone-{}", i % 3)),
                    )
                })
                .collect(),
        )
    });
    ZONES.clone()
}

/// Members `0..n` without those in `away`, member `i` on node `i % 6`.
fn assignment(n: usize, away: &[usize], zone_aware: bool) -> Assignment {
    let members = (0..n)
        .filter(|i| !away.contains(i))
        .map(|i| Member {
            name: ArcStr::from(format!("scraper-{i}")),
            node: ArcStr::from(format!("node-{}", i % 6)),
            weight: 1.0 + (i % 2) as f64,
        })
        .collect();
    Assignment::new(members, zone_aware, zones())
}

/// Each target's members, as (address hash, node).
fn targets() -> Vec<(u64, String)> {
    (0..TARGETS)
        .map(|i| {
            (
                address_hash(&format!("10.1.{}.{}:9100", i / 256, i % 256)),
                format!("node-{}", i % 6),
            )
        })
        .collect()
}

fn served(fleet: &Fleet, target: &(u64, String)) -> Vec<ArcStr> {
    let mut out = Vec::new();
    fleet.each_owner(target.0, &target.1, |m| out.push(m.clone()));
    out
}

/// Follows every target's members over time and checks each instant.
struct Checker {
    handover: Duration,
    targets: Vec<(u64, String)>,
    /// Per target, each member serving it and since when.
    since: Vec<BTreeMap<ArcStr, Instant>>,
    /// When the members last changed.
    last_change: Option<Instant>,
}

impl Checker {
    fn check(&mut self, fleet: &Fleet, now: Instant) -> Result<(), TestCaseError> {
        let settled = self.last_change.is_none_or(|at| now >= at + self.handover);
        for (t, target) in self.targets.iter().enumerate() {
            let members = served(fleet, target);
            prop_assert!(!members.is_empty(), "target {} served to nobody", t);
            if settled {
                prop_assert_eq!(
                    members.len(),
                    1,
                    "target {} served twice after the handover",
                    t
                );
            }
            let before = std::mem::take(&mut self.since[t]);
            let now_since: BTreeMap<ArcStr, Instant> = members
                .iter()
                .map(|m| (m.clone(), before.get(m).copied().unwrap_or(now)))
                .collect();
            if before.keys().any(|m| !now_since.contains_key(m)) {
                // A member let it go: another has had it a whole handover.
                prop_assert!(
                    now_since.values().any(|&s| s + self.handover <= now),
                    "target {} left a member before another had it a handover",
                    t
                );
            }
            self.since[t] = now_since;
        }
        Ok(())
    }
}

/// Runs `steps` (each: after this long, these members away) through a handover,
/// expiring at the exact instants the member watch would, checking every instant.
fn run(
    n: usize,
    zone_aware: bool,
    handover: Duration,
    steps: &[(Duration, Vec<usize>)],
) -> Result<(Handover, Instant), TestCaseError> {
    let mut h = Handover::new(handover);
    let mut now = Instant::now();
    h.change(assignment(n, &[], zone_aware), now);
    let targets = targets();
    let mut checker = Checker {
        handover,
        since: vec![BTreeMap::new(); targets.len()],
        targets,
        last_change: None,
    };
    checker.check(&h.fleet(), now)?;
    for (after, away) in steps {
        let at = now + *after;
        while let Some(expiry) = h.next_expiry().filter(|e| *e <= at) {
            prop_assert!(h.expire(expiry));
            checker.check(&h.fleet(), expiry)?;
        }
        now = at;
        if h.change(assignment(n, away, zone_aware), now) {
            checker.last_change = Some(now);
        }
        checker.check(&h.fleet(), now)?;
    }
    while let Some(expiry) = h.next_expiry() {
        h.expire(expiry);
        now = expiry;
        checker.check(&h.fleet(), now)?;
    }
    Ok((h, now))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A rolling restart: each member in turn NotReady (its pod deleted, recreated
    /// under its name) and Ready again after `down`, the next one `gap` later; the
    /// times drawn around the handover. No instant leaves a target without a member
    /// that has had it a handover when one lets it go; served twice only within a
    /// handover of a change; the members at the end serve exactly as at the start.
    #[test]
    fn a_rolling_restart_leaves_no_gap(
        n in 2usize..6,
        zone_aware in any::<bool>(),
        times in prop::collection::vec((1u64..200, 1u64..200), 6),
    ) {
        let handover = Duration::from_secs(60);
        let mut steps = Vec::new();
        for (i, (down, gap)) in times.iter().take(n).enumerate() {
            steps.push((Duration::from_secs(*gap), vec![i]));
            steps.push((Duration::from_secs(*down), vec![]));
        }
        let (h, _) = run(n, zone_aware, handover, &steps)?;
        prop_assert_eq!(h.fleet(), Fleet::now(assignment(n, &[], zone_aware)));
    }

    /// A member NotReady and back within the handover never loses a target, and once
    /// the handover is over every target is where it was.
    #[test]
    fn a_flap_within_the_handover_moves_nothing(n in 2usize..6, who in 0usize..6, down in 1u64..60) {
        let who = who % n;
        let mut h = Handover::new(Duration::from_secs(60));
        let start = Instant::now();
        let all = assignment(n, &[], false);
        h.change(all.clone(), start);
        let before: Vec<Vec<ArcStr>> = targets().iter().map(|t| served(&h.fleet(), t)).collect();
        let name = ArcStr::from(format!("scraper-{who}"));
        h.change(assignment(n, &[who], false), start + Duration::from_secs(1));
        let away = h.fleet();
        h.change(all, start + Duration::from_secs(1 + down));
        let back = h.fleet();
        for fleet in [&away, &back] {
            for (t, was) in targets().iter().zip(&before) {
                if was.contains(&name) {
                    prop_assert!(served(fleet, t).contains(&name));
                }
            }
        }
        while let Some(e) = h.next_expiry() {
            h.expire(e);
        }
        let after: Vec<Vec<ArcStr>> = targets().iter().map(|t| served(&h.fleet(), t)).collect();
        prop_assert_eq!(after, before);
    }
}

/// Each owner of a target under each assignment of `fleet`, scored one by one, each
/// once in the order `each_owner` promises.
fn served_naively(fleet: &Fleet, target: &(u64, String)) -> Vec<ArcStr> {
    let mut out: Vec<ArcStr> = Vec::new();
    for a in std::iter::once(fleet.current()).chain(fleet.previous().iter()) {
        if let Some(o) = a.owner_hashed(target.0, &target.1)
            && !out.contains(&o.member.name)
        {
            out.push(o.member.name.clone());
        }
    }
    out
}

proptest! {
    /// Assignments that share pools serve every target to the members that scoring
    /// each assignment on its own gives, in the same order.
    #[test]
    fn shared_pools_serve_as_each_assignment_alone(
        n in 2usize..7,
        zone_aware in any::<bool>(),
        away in prop::collection::vec(0usize..7, 1..10),
    ) {
        let mut h = Handover::new(Duration::from_secs(60));
        let start = Instant::now();
        h.change(assignment(n, &[], zone_aware), start);
        for (i, who) in away.iter().enumerate() {
            let at = start + Duration::from_secs(1 + i as u64);
            h.change(assignment(n, &[*who % n], zone_aware), at);
            let fleet = h.fleet();
            for t in targets() {
                prop_assert_eq!(served(&fleet, &t), served_naively(&fleet, &t));
            }
        }
    }
}

/// Assignments that do not share one map of zones (the zones changed within the
/// handover) are scored one by one, and serve what each alone gives.
#[test]
fn assignments_with_their_own_zones_are_scored_one_by_one() {
    let own_zones = |a: Assignment| {
        let zones: NodeZones = Arc::new((**a.zones()).clone());
        Assignment::new(a.members().to_vec(), true, zones)
    };
    let mut h = Handover::new(Duration::from_secs(60));
    let start = Instant::now();
    h.change(own_zones(assignment(5, &[], true)), start);
    h.change(
        own_zones(assignment(5, &[2], true)),
        start + Duration::from_secs(1),
    );
    h.change(
        own_zones(assignment(5, &[2, 4], true)),
        start + Duration::from_secs(2),
    );
    let fleet = h.fleet();
    assert_eq!(fleet.previous().len(), 2);
    for t in targets() {
        assert_eq!(served(&fleet, &t), served_naively(&fleet, &t));
    }
}

#[test]
fn without_a_handover_nothing_is_kept() {
    let mut h = Handover::new(Duration::ZERO);
    let now = Instant::now();
    assert!(h.change(assignment(3, &[], false), now));
    assert!(h.change(assignment(3, &[1], false), now));
    assert_eq!(h.next_expiry(), None);
    assert!(
        !h.change(assignment(3, &[1], false), now),
        "the same members"
    );
}

/// A member Ready again within the handover gets back the very pools of before it
/// left: no zone's targets change members, so job actors walk none again; while its
/// leaving moved its own zone only, and every target's members are those the moved
/// zones say.
#[test]
fn a_member_ready_again_within_the_handover_moves_no_zone() {
    let start = Instant::now();
    let mut handover = Handover::new(Duration::from_secs(120));
    handover.change(assignment(6, &[], true), start);
    let all = handover.fleet();
    handover.change(assignment(6, &[4], true), start + Duration::from_secs(1));
    let away = handover.fleet();
    handover.change(assignment(6, &[], true), start + Duration::from_secs(2));
    let back = handover.fleet();
    // Member 4 is on node 4, in zone 1; targets of no known zone are among everyone.
    let zone_1 = MovedZones::Some([ArcStr::from(""), ArcStr::from("zone-1")].into());
    assert_eq!(all.moved_zones(&away), zone_1);
    assert_eq!(
        away.moved_zones(&back),
        MovedZones::Some(Default::default())
    );
    for target in targets() {
        let node: usize = target.1["node-".len()..].parse().expect("a node's number");
        let mut before = served(&away, &target);
        let mut after = served(&back, &target);
        before.sort();
        after.sort();
        assert_eq!(before, after, "{target:?}");
        let (mut was, mut is) = (served(&all, &target), served(&away, &target));
        was.sort();
        is.sort();
        assert!(was == is || node % 3 == 1, "{target:?}");
    }
}
