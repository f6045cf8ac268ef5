//! Monitors watched live against the simulator, as `kubesd run` runs them: a monitor
//! created, edited and deleted adds, replaces and removes its jobs at the next publish
//! while the other jobs' bodies and ETags stay as they were; bad monitors (an invalid
//! selector, a missing Secret, a port nothing has, thousands of them) are reported and
//! skipped, the others go on; a cluster without prometheus-operator's CRDs is reported
//! as such; the monitors' kinds are asked for in JSON (a fake API server logs the
//! requests).

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::Discovery;
use kubesd::promconfig::{LoadOptions, LoadedConfig, parse_config};
use kubesd::service::monitors::{MonitorMetrics, MonitorState, MonitorsReport};
use kubesd::service::{JobSet, JobSetOptions, Monitors, Shard};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster, Simulator, SimulatorConfig};
use serde_json::{Value, json};

/// The publish interval of the jobs and of the monitors' watch.
const PUBLISH: Duration = Duration::from_millis(50);
/// How long a step may take at most before the test fails (it normally takes a few
/// publish intervals).
const STEP: Duration = Duration::from_secs(20);

/// A cluster with the generator's objects and a namespace of our own, `shop`, with two
/// running pods `web-0` and `web-1` that expose port `metrics`.
async fn cluster() -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 4,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::start(SimulatorConfig::default(), &spec)
        .await
        .expect("cluster starts");
    let sim = running.sim();
    sim.apply(
        Resource::Namespaces,
        json!({"metadata": {"name": "shop", "labels": {"team": "shop"}}}),
    )
    .expect("namespace");
    for i in 0..2 {
        sim.apply(Resource::Pods, web_pod(i)).expect("pod");
    }
    running
}

fn web_pod(i: usize) -> Value {
    json!({
        "metadata": {"name": format!("web-{i}"), "namespace": "shop", "labels": {"app": "web"}},
        "spec": {"nodeName": "node-0", "containers": [{"name": "web", "image": "web:1",
            "ports": [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": format!("10.9.0.{}", 10 + i),
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0,
                "image": "web:1", "state": {"running": {}}}]}
    })
}

fn pod_monitor(name: &str, port: &str, path: &str) -> Value {
    json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
        "metadata": {"name": name, "namespace": "shop", "labels": {"team": "shop"}},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
                 "podMetricsEndpoints": [{"port": port, "path": path}]}
    })
}

/// A config with one hand-written job, `nodes`, and a `monitors:` section selecting
/// every PodMonitor and ServiceMonitor labelled `team: shop`.
fn config(url: &str) -> LoadedConfig {
    let yaml = format!(
        "scrape_configs:\n\
         - job_name: nodes\n  kubernetes_sd_configs: [{{role: node, api_server: {url:?}}}]\n\
         monitors:\n  api_server: {url:?}\n  scrape_interval: 15s\n\
         \x20 pod_monitor_selector: {{matchLabels: {{team: shop}}}}\n\
         \x20 service_monitor_selector: {{matchLabels: {{team: shop}}}}\n"
    );
    parse_config(&yaml, Path::new("kubesd.yml")).expect("config loads")
}

/// `kubesd run`'s pieces: the job set and the monitors, applied as its loop applies
/// them.
struct Run {
    jobs: JobSet,
    monitors: Monitors,
    metrics: Arc<MonitorMetrics>,
}

impl Run {
    async fn start(config: &LoadedConfig) -> Run {
        let published = Arc::new(RwLock::new(BTreeMap::new()));
        let options = JobSetOptions {
            shard: Shard::new(0, 1).expect("shard"),
            output_dir: None,
            publish_interval: PUBLISH,
        };
        let discovery = Discovery::start(SimulatedCluster::engine_options());
        let mut jobs = JobSet::new(discovery, options, published);
        let metrics = Arc::new(MonitorMetrics::default());
        let mut monitors = Monitors::new(Arc::clone(&metrics), PUBLISH);
        (monitors.configure(jobs.discovery(), config, &LoadOptions::default()))
            .await
            .expect("monitors watched");
        monitors.apply(&mut jobs, config).await.expect("applied");
        Run {
            jobs,
            monitors,
            metrics,
        }
    }

    /// Waits for the monitors' next publish and applies it, as the run loop does.
    async fn next_publish(&mut self) -> Arc<MonitorsReport> {
        actix_rt::time::timeout(STEP, self.monitors.changed())
            .await
            .expect("the monitors' watch publishes");
        self.monitors
            .reapply(&mut self.jobs)
            .await
            .expect("applied");
        self.monitors.report()
    }

