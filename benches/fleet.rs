//! Micro-benchmarks of assigning a job's targets to a fleet when member views are asked
//! for (`?member=` and the target allocator's shares, `service::fleet::assigned`),
//! without HTTP: 20,000 realistic pods (120,000 targets) on 2,000 nodes in 3 zones, 20
//! zone-aware members of weights 1 and 2.
//!
//! - `assign/whole`: every object placed (a first request).
//! - `assign/roll_step`: brought up to date after one step of a rolling restart (a
//!   member NotReady, or Ready again), with the steps before still in handover.
//! - `assign/roll_steps_7_to_12`: six steps of the roll and back to where they began.
//! - `assign/changes`: brought up to date after 500 pods changed.
//! - `cut/member_view`, `cut/collector_share`: one member's `?member=` view and its
//!   collector's share cut from the placements and written, as a request does;
//!   `cut/collector_share_pruned`: the share without the `__meta_*` labels the service
//!   bench's job does not read (what a collector is served by default).
//!
//! Run with `cargo bench --bench fleet`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use kubesd::model::{Object, ObjectKey, Role};
use kubesd::sd_output::{KeptTarget, KeyedGroups, ObjectGroups, PlacedGroups, SdBody, Share};
use kubesd::service::fleet::assigned::AssignedViews;
use kubesd::service::fleet::assignment::NodeZones;
use kubesd::service::fleet::{Assignment, Fleet, Handover, Member};
use kubesd::service::views::{ViewKind, address_hash};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};
use kubesd::{ArcStr, Labels};

#[path = "support/realistic_pod.rs"]
mod realistic_pod;
#[path = "support/service_job_readable.rs"]
mod service_job_readable;

use service_job_readable::readable_by_the_service_job;

const PODS: usize = 20_000;
const NODES: usize = 2_000;
const MEMBERS: usize = 20;

