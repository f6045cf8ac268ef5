//! Target labels: what each object means to a scrape job.
//!
//! One function per role turns an object into its targets' label sets, exactly as the
//! conformance corpus (`tests/conformance`) specifies: Prometheus' label names, with
//! Prometheus' or VictoriaMetrics' target semantics ([`Semantics`]: the rules where the
//! two differ, each a named decision). Objects of other roles (the node of a pod, the
//! pod and service of an endpoint, the namespace of anything, a pod's ReplicaSet or
//! Job, a route's Gateway) are read through [`CacheView`], a read-only view of the group's cache, so the
//! same code serves the tests and the actors.

mod address;
mod attach_metadata;
mod backing_pods;
mod cache_view;
mod context;
mod endpoint_targets;
mod endpoints;
mod endpointslice;
mod gateway;
mod grpcroute;
mod httproute;
mod ingress;
mod listeners;
mod meta;
mod node;
mod object_cache;
mod owners;
mod pod;
mod route_common;
mod semantics;
mod service;

pub use attach_metadata::{AttachMetadata, CPU_REQUEST_LABEL};
pub use cache_view::{CacheView, EmptyCache};
pub use context::{TargetContext, TargetOptions};
pub use object_cache::ObjectCache;
pub use semantics::{Semantics, UnknownSemantics};

use crate::labels::Labels;
use crate::model::Object;

/// The label sets of every target `object` produces, in a stable order.
///
/// Namespaces, ReplicaSets and Jobs produce no targets of their own.
pub fn target_labels(object: &Object, ctx: &TargetContext<'_>) -> Vec<Labels> {
    target_labels_after(object, ctx, None)
}

/// [`target_labels`] for an object that replaced `previous`, whose targets were
/// `previous_targets`: the same labels, computed with less work where the targets' own
/// parts cannot have changed (a pod event that only touched its metadata or conditions
/// keeps every container's and port's labels, and only its shared part is rebuilt).
pub fn target_labels_after(
    object: &Object,
    ctx: &TargetContext<'_>,
    previous: Option<(&Object, &[Labels])>,
) -> Vec<Labels> {
    match object {
        Object::Pod(p) => match previous {
            Some((Object::Pod(old), old_targets)) => {
                pod::pod_targets_after(p, ctx, Some((old, old_targets)))
            }
            _ => pod::pod_targets(p, ctx),
        },
        _ => target_labels_fresh(object, ctx),
    }
}

fn target_labels_fresh(object: &Object, ctx: &TargetContext<'_>) -> Vec<Labels> {
    match object {
        Object::Node(n) => node::node_targets(n, ctx),
        Object::Pod(p) => pod::pod_targets(p, ctx),
        Object::Service(s) => service::service_targets(s, ctx),
        Object::Endpoints(e) => endpoints::endpoints_targets(e, ctx),
        Object::EndpointSlice(e) => endpointslice::endpointslice_targets(e, ctx),
        Object::Ingress(i) => ingress::ingress_targets(i, ctx),
        Object::Gateway(g) => gateway::gateway_targets(g, ctx),
        Object::HttpRoute(r) => httproute::httproute_targets(r, ctx),
        Object::GrpcRoute(r) => grpcroute::grpcroute_targets(r, ctx),
        Object::Namespace(_) | Object::ReplicaSet(_) | Object::Job(_) | Object::Config(_) => {
            Vec::new()
        }
    }
}
