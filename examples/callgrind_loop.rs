//! Fixed workloads for `valgrind --tool=callgrind`, whose instruction counts repeat
//! exactly where this machine's timings drift by a third (see BENCHMARKS.md, "Instruction
//! counts"):
//!
//! - `labels N`: builds one realistic pod's targets N times;
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
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};

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
        "labels" => labels(n),
        "decode" => decode(n),
        _ => eprintln!("usage: callgrind_loop labels|decode N"),
    }
}

fn labels(n: usize) {
    let json = realistic_pod::realistic_pod_json(12345);
    let pod = Object::decode(Role::Pod, json.as_bytes()).expect("the realistic pod decodes");
    let ctx = TargetContext {
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
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
