//! Property tests of a job actor's views: shard views are disjoint, cover the job and
//! are what the relabelling code's `hashmod` rule says; node views partition the
//! targets by their object's node; member views (assigned from the actor's body as
//! requests assign them) move only what rendezvous hashing must move, and two actors
//! fed the same changes in different batches serve the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arcstr::ArcStr;
use proptest::prelude::*;

use super::tests::{Apply, Changes, changes, state_with};
use super::*;
use crate::ObjectSlot;
use crate::relabel::{RelabelConfig, compile_all, relabel};
use crate::sd_output::SdBody;
use crate::service::fleet::assigned::AssignedViews;
use crate::service::fleet::{Assignment, Fleet, FleetCounts, Member};
use crate::service::views::{Bucket, ViewQuery, address_hash};

/// One served target: its address and its other labels.
type Served = (String, BTreeMap<String, String>);

/// A job actor's state with the members it was given and its member views, assigned
/// from its body as requests assign them (collectors served every discovered label).
struct Actor {
    state: JobState,
    fleet: Arc<Fleet>,
    assigned: AssignedViews,
}

impl std::ops::Deref for Actor {
    type Target = JobState;
    fn deref(&self) -> &JobState {
        &self.state
    }
}

impl std::ops::DerefMut for Actor {
    fn deref_mut(&mut self) -> &mut JobState {
        &mut self.state
    }
}

impl Apply for Actor {
    fn apply(&mut self, changes: Changes) {
        self.state.apply(changes);
    }
}

impl Actor {
    /// Sets its members as the member watch would.
    fn set_members(&mut self, fleet: Arc<Fleet>) {
        self.fleet = fleet;
    }

    /// Its member views counted, as last assigned.
    fn fleet_counts(&self) -> FleetCounts {
        (self.assigned.published()).map_or_else(FleetCounts::default, |p| p.counts.fleet)
    }
}

fn state() -> Actor {
    Actor {
        state: state_with(
            "[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)},
              {source_labels: [__meta_kubernetes_pod_name], target_label: pod}]",
        ),
        fleet: Arc::default(),
        assigned: AssignedViews::new(None),
    }
}

/// A pod as a test describes it: its number, ports, node (0: none) and `app` label.
#[derive(Clone, Debug)]
struct Pod {
    id: u32,
    ports: u8,
    node: u8,
    app: u8,
}

fn pods() -> impl Strategy<Value = Vec<Pod>> {
    prop::collection::vec((0u32..200, 1u8..4, 0u8..6, 0u8..3), 1..60).prop_map(|v| {
        let mut seen = BTreeSet::new();
        v.into_iter()
            .filter(|(id, ..)| seen.insert(*id))
            .map(|(id, ports, node, app)| Pod {
                id,
                ports,
                node,
                app,
            })
            .collect()
    })
}

fn key(id: u32) -> ObjectKey {
    ObjectKey::new(&ArcStr::from("ns"), &ArcStr::from(format!("pod-{id}")))
}

fn object(p: &Pod) -> TargetChange {
    object_of_tier(p, 0)
}

/// Pod `p` with a `tier` label of `tier`, which the rules map but no address holds.
fn object_of_tier(p: &Pod, tier: u8) -> TargetChange {
    let mut base = vec![
        ("__meta_kubernetes_pod_name", format!("pod-{}", p.id)),
        ("__meta_kubernetes_pod_label_app", format!("app-{}", p.app)),
        ("__meta_kubernetes_pod_label_tier", format!("tier-{tier}")),
    ];
    if p.node > 0 {
        base.push((
            "__meta_kubernetes_pod_node_name",
            format!("node-{}", p.node),
        ));
    }
    let base = Labels::from_pairs(base);
    let targets: Vec<Labels> = (0..p.ports)
        .map(|port| {
            let mut own = crate::labels::LabelsBuilder::new();
            own.add(
                "__address__",
                format!(
                    "10.{}.{}.{}:{}",
                    p.id / 256,
                    p.id % 256,
                    p.app,
                    8000 + u32::from(port)
                ),
            );
            base.merged(own)
        })
        .collect();
    TargetChange {
        slot: ObjectSlot(p.id),
        key: key(p.id),
        targets: Some(targets.into()),
    }
}

