//! Role `endpoints`: one target per address and port of each subset, plus one per
//! container port of a backing pod that no endpoint port covers.

use arcstr::ArcStr;
use std::collections::HashMap;

use super::backing_pods::{BackingPods, related_of_backing_pod};
use super::meta::{
    ENDPOINTS, add_labels_and_annotations, add_namespace_metadata, add_node_metadata, bool_str,
};
use super::pod::add_pod_common_labels;
use super::service::add_service_labels_for_endpoints;
use super::{EndpointNode, TargetContext, join_host_port};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{EndpointAddress, EndpointPort, Endpoints, Pod, Service};

/// The targets of an Endpoints object.
pub(super) fn endpoints_targets(eps: &Endpoints, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let meta = &eps.metadata;
    // The service has the Endpoints object's name.
    let svc = ctx.cache.service(&meta.namespace, &meta.name);
    let semantics = ctx.semantics;
    let mut pods = BackingPods::new(semantics.endpoints_port_match());
    let related = related_of_backing_pod(ctx);
    let endpoint_protocol = semantics.endpoints_protocol_from_endpoint();
    let mut targets = Vec::new();
    // A target's labels are added in this order, a later one winning over an earlier
    // one of the same name: the address's, the service's, the object's, the backing
    // pod's, the matched container's. All but the address's and the container's are the
    // same for every target of one pod (or of no pod), so they are built once per pod
    // and shared; the address's labels that the shared part also has lose to it, as
    // they would have lost to a later addition.
    let mut owner = LabelsBuilder::new();
    add_owner_labels(&mut owner, eps, svc, ctx);
    let mut podless: Option<Labels> = None;
    let mut per_pod: HashMap<*const Pod, Labels> = HashMap::new();
    for subset in &eps.subsets {
        for port in &subset.ports {
            for (addresses, ready) in [
                (&subset.addresses, true),
                (&subset.not_ready_addresses, false),
            ] {
                for addr in addresses {
                    let mut own = endpoint_labels(eps, addr, port, ready);
                    if semantics.endpoint_node() == EndpointNode::FromAddress {
                        add_address_node_metadata(&mut own, addr, ctx);
                    }
                    let pod = if &*addr.target_ref.kind == "Pod" {
                        ctx.cache
                            .pod(&addr.target_ref.namespace, &addr.target_ref.name)
                    } else {
                        None
                    };
                    let shared = match pod {
                        Some(pod) => per_pod
                            .entry(std::ptr::from_ref(pod))
                            .or_insert_with(|| {
                                let mut b = owner.clone();
                                add_pod_common_labels(&mut b, pod, ctx, related);
                                b.finish()
                            })
                            .clone(),
                        None => podless
                            .get_or_insert_with(|| owner.clone().finish())
                            .clone(),
                    };
                    own.remove_names_in(&shared);
                    if let Some(pod) = pod {
                        let protocol = endpoint_protocol.then_some(&port.protocol);
                        let number = port.port.unwrap_or(0);
                        pods.add_matching_container_labels(&mut own, pod, number, protocol);
                    }
                    targets.push(shared.merged(own));
                }
            }
        }
    }
    pods.add_uncovered_ports(&mut targets, ctx, |b, pod| {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoints_name"),
            ArcStr::clone(&meta.name),
        );
        if semantics.uncovered_ports_name_their_pod() {
            b.add(
                arcstr::literal!("__meta_kubernetes_endpoint_address_target_kind"),
                "Pod",
            );
            b.add(
                arcstr::literal!("__meta_kubernetes_endpoint_address_target_name"),
                ArcStr::clone(&pod.metadata.name),
            );
        }
        add_owner_labels(b, eps, svc, ctx);
    });
    targets
}

/// The labels every target of the object has from the object itself and its service:
/// the service's (see [`add_service_labels_for_endpoints`]), the object's labels and
/// annotations and, where the semantics takes them from the object, its namespace and
/// the namespace's metadata.
fn add_owner_labels(
    b: &mut LabelsBuilder,
    eps: &Endpoints,
    svc: Option<&Service>,
    ctx: &TargetContext<'_>,
) {
    let meta = &eps.metadata;
    if ctx.semantics.endpoints_namespace_from_object() {
        b.add(
            arcstr::literal!("__meta_kubernetes_namespace"),
            ArcStr::clone(&meta.namespace),
        );
        add_namespace_metadata(b, ctx, &meta.namespace);
    }
    if let Some(svc) = svc {
        add_service_labels_for_endpoints(b, svc, ctx);
    }
    add_labels_and_annotations(b, &ENDPOINTS, meta);
}

/// Prometheus' node labels of an endpoint address: through its `nodeName`, else
/// through its `targetRef` when that names a Node.
fn add_address_node_metadata(
    b: &mut LabelsBuilder,
    addr: &EndpointAddress,
    ctx: &TargetContext<'_>,
) {
    if !addr.node_name.is_empty() {
        add_node_metadata(b, ctx, &addr.node_name);
    } else if &*addr.target_ref.kind == "Node" {
        add_node_metadata(b, ctx, &addr.target_ref.name);
    }
}

fn endpoint_labels(
    eps: &Endpoints,
    addr: &EndpointAddress,
    port: &EndpointPort,
    ready: bool,
) -> LabelsBuilder {
    let mut b = LabelsBuilder::new();
    b.add(
        arcstr::literal!("__address__"),
        join_host_port(&addr.ip, port.port.unwrap_or(0)),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&eps.metadata.namespace),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoints_name"),
        ArcStr::clone(&eps.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_ready"),
        bool_str(ready),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_port_name"),
        ArcStr::clone(&port.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_port_protocol"),
        ArcStr::clone(&port.protocol),
    );
    if !addr.target_ref.kind.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_kind"),
            ArcStr::clone(&addr.target_ref.kind),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_name"),
            ArcStr::clone(&addr.target_ref.name),
        );
    }
    if !addr.node_name.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_node_name"),
            ArcStr::clone(&addr.node_name),
        );
    }
    if !addr.hostname.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_hostname"),
            ArcStr::clone(&addr.hostname),
        );
    }
    b
}
