//! Role `grpcroute`: one target per hostname and method match of a GRPCRoute; in
//! VictoriaMetrics' semantics, per attached listener too (see [`super::listeners`]).

use arcstr::ArcStr;

use super::context::TargetContext;
use super::listeners::{admitted_hostnames, attached_listeners};
use super::meta::GRPCROUTE;
use super::route_common::{RouteNames, own_hostnames, route_common_labels};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{GrpcMethodMatch, GrpcRoute, GrpcRouteRule};

const NAMES: RouteNames = RouteNames {
    name: "__meta_kubernetes_grpcroute_name",
    parent_ref_name: "__meta_kubernetes_grpcroute_parent_ref_name",
    prefixes: &GRPCROUTE,
};

/// The targets of a GRPCRoute.
pub(super) fn grpcroute_targets(route: &GrpcRoute, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let common = route_common_labels(&NAMES, &route.metadata, &route.spec.parent_refs, ctx);
    if ctx.semantics.routes_follow_listeners() {
        listener_targets(route, &common, ctx)
    } else {
        hostname_targets(route, &common)
    }
}

/// Prometheus' semantics (the draft has no GRPCRoute; named as its HTTPRoute labels
/// are): hostname × rule × match, `…_hostname`, `…_service` and `…_method`.
fn hostname_targets(route: &GrpcRoute, common: &Labels) -> Vec<Labels> {
    let mut targets = Vec::new();
    for host in own_hostnames(&route.spec.hostnames) {
        for method in route.spec.rules.iter().flat_map(rule_methods) {
            let mut b = LabelsBuilder::new();
            b.add(arcstr::literal!("__address__"), ArcStr::clone(&host));
            b.add("__meta_kubernetes_grpcroute_hostname", ArcStr::clone(&host));
            b.add("__meta_kubernetes_grpcroute_service", method.service);
            b.add("__meta_kubernetes_grpcroute_method", method.method);
            targets.push(common.merged(b));
        }
    }
    targets
}

/// VictoriaMetrics: listener × rule × match × admitted hostname, `…_scheme` and
/// `…_host`; the match itself gives no label, so two matches give equal targets.
fn listener_targets(route: &GrpcRoute, common: &Labels, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let mut targets = Vec::new();
    let listeners = attached_listeners(&route.metadata.namespace, &route.spec.parent_refs, ctx);
    for listener in listeners {
        let hosts = admitted_hostnames(&listener.hostname, &route.spec.hostnames);
        let scheme = ArcStr::from(listener.protocol.to_ascii_lowercase());
        for _ in route.spec.rules.iter().flat_map(rule_methods) {
            for host in &hosts {
                let mut b = LabelsBuilder::new();
                b.add(arcstr::literal!("__address__"), ArcStr::clone(host));
                b.add("__meta_kubernetes_grpcroute_scheme", ArcStr::clone(&scheme));
                b.add("__meta_kubernetes_grpcroute_host", ArcStr::clone(host));
                targets.push(common.merged(b));
            }
        }
    }
    targets
}

/// The method matches of a rule; a rule without matches matches every call, so gives
/// one empty match.
fn rule_methods(rule: &GrpcRouteRule) -> Vec<GrpcMethodMatch> {
    if rule.matches.is_empty() {
        return vec![GrpcMethodMatch::default()];
    }
    rule.matches.iter().map(|m| m.method.clone()).collect()
}
