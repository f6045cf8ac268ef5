//! The Gateway API routes (`gateway.networking.k8s.io/v1`, and `v1beta1` for
//! HTTPRoute, which agrees on every field discovery reads): HTTPRoute and GRPCRoute,
//! with the parent references that attach them to Gateways (or Services).

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, enum_str, exact_slice, null_default, nullable_str};
use super::meta::{Kind, ObjectMeta};

/// A Gateway API HTTPRoute.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpRoute {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: RouteSpec<HttpRouteRule>,
}

/// A Gateway API GRPCRoute.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct GrpcRoute {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: RouteSpec<GrpcRouteRule>,
}

/// `spec` of a route: where it attaches, the hostnames it serves, its rules.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "R: Deserialize<'de>"))]
pub struct RouteSpec<R> {
    /// `spec.parentRefs`: the Gateways (or Services) the route attaches to.
    #[serde(default, deserialize_with = "null_default")]
    pub parent_refs: Box<[ParentReference]>,
    /// `spec.hostnames`: exact names or `*.` wildcards; none means the listener's.
    #[serde(default, deserialize_with = "exact_slice")]
    pub hostnames: Box<[ArcStr]>,
    /// `spec.rules`.
    #[serde(default, deserialize_with = "null_default")]
    pub rules: Box<[R]>,
}

impl<R> Default for RouteSpec<R> {
    fn default() -> Self {
        RouteSpec {
            parent_refs: Box::default(),
            hostnames: Box::default(),
            rules: Box::default(),
        }
    }
}

/// One entry of `spec.parentRefs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// The parent's API group: `gateway.networking.k8s.io` for a Gateway, empty (core)
    /// for a Service.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub group: ArcStr,
    /// `Gateway` (the API's default, when empty) or `Service`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The parent's namespace; empty means the route's own.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub namespace: ArcStr,
    /// The parent's name.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// A listener's name (of a Gateway) or a port's name (of a Service); empty means
    /// every one.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub section_name: ArcStr,
    /// Only the listeners on this port; 0 (absent) means every port.
    #[serde(default, deserialize_with = "null_default")]
    pub port: i64,
}

/// One entry of an HTTPRoute's `spec.rules`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpRouteRule {
    /// The requests the rule matches; none matches every request (path `/`).
    #[serde(default, deserialize_with = "null_default")]
    pub matches: Box<[HttpRouteMatch]>,
}

/// One entry of an HTTPRoute rule's `matches`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpRouteMatch {
    /// The path the request must have; absent means prefix `/`.
    #[serde(default, deserialize_with = "null_default")]
    pub path: HttpPathMatch,
    /// The HTTP method the request must have; empty means any.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub method: ArcStr,
}

/// `path` of an HTTPRoute match.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpPathMatch {
    /// `Exact`, `PathPrefix` or `RegularExpression`.
    #[serde(rename = "type", default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The path; empty means `/`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub value: ArcStr,
}

/// One entry of a GRPCRoute's `spec.rules`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct GrpcRouteRule {
    /// The calls the rule matches; none matches every call.
    #[serde(default, deserialize_with = "null_default")]
    pub matches: Box<[GrpcRouteMatch]>,
}

/// One entry of a GRPCRoute rule's `matches`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct GrpcRouteMatch {
    /// The gRPC method the call must name; absent matches every method.
    #[serde(default, deserialize_with = "null_default")]
    pub method: GrpcMethodMatch,
}

/// `method` of a GRPCRoute match: an object, as the API defines it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct GrpcMethodMatch {
    /// `Exact` or `RegularExpression`.
    #[serde(rename = "type", default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The gRPC service, e.g. `foo.bar.Echo`; empty matches every service.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub service: ArcStr,
    /// The method of that service; empty matches every method.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub method: ArcStr,
}
