//! Micro-benchmarks of the engine's two hot handlers, without HTTP: the group store and
//! labeller applying a batch of 1000 watch deltas (upsert, compare, compute targets), and a
//! subscriber applying a batch of 1000 target changes (constructor, per-object map),
//! and HTTP SD serialisation of 100k targets.
//! Run with `cargo bench --bench engine`.

use std::hint::black_box;
use std::sync::Arc;

use actix::prelude::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kubesd::actors::group::VariantId;
use kubesd::actors::group::labeller::Labeller;
use kubesd::actors::group::store::{Store, Upserted};
use kubesd::actors::messages::{ObjectSlot, TargetChange, TargetsPush, UrlId};
use kubesd::actors::subscriber::{Constructor, Subscriber};
use kubesd::model::{Object, Role};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};
use kubesd::{Labels, SubscriberId};

#[path = "support/realistic_pod.rs"]
mod realistic_pod;
#[path = "support/service_job_readable.rs"]
mod service_job_readable;

const BATCH: usize = 1000;

/// Two versions of each of `BATCH` pods, differing in one annotation (as a status
/// update would), so that every apply is a real change.
fn pod_versions() -> [Vec<Object>; 2] {
    let version = |v: usize| {
        (0..BATCH)
            .map(|i| {
                let json = realistic_pod::realistic_pod_json(i).replace(
                    "\"prometheus.io/path\":\"/metrics\"",
                    &format!("\"prometheus.io/path\":\"/metrics-{v}\""),
                );
                Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes")
            })
            .collect::<Vec<_>>()
    };
    [version(0), version(1)]
}

/// The group's store and labeller, as the group holds them.
type Cache = (Store, Labeller);

fn group_apply(c: &mut Criterion) {
    let versions = pod_versions();
    let attach = kubesd::TargetOptions {
        attach: AttachMetadata {
            node: true,
            namespace: false,
            ..AttachMetadata::default()
        },
        semantics: kubesd::Semantics::VictoriaMetrics,
    };
    let mut cache = (Store::default(), Labeller::default());
    for o in &versions[0] {
        let (store, labeller) = &mut cache;
        labeller.upsert(store, UrlId(0), o.clone());
        labeller.compute_targets(store, Role::Pod, &o.key(), VariantId(0), attach);
    }
    let mut group = c.benchmark_group("group");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut turn = 0;
    // Without the replaced object: every target rebuilt.
    let rebuild = |(store, labeller): &mut Cache, o: Object| {
        let key = o.key();
        (labeller.upsert(store, UrlId(0), o).0 != Upserted::Unchanged)
            .then(|| labeller.compute_targets(store, Role::Pod, &key, VariantId(0), attach))
            .flatten()
    };
    // The group's own path: the replaced object is handed to compute_targets_after,
    // which reuses the targets' own parts (only an annotation changed).
    let reuse = |(store, labeller): &mut Cache, o: Object| {
        let key = o.key();
        let (upserted, previous) = labeller.upsert(store, UrlId(0), o);
        (upserted != Upserted::Unchanged)
            .then(|| {
                labeller.compute_targets_after(
                    store,
                    Role::Pod,
                    &key,
                    VariantId(0),
                    attach,
                    previous.as_ref(),
                )
            })
            .flatten()
    };
    type Apply<'a> = &'a dyn Fn(&mut Cache, Object) -> Option<TargetChange>;
    let paths: [(&str, Apply<'_>); 2] = [
        ("apply_1000_pod_upserts", &rebuild),
        ("apply_1000_pod_upserts_reusing_own_parts", &reuse),
    ];
    for (name, apply) in paths {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    turn += 1;
                    versions[turn % 2].clone()
                },
                |batch| {
                    let changes: Vec<TargetChange> = batch
                        .into_iter()
                        .filter_map(|o| apply(&mut cache, o))
                        .collect();
                    assert_eq!(changes.len(), BATCH);
                    changes
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    cache.0.clear();
}

/// HTTP SD serialisation of 100k targets (what `/sd/{job}` and `kubesd once` write):
/// grouping by target and JSON encoding.
fn sd_serialisation(c: &mut Criterion) {
    const TARGETS: usize = 100_000;
    let ctx = TargetContext {
        semantics: kubesd::Semantics::VictoriaMetrics,
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    let mut targets: Vec<Labels> = Vec::with_capacity(TARGETS);
    let mut i = 0;
    while targets.len() < TARGETS {
        let json = realistic_pod::realistic_pod_json(i);
        let pod = Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes");
        targets.extend(target_labels(&pod, &ctx));
        i += 1;
    }
    targets.truncate(TARGETS);
    let mut group = c.benchmark_group("http_sd");
    group.sample_size(10);
    group.throughput(Throughput::Elements(TARGETS as u64));
    group.bench_function("serialise_100k_targets", |b| {
        b.iter(|| black_box(kubesd::sd_output::sd_json(targets.iter())))
    });
    // As a job actor keeps them: each pod's targets serialized apart, once per change.
    let job = arcstr::ArcStr::from("pods");
    let pods: Vec<&[Labels]> = targets.chunk_by(same_pod).collect();
    group.bench_function("object_groups_100k_targets", |b| {
        b.iter(|| {
            for pod in &pods {
                black_box(kubesd::sd_output::ObjectGroups::new(pod, &job));
            }
        })
    });
    // As the allocator's partition serves a collector: each pod's discovered label
    // sets, serialized as the body is sent; every label, then without the `__meta_*`
    // labels the service bench's job (a labelmap, two copies, a drop) does not read.
    let readable = service_job_readable::readable_by_the_service_job();
    let mut shares = kubesd::sd_output::KeyedGroups::default();
    for (i, pod) in pods.iter().enumerate() {
        let labels: Arc<[Labels]> = Arc::from(*pod);
        let picked = (0..pod.len() as u32).collect();
        let share = kubesd::sd_output::DiscoveredShare::new(&labels, picked, i as u64);
        let name = kubesd::ArcStr::from(format!("pod-{i:06}"));
        let key = kubesd::model::ObjectKey::new(&kubesd::ArcStr::from("default"), &name);
        shares.insert(&key, &kubesd::sd_output::Share::discovered(share));
    }
    for (name, readable) in [
        ("discovered_100k_targets", None),
        (
            "discovered_100k_targets_pruned",
            Some(Arc::clone(&readable)),
        ),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let body = kubesd::sd_output::SdBody::new("pods", vec![shares.clone()]);
                black_box(body.pruned(readable.clone()).to_vec())
            })
        });
    }
    group.finish();
}

