//! Role `endpointslice`: one target per endpoint address and slice port, plus one per
//! container port of a backing pod that no slice port covers.

use arcstr::ArcStr;

use super::address::join_host_port;
use super::context::TargetContext;
use super::endpoint_targets::{ENDPOINTSLICE_ROLE, EndpointTargets};
use super::meta::{bool_str, true_str};
use super::semantics::InitContainers;
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
    let mut targets =
        EndpointTargets::new(&ENDPOINTSLICE_ROLE, meta, svc, InitContainers::All, ctx);
    for endpoint in &eps.endpoints {
        let pod = targets.backing_pod(&endpoint.target_ref);
        for port in &eps.ports {
            for address in &endpoint.addresses {
                let mut own = endpoint_labels(eps, address, endpoint, port, ctx);
                targets.add_target_ref(&mut own, &endpoint.target_ref);
                targets.add_address_node(&mut own, &endpoint.node_name, &endpoint.target_ref);
                targets.push(own, pod, port.port.unwrap_or(0), None);
            }
        }
    }
    targets.finish(|b| {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpointslice_address_type"),
            ArcStr::clone(&eps.address_type),
        );
    })
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

/// The labels of one endpoint address and slice port that are the endpointslice
/// role's own (the `targetRef`'s are added by [`EndpointTargets::add_target_ref`]).
fn endpoint_labels(
    eps: &EndpointSlice,
    address: &str,
    ep: &Endpoint,
    port: &EndpointPort,
    ctx: &TargetContext<'_>,
) -> LabelsBuilder {
    let mut b = LabelsBuilder::new();
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
    add_conditions(&mut b, ep, semantics.absent_condition());
    add_port(&mut b, port, number);
    add_endpoint(&mut b, ep, semantics.reads_v1_topology());
    b
}

/// The endpoint's `ready`, `serving` and `terminating` conditions; an absent one as
/// `absent` says (the semantics' default, or none).
fn add_conditions(b: &mut LabelsBuilder, ep: &Endpoint, absent: Option<bool>) {
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
}

/// The slice port's name, number (when it has one), protocol and app protocol.
fn add_port(b: &mut LabelsBuilder, port: &EndpointPort, number: Option<i64>) {
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
}

/// The endpoint's hostname, node and topology; with `v1_topology` (Prometheus'
/// semantics) v1's `deprecatedTopology` and `zone` too.
fn add_endpoint(b: &mut LabelsBuilder, ep: &Endpoint, v1_topology: bool) {
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
    if v1_topology {
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
