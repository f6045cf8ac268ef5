//! Prometheus' targets API, relabel steps and config on kubesd's listener, and
//! kubesd's own JSON for its status page, against the simulator: active targets are
//! what `/sd/{job}` serves, dropped ones are listed and counted in full (past the
//! status page's own bound), each has the rule that dropped it, and the steps agree
//! with it; secrets never show.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::Discovery;
use kubesd::promconfig::parse_config;
use kubesd::service::api::kubesd_api::DROPPED_TARGETS_LIMIT;
use kubesd::service::{JobSet, JobSetOptions, Shard};
use kubesd::simulator::{ClusterSpec, SimulatedCluster, SimulatorConfig};
use serde_json::Value;

type LabelMap = BTreeMap<String, String>;

const PASSWORD: &str = "hunter2-never-shown";

/// A pod job that drops the pods of one namespace by rule and names the rest; a
/// node job that keeps all.
fn config(url: &str) -> String {
    format!(
        r#"scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        api_server: {url:?}
        basic_auth: {{username: u, password: {PASSWORD}}}
    relabel_configs:
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        regex: '.*[02468]'
        action: drop
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
  - job_name: nodes
    kubernetes_sd_configs: [{{role: node, api_server: {url:?}}}]
"#
    )
}

struct Service {
    base: String,
    client: awc::Client,
    handle: actix_web::dev::ServerHandle,
    jobs: JobSet,
    _cluster: SimulatedCluster,
}

async fn start() -> Service {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 12,
        ..ClusterSpec::default()
    };
    start_with(&spec, config).await
}

/// `kubesd run` with the config `config` writes for the cluster `spec` describes, once
/// every job has synced.
async fn start_with(spec: &ClusterSpec, config: fn(&str) -> String) -> Service {
    let cluster = SimulatedCluster::start(SimulatorConfig::default(), spec)
        .await
        .expect("cluster starts");
    let loaded = parse_config(&config(&cluster.url()), Path::new("k.yml")).expect("loads");
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let options = JobSetOptions {
        shard: Shard::new(0, 1).expect("shard"),
        output_dir: None,
        publish_interval: Duration::ZERO,
    };
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let mut jobs = JobSet::new(discovery, options, Arc::clone(&published));
    jobs.apply(&loaded).await.expect("jobs start");
    support::service::wait_synced(&jobs).await;
    let (bound, handle) = support::service::serve(published, None);
    Service {
        base: format!("http://{bound}"),
        client: awc::Client::default(),
        handle,
        jobs,
        _cluster: cluster,
    }
}

impl Service {
    async fn get(&self, path: &str) -> (u16, Vec<u8>) {
        let url = format!("{}{path}", self.base);
        let mut res = self.client.get(&url).send().await.expect("answers");
        let body = res.body().limit(64 << 20).await.expect("body");
        (res.status().as_u16(), body.to_vec())
    }

    /// The `data` of a successful Prometheus-style answer.
    async fn data(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        let value: Value = serde_json::from_slice(&body).expect("JSON");
        assert_eq!(
            (status, &value["status"]),
            (200, &Value::from("success")),
            "{path}"
        );
        value["data"].clone()
    }

    async fn stop(mut self) {
        self.handle.stop(true).await;
        self.jobs.stop_all().await;
    }
}

fn label_map(value: &Value) -> LabelMap {
    serde_json::from_value(value.clone()).expect("a label object")
}

