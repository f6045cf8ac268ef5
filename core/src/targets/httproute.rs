//! Role `httproute`: one target per hostname and path match of an HTTPRoute; in
//! VictoriaMetrics' semantics, per attached listener too (see [`super::listeners`]).

use arcstr::ArcStr;

use super::context::TargetContext;
use super::listeners::{admitted_hostnames, attached_listeners};
use super::meta::HTTPROUTE;
use super::route_common::{RouteNames, own_hostnames, route_common_labels};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{HttpRoute, HttpRouteRule};

const NAMES: RouteNames = RouteNames {
    name: "__meta_kubernetes_httproute_name",
    parent_ref_name: "__meta_kubernetes_httproute_parent_ref_name",
    prefixes: &HTTPROUTE,
};

/// The targets of an HTTPRoute.
pub(super) fn httproute_targets(route: &HttpRoute, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let common = route_common_labels(&NAMES, &route.metadata, &route.spec.parent_refs, ctx);
    if ctx.semantics.routes_follow_listeners() {
        listener_targets(route, &common, ctx)
    } else {
        hostname_targets(route, &common)
    }
}

/// Prometheus' draft: hostname × rule × path, `…_hostname` and `…_path`.
fn hostname_targets(route: &HttpRoute, common: &Labels) -> Vec<Labels> {
    let mut targets = Vec::new();
    for host in own_hostnames(&route.spec.hostnames) {
        for path in route.spec.rules.iter().flat_map(rule_paths) {
            let mut b = LabelsBuilder::new();
            b.add(arcstr::literal!("__address__"), ArcStr::clone(&host));
            b.add("__meta_kubernetes_httproute_hostname", ArcStr::clone(&host));
            b.add("__meta_kubernetes_httproute_path", path);
            targets.push(common.merged(b));
        }
    }
    targets
}

/// VictoriaMetrics: listener × rule × path × admitted hostname, `…_scheme` (the
/// listener's protocol in lower case), `…_host` and `…_path`.
fn listener_targets(route: &HttpRoute, common: &Labels, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let mut targets = Vec::new();
    let listeners = attached_listeners(&route.metadata.namespace, &route.spec.parent_refs, ctx);
    for listener in listeners {
        let hosts = admitted_hostnames(&listener.hostname, &route.spec.hostnames);
        let scheme = ArcStr::from(listener.protocol.to_ascii_lowercase());
        for path in route.spec.rules.iter().flat_map(rule_paths) {
            for host in &hosts {
                let mut b = LabelsBuilder::new();
                b.add(arcstr::literal!("__address__"), ArcStr::clone(host));
                b.add("__meta_kubernetes_httproute_scheme", ArcStr::clone(&scheme));
                b.add("__meta_kubernetes_httproute_host", ArcStr::clone(host));
                b.add("__meta_kubernetes_httproute_path", ArcStr::clone(&path));
                targets.push(common.merged(b));
            }
        }
    }
    targets
}

/// The paths of a rule's matches, `/` for a match without one; a rule without matches
/// matches every request, so gives `/` once.
fn rule_paths(rule: &HttpRouteRule) -> Vec<ArcStr> {
    if rule.matches.is_empty() {
        return vec![arcstr::literal!("/")];
    }
    rule.matches
        .iter()
        .map(|m| match &*m.path.value {
            "" => arcstr::literal!("/"),
            _ => ArcStr::clone(&m.path.value),
        })
        .collect()
}
