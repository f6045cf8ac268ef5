//! The kinds of object kubesd watches.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A kind of Kubernetes object kubesd lists and watches.
///
/// The discovery roles a scrape job may ask for are Prometheus'
/// `kubernetes_sd_config.role` values and the Gateway API's `gateway`, `httproute` and
/// `grpcroute`; `Namespace`, `ReplicaSet` and `Job` are only watched as dependencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// `nodes`: one target per node, at its kubelet.
    Node,
    /// `pods`: one target per container port (or per port-less container).
    Pod,
    /// `services`: one target per service port, at the service's DNS name.
    Service,
    /// `endpoints`: one target per endpoint address and port.
    Endpoints,
    /// `endpointslices` (discovery.k8s.io): one target per endpoint address and port.
    /// vmagent's spelling `endpointslices` is accepted too.
    #[serde(rename = "endpointslice", alias = "endpointslices")]
    EndpointSlice,
    /// `ingresses`: one target per rule path.
    Ingress,
    /// `namespaces`: never a discovery role; watched for `attach_metadata.namespace`.
    Namespace,
    /// `replicasets` (apps/v1): never a discovery role; watched for
    /// `attach_metadata.deployment` (a pod's ReplicaSet names its Deployment).
    #[serde(rename = "replicaset")]
    ReplicaSet,
    /// `jobs` (batch/v1): never a discovery role; watched for `attach_metadata.job` and
    /// `.cronjob` (a pod's Job names its CronJob).
    Job,
    /// `gateways` (gateway.networking.k8s.io): one target per listener; also watched
    /// for the listeners routes attach to.
    Gateway,
    /// `httproutes` (gateway.networking.k8s.io): one target per listener, hostname and
    /// path match.
    #[serde(rename = "httproute")]
    HttpRoute,
    /// `grpcroutes` (gateway.networking.k8s.io): one target per listener, hostname and
    /// method match.
    #[serde(rename = "grpcroute")]
    GrpcRoute,
    /// `servicemonitors` (monitoring.coreos.com/v1): never a discovery role; watched as
    /// configuration by the `monitors:` section, as are the kinds below.
    ServiceMonitor,
    /// `podmonitors` (monitoring.coreos.com/v1).
    PodMonitor,
    /// `probes` (monitoring.coreos.com/v1).
    Probe,
    /// `scrapeconfigs` (monitoring.coreos.com/v1alpha1).
    ScrapeConfig,
    /// `secrets`: the ones monitors name, for their credentials.
    Secret,
    /// `configmaps`: the ones monitors name, for their credentials.
    ConfigMap,
}

impl Role {
    /// Every kind of discovery's object model, in a fixed order (the configuration
    /// kinds are [`Role::CONFIG`]).
    pub const ALL: [Role; 12] = [
        Role::Node,
        Role::Pod,
        Role::Service,
        Role::Endpoints,
        Role::EndpointSlice,
        Role::Ingress,
        Role::Namespace,
        Role::ReplicaSet,
        Role::Job,
        Role::Gateway,
        Role::HttpRoute,
        Role::GrpcRoute,
    ];

    /// The kinds watched as configuration (by the `monitors:` section), decoded as a
    /// [`crate::model::ConfigObject`], and served by API servers in JSON only.
    pub const CONFIG: [Role; 6] = [
        Role::ServiceMonitor,
        Role::PodMonitor,
        Role::Probe,
        Role::ScrapeConfig,
        Role::Secret,
        Role::ConfigMap,
    ];

    /// The roles a scrape job may discover: every kind but `Namespace`, `ReplicaSet`
    /// and `Job`.
    pub const DISCOVERY: [Role; 9] = [
        Role::Node,
        Role::Pod,
        Role::Service,
        Role::Endpoints,
        Role::EndpointSlice,
        Role::Ingress,
        Role::Gateway,
        Role::HttpRoute,
        Role::GrpcRoute,
    ];

