//! Edits the churn makes to a pod's JSON: readiness, renaming a copy, moving it to a
//! new owner, making an update unconditional. Objects may have come over HTTP in any
//! shape, so a path that is not an object skips the edit rather than panicking.

use serde_json::{Value, json};

use crate::json_pointer::{at, at_mut};
use crate::owners::OwnerRef;

/// The owner a rollout moves pods to, and the labels by which its pods name it.
pub(super) struct NewOwner {
    /// The owner reference the pods get.
    pub(super) reference: OwnerRef,
    labels: Vec<(&'static str, String)>,
}

impl NewOwner {
    /// A Deployment's ReplicaSet, for pods of template `hash`.
    pub(super) fn replica_set(reference: OwnerRef, hash: &str) -> NewOwner {
        NewOwner {
            reference,
            labels: vec![("pod-template-hash", hash.to_string())],
        }
    }

    /// A Job, whose pods carry its name.
    pub(super) fn job(reference: OwnerRef) -> NewOwner {
        let name = reference.name.clone();
        NewOwner {
            labels: vec![
                ("job-name", name.clone()),
                ("batch.kubernetes.io/job-name", name),
            ],
            reference,
        }
    }
}

/// Drops `metadata.resourceVersion`, so an update is unconditional (churn
/// is the only writer that matters; it must not trip over its own writes).
pub(super) fn without_resource_version(mut pod: Value) -> Value {
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    pod
}

/// Sets `value` at `path`, creating missing objects on the way; a non-object on the
/// path skips the change.
pub(super) fn set_in(v: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for key in parents {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        cur = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Sets the pod's Ready/ContainersReady conditions and container readiness.
pub(super) fn set_ready(pod: &mut Value, ready: bool) {
    let status = if ready { "True" } else { "False" };
    for cond in at_mut(pod, "/status/conditions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if matches!(
            cond.get("type").and_then(Value::as_str),
            Some("Ready" | "ContainersReady")
        ) {
            set_in(cond, &["status"], json!(status));
        }
    }
    for cs in at_mut(pod, "/status/containerStatuses")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        set_in(cs, &["ready"], json!(ready));
    }
}

/// A copy of a pod named `name`: the fields the server sets and a graceful deletion's
/// marks are removed, and a StatefulSet pod's own-name label follows.
pub(super) fn rename(pod: &mut Value, name: &str) {
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_owned in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            meta.remove(server_owned);
        }
        meta.insert("name".into(), json!(name));
    }
    if at(pod, "/metadata/labels/statefulset.kubernetes.io~1pod-name").is_some() {
        set_in(
            pod,
            &["metadata", "labels", "statefulset.kubernetes.io/pod-name"],
            json!(name),
        );
    }
}

/// The pod's labels and first owner reference made those of `owner`.
pub(super) fn adopt(pod: &mut Value, owner: &NewOwner) {
    for (label, value) in &owner.labels {
        set_in(pod, &["metadata", "labels", label], json!(value));
    }
    if let Some(reference) =
        at_mut(pod, "/metadata/ownerReferences/0").and_then(Value::as_object_mut)
    {
        reference.insert("name".into(), json!(owner.reference.name));
        if !owner.reference.uid.is_empty() {
            reference.insert("uid".into(), json!(owner.reference.uid));
        }
    }
}