    /// Applies publishes until `done` holds for the report.
    async fn until(
        &mut self,
        what: &str,
        done: impl Fn(&MonitorsReport) -> bool,
    ) -> Arc<MonitorsReport> {
        let report = self.monitors.report();
        if report.synced && done(&report) {
            return report;
        }
        for _ in 0..200 {
            let report = self.next_publish().await;
            if report.synced && done(&report) {
                return report;
            }
        }
        panic!("{what}: never; last report {:?}", self.monitors.report());
    }

    /// The loaded config of a running job.
    fn config_of(&self, name: &str) -> Arc<kubesd::promconfig::Job> {
        (self.jobs.jobs().into_iter())
            .find(|(n, _)| n == name)
            .and_then(|(_, j)| j.config().cloned())
            .unwrap_or_else(|| panic!("job {name} runs"))
    }

    fn job_names(&self) -> Vec<String> {
        self.jobs.jobs().into_iter().map(|(n, _)| n).collect()
    }

    /// The job's `/sd` body once it has synced and holds `targets` targets.
    async fn body(&self, name: &str, targets: usize) -> (String, Vec<Value>) {
        let job = (self.jobs.jobs().into_iter())
            .find(|(n, _)| n == name)
            .map(|(_, j)| j)
            .unwrap_or_else(|| panic!("job {name} runs"));
        let deadline = std::time::Instant::now() + STEP;
        loop {
            let body = job.sd();
            let groups: Vec<Value> = serde_json::from_slice(&body.to_vec()).expect("sd json");
            let count: usize = groups
                .iter()
                .map(|g| g["targets"].as_array().map_or(0, Vec::len))
                .sum();
            if job.status().synced && count == targets {
                return (body.etag.clone(), groups);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "job {name}: {count} targets, not {targets}"
            );
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

fn monitor_state<'a>(
    report: &'a MonitorsReport,
    name: &str,
) -> Option<&'a kubesd::service::monitors::MonitorReport> {
    report.monitors.iter().find(|m| m.name == name)
}

fn create(sim: &Simulator, resource: Resource, object: Value) {
    sim.apply(resource, object).expect("written");
}

/// The job of a monitor that stays as it is while another comes, changes and goes.
const OTHER: &str = "podMonitor/shop/other/0";

#[actix_rt::test]
async fn a_monitor_created_edited_and_deleted_moves_only_its_own_jobs() {
    let running = cluster().await;
    let sim = running.sim();
    let config = config(&running.url());
    let mut run = Run::start(&config).await;
    run.until("the first publish", |r| r.monitors.is_empty())
        .await;
    let (nodes_etag, nodes_body) = run.body("nodes", 2).await;
    create(
        sim,
        Resource::PodMonitors,
        pod_monitor("other", "metrics", "/other"),
    );
    run.until("the other monitor's job runs", |r| r.monitors.len() == 1)
        .await;
    let (other_etag, _) = run.body(OTHER, 2).await;

    create(
        sim,
        Resource::PodMonitors,
        pod_monitor("web", "metrics", "/metrics"),
    );
    run.until("the monitor's job runs", |r| {
        monitor_state(r, "web").is_some_and(|m| m.state == MonitorState::Active)
    })
    .await;
    assert_eq!(run.job_names(), ["nodes", OTHER, "podMonitor/shop/web/0"]);
    let (_, body) = run.body("podMonitor/shop/web/0", 2).await;
    let target = &body[0]["labels"];
    // The operator's labels: `job` is the PodMonitor's namespace/name.
    assert_eq!(target["job"], "shop/web", "{body:?}");
    assert_eq!(target["endpoint"], "metrics", "{body:?}");

    let mut edited = pod_monitor("web", "metrics", "/metrics");
    edited["spec"]["podMetricsEndpoints"][0]["relabelings"] =
        json!([{"targetLabel": "version", "replacement": "2"}]);
    create(sim, Resource::PodMonitors, edited);
    let deadline = std::time::Instant::now() + STEP;
    loop {
        run.next_publish().await;
        let (_, body) = run.body("podMonitor/shop/web/0", 2).await;
        if body[0]["labels"]["version"] == "2" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the edit is never served"
        );
    }
    assert_eq!(run.job_names(), ["nodes", OTHER, "podMonitor/shop/web/0"]);

