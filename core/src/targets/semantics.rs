//! `Semantics`: whose definition of the targets kubesd follows, Prometheus' or
//! VictoriaMetrics'.
//!
//! Both use Prometheus' label names; they differ in a handful of rules, each a method
//! here named for the decision it makes, consulted by the role's label builder where
//! that decision falls. SEMANTICS.md lists every difference in one table; keep the two
//! in step.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Whose target semantics a discovery follows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Semantics {
    /// Prometheus' `kubernetes_sd_config`, as its code and tests (main, 3.x) define it.
    #[default]
    Prometheus,
    /// VictoriaMetrics' Kubernetes discovery: the same label names, some other rules.
    #[serde(rename = "victoriametrics")]
    VictoriaMetrics,
}

/// Where the node labels (`attach_metadata.node`) of an endpoint target come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum EndpointNode {
    /// The address' own `nodeName`, else its `targetRef` when that names a Node
    /// (Prometheus).
    FromAddress,
    /// The backing pod's `spec.nodeName`, with the pod's labels (VictoriaMetrics).
    FromPod,
}

/// Which init containers an endpoint port may match, and which give uncovered-port
/// targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InitContainers {
    /// Every init container, sidecar or not (Prometheus, both roles).
    All,
    /// Only sidecars (`restartPolicy: Always`).
    SidecarsOnly,
}

impl Semantics {
    /// Both, Prometheus first.
    pub const ALL: [Semantics; 2] = [Semantics::Prometheus, Semantics::VictoriaMetrics];

    /// The name used on the command line and in conformance files.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Semantics::Prometheus => "prometheus",
            Semantics::VictoriaMetrics => "victoriametrics",
        }
    }

    /// Pod role: finished pods (`Succeeded`, `Failed`) and terminated containers still
    /// give targets (Prometheus), or give none (VictoriaMetrics).
    pub(crate) fn keeps_finished_pods(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Pod role: a port-less container of an IPv6 pod is addressed by the bare IP
    /// (Prometheus), or by `[ip]` (VictoriaMetrics).
    pub(crate) fn brackets_portless_ipv6(self) -> bool {
        self == Semantics::VictoriaMetrics
    }

    /// Pod role with `attach_metadata.node`: a pod whose node is not cached (filtered
    /// out by a node selector, or not listed yet) gives no targets (Prometheus), or its
    /// targets without node labels (VictoriaMetrics).
    pub(crate) fn pod_needs_its_node(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Endpoints and endpointslice roles: where node labels come from.
    pub(crate) fn endpoint_node(self) -> EndpointNode {
        match self {
            Semantics::Prometheus => EndpointNode::FromAddress,
            Semantics::VictoriaMetrics => EndpointNode::FromPod,
        }
    }

    /// Endpoints and endpointslice roles: the service's `cluster_ip`, `type` and
    /// `external_name` are on the targets (VictoriaMetrics), or only its name, labels
    /// and annotations (Prometheus).
    pub(crate) fn endpoints_carry_service_spec(self) -> bool {
        self == Semantics::VictoriaMetrics
    }

    /// Endpoints and endpointslice roles with `attach_metadata.namespace`: the
    /// namespace's labels come with the object itself (Prometheus), or with its service
    /// and backing pods, when found (VictoriaMetrics).
    pub(crate) fn endpoints_namespace_from_object(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Endpoints role: the init containers an endpoint port may match.
    pub(crate) fn endpoints_port_match(self) -> InitContainers {
        match self {
            Semantics::Prometheus => InitContainers::All,
            Semantics::VictoriaMetrics => InitContainers::SidecarsOnly,
        }
    }

    /// Endpoints and endpointslice roles: the init containers whose ports no endpoint
    /// port covers still get a target of their own.
    pub(crate) fn uncovered_port_containers(self) -> InitContainers {
        match self {
            Semantics::Prometheus => InitContainers::All,
            Semantics::VictoriaMetrics => InitContainers::SidecarsOnly,
        }
    }

    /// Endpoints role: a matched container port's protocol label is the endpoint
    /// port's (Prometheus) or the container port's (VictoriaMetrics).
    pub(crate) fn endpoints_protocol_from_endpoint(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Endpoints and endpointslice roles: an uncovered-port target names its pod in
    /// `…_address_target_kind`/`_name` (VictoriaMetrics), or does not (Prometheus).
    pub(crate) fn uncovered_ports_name_their_pod(self) -> bool {
        self == Semantics::VictoriaMetrics
    }

    /// Endpoints and endpointslice roles: a pod without an IP gives no uncovered-port
    /// targets (Prometheus).
    pub(crate) fn uncovered_ports_need_pod_ip(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Endpointslice role: the slice of a dual-stack service whose address type is not
    /// the service's primary family gives no targets (Prometheus: they would repeat the
    /// primary slice's).
    pub(crate) fn skips_secondary_family_slices(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Endpointslice role: the value of an endpoint condition the API server left out:
    /// no label (Prometheus) or `"false"` (VictoriaMetrics).
    pub(crate) fn absent_condition(self) -> Option<bool> {
        match self {
            Semantics::Prometheus => None,
            Semantics::VictoriaMetrics => Some(false),
        }
    }

    /// Endpointslice role: the number of a slice port without one ("all ports"): none,
    /// so the target is the bare address without a port label (Prometheus), or 0
    /// (VictoriaMetrics).
    pub(crate) fn absent_slice_port(self) -> Option<i64> {
        match self {
            Semantics::Prometheus => None,
            Semantics::VictoriaMetrics => Some(0),
        }
    }

    /// Endpointslice role: v1's `zone` and `deprecatedTopology` become labels
    /// (Prometheus), or only v1beta1's `topology` does (VictoriaMetrics).
    pub(crate) fn reads_v1_topology(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Service role: `LoadBalancer` services get `__meta_kubernetes_service_loadbalancer_ip`
    /// (Prometheus).
    pub(crate) fn labels_load_balancer_ip(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Node role: every condition becomes `__meta_kubernetes_node_condition_<type>`
    /// (Prometheus).
    pub(crate) fn labels_node_conditions(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Node role: the scraped address is the first address of the first type present,
    /// even empty (Prometheus), or the next type is tried when it is empty
    /// (VictoriaMetrics).
    pub(crate) fn node_address_skips_empty(self) -> bool {
        self == Semantics::VictoriaMetrics
    }

    /// Ingress role: a rule whose `http` is present but lists no paths gives no targets
    /// (Prometheus), or one for `/` as a rule without `http` does (VictoriaMetrics).
    pub(crate) fn empty_http_rule_gives_root(self) -> bool {
        self == Semantics::VictoriaMetrics
    }

    /// Ingress role: a bare `*` TLS host covers every one-label host (Prometheus'
    /// pattern match).
    pub(crate) fn bare_wildcard_tls_host(self) -> bool {
        self == Semantics::Prometheus
    }

    /// Httproute and grpcroute roles: a route gives one target per hostname and match,
    /// named by its own hostnames, with `…_parent_ref_name` (Prometheus' draft), or one
    /// per attached listener, hostname and match, with the listener's `…_scheme`, the
    /// route's Gateways and Services looked up (VictoriaMetrics).
    pub(crate) fn routes_follow_listeners(self) -> bool {
        self == Semantics::VictoriaMetrics
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a semantics name kubesd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown semantics {0:?}: expected prometheus or victoriametrics")]
pub struct UnknownSemantics(pub String);

impl FromStr for Semantics {
    type Err = UnknownSemantics;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Semantics::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownSemantics(s.to_string()))
    }
}
