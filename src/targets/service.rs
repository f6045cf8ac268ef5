//! Role `service`: one target per service port, at `<name>.<namespace>.svc:<port>`.

use arcstr::ArcStr;

use super::meta::{SERVICE, add_labels_and_annotations, add_namespace_metadata};
use super::{TargetContext, join_host_port};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::Service;

/// The targets of a service.
pub(super) fn service_targets(svc: &Service, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let host = format!("{}.{}.svc", svc.metadata.name, svc.metadata.namespace);
    let mut common = LabelsBuilder::new();
    add_service_common_labels(&mut common, svc, ctx);
    let common = common.finish();
    svc.spec
        .ports
        .iter()
        .map(|port| {
            let mut b = LabelsBuilder::new();
            b.add(
                arcstr::literal!("__address__"),
                join_host_port(&host, port.port),
            );
            b.add(
                arcstr::literal!("__meta_kubernetes_service_port_name"),
                ArcStr::clone(&port.name),
            );
            b.add(
                arcstr::literal!("__meta_kubernetes_service_port_number"),
                crate::labels::port_string(port.port),
            );
            b.add(
                arcstr::literal!("__meta_kubernetes_service_port_protocol"),
                ArcStr::clone(&port.protocol),
            );
            common.merged(b)
        })
        .collect()
}

/// The labels of a service; also added to endpoint and endpointslice targets of it.
pub(super) fn add_service_common_labels(
    b: &mut LabelsBuilder,
    svc: &Service,
    ctx: &TargetContext<'_>,
) {
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&svc.metadata.namespace),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_service_name"),
        ArcStr::clone(&svc.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_service_type"),
        ArcStr::clone(&svc.spec.kind),
    );
    if &*svc.spec.kind == "ExternalName" {
        b.add(
            arcstr::literal!("__meta_kubernetes_service_external_name"),
            ArcStr::clone(&svc.spec.external_name),
        );
    } else {
        b.add(
            arcstr::literal!("__meta_kubernetes_service_cluster_ip"),
            ArcStr::clone(&svc.spec.cluster_ip),
        );
    }
    add_labels_and_annotations(b, &SERVICE, &svc.metadata);
    add_namespace_metadata(b, ctx, &svc.metadata.namespace);
}
