//! Role `gateway`: one target per listener, at its `hostname:port` (Prometheus' draft;
//! VictoriaMetrics has no such role, so both semantics give the same targets).

use arcstr::ArcStr;

use super::address::join_host_port;
use super::context::TargetContext;
use super::meta::{GATEWAY, add_labels_and_annotations, add_namespace_metadata};
use crate::labels::{Labels, LabelsBuilder, port_string};
use crate::model::Gateway;

/// The targets of a Gateway.
pub(super) fn gateway_targets(gw: &Gateway, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let mut common = LabelsBuilder::new();
    common.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&gw.metadata.namespace),
    );
    common.add(
        "__meta_kubernetes_gateway_name",
        ArcStr::clone(&gw.metadata.name),
    );
    common.add(
        "__meta_kubernetes_gateway_class_name",
        ArcStr::clone(&gw.spec.gateway_class_name),
    );
    add_labels_and_annotations(&mut common, &GATEWAY, &gw.metadata);
    add_namespace_metadata(&mut common, ctx, &gw.metadata.namespace);
    let common = common.finish();
    gw.spec
        .listeners
        .iter()
        .map(|l| {
            let mut b = LabelsBuilder::new();
            b.add(
                arcstr::literal!("__address__"),
                join_host_port(&l.hostname, l.port),
            );
            b.add(
                "__meta_kubernetes_gateway_listener_name",
                ArcStr::clone(&l.name),
            );
            b.add(
                "__meta_kubernetes_gateway_listener_hostname",
                ArcStr::clone(&l.hostname),
            );
            b.add(
                "__meta_kubernetes_gateway_listener_port",
                port_string(l.port),
            );
            b.add(
                "__meta_kubernetes_gateway_listener_protocol",
                ArcStr::clone(&l.protocol),
            );
            common.merged(b)
        })
        .collect()
}
