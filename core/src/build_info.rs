//! What was built: the version, the commit and the build date, set at compile time by
//! `build.rs` (`KUBESD_GIT_COMMIT`, `KUBESD_BUILD_DATE`). Shown by `kubesd --version`
//! and in the `kubesd_build_info` metric.

/// The crate's version, from Cargo.toml.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the binary was built from (12 hex digits), or "unknown" when built
/// outside a git checkout without `KUBESD_GIT_COMMIT` set.
pub const GIT_COMMIT: &str = env!("KUBESD_GIT_COMMIT");

/// When the binary was built, UTC, RFC 3339 (`SOURCE_DATE_EPOCH` when set).
pub const BUILD_DATE: &str = env!("KUBESD_BUILD_DATE");

/// `--version`'s text: `0.1.0 (commit 0123456789ab, built 2025-01-01T00:00:00Z)`.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KUBESD_GIT_COMMIT"),
    ", built ",
    env!("KUBESD_BUILD_DATE"),
    ")"
);
