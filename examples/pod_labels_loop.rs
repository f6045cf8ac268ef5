//! Builds one realistic pod's targets N times (default 1000): a fixed workload for
//! `valgrind --tool=callgrind`, whose instruction counts repeat exactly where this
//! machine's timings drift by a third. Instructions per pod = (count at 2N - count at N)
//! / N; see BENCHMARKS.md ("Label instructions").
//!
//! `cargo build --release --example pod_labels_loop`, then
//! `valgrind --tool=callgrind target/release/examples/pod_labels_loop 1000`.

use kubesd::model::{Object, Role};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};

#[path = "../benches/support/realistic_pod.rs"]
mod realistic_pod;

fn main() {
    let json = realistic_pod::realistic_pod_json(12345);
    let pod = Object::decode(Role::Pod, json.as_bytes()).expect("the realistic pod decodes");
    let ctx = TargetContext {
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    let n: usize = match std::env::args().nth(1) {
        Some(arg) => arg.parse().expect("the argument is a number of iterations"),
        None => 1000,
    };
    let mut targets = 0;
    for _ in 0..n {
        targets += target_labels(std::hint::black_box(&pod), &ctx).len();
    }
    println!("{targets} targets");
}
