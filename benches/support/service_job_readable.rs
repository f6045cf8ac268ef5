//! The `__meta_*` labels the service bench's job reads (a labelmap, two copies, a
//! drop): what a collector's share of that job is pruned to by default.

use std::sync::Arc;

use kubesd::relabel::{ReadableMeta, RelabelConfig, compile_all};

/// The labels the service bench's job's rules read.
pub fn readable_by_the_service_job() -> Arc<ReadableMeta> {
    let rules: Vec<RelabelConfig> = serde_norway::from_str(
        "[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)},
          {source_labels: [__meta_kubernetes_namespace], target_label: namespace},
          {source_labels: [__meta_kubernetes_pod_name], target_label: pod},
          {source_labels: [__meta_kubernetes_pod_phase], regex: Unknown, action: drop}]",
    )
    .expect("rules parse");
    let rules = Arc::new(compile_all(&rules).expect("rules compile"));
    Arc::new(ReadableMeta::new(rules))
}