/// Each pod's discovered label sets (six port targets on its node).
fn discovered_pods() -> Vec<Arc<[Labels]>> {
    let ctx = TargetContext {
        semantics: kubesd::Semantics::Prometheus,
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    (0..PODS)
        .map(|i| {
            let json = realistic_pod::realistic_pod_json(i);
            let pod = Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes");
            target_labels(&pod, &ctx).into()
        })
        .collect()
}

/// Pod `i`'s key.
fn key(i: usize) -> ObjectKey {
    ObjectKey::new(&ArcStr::from("team"), &ArcStr::from(format!("pod-{i:06}")))
}

/// A job's body as its actor keeps it once member views are served: each pod's
/// targets relabelled to their address alone, placed.
fn body(pods: &[Arc<[Labels]>]) -> KeyedGroups {
    let placeholder = ArcStr::from("pods");
    let mut body = KeyedGroups::default();
    for (i, discovered) in pods.iter().enumerate() {
        let relabelled: Vec<Labels> = (discovered.iter())
            .map(|l| Labels::from_pairs([("__address__", l.get("__address__").unwrap_or(""))]))
            .collect();
        let mut places = Vec::new();
        let groups = Arc::new(ObjectGroups::placed(&relabelled, &placeholder, &mut places));
        let kept = (relabelled.iter().zip(&places).enumerate())
            .map(|(source, (target, &place))| KeptTarget {
                source: source as u32,
                place,
                hash: address_hash(target.get("__address__").unwrap_or("")),
                collected: true,
            })
            .collect();
        let placed = PlacedGroups {
            groups,
            discovered: Arc::clone(discovered),
            kept,
            stamp: i as u64,
        };
        body.insert(&key(i), &Share::placed(&Arc::new(placed)));
    }
    body
}

/// The zone-aware assignment of the members but `away`: member `m` on node `m`, zone
/// `m % 3`, weight 1 or 2.
fn assignment(zones: &NodeZones, away: Option<usize>) -> Assignment {
    let members = (0..MEMBERS)
        .filter(|&m| Some(m) != away)
        .map(|m| Member {
            name: ArcStr::from(format!("scraper-{m:02}")),
            node: ArcStr::from(format!("node-{m:04}")),
            weight: (1 + m % 2) as f64,
        })
        .collect();
    Assignment::new(members, true, Arc::clone(zones))
}

/// The fleets of a rolling restart, step after step (member `s / 2` NotReady, then
/// Ready again), each with the steps before it in a two-minute handover.
fn rolled_fleets(steps: usize) -> Vec<Arc<Fleet>> {
    let zones: NodeZones = Arc::new(
        (0..NODES)
            .map(|n| {
                (
                    ArcStr::from(format!("node-{n:04}")),
                    ArcStr::from(format!("zone-{}", n % 3)),
                )
            })
            .collect(),
    );
    let mut handover = Handover::new(Duration::from_secs(120));
    let start = tokio::time::Instant::now();
    handover.change(assignment(&zones, None), start);
    let mut fleets = vec![Arc::new(handover.fleet())];
    for s in 0..steps {
        let away = (s % 2 == 0).then_some((s / 2) % MEMBERS);
        let at = start + Duration::from_secs(1 + s as u64);
        handover.change(assignment(&zones, away), at);
        fleets.push(Arc::new(handover.fleet()));
    }
    fleets
}

/// Member views placed from `body` by `fleet`.
fn assigned(body: &KeyedGroups, fleet: &Arc<Fleet>) -> AssignedViews {
    let views = AssignedViews::new(None);
    views.assign(body, fleet);
    views
}

fn assign(c: &mut Criterion) {
    let pods = discovered_pods();
    let body = body(&pods);
    let fleets = rolled_fleets(12);
    let mut group = c.benchmark_group("assign");
    group.sample_size(10);
    group.bench_function("whole", |b| {
        b.iter(|| black_box(assigned(&body, &fleets[10])))
    });
    // Step 11 turns a member NotReady, 12 has it Ready again.
    for (name, step) in [("roll_step_not_ready", 11), ("roll_step_ready", 12)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || assigned(&body, &fleets[step - 1]),
                |views| {
                    views.assign_kept(&body, &fleets[step]);
                    views
                },
                BatchSize::PerIteration,
            )
        });
    }
    // Steps 7 to 12 and back, over and over: what a profile of the roll reads.
    let views = assigned(&body, &fleets[6]);
    group.bench_function("roll_steps_7_to_12", |b| {
        b.iter(|| {
            for fleet in &fleets[7..=12] {
                views.assign_kept(&body, fleet);
            }
            views.assign_kept(&body, &fleets[6]);
        })
    });
    let mut changed = body.clone();
    for (i, discovered) in pods.iter().enumerate().step_by(PODS / 500) {
        let mut moved: Vec<Labels> = discovered.to_vec();
        moved.reverse();
        let one = body_of(&key(i), &changed);
        let placed = PlacedGroups {
            groups: Arc::clone(&one.groups),
            discovered: moved.into(),
            kept: one.kept.clone(),
            stamp: (PODS + i) as u64,
        };
        changed.insert(&key(i), &Share::placed(&Arc::new(placed)));
    }
    group.bench_function("changes", |b| {
        b.iter_batched(
            || assigned(&body, &fleets[10]),
            |views| {
                views.assign_kept(&changed, &fleets[10]);
                views
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
    let mut group = c.benchmark_group("cut");
    group.sample_size(10);
    let published = assigned(&body, &fleets[10]).assign(&body, &fleets[10]);
    let member = ArcStr::from("scraper-03");
    let readable = readable_by_the_service_job();
    for (name, kind, readable) in [
        ("member_view", ViewKind::Member, None),
        ("collector_share", ViewKind::Allocator, None),
        (
            "collector_share_pruned",
            ViewKind::Allocator,
            Some(readable),
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let view = published.view(kind, &member);
                let body = SdBody::cut("pods", vec![view]).pruned(readable.clone());
                black_box(body.chunks().map(|piece| piece.len()).sum::<usize>())
            })
        });
    }
    group.finish();
}

/// The placement `body` holds for `key`.
fn body_of(key: &ObjectKey, body: &KeyedGroups) -> Arc<PlacedGroups> {
    let share = body.get(key).expect("the object is in the body");
    Arc::clone(share.placed_groups().expect("placed"))
}

criterion_group!(benches, assign);
criterion_main!(benches);
