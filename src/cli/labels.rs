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

/// The files' bytes by name, standard input's first when no file or `-` is given.
pub(super) fn read_inputs(files: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>, LabelsError> {
    let mut inputs: Vec<(String, Vec<u8>)> = Vec::new();
    if files.is_empty() || files.iter().any(|f| f.as_os_str() == "-") {
        let mut buf = Vec::new();
        std::io::stdin()
            .read_to_end(&mut buf)
            .map_err(|source| LabelsError::Read {
                path: "standard input".into(),
                source,
            })?;
        inputs.push(("standard input".into(), buf));
    }
    for path in files.iter().filter(|f| f.as_os_str() != "-") {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| LabelsError::Read {
            path: name.clone(),
            source,
        })?;
        inputs.push((name, bytes));
    }
    Ok(inputs)
}

/// The objects of one input: an object, or a list whose items take the list's kind
/// when they carry none (as the API server sends them).
pub(super) fn decode_objects(path: &str, bytes: &[u8]) -> Result<Vec<Object>, LabelsError> {
    let decode_err = |message: String| LabelsError::Decode {
        path: path.to_string(),
        message,
    };
    let top: KindOnly = serde_json::from_slice(bytes).map_err(|e| decode_err(e.to_string()))?;
    let items: Vec<serde_json::Value> = match top.items {
        Some(items) => items,
        None => vec![serde_json::from_slice(bytes).map_err(|e| decode_err(e.to_string()))?],
    };
    let mut objects = Vec::with_capacity(items.len());
    for (i, json) in items.iter().enumerate() {
        let kind = json
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or(&top.kind);
        let role = Role::from_kind(kind)
            .filter(|r| !r.is_config())
            .ok_or_else(|| {
                decode_err(format!("object {i}: kind {kind:?} is not one kubesd reads"))
            })?;
        let raw = serde_json::to_vec(json).map_err(|e| decode_err(e.to_string()))?;
        objects
            .push(Object::decode(role, &raw).map_err(|e| decode_err(format!("object {i}: {e}")))?);
    }
    Ok(objects)
}

/// Runs the command, returning the JSON to print.
pub fn run(args: &LabelsArgs) -> Result<String, LabelsError> {
    let mut cache = ObjectCache::default();
    let mut subjects = Vec::new();
    for (path, bytes) in &read_inputs(&args.files)? {
        for object in decode_objects(path, bytes)? {
            if object.role() == args.role {
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
            cpu_request: false,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(role: Role, attach_node: bool, files: Vec<PathBuf>) -> LabelsArgs {
        LabelsArgs {
            role,
            attach_node,
            attach_namespace: false,
            attach_deployment: false,
            attach_job: false,
            attach_cronjob: false,
            semantics: Semantics::Prometheus,
            files,
        }
    }

    /// A directory of this test's own, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(test: &str) -> Dir {
            let dir =
                std::env::temp_dir().join(format!("kubesd-labels-{test}-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("temp dir");
            Dir(dir)
        }

        fn path(&self) -> &std::path::Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("temp file");
        path
    }

    const NODE_LIST: &str = r#"{"kind":"NodeList","apiVersion":"v1","items":[
        {"metadata":{"name":"n1","labels":{"zone":"a"}},
         "status":{"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}]}"#;
    const POD: &str = r#"{"kind":"Pod","apiVersion":"v1",
        "metadata":{"name":"p","namespace":"ns","uid":"u"},
        "spec":{"nodeName":"n1","containers":[{"name":"c","ports":[{"containerPort":80}]}]},
        "status":{"podIP":"10.1.0.1","phase":"Running"}}"#;

    #[test]
    fn list_items_take_the_list_kind_and_see_the_other_objects() {
        let dir = Dir::new("kinds");
        let files = vec![
            write(dir.path(), "nodes.json", NODE_LIST),
            write(dir.path(), "pod.json", POD),
        ];
        let out = run(&args(Role::Pod, true, files)).expect("labels");
        let targets: Vec<BTreeMap<String, String>> = serde_json::from_str(&out).expect("JSON");
        assert_eq!(targets.len(), 1, "one pod, one port: {out}");
        let t = &targets[0];
        assert_eq!(t["__address__"], "10.1.0.1:80");
        assert_eq!(t["__meta_kubernetes_node_label_zone"], "a", "attached node");

        let nodes = run(&args(
            Role::Node,
            false,
            vec![dir.path().join("nodes.json")],
        ))
        .expect("labels");
        assert!(
            nodes.contains("\"__meta_kubernetes_node_name\": \"n1\""),
            "{nodes}"
        );
    }

    #[test]
    fn errors_name_the_file_and_the_object() {
        let dir = Dir::new("errors");
        let unknown = write(
            dir.path(),
            "cm.json",
            r#"{"kind":"List","items":[{"kind":"ConfigMap","metadata":{"name":"x"}}]}"#,
        );
        let err = run(&args(Role::Pod, false, vec![unknown.clone()]))
            .expect_err("a kind kubesd does not read")
            .to_string();
        assert!(err.starts_with(&unknown.display().to_string()), "{err}");
        assert!(
            err.contains("object 0") && err.contains("ConfigMap"),
            "{err}"
        );

        let missing = dir.path().join("missing.json");
        let err = run(&args(Role::Pod, false, vec![missing]))
            .expect_err("no such file")
            .to_string();
        assert!(
            err.contains("cannot read") && err.contains("missing.json"),
            "{err}"
        );
    }
}
