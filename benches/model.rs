//! Micro-benchmarks of the model: decoding one realistic pod, generating its targets'
//! labels, and decoding a LIST body of them as it arrives. Run with `cargo bench --bench model`.

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
        semantics: kubesd::Semantics::VictoriaMetrics,
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

/// A LIST body of 1000 realistic pods fed to `ListStream` in 64 KiB chunks, as the
/// watcher receives it: finding each item's bounds, then decoding it.
fn list_stream(c: &mut Criterion) {
    let items: Vec<String> = (0..1000).map(realistic_pod::realistic_pod_json).collect();
    let body = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
        items.join(",")
    );
    let mut group = c.benchmark_group("list_stream");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("1000_realistic_pods_64k_chunks", |b| {
        b.iter(|| {
            let mut list = kubesd::watch::ListStream::new(Role::Pod);
            for chunk in body.as_bytes().chunks(64 * 1024) {
                list.push(chunk).expect("valid list");
            }
            let (page, errors) = list.finish().expect("complete list");
            assert!(errors.is_empty() && page.items.len() == 1000);
            page
        })
    });
    // The same body decoded whole (serde_json over the buffered body): what the
    // streaming decoder's own scanning costs on top.
    group.bench_function("1000_realistic_pods_buffered", |b| {
        b.iter(|| {
            let (page, errors) =
                kubesd::watch::decode_list_lenient(Role::Pod, body.as_bytes()).expect("valid");
            assert!(errors.is_empty() && page.items.len() == 1000);
            page
        })
    });
    group.finish();
}

criterion_group!(benches, decode_pod, pod_labels, list_stream);
criterion_main!(benches);
