//! `AttachMetadata`: which related objects' labels a scrape job attaches.

use serde::{Deserialize, Serialize};

use crate::model::Role;

/// `attach_metadata` of a scrape job: which related objects' labels to add. A `null`
/// reads as false, as Prometheus' YAML decoder reads it (prometheus-operator writes
/// `node: null` for a ScrapeConfig's empty `attachMetadata`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AttachMetadata {
    /// Add the labels and annotations of the pod's node (roles pod, endpoints,
    /// endpointslice).
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub node: bool,
    /// Add the labels and annotations of the object's namespace.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub namespace: bool,
    /// Add `__meta_kubernetes_pod_deployment_name`: the Deployment owning the pod's
    /// ReplicaSet (roles pod, endpoints, endpointslice; Prometheus 3.x).
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub deployment: bool,
    /// Add `__meta_kubernetes_pod_job_name`: the Job owning the pod.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub job: bool,
    /// Add `__meta_kubernetes_pod_cronjob_name`: the CronJob owning the pod's Job.
    #[serde(deserialize_with = "crate::model::json::null_default")]
    pub cronjob: bool,
    /// kubesd's own, never read from a config: add [`CPU_REQUEST_LABEL`] to role pod's
    /// targets. Only the watch of a fleet's members asks for it
    /// (`membership.weight_from: cpu_request`), so no job's labels change.
    #[serde(skip)]
    pub cpu_request: bool,
}

/// The label of a pod's CPU request in cores (`0.5`), the sum of its containers' and
/// sidecars' (`PodSpec::cpu_request`), on role pod's targets when
/// [`AttachMetadata::cpu_request`] asks for it and the pod requests any.
pub const CPU_REQUEST_LABEL: &str = "__meta_kubesd_pod_cpu_request";

impl AttachMetadata {
    /// Only what changes `role`'s labels: the node and the workload are read for a pod
    /// (its own, or an endpoint's), the namespace for every role but node. Two jobs
    /// whose `attach_metadata` differ only in what their role never reads get the
    /// same labels, so their group computes them once.
    pub fn for_role(self, role: Role) -> AttachMetadata {
        let reads_pods = matches!(role, Role::Pod | Role::Endpoints | Role::EndpointSlice);
        AttachMetadata {
            node: self.node && reads_pods,
            namespace: self.namespace && role != Role::Node,
            deployment: self.deployment && reads_pods,
            job: self.job && reads_pods,
            cronjob: self.cronjob && reads_pods,
            cpu_request: self.cpu_request && role == Role::Pod,
        }
    }
}
