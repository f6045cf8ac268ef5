//! The Service object (`/api/v1/services`).

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str, scratch_elements};
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
    /// `status`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: ServiceStatus,
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
    /// `spec.ipFamilyPolicy`: `SingleStack`, `PreferDualStack` or `RequireDualStack`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub ip_family_policy: ArcStr,
    /// `spec.ipFamilies`: `IPv4` and/or `IPv6`, the primary family first.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ip_families: Box<[ArcStr]>,
    /// `spec.loadBalancerIP` (deprecated; `status.loadBalancer` supersedes it).
    #[serde(
        rename = "loadBalancerIP",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    pub load_balancer_ip: ArcStr,
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

/// `status` of a service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// `status.loadBalancer`.
    #[serde(default, deserialize_with = "null_default")]
    pub load_balancer: LoadBalancerStatus,
}

/// `status.loadBalancer` of a service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct LoadBalancerStatus {
    /// `status.loadBalancer.ingress`: the load balancer's addresses.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ingress: Box<[LoadBalancerIngress]>,
}

/// One entry of `status.loadBalancer.ingress`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct LoadBalancerIngress {
    /// `ip`, empty for a load balancer known by hostname only.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub ip: ArcStr,
}

scratch_elements!(LoadBalancerIngress, ServicePort);
