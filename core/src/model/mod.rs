//! The Kubernetes objects discovery reads: lean serde shapes that decode only the
//! fields that become labels, tolerant of unknown fields and of `null`.

mod config_object;
mod endpoints;
mod endpointslice;
mod gateway;
mod ingress;
pub(crate) mod json;
mod meta;
mod namespace;
mod node;
mod object;
mod pod;
mod quantity;
mod role;
mod route;
mod service;
mod workload;

pub use config_object::ConfigObject;
pub use endpoints::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference};
pub use endpointslice::{Endpoint, EndpointConditions, EndpointSlice};
pub use gateway::{Gateway, GatewaySpec, Listener};
pub use ingress::{
    HttpIngressPath, HttpIngressRuleValue, Ingress, IngressRule, IngressSpec, IngressTls,
};
pub use json::{StringMap, permanent_string_bytes};
pub use meta::{Kind, ObjectKey, ObjectMeta, OwnerReference};
pub use namespace::Namespace;
pub use node::{
    DaemonEndpoints, KubeletEndpoint, Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus,
};
pub use object::Object;
pub(crate) use object::ObjectSeed;
pub use pod::{
    Container, ContainerPort, ContainerState, ContainerStatus, Pod, PodSpec, PodStatus, Terminated,
};
pub(crate) use quantity::cpu_millis;
pub use role::{Role, UnknownRole};
pub use route::{
    GrpcMethodMatch, GrpcRoute, GrpcRouteMatch, GrpcRouteRule, HttpPathMatch, HttpRoute,
    HttpRouteMatch, HttpRouteRule, ParentReference, RouteSpec,
};
pub use service::{
    LoadBalancerIngress, LoadBalancerStatus, Service, ServicePort, ServiceSpec, ServiceStatus,
};
pub use workload::{Job, ReplicaSet};
