//! What the endpoints and endpointslice roles share: one target per address and port,
//! built from the address's own labels, the object's (and its service's), and its
//! backing pod's; the node labels of an address; and the targets of the pods' ports no
//! endpoint port covers ([`BackingPods`]).
//!
//! Each role keeps its own address labels (`endpoints.rs`, `endpointslice.rs`); where
//! the two roles differ in what they share, [`EndpointRole`] says so by name, and where
//! the two semantics differ, [`super::Semantics`] does.

use std::collections::HashMap;

use arcstr::ArcStr;

use super::backing_pods::{BackingPods, related_of_backing_pod};
use super::context::TargetContext;
use super::meta::{
    ENDPOINTS, ENDPOINTSLICE, MetaPrefixes, add_labels_and_annotations, add_namespace_metadata,
    add_node_metadata,
};
use super::pod::add_pod_common_labels;
use super::semantics::{EndpointNode, InitContainers};
use super::service::add_service_labels_for_endpoints;
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{ObjectMeta, ObjectReference, Pod, Service};

/// What sets the two endpoint roles apart in the parts they share.
pub(super) struct EndpointRole {
    /// The label naming the object (`__meta_kubernetes_endpoints_name`).
    name: ArcStr,
    /// The label of an address's `targetRef` kind.
    target_kind: ArcStr,
    /// The label of an address's `targetRef` name.
    target_name: ArcStr,
    /// The prefixes of the object's own labels and annotations.
    meta: &'static MetaPrefixes,
    /// Which of an address's references to a node gives its node labels.
    node_ref: NodeRefOrder,
}

/// Which of an address's two references to a node wins when both are set: each role
/// as Prometheus' code has it (`endpoints.go`, `endpointslice.go`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeRefOrder {
    /// `nodeName`, else a `targetRef` of kind Node (endpoints).
    NodeNameFirst,
    /// A `targetRef` of kind Node, else `nodeName` (endpointslice).
    TargetRefFirst,
}

/// Role `endpoints`.
pub(super) static ENDPOINTS_ROLE: EndpointRole = EndpointRole {
    name: arcstr::literal!("__meta_kubernetes_endpoints_name"),
    target_kind: arcstr::literal!("__meta_kubernetes_endpoint_address_target_kind"),
    target_name: arcstr::literal!("__meta_kubernetes_endpoint_address_target_name"),
    meta: &ENDPOINTS,
    node_ref: NodeRefOrder::NodeNameFirst,
};

/// Role `endpointslice`.
pub(super) static ENDPOINTSLICE_ROLE: EndpointRole = EndpointRole {
    name: arcstr::literal!("__meta_kubernetes_endpointslice_name"),
    target_kind: arcstr::literal!("__meta_kubernetes_endpointslice_address_target_kind"),
    target_name: arcstr::literal!("__meta_kubernetes_endpointslice_address_target_name"),
    meta: &ENDPOINTSLICE,
    node_ref: NodeRefOrder::TargetRefFirst,
};

/// The targets of one Endpoints object or EndpointSlice, as they are built.
///
/// A target's labels are added in this order, a later one winning over an earlier one
/// of the same name: the address's, the object's (with its service's), the backing
/// pod's, the matched container's. All but the address's and the container's are the
/// same for every target of one pod (or of no pod), so they are built once per pod and
/// shared; the address's labels that the shared part also has lose to it, as they would
/// have lost to a later addition.
pub(super) struct EndpointTargets<'a> {
    role: &'static EndpointRole,
    ctx: &'a TargetContext<'a>,
    /// The object's own name, for its uncovered-port targets.
    object_name: &'a ArcStr,
    /// The labels every target has from the object and its service.
    object: Labels,
    /// The shared part of the targets without a backing pod.
    podless: Option<Labels>,
    /// The shared part of each backing pod's targets.
    per_pod: HashMap<*const Pod, Labels>,
    pods: BackingPods<'a>,
    targets: Vec<Labels>,
}

