//! Fixed workloads for `valgrind --tool=callgrind`, whose instruction counts repeat
//! exactly where this machine's timings drift by a third (see BENCHMARKS.md, "The
//! machine and how to read the figures"):
//!
//! - `labels N`: builds one realistic pod's targets N times;
//! - `labels-node N`: the same with `attach_metadata.node` and the pod's node cached (8
//!   labels, 2 annotations, as the flood bench's nodes);
//! - `decode N`: decodes N pods, cycling through 5,000 distinct realistic pods (decoded
//!   once beforehand, so the intern tables are as warm as in a long-running watcher).
//!
//! Instructions per operation = (count at 2N − count at N) / N, which cancels the set-up:
//!
//! ```text
//! cargo build --release --example callgrind_loop
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null target/release/examples/callgrind_loop labels 1000
//! ```

use kubesd::model::{Object, Role};
use kubesd::targets::{AttachMetadata, EmptyCache, ObjectCache, TargetContext, target_labels};

#[path = "../benches/support/realistic_pod.rs"]
mod realistic_pod;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_default();
    let n: usize = match args.next() {
        Some(arg) => arg
            .parse()
            .expect("the second argument is a number of iterations"),
        None => 1000,
    };
    match what.as_str() {
        "labels" => labels(n, false),
        "labels-node" => labels(n, true),
        "decode" => decode(n),
        _ => eprintln!("usage: callgrind_loop labels|labels-node|decode N"),
    }
}

/// The node the realistic pod 12345 runs on, labelled as the flood bench's nodes are.
const NODE_JSON: &str = r#"{"kind":"Node","metadata":{"name":"node-0345","uid":"6c2a5e5e-0000-4000-8000-000000000345","labels":{"kubernetes.io/hostname":"node-0345","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","node.kubernetes.io/instance-type":"m5.2xlarge","topology.kubernetes.io/region":"eu-west-1","topology.kubernetes.io/zone":"eu-west-1a","node-role.kubernetes.io/worker":"","pool":"general"},"annotations":{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"}},"status":{"addresses":[{"type":"InternalIP","address":"192.168.1.96"}]}}"#;

fn labels(n: usize, attach_node: bool) {
    let json = realistic_pod::realistic_pod_json(12345);
    let pod = Object::decode(Role::Pod, json.as_bytes()).expect("the realistic pod decodes");
    let node = Object::decode(Role::Node, NODE_JSON.as_bytes()).expect("the node decodes");
    let nodes = ObjectCache::from_objects([&node]);
    let ctx = TargetContext {
        semantics: kubesd::Semantics::VictoriaMetrics,
        attach: AttachMetadata {
            node: attach_node,
            namespace: false,
            ..AttachMetadata::default()
        },
        cache: if attach_node { &nodes } else { &EmptyCache },
    };
    let mut targets = 0;
    for _ in 0..n {
        targets += target_labels(std::hint::black_box(&pod), &ctx).len();
    }
    println!("{targets} targets");
}

fn decode(n: usize) {
    let pods: Vec<String> = (0..5000).map(realistic_pod::realistic_pod_json).collect();
    let mut decoded = 0;
    for json in pods
        .iter()
        .chain((0..n).map(|i| &pods[(i * 7) % pods.len()]))
    {
        decoded +=
            Object::decode(Role::Pod, std::hint::black_box(json.as_bytes())).is_ok() as usize;
    }
    println!("{decoded} decoded");
}
