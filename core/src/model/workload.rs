//! ReplicaSets (`/apis/apps/v1/replicasets`) and Jobs (`/apis/batch/v1/jobs`): the
//! owners between a pod and its Deployment or CronJob. Watched only for
//! `attach_metadata.deployment` (ReplicaSets) and `.job`/`.cronjob` (Jobs), and only
//! their metadata is kept: name, namespace, labels and, what matters, the owner.

use serde::Deserialize;

use super::json::null_default;
use super::meta::{Kind, ObjectMeta, OwnerReference};

/// A ReplicaSet: a pod's owner, itself usually owned by a Deployment.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ReplicaSet {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata` (`spec` and `status` are skipped while parsing).
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
}

/// A Job: a pod's owner, itself owned by a CronJob when the CronJob started it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Job {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata` (`spec` and `status` are skipped while parsing).
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
}

impl ObjectMeta {
    /// The owner reference marked `controller: true`, as Kubernetes' `GetControllerOf`.
    pub(crate) fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references.iter().find(|o| o.controller)
    }
}
