//! An actix agent embedding kubesd: two scrape jobs with the agent's own target type, a
//! constructor that does the job of relabelling (keep pods annotated
//! `prometheus.io/scrape: "true"`, build the scrape URL), and an actor that is told when
//! a job's targets change and when the state of the API URLs behind a job changes
//! (listing, watching, backing off after a problem, with the server's message).
//!
//! Runs against the built-in simulator, so it needs nothing else:
//! `cargo run --example embed_agent`. Point `api_server` at a real cluster (for example
//! `kubectl proxy` on http://127.0.0.1:8001) to use it for real.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use kubesd::simulator::{Churn, ChurnRates, ClusterSpec, SimulatedCluster, SimulatorConfig};
use kubesd::{
    Discovery, EngineOptions, Labels, NotSynced, Role, SubscriberId, TargetsUpdated,
    UrlStatusChanged,
};

/// What this agent scrapes: its own type, built from discovery's labels.
#[derive(Clone, Debug, PartialEq)]
struct ScrapeTarget {
    url: String,
    job: &'static str,
    namespace: String,
}

/// The relabelling of a pod job: only annotated pods, at their annotated path and port.
fn pod_target(labels: &Labels) -> Option<ScrapeTarget> {
    if labels.get("__meta_kubernetes_pod_annotation_prometheus_io_scrape") != Some("true") {
        return None;
    }
    let port = labels.get("__meta_kubernetes_pod_annotation_prometheus_io_port")?;
    if labels.get("__meta_kubernetes_pod_container_port_number") != Some(port) {
        return None;
    }
    let path = labels
        .get("__meta_kubernetes_pod_annotation_prometheus_io_path")
        .unwrap_or("/metrics");
    Some(ScrapeTarget {
        url: format!("http://{}{path}", labels.get("__address__")?),
        job: "pods",
        namespace: labels.get("__meta_kubernetes_namespace")?.to_string(),
    })
}

/// Every node's kubelet.
fn node_target(labels: &Labels) -> Option<ScrapeTarget> {
    Some(ScrapeTarget {
        url: format!("https://{}/metrics", labels.get("__address__")?),
        job: "kubelet",
        namespace: String::new(),
    })
}

/// Receives change notices; counts them per job.
struct ChangeLog {
    names: HashMap<SubscriberId, &'static str>,
    notices: HashMap<&'static str, usize>,
}

impl Actor for ChangeLog {
    type Context = Context<Self>;
}

impl Handler<TargetsUpdated> for ChangeLog {
    type Result = ();
    fn handle(&mut self, msg: TargetsUpdated, _: &mut Context<Self>) {
        let job = self.names.get(&msg.subscriber).copied().unwrap_or("?");
        *self.notices.entry(job).or_default() += 1;
    }
}

/// The state of a job's API URLs: what an agent would put in its own status page, or
/// act on (a configuration problem will not pass by waiting).
impl Handler<UrlStatusChanged> for ChangeLog {
    type Result = ();
    fn handle(&mut self, msg: UrlStatusChanged, _: &mut Context<Self>) {
        let job = self.names.get(&msg.subscriber).copied().unwrap_or("?");
        for url in msg.urls {
            match &url.last_error {
                None => println!(
                    "  [{job}] {}: {:?}, {} LIST(s)",
                    url.url, url.phase, url.relists
                ),
                Some(e) => println!("  [{job}] {}: {:?} after: {e}", url.url, url.phase),
            }
        }
    }
}

#[derive(Message)]
#[rtype(result = "HashMap<&'static str, usize>")]
struct Notices;

impl Handler<Notices> for ChangeLog {
    type Result = MessageResult<Notices>;
    fn handle(&mut self, _: Notices, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.notices.clone())
    }
}

#[actix_rt::main]
async fn main() -> std::io::Result<()> {
    // A cluster to discover: the simulator, with some churn.
    let sim = SimulatedCluster::start(SimulatorConfig::default(), &ClusterSpec::default())
        .await
        .map_err(std::io::Error::other)?;
    let churn = Churn::new(7, ChurnRates::default()).start_per_second(sim.sim().clone(), 40);

    let discovery = Discovery::start(EngineOptions::default());
    let pods = discovery
        .subscribe(&sim.sd_config(Role::Pod), pod_target)
        .await
        .map_err(std::io::Error::other)?;
    let nodes = discovery
        .subscribe(&sim.sd_config(Role::Node), node_target)
        .await
        .map_err(std::io::Error::other)?;
    let log = ChangeLog {
        names: HashMap::from([(pods.id(), "pods"), (nodes.id(), "kubelet")]),
        notices: HashMap::new(),
    }
    .start();
    pods.on_change(log.clone().recipient());
    nodes.on_change(log.clone().recipient());
    pods.on_status(log.clone().recipient());
    nodes.on_status(log.clone().recipient());
    for job in [&pods, &nodes] {
        // Bounded: a refused token or a missing RBAC rule is reported, not waited on.
        match job.synced_within(Duration::from_secs(30)).await {
            Ok(()) => {}
            Err(NotSynced::Failing(problem)) => {
                return Err(std::io::Error::other(format!("cannot discover: {problem}")));
            }
            Err(timed_out) => return Err(std::io::Error::other(timed_out.to_string())),
        }
    }

    for second in 1..=3 {
        actix_rt::time::sleep(Duration::from_secs(1)).await;
        let (p, n) = (pods.targets().await, nodes.targets().await);
        println!(
            "after {second}s: {} pod targets, {} kubelet targets",
            p.len(),
            n.len()
        );
        if let Some(t) = p.first() {
            println!(
                "  e.g. {} (job {}, namespace {})",
                t.url, t.job, t.namespace
            );
        }
    }
    let notices = log.send(Notices).await.unwrap_or_default();
    println!("change notices received (coalesced): {notices:?}");
    churn.stop();
    pods.stop().await;
    nodes.stop().await;
    sim.stop().await;
    Ok(())
}