fn gone(id: u32) -> TargetChange {
    TargetChange {
        slot: ObjectSlot(id),
        key: key(id),
        targets: None,
    }
}

/// The objects a view is made of, as the actor keeps them (the whole body for
/// [`ViewQuery::All`]), its partition built if it was not kept; a member's assigned
/// from the body now.
fn view_list(p: &mut Actor, query: &ViewQuery) -> KeyedGroups {
    let (Some(kind), Some(bucket)) = (query.kind(), query.bucket()) else {
        return p.body.clone();
    };
    p.keep_index(kind, |_| 0);
    if matches!(kind, ViewKind::Member | ViewKind::Allocator) {
        let Bucket::Name(member) = bucket else {
            panic!("a member view names its member");
        };
        return p
            .assigned
            .assign(&p.state.body, &p.fleet)
            .cut_view(kind, &member);
    }
    let index = p.indexes.iter().find(|i| i.kind == kind).expect("kept");
    index.buckets.get(&bucket).cloned().unwrap_or_default()
}

/// The bytes a view serves, with its ETag; a member's view as a request writes it, cut
/// from the placements, and that is what the view's objects kept in a map give.
fn view(p: &mut Actor, query: &ViewQuery) -> (Vec<u8>, String) {
    let body = SdBody::new("pods", vec![view_list(p, query)]);
    if let (Some(kind @ (ViewKind::Member | ViewKind::Allocator)), Some(Bucket::Name(member))) =
        (query.kind(), query.bucket())
    {
        let placed = p.assigned.assign(&p.state.body, &p.fleet);
        let cut = SdBody::cut("pods", vec![placed.view(kind, &member)]);
        assert_eq!((cut.to_vec(), &cut.etag), (body.to_vec(), &body.etag));
    }
    (body.to_vec(), body.etag)
}

/// The targets a view serves, one per address and label set.
fn served(p: &mut Actor, query: &ViewQuery) -> BTreeSet<Served> {
    let (bytes, _) = view(p, query);
    let json: serde_json::Value = serde_json::from_slice(&bytes).expect("the body is JSON");
    let mut out = BTreeSet::new();
    for group in json.as_array().expect("a list of groups") {
        let labels: BTreeMap<String, String> =
            serde_json::from_value(group["labels"].clone()).expect("labels");
        for t in group["targets"].as_array().expect("targets") {
            let address = t.as_str().expect("an address").to_string();
            assert!(
                out.insert((address, labels.clone())),
                "{query:?}: a target is served twice"
            );
        }
    }
    out
}

fn member_names(n: usize) -> Arc<[ArcStr]> {
    (0..n)
        .map(|i| ArcStr::from(format!("scraper-{i}")))
        .collect()
}

/// The fleet of `members`, equal weights, no zones, nothing in handover.
fn fleet_of(members: &[ArcStr]) -> Arc<Fleet> {
    let members = members
        .iter()
        .map(|name| Member {
            name: name.clone(),
            node: ArcStr::default(),
            weight: 1.0,
        })
        .collect();
    Arc::new(Fleet::now(Assignment::new(
        members,
        false,
        Default::default(),
    )))
}

