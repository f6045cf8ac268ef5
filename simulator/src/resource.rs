//! The Kubernetes resource types the simulator serves, and what the API
//! server says about each: its kind, API group/version, URL path and scope.
//!
//! Everything else in the simulator is generic over this one enum, so adding a
//! resource means adding a variant here and nowhere else.

use std::fmt;

use kubesd_core::model::Role;

/// One of the resource types the simulated API server stores and serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// `nodes`, core `v1`, cluster-scoped.
    Nodes,
    /// `namespaces`, core `v1`, cluster-scoped.
    Namespaces,
    /// `pods`, core `v1`, namespaced.
    Pods,
    /// `services`, core `v1`, namespaced.
    Services,
    /// `endpoints`, core `v1`, namespaced.
    Endpoints,
    /// `endpointslices`, `discovery.k8s.io/v1`, namespaced.
    EndpointSlices,
    /// `ingresses`, `networking.k8s.io/v1`, namespaced.
    Ingresses,
    /// `deployments`, `apps/v1`, namespaced: the owners of ReplicaSets.
    Deployments,
    /// `replicasets`, `apps/v1`, namespaced: the owners of a Deployment's pods.
    ReplicaSets,
    /// `cronjobs`, `batch/v1`, namespaced: the owners of Jobs.
    CronJobs,
    /// `jobs`, `batch/v1`, namespaced: the owners of batch pods.
    Jobs,
    /// `gateways`, `gateway.networking.k8s.io/v1`, namespaced (a custom resource).
    Gateways,
    /// `httproutes`, `gateway.networking.k8s.io/v1`, namespaced (a custom resource).
    HttpRoutes,
    /// `grpcroutes`, `gateway.networking.k8s.io/v1`, namespaced (a custom resource).
    GrpcRoutes,
    /// `secrets`, core `v1`, namespaced: the credentials monitors name.
    Secrets,
    /// `configmaps`, core `v1`, namespaced.
    ConfigMaps,
    /// `servicemonitors`, `monitoring.coreos.com/v1`, namespaced (a custom resource).
    ServiceMonitors,
    /// `podmonitors`, `monitoring.coreos.com/v1`, namespaced (a custom resource).
    PodMonitors,
    /// `probes`, `monitoring.coreos.com/v1`, namespaced (a custom resource).
    Probes,
    /// `scrapeconfigs`, `monitoring.coreos.com/v1alpha1`, namespaced (a custom resource).
    ScrapeConfigs,
}

impl From<Role> for Resource {
    /// The resource that serves `role`'s objects.
    fn from(role: Role) -> Resource {
        match role {
            Role::Node => Resource::Nodes,
            Role::Pod => Resource::Pods,
            Role::Service => Resource::Services,
            Role::Endpoints => Resource::Endpoints,
            Role::EndpointSlice => Resource::EndpointSlices,
            Role::Ingress => Resource::Ingresses,
            Role::Namespace => Resource::Namespaces,
            Role::ReplicaSet => Resource::ReplicaSets,
            Role::Job => Resource::Jobs,
            Role::Gateway => Resource::Gateways,
            Role::HttpRoute => Resource::HttpRoutes,
            Role::GrpcRoute => Resource::GrpcRoutes,
            Role::Secret => Resource::Secrets,
            Role::ConfigMap => Resource::ConfigMaps,
            Role::ServiceMonitor => Resource::ServiceMonitors,
            Role::PodMonitor => Resource::PodMonitors,
            Role::Probe => Resource::Probes,
            Role::ScrapeConfig => Resource::ScrapeConfigs,
        }
    }
}

impl Resource {
    /// Every resource, in a fixed order (used for discovery documents).
    pub const ALL: [Resource; 20] = [
        Resource::Nodes,
        Resource::Namespaces,
        Resource::Pods,
        Resource::Services,
        Resource::Endpoints,
        Resource::EndpointSlices,
        Resource::Ingresses,
        Resource::Deployments,
        Resource::ReplicaSets,
        Resource::CronJobs,
        Resource::Jobs,
        Resource::Gateways,
        Resource::HttpRoutes,
        Resource::GrpcRoutes,
        Resource::Secrets,
        Resource::ConfigMaps,
        Resource::ServiceMonitors,
        Resource::PodMonitors,
        Resource::Probes,
        Resource::ScrapeConfigs,
    ];

