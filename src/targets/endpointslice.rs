//! Role `endpointslice`: one target per endpoint address and slice port, plus one per
//! container port of a backing pod that no slice port covers.

use arcstr::ArcStr;

use super::backing_pods::{BackingPods, InitContainers};
use super::meta::{ENDPOINTSLICE, add_labels_and_annotations, bool_str, true_str};
use super::service::add_service_common_labels;
use super::{TargetContext, join_host_port};
use crate::labels::{Labels, LabelsBuilder, prefixed_label_name};
use crate::model::{Endpoint, EndpointPort, EndpointSlice};

/// The label that names a slice's service.
const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The targets of an EndpointSlice.
pub(super) fn endpointslice_targets(eps: &EndpointSlice, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let meta = &eps.metadata;
    let svc = meta
        .labels
        .get(SERVICE_NAME_LABEL)
        .and_then(|name| ctx.cache.service(&meta.namespace, name));
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
                let mut b = endpoint_labels(eps, address, endpoint, port);
                if let Some(svc) = svc {
                    add_service_common_labels(&mut b, svc, ctx);
                }
                add_labels_and_annotations(&mut b, &ENDPOINTSLICE, meta);
                if let Some(pod) = pod {
                    pods.add_matching_container(&mut b, pod, port.port, ctx);
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
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_target_kind"),
            "Pod",
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_target_name"),
            ArcStr::clone(&pod.metadata.name),
        );
        if let Some(svc) = svc {
            add_service_common_labels(b, svc, ctx);
        }
        add_labels_and_annotations(b, &ENDPOINTSLICE, meta);
    });
    targets
}

fn endpoint_labels(
    eps: &EndpointSlice,
    address: &str,
    ep: &Endpoint,
    port: &EndpointPort,
) -> LabelsBuilder {
    let mut b = LabelsBuilder::new();
    b.add(
        arcstr::literal!("__address__"),
        join_host_port(address, port.port),
    );
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
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_ready"),
        bool_str(ep.conditions.ready),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_serving"),
        bool_str(ep.conditions.serving),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_endpoint_conditions_terminating"),
        bool_str(ep.conditions.terminating),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_port_name"),
        ArcStr::clone(&port.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpointslice_port"),
        crate::labels::port_string(port.port),
    );
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
    for (k, v) in ep.topology.iter() {
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
    b
}