/// Sets an actor's members as the member watch would.
fn set_members(p: &mut Actor, members: Arc<[ArcStr]>) {
    p.set_members(fleet_of(&members));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// Each shard view holds exactly the targets whose `hashmod` (the relabelling
    /// code's rule, Prometheus' dialect) of `__address__` is its number: so the views
    /// are disjoint and their union is the job. Holds after changes too.
    #[test]
    fn shard_views_are_hashmod_of_the_address(pods in pods(), count in 1u64..9, moved in 0usize..10) {
        let mut p = state();
        p.apply(changes(true, pods.iter().map(object).collect()));
        // Views asked for first, then changes applied to them.
        let _ = view_list(&mut p, &ViewQuery::Shard { index: 0, count });
        let mut changed: Vec<TargetChange> = pods.iter().take(moved).map(|pod| {
            object(&Pod { app: (pod.app + 1) % 3, ..pod.clone() })
        }).collect();
        changed.extend(pods.iter().skip(moved).take(2).map(|pod| gone(pod.id)));
        p.apply(changes(false, changed));

        let all = served(&mut p, &ViewQuery::All);
        let rule: Vec<RelabelConfig> = serde_norway::from_str(&format!(
            "[{{source_labels: [__address__], modulus: {count}, target_label: __tmp_shard, action: hashmod}}]"
        )).expect("rule parses");
        let rule = compile_all(&rule).expect("rule is valid");
        let mut union = BTreeSet::new();
        for index in 0..count {
            let shard = served(&mut p, &ViewQuery::Shard { index, count });
            for (address, _) in &shard {
                let labels = Labels::from_pairs([("__address__", address.as_str())]);
                let hashed = relabel(&labels, &rule).expect("hashmod keeps the target");
                let want = index.to_string();
                prop_assert_eq!(hashed.get("__tmp_shard"), Some(want.as_str()));
            }
            let before = union.len();
            let n = shard.len();
            union.extend(shard);
            prop_assert_eq!(union.len(), before + n, "shard {} overlaps another", index);
        }
        prop_assert_eq!(union, all);
    }

    /// A change of labels alone (the same addresses) moves each object's shares in the
    /// shard and member views to its new bytes: every view then serves what a state
    /// built from the final objects serves.
    #[test]
    fn views_follow_changes_that_keep_the_addresses(pods in pods(), count in 2u64..9, moved in 0usize..10) {
        let mut p = state();
        set_members(&mut p, member_names(3));
        p.apply(changes(true, pods.iter().map(object).collect()));
        let queries: Vec<ViewQuery> = (0..count)
            .map(|index| ViewQuery::Shard { index, count })
            .chain((0..3).map(|i| ViewQuery::Member(ArcStr::from(format!("scraper-{i}")))))
            .collect();
        for q in &queries {
            let _ = view_list(&mut p, q);
        }
        let retiered: Vec<TargetChange> =
            pods.iter().take(moved).map(|pod| object_of_tier(pod, 1)).collect();
        p.apply(changes(false, retiered));

        let mut fresh = state();
        set_members(&mut fresh, member_names(3));
        let last: Vec<TargetChange> = pods
            .iter()
            .enumerate()
            .map(|(i, pod)| object_of_tier(pod, u8::from(i < moved)))
            .collect();
        fresh.apply(changes(true, last));
        for q in &queries {
            prop_assert_eq!(view(&mut p, q), view(&mut fresh, q), "{:?}", q);
        }
    }

    /// Node views partition the targets: each target is in the view of its pod's node,
    /// the targets of pods on no node in `?node=`.
    #[test]
    fn node_views_partition_the_targets(pods in pods(), moved in 0usize..10) {
        let mut p = state();
        p.apply(changes(true, pods.iter().map(object).collect()));
        let _ = view_list(&mut p, &ViewQuery::Node(ArcStr::from("node-1")));
        // Pods rescheduled (deleted and recreated elsewhere).
        let pods: Vec<Pod> = pods.iter().enumerate().map(|(i, pod)| Pod {
            node: if i < moved { (pod.node + 1) % 6 } else { pod.node },
            ..pod.clone()
        }).collect();
        p.apply(changes(false, pods.iter().take(moved).map(object).collect()));

        let all = served(&mut p, &ViewQuery::All);
        let mut union = BTreeSet::new();
        for node in 0..6u8 {
            let name = if node == 0 { String::new() } else { format!("node-{node}") };
            let view = served(&mut p, &ViewQuery::Node(ArcStr::from(name)));
            for (_, labels) in &view {
                let pod = pods.iter().find(|p| labels.get("pod") == Some(&format!("pod-{}", p.id))).expect("a known pod");
                prop_assert_eq!(pod.node, node);
            }
            let before = union.len();
            let n = view.len();
            union.extend(view);
            prop_assert_eq!(union.len(), before + n);
        }
        prop_assert_eq!(union, all);
        prop_assert!(served(&mut p, &ViewQuery::Node(ArcStr::from("no-such-node"))).is_empty());
    }

    /// Two actors fed the same pods in different batches (one list, or a list then
    /// changes) serve the same bytes in every member view; a member joining takes
    /// targets only from others to itself, a member leaving gives only its own away.
    #[test]
    fn member_views_are_deterministic_and_move_only_what_must(
        pods in pods(), split in 0usize..60, members in 1usize..6,
    ) {
        let mut one = state();
        let mut two = state();
        set_members(&mut one, member_names(members));
        set_members(&mut two, member_names(members));
        let _ = view_list(&mut one, &ViewQuery::Member(ArcStr::from("scraper-0")));
        one.apply(changes(true, pods.iter().map(object).collect()));
        let split = split.min(pods.len());
        two.apply(changes(true, pods[..split].iter().map(object).collect()));
        two.apply(changes(false, pods[split..].iter().map(object).collect()));
        let member = |i: usize| ViewQuery::Member(ArcStr::from(format!("scraper-{i}")));
        let before: Vec<BTreeSet<Served>> = (0..=members).map(|i| served(&mut one, &member(i))).collect();
        for i in 0..=members {
            prop_assert_eq!(view(&mut one, &member(i)), view(&mut two, &member(i)));
        }
        prop_assert_eq!(before.iter().map(BTreeSet::len).sum::<usize>(), served(&mut one, &ViewQuery::All).len());

        // One more member: it takes targets; nobody else gains any.
        set_members(&mut one, member_names(members + 1));
        for (i, was) in before.iter().enumerate().take(members) {
            prop_assert!(served(&mut one, &member(i)).is_subset(was), "member {} gained targets", i);
        }
        // It leaves again: every target is back where it was.
        set_members(&mut one, member_names(members));
        for (i, was) in before.iter().enumerate() {
            prop_assert_eq!(&served(&mut one, &member(i)), was);
        }
    }
}

