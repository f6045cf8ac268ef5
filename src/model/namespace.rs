//! The Namespace object (`/api/v1/namespaces`), watched for `attach_metadata.namespace`.

use serde::Deserialize;

use super::json::null_default;
use super::meta::ObjectMeta;

/// A Kubernetes namespace: only its metadata (labels and annotations) matters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Namespace {
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
}
