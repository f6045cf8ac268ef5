//! `namespaces.own_namespace`: the namespace kubesd itself runs in.
//!
//! In a pod, the one its service account's mount names ([`read_own_namespace`]), as
//! Prometheus reads it. Where a kubeconfig is in use (`kubeconfig_file`, kubesd outside
//! a cluster), the namespace of its current context, or `default` when the context
//! names none ([`context_namespace`]), as kubectl and client-go take it; the config
//! loader puts it in `namespaces.names` when it resolves the kubeconfig. Prometheus
//! itself refuses `own_namespace` together with `kubeconfig_file` (and with
//! `api_server`); kubesd accepts both, so the same config runs in a pod and on a laptop.

use std::path::{Path, PathBuf};

/// Where Kubernetes mounts the pod's namespace for its service account.
pub const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The own namespace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OwnNamespaceError {
    /// The file could not be read (not running in a pod?).
    #[error("namespaces.own_namespace: cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is empty.
    #[error("namespaces.own_namespace: {path} is empty")]
    Empty {
        /// The file.
        path: PathBuf,
    },
}

/// The namespace a kubeconfig context means: its own, or `default` when it names none
/// (client-go's `DirectClientConfig::Namespace`).
pub(crate) fn context_namespace(namespace: &str) -> String {
    let namespace = namespace.trim();
    if namespace.is_empty() {
        "default".to_string()
    } else {
        namespace.to_string()
    }
}

/// Reads the namespace from `path` (normally [`SERVICE_ACCOUNT_NAMESPACE_FILE`]).
pub fn read_own_namespace(path: &Path) -> Result<String, OwnNamespaceError> {
    let text = std::fs::read_to_string(path).map_err(|source| OwnNamespaceError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let ns = text.trim();
    if ns.is_empty() {
        return Err(OwnNamespaceError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(ns.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_trims_or_names_the_file() {
        let dir = std::env::temp_dir().join(format!("kubesd-ns-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("namespace");
        std::fs::write(&file, "monitoring\n").unwrap();
        assert_eq!(read_own_namespace(&file).unwrap(), "monitoring");
        std::fs::write(&file, "  \n").unwrap();
        assert!(
            read_own_namespace(&file)
                .unwrap_err()
                .to_string()
                .contains("is empty")
        );
        let missing = dir.join("absent");
        let err = read_own_namespace(&missing).unwrap_err().to_string();
        assert!(
            err.contains("own_namespace") && err.contains("absent"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_context_without_a_namespace_means_default() {
        assert_eq!(context_namespace("web"), "web");
        assert_eq!(context_namespace(""), "default");
    }
}
