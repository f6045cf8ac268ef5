//! The controllers' objects that own pods: a Deployment's ReplicaSets, a CronJob's
//! Jobs, and standalone Jobs, each with the owner reference its controller writes.
//!
//! No controller runs here: the generator writes these objects beside the pods it
//! makes, and churn writes a new ReplicaSet (a rollout) or a new Job (a CronJob's next
//! run) before moving pods to it, so that a pod's owner chain always resolves, as
//! `attach_metadata.deployment`, `.job` and `.cronjob` read it.

use serde_json::{Value, json};

use super::error::ApiError;
use super::resource::Resource;
use super::sim::Simulator;

/// A reference to an object that owns another, as its controller writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// `apps/v1` or `batch/v1`.
    pub api_version: String,
    /// `Deployment`, `ReplicaSet`, `CronJob` or `Job`.
    pub kind: String,
    /// The owner's name.
    pub name: String,
    /// The owner's uid, as the simulator gave it.
    pub uid: String,
}

impl OwnerRef {
    /// The `ownerReferences` entry: a controller reference.
    pub fn to_json(&self) -> Value {
        json!({
            "apiVersion": self.api_version, "kind": self.kind, "name": self.name,
            "uid": self.uid, "controller": true, "blockOwnerDeletion": true,
        })
    }
}

/// Creates `object` of `resource` in `namespace` and returns the reference to it that
/// the objects it owns carry.
fn create_owner(
    sim: &Simulator,
    resource: Resource,
    namespace: &str,
    object: Value,
) -> Result<OwnerRef, ApiError> {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    sim.create(resource, object)?;
    let uid = sim
        .get(resource, namespace, &name)
        .and_then(|o| o["metadata"]["uid"].as_str().map(str::to_string))
        .unwrap_or_default();
    Ok(OwnerRef {
        api_version: resource.api_version().to_string(),
        kind: resource.kind().to_string(),
        name,
        uid,
    })
}

/// Creates a Deployment `name` of app `app` and returns the reference its
/// ReplicaSets carry.
pub fn create_deployment(
    sim: &Simulator,
    namespace: &str,
    name: &str,
    app: &str,
) -> Result<OwnerRef, ApiError> {
    let object = json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": app}}},
    });
    create_owner(sim, Resource::Deployments, namespace, object)
}

/// Creates the ReplicaSet `<deployment>-<hash>` of a Deployment, for pods of template
/// `hash`, and returns the reference its pods carry.
pub fn create_replica_set(
    sim: &Simulator,
    namespace: &str,
    app: &str,
    hash: &str,
    deployment: &OwnerRef,
) -> Result<OwnerRef, ApiError> {
    let object = json!({
        "metadata": {
            "name": format!("{}-{hash}", deployment.name), "namespace": namespace,
            "labels": {"app": app, "pod-template-hash": hash},
            "ownerReferences": [deployment.to_json()],
        },
        "spec": {"selector": {"matchLabels": {"app": app, "pod-template-hash": hash}}},
    });
    create_owner(sim, Resource::ReplicaSets, namespace, object)
}

/// Creates a CronJob `name` of app `app` and returns the reference its Jobs carry.
pub fn create_cron_job(
    sim: &Simulator,
    namespace: &str,
    name: &str,
    app: &str,
) -> Result<OwnerRef, ApiError> {
    let object = json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {}}},
    });
    create_owner(sim, Resource::CronJobs, namespace, object)
}

/// Creates the Job `name` of app `app`, owned by `cron_job` if given, and returns the
/// reference its pods carry.
pub fn create_job(
    sim: &Simulator,
    namespace: &str,
    name: &str,
    app: &str,
    cron_job: Option<&OwnerRef>,
) -> Result<OwnerRef, ApiError> {
    let mut object = json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"completions": 1, "parallelism": 1, "backoffLimit": 6},
    });
    if let Some(cron_job) = cron_job {
        object["metadata"]["ownerReferences"] = json!([cron_job.to_json()]);
    }
    create_owner(sim, Resource::Jobs, namespace, object)
}

/// The controller reference of `object`, if it has one.
pub fn controller_of(object: &Value) -> Option<OwnerRef> {
    let owner = object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)?;
    let field = |name: &str| owner[name].as_str().unwrap_or_default().to_string();
    Some(OwnerRef {
        api_version: field("apiVersion"),
        kind: field("kind"),
        name: field("name"),
        uid: field("uid"),
    })
}
