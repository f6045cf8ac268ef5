//! The Gateway object (`gateway.networking.k8s.io/v1`, and `v1beta1`, which agrees on
//! every field discovery reads): the listeners routes attach to.

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str, scratch_elements};
use super::meta::{Kind, ObjectMeta};

/// A Gateway API Gateway.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Gateway {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: GatewaySpec,
}

/// `spec` of a Gateway.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewaySpec {
    /// `spec.gatewayClassName`: the GatewayClass that implements the Gateway.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub gateway_class_name: ArcStr,
    /// `spec.listeners`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub listeners: Box<[Listener]>,
}

/// One entry of `spec.listeners`: a port, protocol and hostname pattern routes attach to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Listener {
    /// The listener's name, unique in its Gateway (a route's `sectionName` names it).
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// The hostname, or a `*.` wildcard; empty matches every hostname.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub hostname: ArcStr,
    /// The port.
    #[serde(default, deserialize_with = "null_default")]
    pub port: i64,
    /// `HTTP`, `HTTPS`, `TLS`, `TCP` or `UDP` (or an implementation's own).
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub protocol: ArcStr,
}

scratch_elements!(Listener);