/// Ten members become eleven: at most 1.1/11 of the targets move (rendezvous hashing
/// moves the new member's share, about 1/11).
#[test]
fn a_member_joining_moves_about_its_share() {
    let addresses: Vec<String> = (0..20_000)
        .map(|i| format!("10.{}.{}.{}:8080", i / 65_536, (i / 256) % 256, i % 256))
        .collect();
    let (ten, eleven) = (member_names(10), member_names(11));
    let moved = addresses
        .iter()
        .filter(|a| rendezvous_of(a, &ten) != rendezvous_of(a, &eleven))
        .count();
    let share = moved as f64 / addresses.len() as f64;
    assert!(share <= 1.1 / 11.0, "{moved} of {} moved", addresses.len());
    assert!(share >= 0.9 / 11.0, "{moved} of {} moved", addresses.len());
}

fn rendezvous_of(address: &str, members: &[ArcStr]) -> Option<ArcStr> {
    let fleet = fleet_of(members);
    let owner = fleet.current().owner(address, "");
    owner.map(|o| o.member.name.clone())
}

/// A change to one pod changes only the ETag of the views it is in.
#[test]
fn a_change_moves_only_its_own_views_etag() {
    let mut p = state();
    let pods: Vec<Pod> = (0..30)
        .map(|id| Pod {
            id,
            ports: 1,
            node: (id % 5 + 1) as u8,
            app: 0,
        })
        .collect();
    p.apply(changes(true, pods.iter().map(object).collect()));
    let nodes: Vec<ViewQuery> = (1..=5)
        .map(|n| ViewQuery::Node(ArcStr::from(format!("node-{n}"))))
        .collect();
    let before: Vec<String> = nodes.iter().map(|q| view(&mut p, q).1).collect();
    let lists_before: Vec<KeyedGroups> = nodes.iter().map(|q| view_list(&mut p, q)).collect();
    p.apply(changes(
        false,
        vec![object(&Pod {
            app: 2,
            ..pods[7].clone()
        })],
    ));
    for (i, q) in nodes.iter().enumerate() {
        let changed = i == usize::from(pods[7].node) - 1;
        assert_eq!(view(&mut p, q).1 != before[i], changed, "{q:?}");
        // An untouched view hands out the very map it had: nothing rebuilt.
        assert_eq!(
            !view_list(&mut p, q).same_map(&lists_before[i]),
            changed,
            "{q:?}"
        );
    }
    assert_eq!(p.work.indexes_filled, 1);
}

