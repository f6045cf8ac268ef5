//! Micro-benchmarks of the model: decoding one realistic pod, and generating its
//! targets' labels. Run with `cargo bench --bench model`.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kubesd::model::{Object, Role};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};

#[path = "support/realistic_pod.rs"]
mod realistic_pod;

fn decode_pod(c: &mut Criterion) {
    let json = realistic_pod::realistic_pod_json(12345);
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("realistic_pod", |b| {
        b.iter(|| {
            Object::decode(Role::Pod, std::hint::black_box(json.as_bytes())).expect("pod decodes")
        })
    });
    group.finish();
}

fn pod_labels(c: &mut Criterion) {
    let json = realistic_pod::realistic_pod_json(12345);
    let pod = Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes");
    let ctx = TargetContext {
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    assert_eq!(target_labels(&pod, &ctx).len(), 6, "3 containers x 2 ports");
    let mut group = c.benchmark_group("labels");
    group.throughput(Throughput::Elements(1));
    group.bench_function("realistic_pod_6_targets", |b| {
        b.iter(|| target_labels(std::hint::black_box(&pod), &ctx))
    });
    group.finish();
}

criterion_group!(benches, decode_pod, pod_labels);
criterion_main!(benches);
