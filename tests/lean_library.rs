//! An agent that embeds kubesd with `default-features = false` compiles the engine only:
//! none of the crates the binary, the HTTP SD service or the simulator need.
//!
//! Asked of Cargo's own resolver (`cargo tree`), which reads the manifest and lock file
//! and compiles nothing, so the check costs CI no build.

use std::collections::BTreeSet;
use std::process::Command;

/// The crates the engine must not pull in, and which feature brings each.
const NOT_IN_THE_ENGINE: &[(&str, &str)] = &[
    ("actix-web", "service, simulator"),
    ("clap", "cli"),
    ("rcgen", "simulator"),
    ("bcrypt", "service: the listener's web config"),
    ("tracing-subscriber", "cli"),
    (
        "mimalloc",
        "mimalloc: an embedding agent chooses its own allocator",
    ),
];

/// The normal (not dev, not build) dependencies of `kubesd` with the given feature flags.
fn dependencies(feature_args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["tree", "--quiet", "--package", "kubesd"])
        .args(["--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}"])
        .args(feature_args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_engine_alone_compiles_none_of_the_binarys_crates() {
    let engine = dependencies(&["--no-default-features"]);
    assert!(
        engine.contains("actix"),
        "the engine is on actix: {engine:?}"
    );
    assert!(
        engine.contains("awc"),
        "the engine talks HTTP with awc: {engine:?}"
    );
    for half in ["kubesd-core", "kubesd-actors"] {
        assert!(
            engine.contains(half),
            "the engine is built on {half}: {engine:?}"
        );
    }
    for (name, feature) in NOT_IN_THE_ENGINE {
        assert!(
            !engine.contains(*name),
            "`{name}` (feature {feature}) is compiled without default features"
        );
    }
}

#[test]
fn the_default_build_has_the_binarys_crates() {
    // The other side of the check above: the names are right, so their absence means
    // something.
    let all = dependencies(&[]);
    for (name, _) in NOT_IN_THE_ENGINE {
        assert!(
            all.contains(*name),
            "`{name}` is missing from the default build"
        );
    }
}
