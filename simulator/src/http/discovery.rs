//! Discovery documents (`/version`, `/api`, `/api/v1`, `/apis`,
//! `/apis/{group}/v1`), which kubectl and client libraries fetch before
//! anything else to learn which resources exist and how they are scoped.
//!
//! Only the legacy (unaggregated) format is served: clients that ask for
//! aggregated discovery (`as=APIGroupDiscoveryList`) also accept plain JSON
//! and fall back to it.

use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Value, json};

use crate::resource::Resource;

/// The Gateway API's group, served by custom resources.
const GATEWAY_GROUP: &str = "gateway.networking.k8s.io";

/// prometheus-operator's group, served by custom resources.
const MONITORING_GROUP: &str = "monitoring.coreos.com";

/// Which custom resources' CRDs are "installed".
#[derive(Clone, Copy, Debug)]
pub struct Crds {
    /// The Gateway API's.
    pub gateway_api: bool,
    /// prometheus-operator's (`monitoring.coreos.com`: `v1` and `v1alpha1`).
    pub monitoring: bool,
}

/// The Kubernetes version the simulator claims to be.
const MINOR: &str = "32";

/// Serves `path` if it is a discovery document, else `None`. A custom resource's group
/// is listed only when `crds` says its CRDs are "installed".
pub fn serve(req: &HttpRequest, path: &str, crds: Crds) -> Option<HttpResponse> {
    let gateway_api = crds.gateway_api;
    if req.method() != actix_web::http::Method::GET {
        return None;
    }
    let body = match path {
        "/version" => json!({
            "major": "1",
            "minor": MINOR,
            "gitVersion": format!("v1.{MINOR}.0-kubesd-simulator"),
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "go1.23.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }),
        "/api" => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{
                "clientCIDR": "0.0.0.0/0",
                "serverAddress": req.connection_info().host().to_string(),
            }],
        }),
        "/apis" => {
            let gateway = gateway_api.then_some(GATEWAY_GROUP);
            let groups: Vec<Value> = ["discovery.k8s.io", "networking.k8s.io"]
                .into_iter()
                .chain(gateway)
                .map(|g| {
                    let gv = json!({"groupVersion": format!("{g}/v1"), "version": "v1"});
                    json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
                })
                .collect();
            let monitoring = crds.monitoring.then(monitoring_group);
            let groups: Vec<Value> = groups.into_iter().chain(monitoring).collect();
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        }
        "/apis/monitoring.coreos.com" if crds.monitoring => {
            let mut group = monitoring_group();
            group["kind"] = json!("APIGroup");
            group["apiVersion"] = json!("v1");
            group
        }
        "/apis/monitoring.coreos.com/v1" | "/apis/monitoring.coreos.com/v1alpha1"
            if crds.monitoring =>
        {
            resource_list(path.trim_start_matches("/apis/"), path)
        }
        "/api/v1" => resource_list("v1", "/api/v1"),
        "/apis/discovery.k8s.io/v1" => resource_list("discovery.k8s.io/v1", path),
        "/apis/networking.k8s.io/v1" => resource_list("networking.k8s.io/v1", path),
        "/apis/gateway.networking.k8s.io/v1" if gateway_api => {
            resource_list("gateway.networking.k8s.io/v1", path)
        }
        "/apis/gateway.networking.k8s.io" if !gateway_api => return None,
        "/apis/discovery.k8s.io"
        | "/apis/networking.k8s.io"
        | "/apis/gateway.networking.k8s.io" => {
            let g = path.trim_start_matches("/apis/");
            let gv = json!({"groupVersion": format!("{g}/v1"), "version": "v1"});
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": g, "versions": [gv.clone()], "preferredVersion": gv})
        }
        _ => return None,
    };
    Some(HttpResponse::Ok().json(body))
}

/// prometheus-operator's group as `/apis` lists it: `v1`, preferred, and `v1alpha1`.
fn monitoring_group() -> Value {
    let version =
        |v: &str| json!({"groupVersion": format!("{MONITORING_GROUP}/{v}"), "version": v});
    json!({
        "name": MONITORING_GROUP,
        "versions": [version("v1"), version("v1alpha1")],
        "preferredVersion": version("v1"),
    })
}

/// The `APIResourceList` of one group/version.
fn resource_list(group_version: &str, prefix: &str) -> Value {
    let resources: Vec<Value> = Resource::ALL
        .into_iter()
        .filter(|r| r.path_prefix() == prefix)
        .map(|r| {
            json!({
                "name": r.plural(),
                "singularName": r.singular(),
                "namespaced": r.namespaced(),
                "kind": r.kind(),
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                "shortNames": r.short_names(),
            })
        })
        .collect();
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    })
}