/// Zones: node `n` (1..6) is in zone `n % 3`; node-0 stands for "no node".
fn node_zones() -> crate::service::fleet::assignment::NodeZones {
    Arc::new(
        (1..6u8)
            .map(|n| {
                (
                    ArcStr::from(format!("node-{n}")),
                    ArcStr::from(format!("zone-{}", n % 3)),
                )
            })
            .collect(),
    )
}

/// The zone-aware assignment of `members` (node, weight), member `i` named
/// `scraper-i`, without the one `away`.
fn zoned_assignment(
    members: &[(u8, u8)],
    away: Option<usize>,
    zones: &crate::service::fleet::assignment::NodeZones,
) -> Assignment {
    let members = (members.iter().enumerate())
        .filter(|(i, _)| Some(*i) != away)
        .map(|(i, &(node, weight))| Member {
            name: ArcStr::from(format!("scraper-{i}")),
            node: ArcStr::from(format!("node-{node}")),
            weight: f64::from(weight),
        })
        .collect();
    Assignment::new(members, true, zones.clone())
}

/// The member view and the collector's share of each of `members` scrapers
/// (`scraper-0`, ..).
fn member_queries(members: usize) -> Vec<ViewQuery> {
    (0..members)
        .flat_map(|i| {
            let name = ArcStr::from(format!("scraper-{i}"));
            [ViewQuery::Member(name.clone()), ViewQuery::Allocator(name)]
        })
        .collect()
}

fn zoned_fleet(members: &[(u8, u8)], away: Option<usize>) -> Arc<Fleet> {
    let zones = node_zones();
    let assignment = |skip: Option<usize>| zoned_assignment(members, skip, &zones);
    // With `away`: that member left, its old assignment still in handover.
    let previous: Box<[Arc<Assignment>]> = match away {
        Some(_) => Box::new([Arc::new(assignment(None))]),
        None => Box::new([]),
    };
    Arc::new(Fleet::new(Arc::new(assignment(away)), previous))
}

/// Asserts that each of `queries` (a member's view, then its allocator view, member
/// by member) serves exactly the addresses of `pods` whose owners under `fleet`
/// include that member.
fn check_owners(
    p: &mut Actor,
    queries: &[ViewQuery],
    pods: &[Pod],
    fleet: &Fleet,
) -> Result<(), TestCaseError> {
    for (i, q) in queries.iter().enumerate() {
        let member = ArcStr::from(format!("scraper-{}", i / 2));
        let mut want = BTreeSet::new();
        for pod in pods {
            let node = match pod.node {
                0 => String::new(),
                n => format!("node-{n}"),
            };
            for port in 0..pod.ports {
                let address = format!(
                    "10.{}.{}.{}:{}",
                    pod.id / 256,
                    pod.id % 256,
                    pod.app,
                    8000 + u32::from(port)
                );
                let mut owners = Vec::new();
                fleet.each_owner(address_hash(&address), &node, |m| owners.push(m.clone()));
                if owners.contains(&member) {
                    want.insert(address);
                }
            }
        }
        prop_assert_eq!(addresses(p, q), want, "{:?}", q);
    }
    Ok(())
}

