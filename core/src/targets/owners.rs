//! A pod's workload: with `attach_metadata.deployment`, `.job` or `.cronjob`
//! (Prometheus 3.x), the Deployment, Job or CronJob the pod belongs to, found through
//! the pod's controller (a ReplicaSet or a Job) and that controller's own controller.
//!
//! The ReplicaSet and Job are looked up in the cache, so a change of their owner is a
//! dependency like any other: it re-labels the pods that read them.

use arcstr::ArcStr;

use super::context::TargetContext;
use crate::labels::LabelsBuilder;
use crate::model::{ObjectMeta, Pod};

/// Adds `__meta_kubernetes_pod_deployment_name`, `_job_name` and `_cronjob_name` as
/// `ctx.attach` asks and the pod's owners allow, by Prometheus' rules: a Deployment
/// only through a cached ReplicaSet whose controller is a Deployment; the Job's name
/// straight from the pod's controller; a CronJob only through a cached Job whose
/// controller is a CronJob.
pub(super) fn add_workload_labels(b: &mut LabelsBuilder, pod: &Pod, ctx: &TargetContext<'_>) {
    let attach = ctx.attach;
    if !(attach.deployment || attach.job || attach.cronjob) {
        return;
    }
    let Some(owner) = pod.metadata.controller() else {
        return;
    };
    let namespace = &pod.metadata.namespace;
    match &*owner.kind {
        "ReplicaSet" if attach.deployment => {
            let replica_set = ctx.cache.replica_set(namespace, &owner.name);
            if let Some(name) =
                replica_set.and_then(|r| controller_of_kind(&r.metadata, "Deployment"))
            {
                b.add(
                    arcstr::literal!("__meta_kubernetes_pod_deployment_name"),
                    name,
                );
            }
        }
        "Job" => {
            if attach.job {
                b.add(
                    arcstr::literal!("__meta_kubernetes_pod_job_name"),
                    ArcStr::clone(&owner.name),
                );
            }
            if attach.cronjob {
                let job = ctx.cache.job(namespace, &owner.name);
                if let Some(name) = job.and_then(|j| controller_of_kind(&j.metadata, "CronJob")) {
                    b.add(arcstr::literal!("__meta_kubernetes_pod_cronjob_name"), name);
                }
            }
        }
        _ => {}
    }
}

/// The name of `meta`'s controller, when it is of `kind`.
fn controller_of_kind(meta: &ObjectMeta, kind: &str) -> Option<ArcStr> {
    meta.controller()
        .filter(|c| &*c.kind == kind)
        .map(|c| ArcStr::clone(&c.name))
}