    /// The role's name as Prometheus configs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Node => "node",
            Role::Pod => "pod",
            Role::Service => "service",
            Role::Endpoints => "endpoints",
            Role::EndpointSlice => "endpointslice",
            Role::Ingress => "ingress",
            Role::Namespace => "namespace",
            Role::ReplicaSet => "replicaset",
            Role::Job => "job",
            Role::Gateway => "gateway",
            Role::HttpRoute => "httproute",
            Role::GrpcRoute => "grpcroute",
            Role::ServiceMonitor => "servicemonitor",
            Role::PodMonitor => "podmonitor",
            Role::Probe => "probe",
            Role::ScrapeConfig => "scrapeconfig",
            Role::Secret => "secret",
            Role::ConfigMap => "configmap",
        }
    }

    /// The Kubernetes `kind` of this role's objects, e.g. `Pod`.
    pub fn kind(self) -> &'static str {
        match self {
            Role::Node => "Node",
            Role::Pod => "Pod",
            Role::Service => "Service",
            Role::Endpoints => "Endpoints",
            Role::EndpointSlice => "EndpointSlice",
            Role::Ingress => "Ingress",
            Role::Namespace => "Namespace",
            Role::ReplicaSet => "ReplicaSet",
            Role::Job => "Job",
            Role::Gateway => "Gateway",
            Role::HttpRoute => "HTTPRoute",
            Role::GrpcRoute => "GRPCRoute",
            Role::ServiceMonitor => "ServiceMonitor",
            Role::PodMonitor => "PodMonitor",
            Role::Probe => "Probe",
            Role::ScrapeConfig => "ScrapeConfig",
            Role::Secret => "Secret",
            Role::ConfigMap => "ConfigMap",
        }
    }

    /// The role of objects of Kubernetes `kind` (e.g. `Pod`, or `PodList` for a list).
    pub fn from_kind(kind: &str) -> Option<Role> {
        let kind = kind.strip_suffix("List").unwrap_or(kind);
        Some(match kind {
            "Node" => Role::Node,
            "Pod" => Role::Pod,
            "Service" => Role::Service,
            "Endpoints" => Role::Endpoints,
            "EndpointSlice" => Role::EndpointSlice,
            "Ingress" => Role::Ingress,
            "Namespace" => Role::Namespace,
            "ReplicaSet" => Role::ReplicaSet,
            "Job" => Role::Job,
            "Gateway" => Role::Gateway,
            "HTTPRoute" => Role::HttpRoute,
            "GRPCRoute" => Role::GrpcRoute,
            "ServiceMonitor" => Role::ServiceMonitor,
            "PodMonitor" => Role::PodMonitor,
            "Probe" => Role::Probe,
            "ScrapeConfig" => Role::ScrapeConfig,
            "Secret" => Role::Secret,
            "ConfigMap" => Role::ConfigMap,
            _ => return None,
        })
    }

    /// True for the roles a scrape job may discover (all but `Namespace`, `ReplicaSet`
    /// and `Job`, which are only watched for what they add to other roles' targets).
    pub fn is_discovery_role(self) -> bool {
        !matches!(self, Role::Namespace | Role::ReplicaSet | Role::Job) && !self.is_config()
    }

    /// True for the kinds watched as configuration ([`Role::CONFIG`]).
    pub fn is_config(self) -> bool {
        Role::CONFIG.contains(&self)
    }

    /// True for prometheus-operator's kinds (group `monitoring.coreos.com`), which a
    /// cluster serves only once their CRDs are installed.
    pub fn is_monitoring_crd(self) -> bool {
        matches!(
            self,
            Role::ServiceMonitor | Role::PodMonitor | Role::Probe | Role::ScrapeConfig
        )
    }

    /// The API group of a custom resource kubesd reads (the Gateway API's or
    /// prometheus-operator's), whose CRDs a cluster may not have; `None` for built-in
    /// kinds.
    pub fn crd_group(self) -> Option<&'static str> {
        if self.is_gateway_api() {
            Some("gateway.networking.k8s.io")
        } else if self.is_monitoring_crd() {
            Some("monitoring.coreos.com")
        } else {
            None
        }
    }

    /// A number per kind, dense over [`Role::ALL`] then [`Role::CONFIG`]: for tables
    /// indexed by role.
    pub fn index(self) -> usize {
        self as usize
    }

    /// How many kinds [`Role::index`] numbers.
    pub const COUNT: usize = Role::ALL.len() + Role::CONFIG.len();

    /// True for the Gateway API's kinds (group `gateway.networking.k8s.io`), which a
    /// cluster serves only once their CRDs are installed.
    pub fn is_gateway_api(self) -> bool {
        matches!(self, Role::Gateway | Role::HttpRoute | Role::GrpcRoute)
    }

    /// True for objects that live in a namespace.
    pub fn is_namespaced(self) -> bool {
        !matches!(self, Role::Node | Role::Namespace)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a role name kubesd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown role {0:?}: expected one of node, pod, service, endpoints, endpointslice, ingress, gateway, httproute, grpcroute"
)]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // vmagent's configs spell it `endpointslices`.
        let s = if s == "endpointslices" {
            "endpointslice"
        } else {
            s
        };
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s && r.is_discovery_role())
            .ok_or_else(|| UnknownRole(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_own_index_below_the_count() {
        let every: Vec<Role> = Role::ALL.into_iter().chain(Role::CONFIG).collect();
        let mut indexes: Vec<usize> = every.iter().map(|r| r.index()).collect();
        indexes.sort_unstable();
        indexes.dedup();
        assert_eq!(indexes.len(), Role::COUNT);
        assert!(indexes.iter().all(|&i| i < Role::COUNT));
        for role in Role::CONFIG {
            assert!(role.is_config() && !role.is_discovery_role());
            assert_eq!(Role::from_kind(role.kind()), Some(role));
            assert!(
                role.as_str().parse::<Role>().is_err(),
                "{role} is no discovery role"
            );
        }
    }
}
