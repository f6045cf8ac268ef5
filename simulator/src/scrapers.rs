//! A fleet of scraper pods for kubesd's `membership`: Ready pods in one namespace with
//! one label, spread over the nodes' zones (`topology.kubernetes.io/zone`), weighing 1
//! or 2 by the `kubesd.io/weight` annotation (and requesting half a core or one); and
//! [`ScraperRoll`], a churn that rolls them one by one as a StatefulSet's rolling update
//! does (NotReady, deleted, recreated Ready under the same name on the same node), so
//! the demo and the tests show assignment, handover and zones at work.

use std::time::Duration;

use serde_json::{Value, json};

use super::churn::ChurnHandle;
use super::error::ApiError;
use super::generator::pod_ip;
use super::resource::Resource;
use super::sim::Simulator;

/// The scrapers' namespace.
pub const SCRAPER_NAMESPACE: &str = "monitoring";
/// The label every scraper carries, as `membership.label_selector` names it.
pub const SCRAPER_SELECTOR: &str = "app.kubernetes.io/name=kubesd-scraper";
/// The annotation holding a scraper's weight (`membership.weight_from`).
pub const WEIGHT_ANNOTATION: &str = "kubesd.io/weight";

/// The zone label of nodes.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// Creates `count` scrapers `scraper-0` … over the nodes, taking the zones in turn so
/// that they spread over every zone; scraper `i` weighs 1 + `i % 2`. Returns their
/// names.
pub fn create_scrapers(sim: &Simulator, count: usize) -> Result<Vec<String>, ApiError> {
    let nodes = nodes_by_zone(sim);
    let mut names = Vec::with_capacity(count);
    for i in 0..count {
        let zone = &nodes[i % nodes.len().max(1)];
        let node = zone
            .get((i / nodes.len().max(1)) % zone.len().max(1))
            .cloned()
            .unwrap_or_default();
        let name = format!("scraper-{i}");
        sim.create(Resource::Pods, scraper_pod(&name, &node, i, true))?;
        names.push(name);
    }
    Ok(names)
}

/// Node names grouped by zone, zones in name order (nodes without a zone as one more
/// group); never empty (one empty group without nodes).
fn nodes_by_zone(sim: &Simulator) -> Vec<Vec<String>> {
    let mut zones: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for node in sim.list(Resource::Nodes, None) {
        let name = node["metadata"]["name"].as_str().unwrap_or_default();
        let zone = node["metadata"]["labels"][ZONE_LABEL]
            .as_str()
            .unwrap_or_default();
        zones
            .entry(zone.to_string())
            .or_default()
            .push(name.to_string());
    }
    let groups: Vec<Vec<String>> = zones.into_values().collect();
    if groups.is_empty() {
        return vec![Vec::new()];
    }
    groups
}

/// Scraper `name` (the `i`th) on `node`, Ready or not.
fn scraper_pod(name: &str, node: &str, i: usize, ready: bool) -> Value {
    let status = if ready { "True" } else { "False" };
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": SCRAPER_NAMESPACE,
            "labels": {"app.kubernetes.io/name": "kubesd-scraper"},
            "annotations": {WEIGHT_ANNOTATION: (1 + i % 2).to_string()},
        },
        "spec": {"nodeName": node, "containers": [{"name": "scraper",
                 "ports": [{"name": "web", "containerPort": 9090, "protocol": "TCP"}],
                 "resources": {"requests": {"cpu": cpu_request(i), "memory": "1Gi"}}}]},
        "status": {"phase": "Running", "podIP": pod_ip((3 << 20) + i as u64),
                   "conditions": [{"type": "Ready", "status": status}]}
    })
}

/// Scraper `i`'s CPU request: half a core per unit of its weight, so that
/// `weight_from: cpu_request` weighs the scrapers as their annotation does.
fn cpu_request(i: usize) -> &'static str {
    match i % 2 {
        0 => "500m",
        _ => "1",
    }
}

/// What one [`ScraperRoll::step`] did to one scraper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RollStep {
    /// It turned NotReady (its pod shutting down).
    NotReady(String),
    /// Its pod was deleted.
    Deleted(String),
    /// Its pod was created again, Ready.
    Recreated(String),
}

/// A rolling restart of every scraper, one step at a time, over and over: each
/// scraper in name order turns NotReady, is deleted and is recreated Ready on its
/// node before the next one starts.
#[derive(Debug, Default)]
pub struct ScraperRoll {
    /// The scraper being rolled (by index in name order) and how far.
    at: usize,
    phase: u8,
    /// The node of the scraper being rolled, kept while its pod is gone.
    node: String,
}