/// True when two targets are of the same pod.
fn same_pod(a: &Labels, b: &Labels) -> bool {
    let name = "__meta_kubernetes_pod_name";
    a.get(name) == b.get(name)
}

fn subscriber_apply(c: &mut Criterion) {
    let versions = pod_versions();
    let ctx = TargetContext {
        semantics: kubesd::Semantics::VictoriaMetrics,
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    let batches: Vec<Arc<[TargetChange]>> = versions
        .iter()
        .map(|v| {
            // Pod i is the same object in both versions: it keeps its slot.
            v.iter()
                .enumerate()
                .map(|(i, o)| TargetChange {
                    slot: ObjectSlot(i as u32),
                    key: o.key(),
                    targets: Some(target_labels(o, &ctx).into()),
                })
                .collect()
        })
        .collect();
    let system = System::new();
    let addr = system.block_on(async {
        let ctor: Constructor<Labels> = Arc::new(|l: &Labels| Some(l.clone()));
        Subscriber::new(SubscriberId(1), ctor, Default::default()).start()
    });
    let mut group = c.benchmark_group("subscriber");
    group.throughput(Throughput::Elements(BATCH as u64));
    let mut turn = 0;
    group.bench_function("apply_1000_changes_keep_labels", |b| {
        b.iter(|| {
            turn += 1;
            let changes = Arc::clone(&batches[turn % 2]);
            let msg = TargetsPush::changed(changes, true, std::time::Instant::now());
            system.block_on(addr.send(msg)).expect("subscriber alive");
            black_box(());
        })
    });
    group.finish();
}

criterion_group!(benches, group_apply, subscriber_apply, sd_serialisation);
criterion_main!(benches);
