//! The EndpointSlice object (`discovery.k8s.io/v1`, and the `v1beta1` differences).

use arcstr::ArcStr;

use serde::Deserialize;

use super::endpoints::{EndpointPort, ObjectReference};
use super::json::{
    StringMap, empty_str, enum_str, exact_slice, null_default, nullable_str, scratch_elements,
};
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
    pub(crate) fn share_strings_of(&mut self, previous: &EndpointSlice) {
        for (new, old) in self.endpoints.iter_mut().zip(previous.endpoints.iter()) {
            new.topology.share_strings_of(&old.topology);
            new.deprecated_topology
                .share_strings_of(&old.deprecated_topology);
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
    /// `v1beta1` only: the topology map.
    #[serde(default)]
    pub topology: StringMap,
    /// `deprecatedTopology` (v1): what v1beta1 called `topology`.
    #[serde(default)]
    pub deprecated_topology: StringMap,
    /// `zone` (v1).
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub zone: ArcStr,
}

/// `conditions` of an endpoint; absent or `null` reads as false.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct EndpointConditions {
    /// Ready to receive traffic; `None` when the API server left it out (unknown).
    #[serde(default)]
    pub ready: Option<bool>,
    /// Serving, even while terminating.
    #[serde(default)]
    pub serving: Option<bool>,
    /// Terminating.
    #[serde(default)]
    pub terminating: Option<bool>,
}

scratch_elements!(Endpoint);
