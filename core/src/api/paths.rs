//! API paths: which group and version serves a role, and the URL of its collection.

use super::selectors::{RoleSelector, selectors_for_role};
use crate::model::Role;

/// The API group and version a role is read from.
///
/// Old API servers (before Kubernetes 1.21 for endpoint slices, 1.19 for ingresses)
/// serve only `v1beta1`, as do Gateway API CRDs before v1.0 (Gateways and HTTPRoutes;
/// GRPCRoute has no `v1beta1`); a watcher falls back to it on a 404.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ApiGroupVersion {
    /// The current version of the role's group.
    Current,
    /// The `v1beta1` fallback (endpointslice, ingress, gateway and httproute only).
    Beta,
}

impl ApiGroupVersion {
    /// The path prefix of `role`'s collection in this version, e.g. `/apis/discovery.k8s.io/v1`.
    pub(crate) fn prefix(self, role: Role) -> &'static str {
        match (role, self) {
            (Role::EndpointSlice, ApiGroupVersion::Current) => "/apis/discovery.k8s.io/v1",
            (Role::EndpointSlice, ApiGroupVersion::Beta) => "/apis/discovery.k8s.io/v1beta1",
            (Role::Ingress, ApiGroupVersion::Current) => "/apis/networking.k8s.io/v1",
            (Role::Ingress, ApiGroupVersion::Beta) => "/apis/networking.k8s.io/v1beta1",
            (Role::Gateway | Role::HttpRoute | Role::GrpcRoute, ApiGroupVersion::Current) => {
                "/apis/gateway.networking.k8s.io/v1"
            }
            (Role::Gateway | Role::HttpRoute | Role::GrpcRoute, ApiGroupVersion::Beta) => {
                "/apis/gateway.networking.k8s.io/v1beta1"
            }
            (Role::ServiceMonitor | Role::PodMonitor | Role::Probe, _) => {
                "/apis/monitoring.coreos.com/v1"
            }
            (Role::ScrapeConfig, _) => "/apis/monitoring.coreos.com/v1alpha1",
            (Role::ReplicaSet, _) => "/apis/apps/v1",
            (Role::Job, _) => "/apis/batch/v1",
            _ => "/api/v1",
        }
    }

    /// The older version to try after a 404, if the role has one.
    pub fn fallback(self, role: Role) -> Option<ApiGroupVersion> {
        match (role, self) {
            (
                Role::EndpointSlice | Role::Ingress | Role::Gateway | Role::HttpRoute,
                ApiGroupVersion::Current,
            ) => Some(ApiGroupVersion::Beta),
            _ => None,
        }
    }
}

/// The collection name of a role in API paths.
fn resource_name(role: Role) -> &'static str {
    match role {
        Role::Node => "nodes",
        Role::Pod => "pods",
        Role::Service => "services",
        Role::Endpoints => "endpoints",
        Role::EndpointSlice => "endpointslices",
        Role::Ingress => "ingresses",
        Role::Namespace => "namespaces",
        Role::ReplicaSet => "replicasets",
        Role::Job => "jobs",
        Role::Gateway => "gateways",
        Role::HttpRoute => "httproutes",
        Role::GrpcRoute => "grpcroutes",
        Role::ServiceMonitor => "servicemonitors",
        Role::PodMonitor => "podmonitors",
        Role::Probe => "probes",
        Role::ScrapeConfig => "scrapeconfigs",
        Role::Secret => "secrets",
        Role::ConfigMap => "configmaps",
    }
}

/// One watched collection: a role, optionally restricted to one namespace, with the
/// selectors of that role. Each is served by one URL watcher.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceUrl {
    /// The role listed.
    pub role: Role,
    /// The namespace, or `None` for the whole cluster (and for cluster-scoped roles).
    pub namespace: Option<String>,
    /// The joined label selector, empty for none.
    pub label_selector: String,
    /// The joined field selector, empty for none.
    pub field_selector: String,
}

