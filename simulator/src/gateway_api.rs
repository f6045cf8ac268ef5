//! The simulated cluster's Gateway API objects: one Gateway per namespace (an `http`
//! and an `https` listener for the namespace's wildcard hostname), an HTTPRoute for
//! every web workload (attached to one listener or both) and a GRPCRoute for every
//! tenth, and the changes churn makes to them (a path, a hostname, a re-parenting).
//!
//! Served as JSON only, as a real API server serves custom resources; a simulator can
//! stop serving them to stand for a cluster without the CRDs
//! ([`super::Simulator::set_gateway_api`]).

use serde_json::{Value, json};

use super::error::ApiError;
use super::resource::Resource;
use super::sim::Simulator;

/// What [`generate`] created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GeneratedRoutes {
    /// Gateways, one per namespace.
    pub gateways: usize,
    /// HTTPRoutes.
    pub http_routes: usize,
    /// GRPCRoutes.
    pub grpc_routes: usize,
}

/// The name of every namespace's Gateway.
pub const GATEWAY_NAME: &str = "edge";

/// The wildcard hostname of namespace `ns`'s listeners.
pub fn listener_hostname(ns: &str) -> String {
    format!("*.{ns}.example.com")
}

/// A Gateway in `ns` with an `http` (80) and an `https` (443) listener for
/// [`listener_hostname`].
pub fn gateway_object(ns: &str) -> Value {
    let hostname = listener_hostname(ns);
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": GATEWAY_NAME, "namespace": ns, "labels": {"gateway": GATEWAY_NAME}},
        "spec": {
            "gatewayClassName": "kubesd-sim",
            "listeners": [
                {"name": "http", "hostname": hostname, "port": 80, "protocol": "HTTP",
                 "allowedRoutes": {"namespaces": {"from": "Same"}}},
                {"name": "https", "hostname": hostname, "port": 443, "protocol": "HTTPS",
                 "tls": {"mode": "Terminate", "certificateRefs": [{"name": format!("{ns}-wildcard")}]},
                 "allowedRoutes": {"namespaces": {"from": "Same"}}},
            ],
        },
    })
}

/// An HTTPRoute for the service `app` in `ns`, attached to listener `section` of the
/// namespace's Gateway (both listeners when `None`).
pub fn http_route_object(ns: &str, app: &str, section: Option<&str>) -> Value {
    let mut parent =
        json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY_NAME});
    if let Some(section) = section {
        parent["sectionName"] = json!(section);
    }
    let backend = json!([{"name": app, "port": 80}]);
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": app, "namespace": ns, "labels": {"app": app},
                     "annotations": {"probe.example.com/module": "http_2xx"}},
        "spec": {
            "parentRefs": [parent],
            "hostnames": [format!("{app}.{ns}.example.com")],
            "rules": [
                {"matches": [{"path": {"type": "PathPrefix", "value": "/"}}], "backendRefs": backend},
                {"matches": [{"path": {"type": "PathPrefix", "value": "/api"}, "method": "GET"}], "backendRefs": backend},
            ],
        },
    })
}

/// A GRPCRoute for the service `app` in `ns`, on the namespace's `https` listener.
pub fn grpc_route_object(ns: &str, app: &str) -> Value {
    json!({
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "GRPCRoute",
        "metadata": {"name": format!("{app}-grpc"), "namespace": ns, "labels": {"app": app}},
        "spec": {
            "parentRefs": [{"name": GATEWAY_NAME, "sectionName": "https"}],
            "hostnames": [format!("grpc-{app}.{ns}.example.com")],
            "rules": [{"matches": [{"method": {"type": "Exact", "service": format!("{app}.v1.Api"), "method": "Get"}}],
                       "backendRefs": [{"name": app, "port": 9090}]}],
        },
    })
}

/// Creates a Gateway in each of `namespaces`, and routes for the web `apps`
/// (namespace, service name): every one an HTTPRoute (on alternating listeners), every
/// tenth a GRPCRoute too.
pub fn generate(
    sim: &Simulator,
    namespaces: &[String],
    apps: &[(String, String)],
) -> Result<GeneratedRoutes, ApiError> {
    let mut out = GeneratedRoutes::default();
    for ns in namespaces {
        sim.apply(Resource::Gateways, gateway_object(ns))?;
        out.gateways += 1;
    }
    for (i, (ns, app)) in apps.iter().enumerate() {
        let section = [Some("http"), Some("https"), None][i % 3];
        sim.apply(Resource::HttpRoutes, http_route_object(ns, app, section))?;
        out.http_routes += 1;
        if i % 10 == 0 {
            sim.apply(Resource::GrpcRoutes, grpc_route_object(ns, app))?;
            out.grpc_routes += 1;
        }
    }
    Ok(out)
}

/// One churn change to a random HTTPRoute: a path added or dropped, a hostname added
/// or dropped, or the route moved to the Gateway's other listener. False when there is
/// no HTTPRoute to change.
pub fn churn_route(sim: &Simulator, rng: &mut fastrand::Rng) -> Result<bool, ApiError> {
    let Some(route) = sim.store().sample(Resource::HttpRoutes, rng) else {
        return Ok(false);
    };
    let mut route = (*route).clone();
    match rng.u8(..3) {
        0 => toggle_last(
            &mut route,
            "rules",
            json!({"matches": [{"path": {"type": "Exact", "value": "/healthz"}}]}),
        ),
        1 => {
            let host = format!(
                "canary.{}",
                route["spec"]["hostnames"][0]
                    .as_str()
                    .unwrap_or("example.com")
            );
            toggle_last(&mut route, "hostnames", json!(host));
        }
        _ => reparent(&mut route),
    }
    if let Some(meta) = route.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    sim.update(Resource::HttpRoutes, route)?;
    Ok(true)
}

/// Appends `item` to `spec.<field>`, or removes it when it is already the last one.
fn toggle_last(route: &mut Value, field: &str, item: Value) {
    let Some(list) = route["spec"][field].as_array_mut() else {
        return;
    };
    if list.last() == Some(&item) && list.len() > 1 {
        list.pop();
    } else {
        list.push(item);
    }
}

/// Moves the route to the other listener: `http` ↔ `https`, and a route on both to
/// `http`.
fn reparent(route: &mut Value) {
    let parent = &mut route["spec"]["parentRefs"][0];
    let next = match parent["sectionName"].as_str() {
        Some("http") => "https",
        _ => "http",
    };
    parent["sectionName"] = json!(next);
}
