//! Role `service`: one target per service port, at `<name>.<namespace>.svc:<port>`.

use arcstr::ArcStr;

use super::address::join_host_port;
use super::context::TargetContext;
use super::meta::{SERVICE, add_labels_and_annotations, add_namespace_metadata};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::Service;

/// The targets of a service.
pub(super) fn service_targets(svc: &Service, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let host = format!("{}.{}.svc", svc.metadata.name, svc.metadata.namespace);
    let mut common = LabelsBuilder::new();
    add_service_labels(&mut common, svc);
    add_service_spec_labels(&mut common, svc, ctx);
    add_namespace_metadata(&mut common, ctx, &svc.metadata.namespace);
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

/// The labels naming a service: its namespace, name, labels and annotations. Also on
/// endpoint and endpointslice targets of it.
pub(super) fn add_service_labels(b: &mut LabelsBuilder, svc: &Service) {
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&svc.metadata.namespace),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_service_name"),
        ArcStr::clone(&svc.metadata.name),
    );
    add_labels_and_annotations(b, &SERVICE, &svc.metadata);
}

/// The labels of a service's spec: its type, its cluster IP or external name, and, for
/// a `LoadBalancer` where the semantics labels it, its load balancer's IPs.
pub(super) fn add_service_spec_labels(
    b: &mut LabelsBuilder,
    svc: &Service,
    ctx: &TargetContext<'_>,
) {
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
    if &*svc.spec.kind == "LoadBalancer" && ctx.semantics.labels_load_balancer_ip() {
        b.add(
            arcstr::literal!("__meta_kubernetes_service_loadbalancer_ip"),
            load_balancer_ips(svc),
        );
    }
}

/// The IPs of `status.loadBalancer.ingress`, comma-separated, or the deprecated
/// `spec.loadBalancerIP` when there are none (Prometheus' `loadBalancerIPs`).
fn load_balancer_ips(svc: &Service) -> ArcStr {
    let ips: Vec<&str> = svc
        .status
        .load_balancer
        .ingress
        .iter()
        .map(|i| &*i.ip)
        .filter(|ip| !ip.is_empty())
        .collect();
    if ips.is_empty() {
        ArcStr::clone(&svc.spec.load_balancer_ip)
    } else {
        ArcStr::from(ips.join(","))
    }
}

/// The service's labels on an endpoint or endpointslice target: its name, labels and
/// annotations; its spec's labels and its namespace's metadata where the semantics puts
/// them there.
pub(super) fn add_service_labels_for_endpoints(
    b: &mut LabelsBuilder,
    svc: &Service,
    ctx: &TargetContext<'_>,
) {
    add_service_labels(b, svc);
    if ctx.semantics.endpoints_carry_service_spec() {
        add_service_spec_labels(b, svc, ctx);
    }
    if !ctx.semantics.endpoints_namespace_from_object() {
        add_namespace_metadata(b, ctx, &svc.metadata.namespace);
    }
}