impl ResourceUrl {
    /// The path of the collection in `version`, e.g. `/api/v1/namespaces/ns1/pods`.
    pub(crate) fn path(&self, version: ApiGroupVersion) -> String {
        let prefix = version.prefix(self.role);
        let resource = resource_name(self.role);
        match &self.namespace {
            Some(ns) => format!("{prefix}/namespaces/{ns}/{resource}"),
            None => format!("{prefix}/{resource}"),
        }
    }
}

impl std::fmt::Display for ResourceUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path(ApiGroupVersion::Current))?;
        let mut sep = '?';
        for (key, value) in [
            ("labelSelector", &self.label_selector),
            ("fieldSelector", &self.field_selector),
        ] {
            if !value.is_empty() {
                write!(f, "{sep}{key}={value}")?;
                sep = '&';
            }
        }
        Ok(())
    }
}

/// The collections to watch for `role`: one per namespace in `namespaces`, or one for
/// the whole cluster when it is empty or the role is cluster-scoped.
///
/// One URL per namespace (not a cluster-wide list filtered afterwards) is what lets a
/// service account with only namespaced RBAC run discovery (VictoriaMetrics issue 432).
pub fn resource_urls(
    role: Role,
    namespaces: &[String],
    selectors: &[RoleSelector],
) -> Vec<ResourceUrl> {
    let (label_selector, field_selector) = selectors_for_role(role, selectors);
    let make = |namespace: Option<String>| ResourceUrl {
        role,
        namespace,
        label_selector: label_selector.clone(),
        field_selector: field_selector.clone(),
    };
    if !role.is_namespaced() || namespaces.is_empty() {
        return vec![make(None)];
    }
    let mut unique: Vec<&String> = namespaces.iter().collect();
    unique.sort();
    unique.dedup();
    unique
        .into_iter()
        .map(|ns| make(Some(ns.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_per_role_and_version() {
        let urls = resource_urls(Role::Pod, &["b".into(), "a".into(), "b".into()], &[]);
        let paths: Vec<String> = urls
            .iter()
            .map(|u| u.path(ApiGroupVersion::Current))
            .collect();
        assert_eq!(
            paths,
            ["/api/v1/namespaces/a/pods", "/api/v1/namespaces/b/pods"]
        );
        let nodes = resource_urls(Role::Node, &["a".into()], &[]);
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].path(ApiGroupVersion::Current), "/api/v1/nodes");
        let slices = &resource_urls(Role::EndpointSlice, &[], &[])[0];
        assert_eq!(
            slices.path(ApiGroupVersion::Current),
            "/apis/discovery.k8s.io/v1/endpointslices"
        );
        assert_eq!(
            slices.path(ApiGroupVersion::Beta),
            "/apis/discovery.k8s.io/v1beta1/endpointslices"
        );
        let ing = &resource_urls(Role::Ingress, &["x".into()], &[])[0];
        assert_eq!(
            ing.path(ApiGroupVersion::Beta),
            "/apis/networking.k8s.io/v1beta1/namespaces/x/ingresses"
        );
        let routes = &resource_urls(Role::HttpRoute, &["x".into()], &[])[0];
        assert_eq!(
            routes.path(ApiGroupVersion::Current),
            "/apis/gateway.networking.k8s.io/v1/namespaces/x/httproutes"
        );
        assert_eq!(
            routes.path(ApiGroupVersion::Beta),
            "/apis/gateway.networking.k8s.io/v1beta1/namespaces/x/httproutes"
        );
        let grpc = &resource_urls(Role::GrpcRoute, &[], &[])[0];
        assert_eq!(
            grpc.path(ApiGroupVersion::Current),
            "/apis/gateway.networking.k8s.io/v1/grpcroutes"
        );
        assert_eq!(ApiGroupVersion::Current.fallback(Role::GrpcRoute), None);
        assert_eq!(ApiGroupVersion::Current.fallback(Role::Pod), None);
        assert_eq!(ApiGroupVersion::Beta.fallback(Role::Ingress), None);
    }
}
