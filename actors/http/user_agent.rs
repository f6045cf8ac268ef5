//! The `User-Agent` kubesd sends with every request, in client-go's form
//! (`kubectl/v1.30.0 (linux/amd64) 7c48c2b`), so that an API server's audit log and
//! its per-client metrics tell kubesd's requests apart.

use std::sync::OnceLock;

/// `kubesd/<version> (<os>/<arch>) <commit>`; the commit is `KUBESD_GIT_COMMIT` when
/// the build set it, else `unknown`.
pub fn user_agent() -> &'static str {
    static VALUE: OnceLock<String> = OnceLock::new();
    VALUE.get_or_init(|| {
        format!(
            "kubesd/{} ({}/{}) {}",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            go_arch(std::env::consts::ARCH),
            option_env!("KUBESD_GIT_COMMIT").unwrap_or("unknown"),
        )
    })
}

/// The architecture as Go (and so every other Kubernetes client) names it.
fn go_arch(rust_arch: &str) -> &str {
    match rust_arch {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_version_platform_and_commit() {
        let ua = user_agent();
        assert!(
            ua.starts_with(&format!("kubesd/{} (", env!("CARGO_PKG_VERSION"))),
            "{ua}"
        );
        let platform = ua.split(['(', ')']).nth(1).unwrap_or_default();
        assert_eq!(platform.split('/').count(), 2, "{ua}");
        assert!(!ua.ends_with(' '), "{ua}");
    }
}