/// The labels `/sd/{job}` serves, each target as Prometheus shows it: public labels,
/// `instance` from the address.
async fn served(service: &Service, job: &str) -> BTreeSet<LabelMap> {
    let (status, body) = service.get(&format!("/sd/{job}")).await;
    assert_eq!(status, 200);
    let groups: Vec<Value> = serde_json::from_slice(&body).expect("HTTP SD JSON");
    let mut out = BTreeSet::new();
    for group in groups {
        let labels = label_map(&group["labels"]);
        for target in group["targets"].as_array().into_iter().flatten() {
            let mut shown: LabelMap = labels
                .iter()
                .filter(|(k, _)| !k.starts_with("__"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let address = target.as_str().unwrap_or_default().to_string();
            shown.entry("instance".into()).or_insert(address);
            out.insert(shown);
        }
    }
    out
}

#[actix_rt::test]
async fn targets_are_what_sd_serves_and_dropped_ones_name_their_rule() {
    let service = start().await;
    let data = service.data("/api/v1/targets?scrapePool=pods").await;
    let active = data["activeTargets"].as_array().expect("active");
    let shown: BTreeSet<LabelMap> = active.iter().map(|t| label_map(&t["labels"])).collect();
    assert!(!shown.is_empty(), "some pods are kept");
    assert_eq!(shown, served(&service, "pods").await, "active = /sd/pods");
    for target in active {
        assert_eq!(target["scrapePool"], "pods");
        assert_eq!(target["health"], "unknown");
        let discovered = label_map(&target["discoveredLabels"]);
        assert_eq!(discovered["job"], "pods", "seeded as Prometheus seeds");
        let url = target["scrapeUrl"].as_str().expect("url");
        assert_eq!(url, format!("http://{}/metrics", discovered["__address__"]));
    }
    let dropped = data["droppedTargets"].as_array().expect("dropped");
    assert!(!dropped.is_empty(), "some pods are dropped");
    assert_eq!(data["droppedTargetCounts"]["pods"], dropped.len());

    // kubesd's own listing says which rule dropped each; the steps agree.
    let ours = service
        .data("/api/v1/kubesd/targets?scrapePool=pods&state=dropped")
        .await;
    let ours = ours["droppedTargets"].as_array().expect("dropped").clone();
    assert_eq!(ours.len(), dropped.len());
    for target in &ours {
        assert_eq!(target["droppedBy"]["index"], 1, "{target}");
        assert_eq!(target["droppedBy"]["rule"]["action"], "drop");
        let labels = target["discoveredLabels"].to_string();
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("scrapePool", "pods")
            .append_pair("labels", &labels)
            .finish();
        let steps = service
            .data(&format!("/api/v1/targets/relabel_steps?{query}"))
            .await;
        let keeps: Vec<bool> = steps["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| s["keep"].as_bool().expect("keep"))
            .collect();
        assert_eq!(keeps, [true, false, false]);
        assert_eq!(steps["steps"][1]["output"], serde_json::json!({}));
    }
    service.stop().await;
}

#[actix_rt::test]
async fn state_and_pool_filter_as_prometheus_does() {
    let service = start().await;
    let active = service.data("/api/v1/targets?state=active").await;
    assert_eq!(active["droppedTargets"], serde_json::json!([]));
    assert_eq!(active["droppedTargetCounts"], Value::Null);
    let pools: BTreeSet<&str> = active["activeTargets"]
        .as_array()
        .expect("active")
        .iter()
        .filter_map(|t| t["scrapePool"].as_str())
        .collect();
    assert_eq!(pools, BTreeSet::from(["nodes", "pods"]));
    let dropped = service
        .data("/api/v1/targets?state=dropped&scrapePool=nodes")
        .await;
    assert_eq!(dropped["activeTargets"], serde_json::json!([]));
    // Every pool's count, whichever pool is listed.
    let all = service.data("/api/v1/targets?state=dropped").await;
    let pods_dropped = &all["droppedTargetCounts"]["pods"];
    assert!(pods_dropped.as_u64().is_some_and(|n| n > 0), "{all}");
    assert_eq!(dropped["droppedTargetCounts"]["nodes"], 0);
    assert_eq!(&dropped["droppedTargetCounts"]["pods"], pods_dropped);
    let none = service.data("/api/v1/targets?scrapePool=absent").await;
    assert_eq!(none["activeTargets"], serde_json::json!([]));
    assert_eq!(&none["droppedTargetCounts"]["pods"], pods_dropped);
    // A state Prometheus does not know lists nothing.
    let neither = service.data("/api/v1/targets?state=unknown").await;
    assert_eq!(
        (&neither["activeTargets"], &neither["droppedTargets"]),
        (&serde_json::json!([]), &serde_json::json!([]))
    );
    assert_eq!(neither["droppedTargetCounts"], Value::Null);

    let (status, body) = service
        .get("/api/v1/targets/relabel_steps?labels=%7B%7D")
        .await;
    let error: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        (status, &error["errorType"]),
        (400, &Value::from("bad_data"))
    );
    let (status, _) = service
        .get("/api/v1/targets/relabel_steps?scrapePool=absent&labels=%7B%7D")
        .await;
    assert_eq!(status, 400);
    service.stop().await;
}

/// The status page's listing: filtered on the server, bounded, every target counted.
#[actix_rt::test]
async fn kubesd_targets_filter_and_bound_and_count_all() {
    let service = start().await;
    let all = service
        .data("/api/v1/targets?state=active&scrapePool=pods")
        .await;
    let total = all["activeTargets"].as_array().map_or(0, Vec::len);
    assert!(total > 2);
    let two = service
        .data("/api/v1/kubesd/targets?scrapePool=pods&state=active&limit=2")
        .await;
    assert_eq!(two["activeTargets"].as_array().map(Vec::len), Some(2));
    assert_eq!(two["activeTargetCounts"]["pods"], total);
    let odd = service
        .data(
            "/api/v1/kubesd/targets?scrapePool=pods&filter=pod%3D~.*%5B13579%5D,namespace!%3Dnone",
        )
        .await;
    let shown = odd["activeTargets"].as_array().expect("active");
    assert!(!shown.is_empty() && shown.len() < total, "some match");
    for target in shown {
        let pod = target["labels"]["pod"].as_str().unwrap_or_default();
        assert!(pod.ends_with(['1', '3', '5', '7', '9']), "{pod}");
    }
    let dropped = odd["droppedTargets"].as_array().expect("dropped");
    assert!(
        dropped.is_empty(),
        "dropped pods end in an even digit: {dropped:?}"
    );
    let (status, _) = service.get("/api/v1/kubesd/targets?filter=a%3D~(").await;
    assert_eq!(status, 400, "a bad regex");
    service.stop().await;
}

/// A pod job whose rule drops every target.
fn all_dropped(url: &str) -> String {
    format!(
        r#"scrape_configs:
  - job_name: dropped
    kubernetes_sd_configs: [{{role: pod, api_server: {url:?}}}]
    relabel_configs: [{{source_labels: [__address__], regex: '.+', action: drop}}]
"#
    )
}

/// A pool with more dropped targets than the status page lists: `/api/v1/targets`
/// lists every one, as Prometheus does, while the status page's own answer lists
/// `DROPPED_TARGETS_LIMIT` of them and counts them all.
#[actix_rt::test]
async fn every_dropped_target_is_listed_past_the_status_pages_bound() {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 500,
        ..ClusterSpec::default()
    };
    let service = start_with(&spec, all_dropped).await;
    let prometheus = service
        .data("/api/v1/targets?state=dropped&scrapePool=dropped")
        .await;
    let total = prometheus["droppedTargetCounts"]["dropped"]
        .as_u64()
        .expect("a count") as usize;
    assert!(
        total > DROPPED_TARGETS_LIMIT,
        "{total} dropped targets: too few"
    );
    let listed = prometheus["droppedTargets"].as_array().expect("dropped");
    let distinct: BTreeSet<String> = listed
        .iter()
        .map(|t| t["discoveredLabels"].to_string())
        .collect();
    assert_eq!((listed.len(), distinct.len()), (total, total));
    let all = service.data("/api/v1/targets").await;
    assert_eq!(all["droppedTargets"].as_array().map(Vec::len), Some(total));
    let page = service
        .data("/api/v1/kubesd/targets?scrapePool=dropped&state=dropped")
        .await;
    assert_eq!(
        page["droppedTargets"].as_array().map(Vec::len),
        Some(DROPPED_TARGETS_LIMIT)
    );
    assert_eq!(page["droppedTargetCounts"]["dropped"], total);
    service.stop().await;
}

#[actix_rt::test]
async fn config_shows_the_jobs_with_secrets_redacted() {
    let service = start().await;
    let config = service.data("/api/v1/status/config").await;
    let yaml = config["yaml"].as_str().expect("yaml");
    assert!(yaml.contains("job_name: pods"), "{yaml}");
    assert!(yaml.contains("<secret>"), "{yaml}");
    assert!(!yaml.contains(PASSWORD), "{yaml}");
    assert!(yaml.contains("regex: .*[02468]"), "{yaml}");
    service.stop().await;
}

#[actix_rt::test]
async fn status_page_and_its_json_are_served() {
    let service = start().await;
    let jobs = service.data("/api/v1/kubesd/jobs").await;
    let pods = jobs
        .as_array()
        .expect("jobs")
        .iter()
        .find(|j| j["job"] == "pods")
        .expect("the pods job")
        .clone();
    let dropped = service
        .data("/api/v1/targets?state=dropped&scrapePool=pods")
        .await;
    assert_eq!(pods["dropped"], dropped["droppedTargetCounts"]["pods"]);
    assert_eq!(pods["synced"], true);
    assert!(pods["lastChange"].is_number(), "{pods}");
    let watchers = service.data("/api/v1/kubesd/watchers").await;
    let watchers = watchers.as_array().expect("watchers");
    assert!(
        watchers
            .iter()
            .any(|w| w["url"].as_str().is_some_and(|u| u.contains("/pods"))
                && w["jobs"] == serde_json::json!(["pods"])),
        "{watchers:?}"
    );
    assert!(watchers.iter().all(|w| w["relists"].as_u64() >= Some(1)));
    // Each URL's own list mode and encoding (this simulator streams lists, in protobuf
    // for pods), and no error.
    let pods_url = watchers
        .iter()
        .find(|w| {
            w["url"]
                .as_str()
                .is_some_and(|u| u.ends_with("/api/v1/pods"))
        })
        .expect("the pods URL");
    assert_eq!(pods_url["phase"], "Watching", "{pods_url}");
    assert!(pods_url["listMode"].is_string(), "{pods_url}");
    assert_eq!(pods_url["encoding"], "protobuf", "{pods_url}");
    assert!(pods_url["lastError"].is_null() && pods_url["lastErrorTime"].is_null());
    // HEAD, as on every GET path: the head without the body.
    for path in ["/", "/api/v1/targets", "/api/v1/kubesd/jobs"] {
        let url = format!("{}{path}", service.base);
        let req = service.client.head(&url).no_decompress();
        let mut res = req.send().await.expect("answers");
        let body = res.body().await.expect("body");
        assert_eq!((res.status().as_u16(), body.len()), (200, 0), "HEAD {path}");
    }
    let (status, page) = service.get("/").await;
    assert_eq!(status, 200);
    let page = String::from_utf8_lossy(&page);
    assert!(page.contains("<title>kubesd"), "the page");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no external assets"
    );
    service.stop().await;
}
