//! Role `endpointslice`: one target per endpoint address and slice port, plus one per
//! container port of a backing pod that no slice port covers.

use arcstr::ArcStr;

use super::backing_pods::BackingPods;
use super::meta::{
    ENDPOINTSLICE, add_labels_and_annotations, add_namespace_metadata, add_node_metadata, bool_str,
    true_str,
};
use super::service::add_service_labels_for_endpoints;
use super::{EndpointNode, InitContainers, TargetContext, join_host_port};
use crate::labels::{Labels, LabelsBuilder, prefixed_label_name};
use crate::model::{Endpoint, EndpointPort, EndpointSlice, Service, StringMap};

/// The label that names a slice's service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The targets of an EndpointSlice.
pub(super) fn endpointslice_targets(eps: &EndpointSlice, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let meta = &eps.metadata;
    let semantics = ctx.semantics;
    let svc = meta
        .labels
        .get(SERVICE_NAME_LABEL)
        .and_then(|name| ctx.cache.service(&meta.namespace, name));
    if semantics.skips_secondary_family_slices() && svc.is_some_and(|s| is_secondary_family(s, eps))
    {
        return Vec::new();
    }
    // Both semantics let a slice port match any init container (VictoriaMetrics: corpus
    // cases `endpointslice/init-port-target-*` match a plain init container's port).
    let mut pods = BackingPods::new(InitContainers::All);
    let mut targets = Vec::new();
    for endpoint in &eps.endpoints {
        let pod = if &*endpoint.target_ref.kind == "Pod" {
            ctx.cache
                .pod(&endpoint.target_ref.namespace, &endpoint.target_ref.name)
        } else {
            None
        };
        for port in &eps.ports {
            for address in &endpoint.addresses {
                let mut b = LabelsBuilder::new();
                add_owner_labels(&mut b, eps, svc, ctx);
                add_endpoint_labels(&mut b, eps, address, endpoint, port, ctx);
                if semantics.endpoint_node() == EndpointNode::FromAddress {
                    add_endpoint_node_metadata(&mut b, endpoint, ctx);
                }
                if let Some(pod) = pod {
                    pods.add_matching_container(&mut b, pod, port.port.unwrap_or(0), ctx);
                }
                targets.push(b.finish());
            }
        }
    }
    pods.add_uncovered_ports(&mut targets, ctx, |b, pod| {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_name"),
            ArcStr::clone(&meta.name),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_type"),
            ArcStr::clone(&eps.address_type),
        );
        if semantics.uncovered_ports_name_their_pod() {
            b.add(
                arcstr::literal!("__meta_kubernetes_endpointslice_address_target_kind"),
                "Pod",
            );
            b.add(
                arcstr::literal!("__meta_kubernetes_endpointslice_address_target_name"),
                ArcStr::clone(&pod.metadata.name),
            );
        }
        add_owner_labels(b, eps, svc, ctx);
    });
    targets
}

/// True for the slice of a dual-stack service (`PreferDualStack`/`RequireDualStack`)
/// whose address type is not the service's primary IP family: its targets would repeat
/// the primary slice's (Prometheus' `nonPrimaryIPFamilySlice`).
fn is_secondary_family(svc: &Service, eps: &EndpointSlice) -> bool {
    let dual_stack = matches!(
        &*svc.spec.ip_family_policy,
        "PreferDualStack" | "RequireDualStack"
    );
    match svc.spec.ip_families.first() {
        Some(primary) if dual_stack => *eps.address_type != **primary,
        _ => false,
    }
}

/// The labels every target of the slice has from the slice and its service: the
/// service's (see [`add_service_labels_for_endpoints`]), the slice's labels and
/// annotations and, where the semantics takes them from the slice, its namespace and
/// the namespace's metadata.
fn add_owner_labels(
    b: &mut LabelsBuilder,
    eps: &EndpointSlice,
    svc: Option<&Service>,
    ctx: &TargetContext<'_>,
) {
    if ctx.semantics.endpoints_namespace_from_object() {
        // Also the namespace itself: an uncovered-port target has no endpoint labels,
        // and its backing pod's part carries no namespace in this semantics.
        b.add(
            arcstr::literal!("__meta_kubernetes_namespace"),
            ArcStr::clone(&eps.metadata.namespace),
        );
        add_namespace_metadata(b, ctx, &eps.metadata.namespace);
    }
    if let Some(svc) = svc {
        add_service_labels_for_endpoints(b, svc, ctx);
    }
    add_labels_and_annotations(b, &ENDPOINTSLICE, &eps.metadata);
}

/// Prometheus' node labels of an endpoint: through its `targetRef` when that names a
/// Node, else through its `nodeName`.
fn add_endpoint_node_metadata(b: &mut LabelsBuilder, ep: &Endpoint, ctx: &TargetContext<'_>) {
    if &*ep.target_ref.kind == "Node" {
        add_node_metadata(b, ctx, &ep.target_ref.name);
    } else if !ep.node_name.is_empty() {
        add_node_metadata(b, ctx, &ep.node_name);
    }
}

fn add_endpoint_labels(
    b: &mut LabelsBuilder,
    eps: &EndpointSlice,
    address: &str,
    ep: &Endpoint,
    port: &EndpointPort,
    ctx: &TargetContext<'_>,
) {
    let semantics = ctx.semantics;
    let number = port.port.or(semantics.absent_slice_port());
    let address = match number {
        Some(number) => join_host_port(address, number),
        None => ArcStr::from(address),
    };
    b.add(arcstr::literal!("__address__"), address);
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&eps.metadata.namespace),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_name"),
        ArcStr::clone(&eps.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_address_type"),
        ArcStr::clone(&eps.address_type),
    );
    let absent = semantics.absent_condition();
    for (name, value) in [
        (
            arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_ready"),
            ep.conditions.ready,
        ),
        (
            arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_serving"),
            ep.conditions.serving,
        ),
        (
            arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_terminating"),
            ep.conditions.terminating,
        ),
    ] {
        if let Some(value) = value.or(absent) {
            b.add(name, bool_str(value));
        }
    }
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_port_name"),
        ArcStr::clone(&port.name),
    );
    if let Some(number) = number {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_port"),
            crate::labels::port_string(number),
        );
    }
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_port_protocol"),
        ArcStr::clone(&port.protocol),
    );
    if !port.app_protocol.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_port_app_protocol"),
            ArcStr::clone(&port.app_protocol),
        );
    }
    if !ep.target_ref.kind.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_target_kind"),
            ArcStr::clone(&ep.target_ref.kind),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_target_name"),
            ArcStr::clone(&ep.target_ref.name),
        );
    }
    if !ep.hostname.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_hostname"),
            ArcStr::clone(&ep.hostname),
        );
    }
    if !ep.node_name.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_node_name"),
            ArcStr::clone(&ep.node_name),
        );
    }
    add_topology(b, &ep.topology);
    if semantics.reads_v1_topology() {
        add_topology(b, &ep.deprecated_topology);
        if !ep.zone.is_empty() {
            b.add(
                arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_zone"),
                ArcStr::clone(&ep.zone),
            );
        }
    }
}

/// `…_endpoint_topology_<key>` and `…_topology_present_<key>` for each entry.
fn add_topology(b: &mut LabelsBuilder, topology: &StringMap) {
    for (k, v) in topology.iter() {
        b.add(
            prefixed_label_name("__meta_kubernetes_endpointslice_endpoint_topology_", k),
            ArcStr::clone(v),
        );
        b.add(
            prefixed_label_name(
                "__meta_kubernetes_endpointslice_endpoint_topology_present_",
                k,
            ),
            true_str(),
        );
    }
}