impl<'a> EndpointTargets<'a> {
    /// No targets yet for the object of `role` with `meta`, backed by the service
    /// `svc` if cached; endpoint ports may match the containers `matched` allows.
    pub(super) fn new(
        role: &'static EndpointRole,
        meta: &'a ObjectMeta,
        svc: Option<&Service>,
        matched: InitContainers,
        ctx: &'a TargetContext<'a>,
    ) -> Self {
        let mut object = LabelsBuilder::new();
        if ctx.semantics.endpoints_namespace_from_object() {
            // Also the namespace itself: an uncovered-port target has no address
            // labels, and its backing pod's part carries no namespace in this semantics.
            object.add(
                arcstr::literal!("__meta_kubernetes_namespace"),
                ArcStr::clone(&meta.namespace),
            );
            add_namespace_metadata(&mut object, ctx, &meta.namespace);
        }
        if let Some(svc) = svc {
            add_service_labels_for_endpoints(&mut object, svc, ctx);
        }
        add_labels_and_annotations(&mut object, role.meta, meta);
        EndpointTargets {
            role,
            ctx,
            object_name: &meta.name,
            object: object.finish(),
            podless: None,
            per_pod: HashMap::new(),
            pods: BackingPods::new(matched),
            targets: Vec::new(),
        }
    }

    /// The cached pod an address's `targetRef` names, if it names one.
    pub(super) fn backing_pod(&self, target_ref: &ObjectReference) -> Option<&'a Pod> {
        if &*target_ref.kind == "Pod" {
            self.ctx.cache.pod(&target_ref.namespace, &target_ref.name)
        } else {
            None
        }
    }

    /// Adds the node labels of an address (`attach_metadata.node`) where the semantics
    /// takes them from the address ([`EndpointNode::FromAddress`]); otherwise they come
    /// with the backing pod.
    pub(super) fn add_address_node(
        &self,
        own: &mut LabelsBuilder,
        node_name: &str,
        target_ref: &ObjectReference,
    ) {
        if self.ctx.semantics.endpoint_node() != EndpointNode::FromAddress {
            return;
        }
        let by_ref = (&*target_ref.kind == "Node").then_some(&*target_ref.name);
        let by_name = (!node_name.is_empty()).then_some(node_name);
        let node = match self.role.node_ref {
            NodeRefOrder::NodeNameFirst => by_name.or(by_ref),
            NodeRefOrder::TargetRefFirst => by_ref.or(by_name),
        };
        if let Some(node) = node {
            add_node_metadata(own, self.ctx, node);
        }
    }

    /// Adds the labels naming an address's `targetRef`, if it has one.
    pub(super) fn add_target_ref(&self, own: &mut LabelsBuilder, target_ref: &ObjectReference) {
        if !target_ref.kind.is_empty() {
            own.add(
                ArcStr::clone(&self.role.target_kind),
                ArcStr::clone(&target_ref.kind),
            );
            own.add(
                ArcStr::clone(&self.role.target_name),
                ArcStr::clone(&target_ref.name),
            );
        }
    }

    /// Adds the target of one address and port: `own` are the address's labels, `pod`
    /// its backing pod, `port` the endpoint port's number and `protocol`, when given,
    /// the protocol that replaces the matched container port's.
    pub(super) fn push(
        &mut self,
        mut own: LabelsBuilder,
        pod: Option<&'a Pod>,
        port: i64,
        protocol: Option<&ArcStr>,
    ) {
        let (object, ctx) = (&self.object, self.ctx);
        let shared = match pod {
            Some(pod) => self
                .per_pod
                .entry(std::ptr::from_ref(pod))
                .or_insert_with(|| {
                    let mut b = LabelsBuilder::from_labels(object);
                    add_pod_common_labels(&mut b, pod, ctx, related_of_backing_pod(ctx));
                    b.finish()
                })
                .clone(),
            None => self.podless.get_or_insert_with(|| object.clone()).clone(),
        };
        own.remove_names_in(&shared);
        if let Some(pod) = pod {
            self.pods
                .add_matching_container_labels(&mut own, pod, port, protocol);
        }
        self.targets.push(shared.merged(own));
    }

    /// The targets, with one more per container port of a backing pod that no endpoint
    /// port covered; `add_role_labels` adds the object's labels such a target has
    /// besides its name (the slice's address type).
    pub(super) fn finish(self, add_role_labels: impl Fn(&mut LabelsBuilder)) -> Vec<Labels> {
        let EndpointTargets {
            role,
            ctx,
            object_name,
            object,
            pods,
            mut targets,
            ..
        } = self;
        let names_pod = ctx.semantics.uncovered_ports_name_their_pod();
        pods.add_uncovered_ports(&mut targets, ctx, |b, pod| {
            b.add(ArcStr::clone(&role.name), ArcStr::clone(object_name));
            add_role_labels(b);
            if names_pod {
                b.add(ArcStr::clone(&role.target_kind), "Pod");
                b.add(
                    ArcStr::clone(&role.target_name),
                    ArcStr::clone(&pod.metadata.name),
                );
            }
            b.add_all(&object);
        });
        targets
    }
}
