//! `/api/v1/status/config`'s YAML: the jobs kubesd runs as `scrape_configs`, in the
//! config's order, each as Prometheus' config loader fills it in and writes it back,
//! with every secret shown as `<secret>` ([`crate::promconfig::ServedConfig`]).

use serde_norway::{Mapping, Value};

use crate::promconfig;

/// The YAML of `jobs` as `scrape_configs`, in their order in the config, secrets
/// redacted.
pub fn config_yaml(jobs: &[&promconfig::Job]) -> Result<String, String> {
    let mut jobs = jobs.to_vec();
    jobs.sort_by_key(|job| job.position);
    let scrape_configs: Vec<Value> = jobs
        .iter()
        .map(|job| (*job.served.redacted).clone())
        .collect();
    let mut root = Mapping::new();
    root.insert("scrape_configs".into(), Value::Sequence(scrape_configs));
    serde_norway::to_string(&Value::Mapping(root)).map_err(|e| e.to_string())
}
