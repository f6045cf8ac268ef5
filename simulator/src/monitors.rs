//! prometheus-operator's resources in the generated cluster: per namespace a
//! ServiceMonitor of its services' `http` ports and a PodMonitor of its pods' `http`
//! ports whose basic auth comes from a Secret, all labelled
//! `monitoring: kubesd-demo`; and a churn that edits one monitor now and then.

use serde_json::{Value, json};

use super::error::ApiError;
use super::resource::Resource;
use super::sim::Simulator;

/// The label every generated monitor carries, for a `monitors:` section to select.
pub const MONITOR_LABEL: (&str, &str) = ("monitoring", "kubesd-demo");

/// Counts of what [`generate`] created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeneratedMonitors {
    /// ServiceMonitors.
    pub service_monitors: usize,
    /// PodMonitors.
    pub pod_monitors: usize,
    /// Secrets they name.
    pub secrets: usize,
}

/// Creates the monitors of each of `namespaces`.
pub fn generate(sim: &Simulator, namespaces: &[String]) -> Result<GeneratedMonitors, ApiError> {
    let mut out = GeneratedMonitors::default();
    for ns in namespaces {
        sim.apply(Resource::Secrets, scrape_auth(ns))?;
        out.secrets += 1;
        sim.apply(Resource::ServiceMonitors, service_monitor(ns))?;
        out.service_monitors += 1;
        sim.apply(Resource::PodMonitors, pod_monitor(ns))?;
        out.pod_monitors += 1;
    }
    Ok(out)
}

fn labels() -> Value {
    json!({MONITOR_LABEL.0: MONITOR_LABEL.1})
}

/// The services of `ns` that have an `app` label, at their `http` port.
fn service_monitor(ns: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor",
        "metadata": {"name": "services", "namespace": ns, "labels": labels()},
        "spec": {
            "selector": {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
            "endpoints": [{"port": "http", "interval": "30s", "path": "/metrics"}],
        },
    })
}

/// The pods of `ns` at their `http` port, with basic auth from `scrape-auth`.
fn pod_monitor(ns: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
        "metadata": {"name": "pods", "namespace": ns, "labels": labels()},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/part-of": ns}},
            "podMetricsEndpoints": [{
                "port": "http",
                "basicAuth": {
                    "username": {"name": "scrape-auth", "key": "username"},
                    "password": {"name": "scrape-auth", "key": "password"},
                },
            }],
        },
    })
}

/// The Secret the PodMonitor of `ns` reads.
fn scrape_auth(ns: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Secret", "type": "Opaque",
        // "scraper" and "not-a-real-password", base64.
        "metadata": {"name": "scrape-auth", "namespace": ns},
        "data": {"username": "c2NyYXBlcg==", "password": "bm90LWEtcmVhbC1wYXNzd29yZA=="},
    })
}

/// Edits one ServiceMonitor at random: its scrape interval goes from 30s to 60s or
/// back. False when there is none.
pub fn churn_monitor(sim: &Simulator, rng: &mut fastrand::Rng) -> Result<bool, ApiError> {
    let monitors = sim.list(Resource::ServiceMonitors, None);
    if monitors.is_empty() {
        return Ok(false);
    }
    let mut monitor = monitors[rng.usize(..monitors.len())].clone();
    let interval = &mut monitor["spec"]["endpoints"][0]["interval"];
    *interval = json!(if *interval == "30s" { "60s" } else { "30s" });
    if let Some(meta) = monitor["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
    sim.update(Resource::ServiceMonitors, monitor)?;
    Ok(true)
}

/// Edits one ServiceMonitor (its interval) every `every`, on the current actix
/// runtime, until the task is aborted; an error is logged and the next edit tried.
pub fn start_monitor_churn(
    sim: Simulator,
    seed: u64,
    every: std::time::Duration,
) -> actix_rt::task::JoinHandle<()> {
    actix_rt::spawn(async move {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if let Err(err) = churn_monitor(&sim, &mut rng) {
                tracing::warn!(%err, "simulator monitor churn failed");
            }
        }
    })
}
