//! The Namespace object (`/api/v1/namespaces`), watched for `attach_metadata.namespace`.

use serde::Deserialize;

use crate::labels::LabelsMemo;

use super::json::null_default;
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes namespace: only its metadata (labels and annotations) matters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Namespace {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// The labels and annotations of `metadata` as `__meta_kubernetes_namespace_*` labels,
    /// built on first use (by `targets`) and shared by every target that carries them.
    #[serde(skip)]
    pub(crate) metadata_labels: LabelsMemo,
}
