//! Role `node`: one target per node, at its kubelet.

use arcstr::ArcStr;
use std::collections::HashSet;

use super::address::join_host_port;
use super::context::TargetContext;
use super::meta::{NODE, add_labels_and_annotations};
use crate::labels::{Labels, LabelsBuilder, prefixed_label_name};
use crate::model::{Node, NodeAddress};

/// Which address of a node is scraped: the first address of the first type present.
const ADDRESS_PRIORITY: [&str; 6] = [
    "InternalIP",
    "InternalDNS",
    "ExternalIP",
    "ExternalDNS",
    "LegacyHostIP",
    "Hostname",
];

/// The target of a node; none for a node without a usable address.
pub(super) fn node_targets(node: &Node, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let skip_empty = ctx.semantics.node_address_skips_empty();
    let Some(address) = node_address(&node.status.addresses, skip_empty) else {
        return Vec::new();
    };
    let mut b = LabelsBuilder::new();
    let port = node.status.daemon_endpoints.kubelet_endpoint.port;
    b.add(
        arcstr::literal!("__address__"),
        join_host_port(address, port),
    );
    b.add(
        arcstr::literal!("instance"),
        ArcStr::clone(&node.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_node_name"),
        ArcStr::clone(&node.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_node_provider_id"),
        ArcStr::clone(&node.spec.provider_id),
    );
    add_labels_and_annotations(&mut b, &NODE, &node.metadata);
    if ctx.semantics.labels_node_conditions() {
        for c in &node.status.conditions {
            b.add(
                prefixed_label_name("__meta_kubernetes_node_condition_", &c.kind.to_lowercase()),
                ArcStr::from(c.status.to_lowercase()),
            );
        }
    }
    // One label per address type, from the first address of that type.
    // A set, not a scanned list: the address list's length is the object writer's
    // to choose (tests/huge_objects.rs).
    let mut seen: HashSet<&str> = HashSet::with_capacity(node.status.addresses.len());
    for a in &node.status.addresses {
        if !seen.insert(&a.kind) {
            continue;
        }
        b.add(
            prefixed_label_name("__meta_kubernetes_node_address_", &a.kind),
            ArcStr::clone(&a.address),
        );
    }
    vec![b.finish()]
}

/// Only the first address of each type is considered; when it is empty and `skip_empty`
/// (the semantics' choice) the next type is tried, not the next address of the same
/// type (corpus case `node/k3s-empty-internalip-first-*`).
fn node_address(addresses: &[NodeAddress], skip_empty: bool) -> Option<&str> {
    ADDRESS_PRIORITY.iter().find_map(|kind| {
        addresses
            .iter()
            .find(|a| &*a.kind == *kind)
            .map(|a| &*a.address)
            .filter(|a| !(skip_empty && a.is_empty()))
    })
}