    /// The plural name used in URLs, e.g. `pods`.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Nodes => "nodes",
            Resource::Namespaces => "namespaces",
            Resource::Pods => "pods",
            Resource::Services => "services",
            Resource::Endpoints => "endpoints",
            Resource::EndpointSlices => "endpointslices",
            Resource::Ingresses => "ingresses",
            Resource::Deployments => "deployments",
            Resource::ReplicaSets => "replicasets",
            Resource::CronJobs => "cronjobs",
            Resource::Jobs => "jobs",
            Resource::Gateways => "gateways",
            Resource::HttpRoutes => "httproutes",
            Resource::GrpcRoutes => "grpcroutes",
            Resource::Secrets => "secrets",
            Resource::ConfigMaps => "configmaps",
            Resource::ServiceMonitors => "servicemonitors",
            Resource::PodMonitors => "podmonitors",
            Resource::Probes => "probes",
            Resource::ScrapeConfigs => "scrapeconfigs",
        }
    }

    /// The singular name used by discovery, e.g. `pod`.
    pub fn singular(self) -> &'static str {
        match self {
            Resource::Nodes => "node",
            Resource::Namespaces => "namespace",
            Resource::Pods => "pod",
            Resource::Services => "service",
            Resource::Endpoints => "endpoints",
            Resource::EndpointSlices => "endpointslice",
            Resource::Ingresses => "ingress",
            Resource::Deployments => "deployment",
            Resource::ReplicaSets => "replicaset",
            Resource::CronJobs => "cronjob",
            Resource::Jobs => "job",
            Resource::Gateways => "gateway",
            Resource::HttpRoutes => "httproute",
            Resource::GrpcRoutes => "grpcroute",
            Resource::Secrets => "secret",
            Resource::ConfigMaps => "configmap",
            Resource::ServiceMonitors => "servicemonitor",
            Resource::PodMonitors => "podmonitor",
            Resource::Probes => "probe",
            Resource::ScrapeConfigs => "scrapeconfig",
        }
    }

    /// The object kind, e.g. `Pod`.
    pub fn kind(self) -> &'static str {
        match self {
            Resource::Nodes => "Node",
            Resource::Namespaces => "Namespace",
            Resource::Pods => "Pod",
            Resource::Services => "Service",
            Resource::Endpoints => "Endpoints",
            Resource::EndpointSlices => "EndpointSlice",
            Resource::Ingresses => "Ingress",
            Resource::Deployments => "Deployment",
            Resource::ReplicaSets => "ReplicaSet",
            Resource::CronJobs => "CronJob",
            Resource::Jobs => "Job",
            Resource::Gateways => "Gateway",
            Resource::HttpRoutes => "HTTPRoute",
            Resource::GrpcRoutes => "GRPCRoute",
            Resource::Secrets => "Secret",
            Resource::ConfigMaps => "ConfigMap",
            Resource::ServiceMonitors => "ServiceMonitor",
            Resource::PodMonitors => "PodMonitor",
            Resource::Probes => "Probe",
            Resource::ScrapeConfigs => "ScrapeConfig",
        }
    }

    /// The list kind, e.g. `PodList`.
    pub fn list_kind(self) -> String {
        format!("{}List", self.kind())
    }

    /// The API group, empty for the core group.
    pub fn group(self) -> &'static str {
        match self {
            Resource::EndpointSlices => "discovery.k8s.io",
            Resource::Ingresses => "networking.k8s.io",
            Resource::Deployments | Resource::ReplicaSets => "apps",
            Resource::CronJobs | Resource::Jobs => "batch",
            r if r.is_gateway_api() => "gateway.networking.k8s.io",
            r if r.is_monitoring() => "monitoring.coreos.com",
            _ => "",
        }
    }

    /// The `apiVersion` field value, e.g. `v1` or `discovery.k8s.io/v1`.
    pub fn api_version(self) -> &'static str {
        match self {
            Resource::EndpointSlices => "discovery.k8s.io/v1",
            Resource::Ingresses => "networking.k8s.io/v1",
            Resource::Deployments | Resource::ReplicaSets => "apps/v1",
            Resource::CronJobs | Resource::Jobs => "batch/v1",
            r if r.is_gateway_api() => "gateway.networking.k8s.io/v1",
            Resource::ScrapeConfigs => "monitoring.coreos.com/v1alpha1",
            r if r.is_monitoring() => "monitoring.coreos.com/v1",
            _ => "v1",
        }
    }

    /// The URL prefix of the resource's group/version, e.g. `/api/v1`.
    pub fn path_prefix(self) -> &'static str {
        match self {
            Resource::EndpointSlices => "/apis/discovery.k8s.io/v1",
            Resource::Ingresses => "/apis/networking.k8s.io/v1",
            Resource::Deployments | Resource::ReplicaSets => "/apis/apps/v1",
            Resource::CronJobs | Resource::Jobs => "/apis/batch/v1",
            r if r.is_gateway_api() => "/apis/gateway.networking.k8s.io/v1",
            Resource::ScrapeConfigs => "/apis/monitoring.coreos.com/v1alpha1",
            r if r.is_monitoring() => "/apis/monitoring.coreos.com/v1",
            _ => "/api/v1",
        }
    }

    /// Whether objects of this resource live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, Resource::Nodes | Resource::Namespaces)
    }

    /// kubectl short names advertised by discovery.
    pub fn short_names(self) -> &'static [&'static str] {
        match self {
            Resource::Nodes => &["no"],
            Resource::Namespaces => &["ns"],
            Resource::Pods => &["po"],
            Resource::Services => &["svc"],
            Resource::Endpoints => &["ep"],
            Resource::EndpointSlices => &[],
            Resource::Ingresses => &["ing"],
            Resource::Deployments => &["deploy"],
            Resource::ReplicaSets => &["rs"],
            Resource::CronJobs => &["cj"],
            Resource::Jobs => &[],
            Resource::Gateways => &["gtw"],
            Resource::ConfigMaps => &["cm"],
            Resource::ServiceMonitors => &["smon"],
            Resource::PodMonitors => &["pmon"],
            Resource::Probes => &["prb"],
            Resource::ScrapeConfigs => &["scfg"],
            Resource::HttpRoutes | Resource::GrpcRoutes | Resource::Secrets => &[],
        }
    }

    /// True for the Gateway API's custom resources, which a cluster serves only with
    /// their CRDs installed (the simulator can leave them out: see
    /// [`super::Simulator::set_gateway_api`]).
    pub fn is_gateway_api(self) -> bool {
        matches!(
            self,
            Resource::Gateways | Resource::HttpRoutes | Resource::GrpcRoutes
        )
    }

    /// True for prometheus-operator's custom resources (`monitoring.coreos.com`),
    /// which a cluster serves only with their CRDs installed (the simulator can leave
    /// them out: see [`super::Simulator::set_monitoring_served`]).
    pub fn is_monitoring(self) -> bool {
        matches!(
            self,
            Resource::ServiceMonitors
                | Resource::PodMonitors
                | Resource::Probes
                | Resource::ScrapeConfigs
        )
    }

    /// Finds the resource served under `prefix` (e.g. `/api/v1`) as `plural`.
    pub fn from_path(prefix: &str, plural: &str) -> Option<Resource> {
        Resource::ALL
            .into_iter()
            .find(|r| r.path_prefix() == prefix && r.plural() == plural)
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        for r in Resource::ALL {
            assert_eq!(Resource::from_path(r.path_prefix(), r.plural()), Some(r));
        }
        assert_eq!(Resource::from_path("/api/v1", "ingresses"), None);
    }
}
