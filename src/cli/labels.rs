//! `kubesd labels`: the targets discovery would produce from objects in files.
//!
//! Reads Kubernetes objects or lists as `kubectl get ... -o json` prints them (the kind
//! of each is taken from its `kind`), fills a cache with them, and prints the targets of
//! the objects of `--role` as JSON, one label map per target. A way to see exactly which
//! `__meta_kubernetes_*` labels a relabelling rule will get, without a cluster.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::PathBuf;

use serde::Deserialize;

use crate::model::{Object, Role};
use crate::targets::{AttachMetadata, ObjectCache, Semantics, TargetContext, target_labels};

/// Arguments of `kubesd labels`.
#[derive(Debug, clap::Args)]
pub struct LabelsArgs {
    /// The discovery role: node, pod, service, endpoints, endpointslice, ingress,
    /// gateway, httproute or grpcroute.
    #[arg(long)]
    pub role: Role,
    /// Attach the labels of each pod's node (attach_metadata.node).
    #[arg(long)]
    pub attach_node: bool,
    /// Attach the labels of each object's namespace (attach_metadata.namespace).
    #[arg(long)]
    pub attach_namespace: bool,
    /// Attach each pod's Deployment through its ReplicaSet (attach_metadata.deployment).
    #[arg(long)]
    pub attach_deployment: bool,
    /// Attach each pod's Job (attach_metadata.job).
    #[arg(long)]
    pub attach_job: bool,
    /// Attach each pod's CronJob through its Job (attach_metadata.cronjob).
    #[arg(long)]
    pub attach_cronjob: bool,
    /// Whose target semantics to follow: prometheus or victoriametrics.
    #[arg(long, default_value_t = Semantics::Prometheus)]
    pub semantics: Semantics,
    /// JSON files with objects or lists of any kind; `-` or none reads standard input.
    pub files: Vec<PathBuf>,
}

/// What went wrong reading the input.
#[derive(Debug, thiserror::Error)]
pub enum LabelsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON, or an object in it cannot be decoded.
    #[error("{path}: {message}")]
    Decode {
        /// The file.
        path: String,
        /// What was wrong.
        message: String,
    },
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Option<Vec<serde_json::Value>>,
}

/// Runs the command, returning the JSON to print.
pub fn run(args: &LabelsArgs) -> Result<String, LabelsError> {
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    if args.files.is_empty() || args.files.iter().any(|f| f.as_os_str() == "-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|source| LabelsError::Read {
                path: "standard input".into(),
                source,
            })?;
        inputs.push(("standard input".into(), buf));
    }
    for path in args.files.iter().filter(|f| f.as_os_str() != "-") {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| LabelsError::Read {
            path: name.clone(),
            source,
        })?;
        inputs.push((name, bytes));
    }

    let mut cache = ObjectCache::default();
    let mut subjects = Vec::new();
    for (path, bytes) in &inputs {
        let decode_err = |message: String| LabelsError::Decode {
            path: path.clone(),
            message,
        };
        let top: KindOnly = serde_json::from_slice(bytes).map_err(|e| decode_err(e.to_string()))?;
        let objects: Vec<serde_json::Value> = match top.items {
            Some(items) => items,
            None => vec![serde_json::from_slice(bytes).map_err(|e| decode_err(e.to_string()))?],
        };
        for (i, json) in objects.iter().enumerate() {
            // List items usually carry no kind of their own: take the list's.
            let kind = json
                .get("kind")
                .and_then(|k| k.as_str())
                .unwrap_or(&top.kind);
            let role = Role::from_kind(kind).ok_or_else(|| {
                decode_err(format!("object {i}: kind {kind:?} is not one kubesd reads"))
            })?;
            let raw = serde_json::to_vec(json).map_err(|e| decode_err(e.to_string()))?;
            let object =
                Object::decode(role, &raw).map_err(|e| decode_err(format!("object {i}: {e}")))?;
            if role == args.role {
                subjects.push(object.clone());
            }
            cache.insert(object);
        }
    }
    let ctx = TargetContext {
        attach: AttachMetadata {
            node: args.attach_node,
            namespace: args.attach_namespace,
            deployment: args.attach_deployment,
            job: args.attach_job,
            cronjob: args.attach_cronjob,
        },
        semantics: args.semantics,
        cache: &cache,
    };
    let labels: Vec<_> = subjects
        .iter()
        .flat_map(|o| target_labels(o, &ctx))
        .collect();
    let targets: Vec<BTreeMap<&str, &str>> = labels
        .iter()
        .map(|t| t.iter().map(|l| (&*l.name, &*l.value)).collect())
        .collect();
    serde_json::to_string_pretty(&targets).map_err(|e| LabelsError::Decode {
        path: "output".into(),
        message: e.to_string(),
    })
}
