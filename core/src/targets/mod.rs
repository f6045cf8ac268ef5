//! Target labels: what each object means to a scrape job.
//!
//! One function per role turns an object into its targets' label sets, exactly as the
//! conformance corpus (`tests/conformance`) specifies: Prometheus' label names, with
//! Prometheus' or VictoriaMetrics' target semantics ([`Semantics`]: the rules where the
//! two differ, each a named decision). Objects of other roles (the node of a pod, the
//! pod and service of an endpoint, the namespace of anything, a pod's ReplicaSet or
//! Job, a route's Gateway) are read through [`CacheView`], a read-only view of the group's cache, so the
//! same code serves the tests and the actors.

mod backing_pods;
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

use arcstr::ArcStr;
use serde::{Deserialize, Serialize};

pub use object_cache::ObjectCache;
pub use semantics::{EndpointNode, InitContainers, Semantics, UnknownSemantics};

use crate::labels::Labels;
use crate::model::{Gateway, Job, Namespace, Node, Object, Pod, ReplicaSet, Role, Service};

/// Read-only access to the cached objects that other roles' labels depend on.
///
/// The engine's implementation also records each look-up, hits and misses alike, which
/// is how it learns which targets to recompute when a dependency changes.
pub trait CacheView {
    /// The node called `name`.
    fn node(&self, name: &str) -> Option<&Node>;
    /// The pod `namespace/name`.
    fn pod(&self, namespace: &str, name: &str) -> Option<&Pod>;
    /// The service `namespace/name`.
    fn service(&self, namespace: &str, name: &str) -> Option<&Service>;
    /// The namespace called `name`.
    fn namespace(&self, name: &str) -> Option<&Namespace>;
    /// The ReplicaSet `namespace/name` (cached for `attach_metadata.deployment`).
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet>;
    /// The Job `namespace/name` (cached for `attach_metadata.cronjob`).
    fn job(&self, namespace: &str, name: &str) -> Option<&Job>;
    /// The Gateway `namespace/name` (cached for the routes that attach to it).
    fn gateway(&self, namespace: &str, name: &str) -> Option<&Gateway>;
}

/// A cache with nothing in it: for roles and tests that need no look-ups.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmptyCache;

impl CacheView for EmptyCache {
    fn node(&self, _: &str) -> Option<&Node> {
        None
    }
    fn pod(&self, _: &str, _: &str) -> Option<&Pod> {
        None
    }
    fn service(&self, _: &str, _: &str) -> Option<&Service> {
        None
    }
    fn namespace(&self, _: &str) -> Option<&Namespace> {
        None
    }
    fn replica_set(&self, _: &str, _: &str) -> Option<&ReplicaSet> {
        None
    }
    fn job(&self, _: &str, _: &str) -> Option<&Job> {
        None
    }
    fn gateway(&self, _: &str, _: &str) -> Option<&Gateway> {
        None
    }
}

/// `attach_metadata` of a scrape job: which related objects' labels to add. A `null`
/// reads as false, as Prometheus' YAML decoder reads it (prometheus-operator writes
/// `node: null` for a ScrapeConfig's empty `attachMetadata`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttachMetadata {
    /// Add the labels and annotations of the pod's node (roles pod, endpoints,
    /// endpointslice).
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub node: bool,
    /// Add the labels and annotations of the object's namespace.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub namespace: bool,
    /// Add `__meta_kubernetes_pod_deployment_name`: the Deployment owning the pod's
    /// ReplicaSet (roles pod, endpoints, endpointslice; Prometheus 3.x).
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub deployment: bool,
    /// Add `__meta_kubernetes_pod_job_name`: the Job owning the pod.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub job: bool,
    /// Add `__meta_kubernetes_pod_cronjob_name`: the CronJob owning the pod's Job.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub cronjob: bool,
    /// kubesd's own, never read from a config: add [`CPU_REQUEST_LABEL`] to role pod's
    /// targets. Only the watch of a fleet's members asks for it
    /// (`membership.weight_from: cpu_request`), so no job's labels change.
    #[serde(skip)]
    pub cpu_request: bool,
}

/// The label of a pod's CPU request in cores (`0.5`), the sum of its containers' and
/// sidecars' ([`crate::model::PodSpec::cpu_request`]), on role pod's targets when
/// [`AttachMetadata::cpu_request`] asks for it and the pod requests any.
pub const CPU_REQUEST_LABEL: &str = "__meta_kubesd_pod_cpu_request";

impl AttachMetadata {
    /// Only what changes `role`'s labels: the node and the workload are read for a pod
    /// (its own, or an endpoint's), the namespace for every role but node. Two jobs
    /// whose `attach_metadata` differ only in what their role never reads get the
    /// same labels, so their group computes them once.
    pub fn for_role(self, role: Role) -> AttachMetadata {
        let reads_pods = matches!(role, Role::Pod | Role::Endpoints | Role::EndpointSlice);
        AttachMetadata {
            node: self.node && reads_pods,
            namespace: self.namespace && role != Role::Node,
            deployment: self.deployment && reads_pods,
            job: self.job && reads_pods,
            cronjob: self.cronjob && reads_pods,
            cpu_request: self.cpu_request && role == Role::Pod,
        }
    }
}

/// What shapes a job's targets besides the objects: the related metadata it attaches
/// and whose semantics it follows. Part of what makes groups distinct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TargetOptions {
    /// Which related metadata to attach.
    pub attach: AttachMetadata,
    /// Whose target semantics to follow.
    pub semantics: Semantics,
}

impl<'a> TargetContext<'a> {
    /// The context of `options`, looking related objects up in `cache`.
    pub fn new(options: TargetOptions, cache: &'a dyn CacheView) -> TargetContext<'a> {
        TargetContext {
            attach: options.attach,
            semantics: options.semantics,
            cache,
        }
    }
}

/// Everything label generation needs besides the object itself.
#[derive(Clone, Copy)]
pub struct TargetContext<'a> {
    /// Which related metadata to attach.
    pub attach: AttachMetadata,
    /// Whose target semantics to follow.
    pub semantics: Semantics,
    /// The cache to look related objects up in.
    pub cache: &'a dyn CacheView,
}

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

/// `host:port`, bracketing IPv6 hosts as Go's `net.JoinHostPort` does.
pub fn join_host_port(host: &str, port: i64) -> ArcStr {
    // Pushed, not `format!`ted: one address per target, and the formatting machinery
    // costs more than the rest of building it.
    let mut address = String::with_capacity(host.len() + 8);
    if host.contains(':') {
        address.push('[');
        address.push_str(host);
        address.push(']');
    } else {
        address.push_str(host);
    }
    address.push(':');
    address.push_str(itoa::Buffer::new().format(port));
    ArcStr::from(address)
}
