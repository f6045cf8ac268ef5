//! The Service object (`/api/v1/services`).

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Service {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: ServiceSpec,
}

/// `spec` of a service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// `spec.clusterIP` (`None` for headless services).
    #[serde(
        rename = "clusterIP",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    pub cluster_ip: ArcStr,
    /// `spec.externalName`, for `ExternalName` services.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub external_name: ArcStr,
    /// `spec.type`: `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(rename = "type", default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// `spec.ports`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ports: Box<[ServicePort]>,
}

/// One entry of `spec.ports`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ServicePort {
    /// The port's name.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub protocol: ArcStr,
    /// The service port number.
    #[serde(default, deserialize_with = "null_default")]
    pub port: i64,
}