/// The addresses a view serves.
fn addresses(p: &mut Actor, query: &ViewQuery) -> BTreeSet<String> {
    served(p, query).into_iter().map(|(a, _)| a).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// With a zone-aware fleet, some of it in handover, each member view and each
    /// allocator view holds exactly the targets whose owners (by address and the pod's
    /// node) include that member, after changes that move pods between nodes too.
    #[test]
    fn zoned_member_views_are_each_targets_owners(
        pods in pods(),
        members in prop::collection::vec((1u8..6, 1u8..3), 1..5),
        away in prop::option::of(0usize..5),
        moved in 0usize..10,
    ) {
        let away = away.filter(|&a| a < members.len() && members.len() > 1);
        let fleet = zoned_fleet(&members, away);
        let mut p = state();
        p.set_members(Arc::clone(&fleet));
        let queries = member_queries(members.len());
        for q in &queries {
            let _ = view_list(&mut p, q);
        }
        p.apply(changes(true, pods.iter().map(object).collect()));
        let pods: Vec<Pod> = pods.iter().enumerate().map(|(i, pod)| Pod {
            node: if i < moved { (pod.node + 1) % 6 } else { pod.node },
            ..pod.clone()
        }).collect();
        p.apply(changes(false, pods.iter().take(moved).map(object).collect()));

        check_owners(&mut p, &queries, &pods, &fleet)?;
        // The handover ends: every view filled anew from the objects held.
        let settled = zoned_fleet(&members, None);
        p.set_members(Arc::clone(&settled));
        check_owners(&mut p, &queries, &pods, &settled)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// Member views first asked for before any member is known (no zones read yet)
    /// serve each target's owners once the zone-aware members come.
    #[test]
    fn views_asked_before_the_members_follow_them_when_they_come(
        pods in pods(),
        members in prop::collection::vec((1u8..6, 1u8..3), 1..5),
    ) {
        let mut p = state();
        p.apply(changes(true, pods.iter().map(object).collect()));
        let queries = member_queries(members.len());
        for q in &queries {
            prop_assert!(view_list(&mut p, q).is_empty());
        }
        let fleet = zoned_fleet(&members, None);
        p.set_members(Arc::clone(&fleet));
        check_owners(&mut p, &queries, &pods, &fleet)?;
    }
}

/// Pod `p` with a `note` annotation, a label no rule reads and the output drops.
fn object_noted(p: &Pod, note: &str) -> TargetChange {
    let mut change = object(p);
    let noted: Vec<Labels> = (change.targets.iter().flat_map(|t| t.iter()))
        .map(|t| {
            let mut own = crate::labels::LabelsBuilder::new();
            own.add("__meta_kubernetes_pod_annotation_note", note.to_string());
            t.merged(own)
        })
        .collect();
    change.targets = Some(noted.into());
    change
}

/// Each collector's share as it reads it: the discovered label sets, by address.
fn allocator_shares(p: &mut Actor, members: usize) -> Vec<BTreeSet<Served>> {
    (0..members)
        .map(|i| {
            served(
                p,
                &ViewQuery::Allocator(ArcStr::from(format!("scraper-{i}"))),
            )
        })
        .collect()
}

#[test]
fn allocator_views_serve_discovered_labels_of_each_members_targets_as_they_change() {
    let mut p = state();
    set_members(&mut p, member_names(3));
    let pods: Vec<Pod> = (0..40)
        .map(|id| Pod {
            id,
            ports: 3,
            node: (id % 5 + 1) as u8,
            app: (id % 3) as u8,
        })
        .collect();
    p.apply(changes(
        true,
        pods.iter().map(|q| object_noted(q, "a")).collect(),
    ));
    let shares = allocator_shares(&mut p, 3);
    let members: Vec<BTreeSet<String>> = (0..3)
        .map(|i| {
            addresses(
                &mut p,
                &ViewQuery::Member(ArcStr::from(format!("scraper-{i}"))),
            )
        })
        .collect();
    for (share, member) in shares.iter().zip(&members) {
        let addresses: BTreeSet<String> = share.iter().map(|(a, _)| a.clone()).collect();
        assert_eq!(
            &addresses, member,
            "a collector's share is its member view's"
        );
        assert!(
            share
                .iter()
                .all(|(_, l)| l["__meta_kubernetes_pod_annotation_note"] == "a")
        );
    }
    assert_eq!(shares.iter().map(BTreeSet::len).sum::<usize>(), 120);

    // The annotation changes on one pod: the rules cannot see it, yet the collector
    // that has the pod's targets reads the new value, and only its share changes.
    let tags = |p: &mut Actor| -> Vec<String> {
        (0..3)
            .map(|i| {
                view(
                    p,
                    &ViewQuery::Allocator(ArcStr::from(format!("scraper-{i}"))),
                )
                .1
            })
            .collect()
    };
    let before = tags(&mut p);
    let unseen = p.work.objects_unseen;
    p.apply(changes(false, vec![object_noted(&pods[7], "b")]));
    assert_eq!(p.work.objects_unseen, unseen + 1);
    let after = allocator_shares(&mut p, 3);
    let pod_addresses: BTreeSet<String> = (0..3)
        .map(|port| format!("10.0.7.1:{}", 8000 + port))
        .collect();
    for (i, share) in after.iter().enumerate() {
        for (address, labels) in share {
            let note = &labels["__meta_kubernetes_pod_annotation_note"];
            let expected = if pod_addresses.contains(address) {
                "b"
            } else {
                "a"
            };
            assert_eq!(note, expected, "{address} at scraper-{i}");
        }
        let holds = share.iter().any(|(a, _)| pod_addresses.contains(a));
        assert_eq!(tags(&mut p)[i] != before[i], holds, "scraper-{i}'s ETag");
    }
}

/// `count` pods of two ports each, all on one node.
fn pods_of_two_ports_on_one_node(count: u32) -> Vec<Pod> {
    (0..count)
        .map(|id| Pod {
            id,
            ports: 2,
            node: 1,
            app: 0,
        })
        .collect()
}

#[test]
fn bodies_of_discovered_label_sets_are_sent_chunked_as_they_are_written() {
    let mut p = state();
    set_members(&mut p, member_names(1));
    let pods = pods_of_two_ports_on_one_node(60);
    p.apply(changes(
        true,
        pods.iter().map(|q| object_noted(q, "x")).collect(),
    ));
    let list = view_list(&mut p, &ViewQuery::Allocator(ArcStr::from("scraper-0")));
    let body = SdBody::new("pods", vec![list]);
    assert_eq!(body.known_len(), None, "its length is known once written");
    let whole = body.to_vec();
    let json: serde_json::Value = serde_json::from_slice(&whole).expect("JSON");
    let groups = json.as_array().expect("a list of groups");
    let targets: usize = groups
        .iter()
        .map(|g| g["targets"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(targets, 120);
    let pieces: Vec<bytes::Bytes> = body.chunks().collect();
    assert_eq!(pieces.concat(), whole);
    let sized = SdBody::new("pods", vec![p.body.clone()]);
    assert_eq!(sized.known_len(), Some(sized.to_vec().len()));
}

/// A member's view and its collector's share, cut in pieces that end after any number
/// of objects (a piece ends as its bytes reach their size, and the next starts at the
/// object that did not fit), hold each object's share once, in order, as one walk does.
#[test]
fn a_view_cut_in_pieces_ending_anywhere_holds_what_one_walk_holds() {
    let mut p = state();
    set_members(&mut p, member_names(2));
    let pods = pods_of_two_ports_on_one_node(90);
    p.apply(changes(true, pods.iter().map(object).collect()));
    let member = ArcStr::from("scraper-0");
    let _ = view_list(&mut p, &ViewQuery::Member(member.clone()));
    let placed = p.assigned.assign(&p.state.body, &p.fleet);
    for kind in [ViewKind::Member, ViewKind::Allocator] {
        let view = placed.view(kind, &member);
        let mut whole = Vec::new();
        view.each_from(None, &mut |key, share| {
            whole.push((key.clone(), share.clone()));
            true
        });
        assert!(
            whole.len() > 20,
            "{kind:?}: the member is served many objects"
        );
        for per_piece in [1, 3, 15, 16, 17, 40] {
            let mut pieces = Vec::new();
            let mut from = None;
            loop {
                let (mut taken, mut next) = (0, None);
                view.each_from(from.as_ref(), &mut |key, share| {
                    if taken == per_piece {
                        next = Some(key.clone());
                        return false;
                    }
                    taken += 1;
                    pieces.push((key.clone(), share.clone()));
                    true
                });
                match next {
                    Some(key) => from = Some(key),
                    None => break,
                }
            }
            let same = pieces.len() == whole.len()
                && (pieces.iter().zip(&whole)).all(|(a, b)| a.0 == b.0 && a.1.same(&b.1));
            assert!(same, "{kind:?}, {per_piece} objects a piece");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// A zone-aware fleet rolled through its handover (assignments sharing their
    /// zones' pools, so that only the zones a step touches are assigned again): every
    /// member and allocator view, and the cross-zone count, are those of an actor
    /// that splits every object anew under the same fleet.
    #[test]
    fn rolled_fleets_move_only_their_zones_targets_yet_serve_all_owners(
        pods in pods(),
        members in prop::collection::vec((1u8..6, 1u8..3), 2..6),
        steps in prop::collection::vec(0usize..6, 1..8),
    ) {
        let zones = node_zones();
        let assignment = |away: Option<usize>| zoned_assignment(&members, away, &zones);
        let queries = member_queries(members.len());
        let mut handover = crate::service::fleet::Handover::new(std::time::Duration::from_secs(60));
        let start = tokio::time::Instant::now();
        handover.change(assignment(None), start);
        let mut p = state();
        p.set_members(Arc::new(handover.fleet()));
        p.apply(changes(true, pods.iter().map(object).collect()));
        for q in &queries {
            let _ = view_list(&mut p, q);
        }
        for (i, step) in steps.iter().enumerate() {
            let away = (step % (members.len() + 1) < members.len()).then_some(step % members.len());
            let at = start + std::time::Duration::from_secs(1 + i as u64);
            handover.change(assignment(away), at);
            let fleet = Arc::new(handover.fleet());
            p.set_members(Arc::clone(&fleet));
            let mut fresh = state();
            fresh.set_members(Arc::clone(&fleet));
            fresh.apply(changes(true, pods.iter().map(object).collect()));
            for q in &queries {
                prop_assert_eq!(served(&mut p, q), served(&mut fresh, q), "{:?}", q);
            }
            prop_assert_eq!(p.fleet_counts().cross_zone, fresh.fleet_counts().cross_zone);
        }
    }
}

/// A batch with enough new objects is relabelled on two threads, step by step: with one
/// slot changed twice in a step and one object gone, every kept view (the allocator's
/// included) serves the bytes that applying the changes one by one serves.
#[test]
fn a_large_batch_relabelled_ahead_serves_what_changes_one_by_one_serve() {
    let pods: Vec<Pod> = (0..600u32)
        .map(|id| Pod {
            id,
            ports: 1 + (id % 3) as u8,
            node: (id % 6) as u8,
            app: (id % 3) as u8,
        })
        .collect();
    let mut batch: Vec<TargetChange> = pods.iter().map(object).collect();
    batch.insert(
        100,
        object(&Pod {
            app: 2,
            ..pods[7].clone()
        }),
    );
    batch.insert(120, gone(9));
    let queries = [
        ViewQuery::All,
        ViewQuery::Shard { index: 1, count: 3 },
        ViewQuery::Node(ArcStr::from("node-2")),
        ViewQuery::Member(ArcStr::from("scraper-1")),
        ViewQuery::Allocator(ArcStr::from("scraper-2")),
    ];
    let (mut ahead, mut one_by_one) = (state(), state());
    for p in [&mut ahead, &mut one_by_one] {
        set_members(p, member_names(3));
        for q in &queries {
            let _ = view_list(p, q);
        }
    }
    let refs: Vec<&TargetChange> = batch.iter().collect();
    let changed = ahead.change_all(&refs);
    let changed_one_by_one: usize = batch
        .iter()
        .map(|c| usize::from(one_by_one.change(c)))
        .sum();
    assert_eq!(changed, changed_one_by_one);
    assert_eq!(ahead.work, one_by_one.work);
    for q in &queries {
        let (bytes, etag) = view(&mut ahead, q);
        assert!(bytes.len() > 2, "{q:?} serves targets");
        assert_eq!((bytes, etag), view(&mut one_by_one, q), "{q:?}");
    }
}
