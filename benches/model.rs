//! Micro-benchmarks of the model: decoding one realistic pod (from JSON and from
//! protobuf), generating its targets' labels, and decoding a LIST body of them as it
//! arrives. Run with `cargo bench --bench model`; the allocations of one pod's decoding
//! in each encoding are printed first.
//!
//! The protobuf pod is the JSON one through the simulator's encoder, which encodes the
//! fields of its schema (probes, volume sources and security contexts are left out), so
//! its bytes are fewer than a real API server's for the same pod.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use kubesd::model::{Object, Role};
use kubesd::simulator::{Resource, protobuf};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};

#[path = "support/realistic_pod.rs"]
mod realistic_pod;

/// Counts allocations, to report how many one decoding makes.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// How many allocations `f` makes (its result dropped after counting).
fn allocations<T>(f: impl FnOnce() -> T) -> usize {
    let before = ALLOCATIONS.load(Relaxed);
    let kept = f();
    let made = ALLOCATIONS.load(Relaxed) - before;
    drop(kept);
    made
}

/// The realistic pod's fields in protobuf, as a list item.
fn protobuf_pod(json: &str) -> Vec<u8> {
    let value: serde_json::Value = serde_json::from_str(json).expect("pod JSON");
    protobuf::encode_fields(Resource::Pods, &value).expect("pod encodes")
}

fn decode_pod(c: &mut Criterion) {
    let json = realistic_pod::realistic_pod_json(12345);
    let proto = protobuf_pod(&json);
    let from_json = || Object::decode(Role::Pod, std::hint::black_box(json.as_bytes()));
    let from_proto =
        || kubesd::wire::proto::decode_object(Role::Pod, "v1", "", std::hint::black_box(&proto));
    assert_eq!(from_json().expect("JSON"), from_proto().expect("protobuf"));
    // Warm: the intern table holds the pod's repeated strings, as in a running engine.
    eprintln!(
        "allocations per realistic pod: JSON {} ({} bytes), protobuf {} ({} bytes)",
        allocations(from_json),
        json.len(),
        allocations(from_proto),
        proto.len()
    );
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Elements(1));
    group.bench_function("realistic_pod", |b| {
        b.iter(|| from_json().expect("pod decodes"))
    });
    group.bench_function("realistic_pod_protobuf", |b| {
        b.iter(|| from_proto().expect("pod decodes"))
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
            let mut list = kubesd::wire::json::ListStream::new(Role::Pod);
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
                kubesd::wire::json::decode_list_lenient(Role::Pod, body.as_bytes()).expect("valid");
            assert!(errors.is_empty() && page.items.len() == 1000);
            page
        })
    });
    // The same pods as one protobuf LIST body, decoded as it arrives and whole.
    let items: Vec<Vec<u8>> = items.iter().map(|item| protobuf_pod(item)).collect();
    let proto = protobuf::encode_list(Resource::Pods, "v1", &items, "1", None);
    group.throughput(Throughput::Bytes(proto.len() as u64));
    group.bench_function("1000_realistic_pods_protobuf_64k_chunks", |b| {
        b.iter(|| {
            let mut list = kubesd::wire::proto::ProtoListStream::new(Role::Pod, 4 << 20);
            for chunk in proto.chunks(64 * 1024) {
                list.push(chunk).expect("valid list");
            }
            let (page, errors) = list.finish().expect("complete list");
            assert!(errors.is_empty() && page.items.len() == 1000);
            page
        })
    });
    group.bench_function("1000_realistic_pods_protobuf", |b| {
        b.iter(|| {
            let (page, errors) =
                kubesd::wire::proto::decode_list(Role::Pod, &proto).expect("valid");
            assert!(errors.is_empty() && page.items.len() == 1000);
            page
        })
    });
    group.finish();
}

criterion_group!(benches, decode_pod, pod_labels, list_stream);
criterion_main!(benches);
