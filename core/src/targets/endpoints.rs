//! Role `endpoints`: one target per address and port of each subset, plus one per
//! container port of a backing pod that no endpoint port covers (the parts shared with
//! the endpointslice role are in `endpoint_targets.rs`).

use arcstr::ArcStr;

use super::address::join_host_port;
use super::context::TargetContext;
use super::endpoint_targets::{ENDPOINTS_ROLE, EndpointTargets};
use super::meta::bool_str;
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{EndpointAddress, EndpointPort, Endpoints};

/// The targets of an Endpoints object.
pub(super) fn endpoints_targets(eps: &Endpoints, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let meta = &eps.metadata;
    // The service has the Endpoints object's name.
    let svc = ctx.cache.service(&meta.namespace, &meta.name);
    let semantics = ctx.semantics;
    let mut targets = EndpointTargets::new(
        &ENDPOINTS_ROLE,
        meta,
        svc,
        semantics.endpoints_port_match(),
        ctx,
    );
    let endpoint_protocol = semantics.endpoints_protocol_from_endpoint();
    for subset in &eps.subsets {
        for port in &subset.ports {
            for (addresses, ready) in [
                (&subset.addresses, true),
                (&subset.not_ready_addresses, false),
            ] {
                for addr in addresses {
                    let mut own = address_labels(eps, addr, port, ready);
                    targets.add_target_ref(&mut own, &addr.target_ref);
                    targets.add_address_node(&mut own, &addr.node_name, &addr.target_ref);
                    let pod = targets.backing_pod(&addr.target_ref);
                    let protocol = endpoint_protocol.then_some(&port.protocol);
                    targets.push(own, pod, port.port.unwrap_or(0), protocol);
                }
            }
        }
    }
    targets.finish(|_| {})
}

/// The labels of one address and port that are the endpoints role's own (the
/// `targetRef`'s are added by [`EndpointTargets::add_target_ref`]).
fn address_labels(
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