    sim.delete(Resource::PodMonitors, "shop", "web")
        .expect("deleted");
    run.until("the monitor is gone", |r| r.monitors.len() == 1)
        .await;
    assert_eq!(run.job_names(), ["nodes", OTHER]);
    let (etag, body) = run.body("nodes", 2).await;
    assert_eq!(
        etag, nodes_etag,
        "the hand-written job's ETag never changed"
    );
    assert_eq!(body, nodes_body);
    let (etag, _) = run.body(OTHER, 2).await;
    assert_eq!(etag, other_etag, "nor the other monitor's");
    running.stop().await;
}

#[actix_rt::test]
async fn bad_monitors_are_reported_and_skipped_the_others_go_on() {
    let running = cluster().await;
    let sim = running.sim();
    let config = config(&running.url());
    let mut run = Run::start(&config).await;
    run.until("the first publish", |r| r.monitors.is_empty())
        .await;
    let (nodes_etag, _) = run.body("nodes", 2).await;

    let mut bad_selector = pod_monitor("bad-selector", "metrics", "/metrics");
    bad_selector["spec"]["selector"] =
        json!({"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]});
    create(sim, Resource::PodMonitors, bad_selector);
    let mut needs_secret = pod_monitor("needs-secret", "metrics", "/metrics");
    needs_secret["spec"]["podMetricsEndpoints"][0]["basicAuth"] = json!({
        "username": {"name": "creds", "key": "user"},
        "password": {"name": "creds", "key": "password"}});
    create(sim, Resource::PodMonitors, needs_secret);
    create(
        sim,
        Resource::PodMonitors,
        pod_monitor("no-such-port", "nope", "/metrics"),
    );
    create(
        sim,
        Resource::PodMonitors,
        pod_monitor("good", "metrics", "/metrics"),
    );

    let report = run
        .until("every monitor is reported", |r| r.monitors.len() == 4)
        .await;
    let state = |name: &str| monitor_state(&report, name).expect("reported").clone();
    let bad = state("bad-selector");
    assert_eq!(bad.state, MonitorState::Rejected);
    let rejection = bad.rejection.expect("why");
    assert_eq!(rejection.reason, "invalid_selector");
    assert!(
        rejection
            .message
            .starts_with("PodMonitor shop/bad-selector: "),
        "{}",
        rejection.message
    );
    let missing = state("needs-secret").rejection.expect("why");
    assert_eq!(missing.reason, "secret_not_found");
    assert!(
        missing.message.contains("secret shop/creds not found"),
        "{}",
        missing.message
    );
    assert_eq!(
        state("no-such-port").state,
        MonitorState::Active,
        "the operator keeps it too"
    );
    assert_eq!(state("good").state, MonitorState::Active);
    let mut text = String::new();
    run.metrics.render(&mut text);
    assert!(
        text.contains("kubesd_monitors{kind=\"PodMonitor\",state=\"rejected\"} 2\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "kubesd_monitor_rejections_total{kind=\"PodMonitor\",reason=\"secret_not_found\"} 1\n"
        ),
        "{text}"
    );
    run.body("podMonitor/shop/good/0", 2).await;
    run.body("podMonitor/shop/no-such-port/0", 0).await;

    // The Secret appears: the monitor that named it is translated with it, its value
    // never in the report.
    create(
        sim,
        Resource::Secrets,
        json!({
        "metadata": {"name": "creds", "namespace": "shop"},
        "data": {"user": "YWxpY2U=", "password": "aHVudGVyMg=="}}),
    );
    let report = run
        .until("the Secret is read", |r| {
            monitor_state(r, "needs-secret").is_some_and(|m| m.state == MonitorState::Active)
        })
        .await;
    let json = serde_json::to_string(&*report).expect("report json");
    assert!(
        !json.contains("hunter2") && !json.contains("aHVudGVyMg"),
        "{json}"
    );
    run.body("podMonitor/shop/needs-secret/0", 2).await;
    // Inline in the job, served redacted unless the client has a certificate, as the
    // allocator serves it.
    let config = run.config_of("podMonitor/shop/needs-secret/0");
    let served = config.served.allocator_json(false).to_string();
    assert!(
        served.contains("\"password\":\"<secret>\"") && !served.contains("hunter2"),
        "{served}"
    );
    let with_secrets = config.served.allocator_json(true).to_string();
    assert!(with_secrets.contains("hunter2"), "the verified client's");
    let (etag, _) = run.body("nodes", 2).await;
    assert_eq!(etag, nodes_etag, "the hand-written job is left alone");
    running.stop().await;
}

#[actix_rt::test]
async fn ten_thousand_monitors_are_each_reported_within_the_watches_bounds() {
    const MONITORS: usize = 10_000;
    let running = cluster().await;
    let sim = running.sim();
    for i in 0..MONITORS {
        // Rejected (a Secret that does not exist), so that they cost no job actors.
        let mut m = pod_monitor(&format!("m-{i:05}"), "metrics", "/metrics");
        m["spec"]["podMetricsEndpoints"][0]["bearerTokenSecret"] =
            json!({"name": format!("token-{}", i % 10), "key": "token"});
        create(sim, Resource::PodMonitors, m);
    }
    create(
        sim,
        Resource::PodMonitors,
        pod_monitor("good", "metrics", "/metrics"),
    );
    let config = config(&running.url());
    let mut run = Run::start(&config).await;
    let report = run
        .until("every monitor is reported", |r| {
            r.monitors.len() == MONITORS + 1
        })
        .await;
    let rejected = (report.monitors.iter())
        .filter(|m| m.state == MonitorState::Rejected)
        .count();
    assert_eq!(rejected, MONITORS);
    // One watch per kind, the Namespaces, and one per namespace's Secrets: never one
    // per monitor or per Secret named.
    assert!(report.watches.len() <= 4, "{:?}", report.watches);
    assert_eq!(run.job_names(), ["nodes", "podMonitor/shop/good/0"]);
    run.body("podMonitor/shop/good/0", 2).await;
    running.stop().await;
}

#[actix_rt::test]
async fn a_cluster_without_the_operators_crds_is_reported_not_installed() {
    let running = cluster().await;
    running.sim().set_monitoring_served(false);
    let config = config(&running.url());
    let mut run = Run::start(&config).await;
    let report = run
        .until("the watches report the CRDs missing", |r| {
            r.watches.iter().filter(|w| w.problem.is_some()).count() == 2
        })
        .await;
    for w in report.watches.iter().filter(|w| w.problem.is_some()) {
        assert!(w.not_installed, "{w:?}");
        assert!(w.url.contains("/apis/monitoring.coreos.com/v1/"), "{w:?}");
    }
    assert_eq!(run.job_names(), ["nodes"]);
    running.stop().await;
}

#[actix_rt::test]
async fn the_monitors_kinds_are_asked_for_in_json() {
    use support::fake_api::{FakeApi, Reply};
    let api = FakeApi::start(|request| {
        let path = request.target.split('?').next().unwrap_or_default();
        let kind = match path {
            "/apis/monitoring.coreos.com/v1/podmonitors" => "PodMonitorList",
            "/api/v1/namespaces" => "NamespaceList",
            _ => return Reply::k8s_status(404, "NotFound", "not here"),
        };
        if request.is_watch() {
            return Reply::watch(Vec::new(), Duration::from_secs(30));
        }
        Reply::json(format!(
            r#"{{"kind":"{kind}","apiVersion":"v1","metadata":{{"resourceVersion":"1"}},"items":[]}}"#
        ))
    })
    .await;
    let yaml = format!(
        "monitors:\n  api_server: {:?}\n  pod_monitor_selector: {{}}\n",
        api.url
    );
    let config = parse_config(&yaml, Path::new("kubesd.yml")).expect("config loads");
    let mut run = Run::start(&config).await;
    run.until("the first publish", |r| r.watches.iter().all(|w| w.listed))
        .await;
    let requests = api.requests();
    let accept = |prefix: &str| -> Vec<Option<String>> {
        (requests.iter())
            .filter(|r| r.target.starts_with(prefix))
            .map(|r| r.header("accept").map(str::to_string))
            .collect()
    };
    let monitors = accept("/apis/monitoring.coreos.com/");
    assert!(!monitors.is_empty());
    assert!(
        monitors
            .iter()
            .all(|a| a.as_deref() == Some("application/json")),
        "{monitors:?}"
    );
    // The Namespaces are built in: protobuf where the server offers it.
    let namespaces = accept("/api/v1/namespaces");
    assert!(
        namespaces
            .iter()
            .all(|a| a.as_deref().is_some_and(|a| a.contains("protobuf"))),
        "{namespaces:?}"
    );
}
