//! The Endpoints object (`/api/v1/endpoints`).

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str, scratch_elements};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes Endpoints object: the addresses behind the service of the same name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Endpoints {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `subsets`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub subsets: Box<[EndpointSubset]>,
}

/// One entry of `subsets`: addresses that share a set of ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSubset {
    /// Ready addresses.
    #[serde(default, deserialize_with = "exact_slice")]
    pub addresses: Box<[EndpointAddress]>,
    /// Addresses that are not ready.
    #[serde(default, deserialize_with = "exact_slice")]
    pub not_ready_addresses: Box<[EndpointAddress]>,
    /// The ports every address of the subset serves.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ports: Box<[EndpointPort]>,
}

/// One endpoint address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAddress {
    /// The IP.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub ip: ArcStr,
    /// The hostname, for headless services with `subdomain`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub hostname: ArcStr,
    /// The node hosting the endpoint.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub node_name: ArcStr,
    /// The object behind the address, usually a pod.
    #[serde(default, deserialize_with = "null_default")]
    pub target_ref: ObjectReference,
}

/// A reference to another object (`targetRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ObjectReference {
    /// The referenced kind, e.g. `Pod`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The referenced object's name.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// The referenced object's namespace.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub namespace: ArcStr,
}

/// One port of an endpoint subset or an endpoint slice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    /// The port's name (matches the service port's name).
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// The port number; `None` when absent or `null` (in a slice: "all ports").
    #[serde(default)]
    pub port: Option<i64>,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub protocol: ArcStr,
    /// The application protocol, e.g. `http`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub app_protocol: ArcStr,
}

scratch_elements!(EndpointSubset, EndpointAddress, EndpointPort);
