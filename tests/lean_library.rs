//! An agent that embeds kubesd with `default-features = false` compiles the engine only:
//! none of the crates the binary, the HTTP SD service or the simulator need. And the
//! engine's core (`kubesd-core`) compiles no I/O runtime: the HTTP client, actix and
//! tokio are the actors' (`kubesd-actors`).
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

/// What a crate's name contains if it does I/O for the engine: the HTTP client (awc),
/// the actor runtime (actix, actix-rt, actix-service, ...) or tokio. The core compiles
/// none of them.
const IO_RUNTIMES: &[&str] = &["awc", "actix", "tokio"];

/// The normal (not dev, not build) dependencies of `kubesd` with the given feature flags.
fn dependencies(feature_args: &[&str]) -> BTreeSet<String> {
    package_dependencies("kubesd", feature_args)
}

/// The normal (not dev, not build) dependencies of the workspace's `package` with the
/// given feature flags, the package itself included.
fn package_dependencies(package: &str, feature_args: &[&str]) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["tree", "--quiet", "--package", package])
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

#[test]
fn the_core_compiles_no_io_runtime() {
    let core = package_dependencies("kubesd-core", &[]);
    assert!(
        core.contains("kubesd-core") && core.contains("serde"),
        "cargo tree lists the core and its crates: {core:?}"
    );
    let runtimes: Vec<&String> = core
        .iter()
        .filter(|name| IO_RUNTIMES.iter().any(|runtime| name.contains(runtime)))
        .collect();
    assert!(
        runtimes.is_empty(),
        "kubesd-core compiles {runtimes:?}: I/O belongs to kubesd-actors (its `http` module)"
    );
    // The other side: the names are right, so their absence means something.
    let actors = package_dependencies("kubesd-actors", &[]);
    for runtime in IO_RUNTIMES {
        assert!(
            actors.iter().any(|name| name.contains(runtime)),
            "kubesd-actors does its I/O with {runtime}: {actors:?}"
        );
    }
}
