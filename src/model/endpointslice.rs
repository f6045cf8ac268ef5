//! The EndpointSlice object (`discovery.k8s.io/v1`, and the `v1beta1` differences).

use arcstr::ArcStr;

use serde::Deserialize;

use super::endpoints::{EndpointPort, ObjectReference};
use super::json::{StringMap, empty_str, enum_str, exact_slice, null_default, nullable_str};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes EndpointSlice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`; the label `kubernetes.io/service-name` names the owning service.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `IPv4`, `IPv6` or `FQDN`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub address_type: ArcStr,
    /// `endpoints`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub endpoints: Box<[Endpoint]>,
    /// `ports`: every endpoint of the slice serves each of them.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ports: Box<[EndpointPort]>,
}

impl EndpointSlice {
    /// Points the endpoints' topology maps (an update of `previous`) at `previous`'s
    /// equal strings, endpoint by endpoint: decoding interns them, except for a
    /// `MODIFIED` event's object, which holds copies.
    pub fn share_strings_of(&mut self, previous: &EndpointSlice) {
        for (new, old) in self.endpoints.iter_mut().zip(previous.endpoints.iter()) {
            new.topology.share_strings_of(&old.topology);
        }
    }
}

/// One entry of `endpoints`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The endpoint's addresses (the controller writes exactly one).
    #[serde(default, deserialize_with = "null_default")]
    pub addresses: Vec<ArcStr>,
    /// Readiness conditions.
    #[serde(default, deserialize_with = "null_default")]
    pub conditions: EndpointConditions,
    /// The hostname.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub hostname: ArcStr,
    /// The node hosting the endpoint.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub node_name: ArcStr,
    /// The object behind the endpoint, usually a pod.
    #[serde(default, deserialize_with = "null_default")]
    pub target_ref: ObjectReference,
    /// `v1beta1` only: the topology map (`deprecatedTopology` in v1 is not read, as in
    /// VictoriaMetrics).
    #[serde(default)]
    pub topology: StringMap,
}

/// `conditions` of an endpoint; absent or `null` reads as false.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct EndpointConditions {
    /// Ready to receive traffic.
    #[serde(default, deserialize_with = "null_default")]
    pub ready: bool,
    /// Serving, even while terminating.
    #[serde(default, deserialize_with = "null_default")]
    pub serving: bool,
    /// Terminating.
    #[serde(default, deserialize_with = "null_default")]
    pub terminating: bool,
}