impl ScraperRoll {
    /// A roll starting at the first scraper.
    pub fn new() -> ScraperRoll {
        ScraperRoll::default()
    }

    /// Applies the next step; `None` when there is no scraper.
    pub fn step(&mut self, sim: &Simulator) -> Result<Option<RollStep>, ApiError> {
        let names = scraper_names(sim);
        let count = names.len() + usize::from(self.phase == 2);
        if count == 0 {
            return Ok(None);
        }
        let i = self.at % count;
        let name = format!("scraper-{i}");
        let step = match self.phase {
            0 => {
                let Some(mut pod) = sim.get(Resource::Pods, SCRAPER_NAMESPACE, &name) else {
                    self.at += 1;
                    return Ok(None);
                };
                self.node = pod["spec"]["nodeName"].as_str().unwrap_or_default().into();
                pod["status"]["conditions"] = json!([{"type": "Ready", "status": "False"}]);
                sim.update(Resource::Pods, pod)?;
                RollStep::NotReady(name)
            }
            1 => {
                sim.delete(Resource::Pods, SCRAPER_NAMESPACE, &name)?;
                RollStep::Deleted(name)
            }
            _ => {
                sim.create(Resource::Pods, scraper_pod(&name, &self.node, i, true))?;
                self.at += 1;
                RollStep::Recreated(name)
            }
        };
        self.phase = (self.phase + 1) % 3;
        Ok(Some(step))
    }
}

impl ScraperRoll {
    /// Applies one step every `every` on the current actix runtime until the handle
    /// is stopped (`kubesd simulate --roll-scrapers-every`). Errors are logged and
    /// skipped, as the churn's are.
    pub fn start(mut self, sim: Simulator, every: Duration) -> ChurnHandle {
        let looping = sim.clone();
        let task = actix_rt::spawn(async move {
            let sim = looping;
            let mut interval = tokio::time::interval(every.max(Duration::from_millis(1)));
            loop {
                interval.tick().await;
                match self.step(&sim) {
                    Ok(Some(step)) => tracing::info!(?step, "scraper roll"),
                    Ok(None) => {}
                    Err(err) => tracing::warn!(%err, "scraper roll step failed"),
                }
            }
        });
        ChurnHandle::new(task, sim, 0)
    }
}

/// The scrapers' pod names.
fn scraper_names(sim: &Simulator) -> Vec<String> {
    sim.list(Resource::Pods, Some(SCRAPER_NAMESPACE))
        .iter()
        .filter(|p| p["metadata"]["labels"]["app.kubernetes.io/name"] == "kubesd-scraper")
        .filter_map(|p| p["metadata"]["name"].as_str().map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generator::{ClusterSpec, generate};

    #[test]
    fn scrapers_spread_over_zones_and_roll_one_by_one() {
        let sim = Simulator::new(10_000, 1, true);
        let spec = ClusterSpec {
            nodes: 6,
            pods: 10,
            ..ClusterSpec::default()
        };
        generate(&sim, &spec).expect("cluster");
        let names = create_scrapers(&sim, 6).expect("scrapers");
        assert_eq!(names.len(), 6);
        let zone_of = |pod: &Value| {
            let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
            let node = sim.get(Resource::Nodes, "", node).expect("a node");
            node["metadata"]["labels"][ZONE_LABEL]
                .as_str()
                .map(String::from)
        };
        let zones: std::collections::BTreeSet<Option<String>> = names
            .iter()
            .map(|n| zone_of(&sim.get(Resource::Pods, SCRAPER_NAMESPACE, n).expect("pod")))
            .collect();
        assert_eq!(zones.len(), 3, "{zones:?}");

        let mut roll = ScraperRoll::new();
        let mut seen = Vec::new();
        for _ in 0..6 {
            seen.push(roll.step(&sim).expect("step").expect("a scraper"));
        }
        assert_eq!(
            seen,
            [
                RollStep::NotReady("scraper-0".into()),
                RollStep::Deleted("scraper-0".into()),
                RollStep::Recreated("scraper-0".into()),
                RollStep::NotReady("scraper-1".into()),
                RollStep::Deleted("scraper-1".into()),
                RollStep::Recreated("scraper-1".into()),
            ]
        );
        let back = sim
            .get(Resource::Pods, SCRAPER_NAMESPACE, "scraper-0")
            .expect("recreated");
        assert_eq!(back["status"]["conditions"][0]["status"], "True");
        assert_eq!(scraper_names(&sim).len(), 6);
    }
}
