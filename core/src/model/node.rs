//! The Node object (`/api/v1/nodes`), as much of it as discovery reads.

use arcstr::ArcStr;

use serde::Deserialize;

use crate::labels::LabelsMemo;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str, scratch_elements};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Node {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// The labels and annotations of `metadata` as `__meta_kubernetes_node_*` labels,
    /// built on first use (by `targets`) and shared by every target that carries them.
    #[serde(skip)]
    pub(crate) metadata_labels: LabelsMemo,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: NodeSpec,
    /// `status`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: NodeStatus,
}

/// `spec` of a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// `spec.providerID`.
    #[serde(
        rename = "providerID",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    pub provider_id: ArcStr,
}

/// `status` of a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// `status.addresses`, in the order the kubelet reported them.
    #[serde(default, deserialize_with = "exact_slice")]
    pub addresses: Box<[NodeAddress]>,
    /// `status.daemonEndpoints`.
    #[serde(default, deserialize_with = "null_default")]
    pub daemon_endpoints: DaemonEndpoints,
    /// `status.conditions`: `Ready`, `MemoryPressure`, `DiskPressure`, ...
    #[serde(default, deserialize_with = "exact_slice")]
    pub conditions: Box<[NodeCondition]>,
}

/// One entry of `status.conditions` of a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct NodeCondition {
    /// `Ready`, `MemoryPressure`, `DiskPressure`, `PIDPressure`, `NetworkUnavailable`, ...
    #[serde(rename = "type", default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// `True`, `False` or `Unknown`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub status: ArcStr,
}

/// One entry of `status.addresses`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct NodeAddress {
    /// `InternalIP`, `ExternalIP`, `Hostname`, `InternalDNS`, `ExternalDNS`, ...
    #[serde(rename = "type", default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The address itself.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub address: ArcStr,
}

/// `status.daemonEndpoints`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DaemonEndpoints {
    /// `status.daemonEndpoints.kubeletEndpoint`.
    #[serde(default, deserialize_with = "null_default")]
    pub kubelet_endpoint: KubeletEndpoint,
}

/// `status.daemonEndpoints.kubeletEndpoint`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct KubeletEndpoint {
    /// The kubelet's port. `Port` is accepted too: Go's decoder matches field names
    /// case-insensitively and the corpus has a node written that way
    /// (upstream-node.json, "kubeletEndpoint.\"Port\"").
    #[serde(default, alias = "Port", deserialize_with = "null_default")]
    pub port: i64,
}

scratch_elements!(NodeAddress, NodeCondition);
