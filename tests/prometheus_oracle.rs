//! kubesd's answers against a real Prometheus' (version 3.12, recorded under
//! `tests/prometheus_oracle/`, see its README): the same cluster (the simulator's,
//! seeded), the same configs, and `/api/v1/targets` (every `state`, with and without
//! `scrapePool`), `/api/v1/targets/relabel_steps` and the scrape configs of
//! `/api/v1/status/config` must equal Prometheus' answers as parsed JSON and YAML.
//!
//! The exceptions, which no run can fix in advance: an active target's `health`,
//! `lastScrape`, `lastScrapeDuration` and `lastError` (kubesd scrapes nothing), the
//! host of `globalUrl` (Prometheus' own external URL for targets on localhost), which
//! dropped targets a `keep_dropped_targets` bound keeps (Prometheus keeps the first
//! in an order of its discovery's maps: the test checks how many are listed and that
//! each is one of the job's), and the text Go's JSON decoder adds to
//! `error parsing labels:`.
//!
//! The target allocator's side: a collector set up as the OpenTelemetry collector's
//! `targetallocator` manager sets itself up reads kubesd's `/scrape_configs` (equal to
//! Prometheus' own loading of the jobs) and `/jobs/<url.QueryEscape(job)>/targets`,
//! for job names with spaces, `+`, `/`, `%` and non-ASCII letters, and what it scrapes
//! after the jobs' relabelling is what the real Prometheus, set up so, scraped.
//!
//! What Prometheus reads from kubesd, `/sd/{job}` and its views (shards, nodes,
//! members), is held byte for byte to kubesd's recorded answers.
//!
//! The monitors' side: kubesd watching the simulated cluster's ServiceMonitors and
//! PodMonitors must give the targets, relabel steps and scrape configs of a Prometheus
//! that ran the config prometheus-operator generated for the same monitors; and so
//! for the monitors of `tests/monitors/`'s cases on that cluster with the objects
//! they select added (`monitors_cases/`).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::promconfig::{LoadOptions, LoadedConfig, parse_config_with};
use kubesd::relabel::{RelabelConfig, ScrapeSettings, Target, compile_all, process};
use kubesd::service::api::listing::prometheus_target;
use kubesd::service::api::target_json::{public_labels, scrape_url};
use kubesd::service::{JobSet, JobSetOptions, Monitors, Shard};
use kubesd::simulator::{
    ClusterSpec, Resource, SimulatedCluster, Simulator, SimulatorConfig, create_scrapers,
};
use kubesd::{ArcStr, Discovery, Labels};
use serde::Deserialize;
use serde_json::Value;

/// The recorded answers.
fn oracle_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/prometheus_oracle")
        .join(name)
}

/// The cluster Prometheus and kubesd discovered: `kubesd simulate --seed 7 --nodes 3
/// --pods 40 --namespaces 3` (no churn).
async fn cluster() -> SimulatedCluster {
    let config = SimulatorConfig {
        seed: 7,
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        seed: 7,
        nodes: 3,
        pods: 40,
        namespaces: 3,
        ..ClusterSpec::default()
    };
    SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts")
}

/// `kubesd run` with `loaded`, once every job has listed everything.
struct Service {
    base: String,
    client: awc::Client,
    handle: actix_web::dev::ServerHandle,
    jobs: JobSet,
}

impl Service {
    async fn start(loaded: &LoadedConfig) -> Service {
        let published = Arc::new(RwLock::new(BTreeMap::new()));
        let options = JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: Duration::ZERO,
        };
        let discovery = Discovery::start(SimulatedCluster::engine_options());
        let mut jobs = JobSet::new(discovery, options, Arc::clone(&published));
        let mut monitors = Monitors::new(Arc::default(), Duration::ZERO);
        (monitors.configure(jobs.discovery(), loaded, &LoadOptions::default()))
            .await
            .expect("monitors watched");
        if loaded.monitors.is_some() {
            // The monitors' first publish, once their watches have listed.
            actix_rt::time::timeout(Duration::from_secs(30), monitors.changed())
                .await
                .expect("the monitors are listed");
        }
        monitors.apply(&mut jobs, loaded).await.expect("jobs start");
        support::service::wait_synced(&jobs).await;
        let (bound, handle) = support::service::serve(published, None);
        Service {
            base: format!("http://{bound}"),
            client: awc::Client::default(),
            handle,
            jobs,
        }
    }

    /// Waits until every job's actors assign by a fleet of `count` members: the member
    /// watch has listed the scrapers and each actor has taken the fleet it published.
    /// Jobs sync independently of the member watch, so a share asked for before this
    /// would be split among the members known then (none, early on).
    async fn wait_for_members(&self, count: usize) {
        for (name, job) in self.jobs.jobs() {
            let mut polls = 0;
            while (job.parts().iter())
                .any(|p| p.cell.load().members.current().members().len() != count)
            {
                polls += 1;
                assert!(polls < 4_000, "job {name} never took the {count} members");
                actix_rt::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let (status, body) = self.get_bytes(path).await;
        let value = serde_json::from_slice(&body).expect("JSON");
        (status, value)
    }

    async fn get_bytes(&self, path: &str) -> (u16, Vec<u8>) {
        let url = format!("{}{path}", self.base);
        let mut res = self.client.get(&url).send().await.expect("answers");
        let body = res.body().limit(64 << 20).await.expect("body");
        (res.status().as_u16(), body.to_vec())
    }

    async fn stop(mut self) {
        self.handle.stop(true).await;
        self.jobs.stop_all().await;
    }
}

/// A config of the oracle, its `API_SERVER_URL` the simulator's.
fn load(name: &str, url: &str) -> LoadedConfig {
    let text = std::fs::read_to_string(oracle_dir(name).join("config.yml")).expect("config");
    let text = text.replace("API_SERVER_URL", url);
    // Relative names in the config are relative to where Prometheus read it.
    parse_config_with(
        &text,
        Path::new("config.yml"),
        &LoadOptions::default(),
        &|_| None,
    )
    .expect("config loads")
}

/// Fields of an active target no run fixes in advance.
const VOLATILE: [&str; 4] = ["health", "lastScrape", "lastScrapeDuration", "lastError"];

/// A targets answer with the fields no run fixes left out, `globalUrl`'s host
/// removed, and its lists in one order.
fn normalised(mut answer: Value) -> Value {
    let Some(data) = answer.get_mut("data").and_then(Value::as_object_mut) else {
        return answer;
    };
    for list in ["activeTargets", "droppedTargets"] {
        let Some(Value::Array(targets)) = data.get_mut(list) else {
            continue;
        };
        for target in targets.iter_mut().filter_map(Value::as_object_mut) {
            for field in VOLATILE {
                target.remove(field);
            }
            if let Some(Value::String(url)) = target.get_mut("globalUrl") {
                *url = without_host(url);
            }
        }
        targets.sort_by_cached_key(|t| t.to_string());
    }
    answer
}

/// `scheme://host/rest` as `scheme:///rest`.
fn without_host(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let path = rest.find('/').map_or("", |at| &rest[at..]);
    format!("{scheme}://{path}")
}

/// Prometheus' recorded targets answers by query, each target written once in a
/// table and the answers' lists as indexes into it.
fn recorded_targets(name: &str) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(oracle_dir(name).join("targets.json")).expect("targets");
    let file: Value = serde_json::from_str(&text).expect("JSON");
    let table = file["targets"].as_array().expect("a table").clone();
    let mut answers = BTreeMap::new();
    for (query, answer) in file["answers"].as_object().expect("answers") {
        let mut answer = answer.clone();
        for list in ["activeTargets", "droppedTargets"] {
            if let Some(Value::Array(indexes)) = answer["data"].get_mut(list) {
                for index in indexes.iter_mut() {
                    let at = index.as_u64().expect("an index") as usize;
                    *index = table[at].clone();
                }
            }
        }
        answers.insert(query.clone(), normalised(answer));
    }
    answers
}

/// Jobs whose dropped targets a `keep_dropped_targets` bound cuts, each with the job
/// of the same discovery and rules that lists them all (`keep-dropped`).
const BOUNDED: [(&str, &str); 2] = [("kept-7", "kept-all"), ("kept-global", "kept-all")];

/// The pools whose dropped targets a bound cuts, each with the pool in `all_dropped`
/// that lists them all.
struct Bounds {
    pools: Vec<(String, String)>,
    all_dropped: Vec<Value>,
}

/// A config's bounds: where a second Prometheus ran it without them
/// (`dropped_unbounded.json`, its dropped targets), every job with
/// `keep_dropped_targets` against itself there; else [`BOUNDED`] against its twins in
/// the recorded answer.
fn bounds(name: &str, recorded: &BTreeMap<String, Value>) -> Bounds {
    let unbounded = oracle_dir(name).join("dropped_unbounded.json");
    let Ok(text) = std::fs::read_to_string(&unbounded) else {
        return Bounds {
            pools: (BOUNDED.iter())
                .map(|(b, t)| (b.to_string(), t.to_string()))
                .collect(),
            all_dropped: (recorded["state=dropped"]["data"]["droppedTargets"].as_array())
                .cloned()
                .unwrap_or_default(),
        };
    };
    let config =
        std::fs::read_to_string(oracle_dir(name).join("status_config.yml")).expect("status config");
    let pools = (scrape_configs(&config).as_array().into_iter().flatten())
        .filter(|job| job.get("keep_dropped_targets").is_some())
        .filter_map(|job| job["job_name"].as_str())
        .map(|job| (job.to_string(), job.to_string()))
        .collect();
    Bounds {
        pools,
        all_dropped: serde_json::from_str(&text).expect("JSON"),
    }
}

/// `got` against `want` for one query. For a bounded job: as many dropped targets,
/// each one its twin job lists in `bounds.all_dropped` (Prometheus' answer without a
/// bound).
fn compare_targets(mut got: Value, mut want: Value, bounds: &Bounds) -> Result<(), String> {
    for (bounded, twin) in &bounds.pools {
        let of = |answer: &mut Value| -> Vec<Value> {
            let Some(Value::Array(list)) = answer["data"].get_mut("droppedTargets") else {
                return Vec::new();
            };
            let (pool, rest): (Vec<Value>, Vec<Value>) = list
                .drain(..)
                .partition(|t| t["scrapePool"] == bounded.as_str());
            *list = rest;
            pool
        };
        let (mine, theirs) = (of(&mut got), of(&mut want));
        if mine.len() != theirs.len() {
            return Err(format!(
                "{bounded}: {} dropped targets listed, Prometheus lists {}",
                mine.len(),
                theirs.len()
            ));
        }
        for mut target in mine {
            target["scrapePool"] = twin.as_str().into();
            target["discoveredLabels"]["job"] = twin.as_str().into();
            if !bounds.all_dropped.contains(&target) {
                return Err(format!(
                    "{bounded}: {target} is none of its dropped targets"
                ));
            }
        }
    }
    if got == want {
        return Ok(());
    }
    Err(difference(&got["data"], &want["data"]))
}

/// What differs between two answers' data, shortly.
fn difference(got: &Value, want: &Value) -> String {
    let mut out = String::new();
    for key in ["activeTargets", "droppedTargets", "droppedTargetCounts"] {
        let (g, w) = (&got[key], &want[key]);
        if g == w {
            continue;
        }
        let (Some(gl), Some(wl)) = (g.as_array(), w.as_array()) else {
            out.push_str(&format!("\n{key}: got {g}, Prometheus {w}"));
            continue;
        };
        let only_got = gl.iter().find(|t| !wl.contains(t));
        let only_want = wl.iter().find(|t| !gl.contains(t));
        out.push_str(&format!(
            "\n{key}: got {}, Prometheus {}\n  e.g. only kubesd's: {}\n  e.g. only Prometheus': {}",
            gl.len(),
            wl.len(),
            only_got.map_or("-".into(), Value::to_string),
            only_want.map_or("-".into(), Value::to_string),
        ));
    }
    out
}

/// Every recorded `/api/v1/targets` query against kubesd.
async fn check_targets(name: &str, service: &Service) {
    let recorded = recorded_targets(name);
    let bounds = bounds(name, &recorded);
    let mut failures = Vec::new();
    for (query, want) in &recorded {
        let (status, got) = service.get(&format!("/api/v1/targets?{query}")).await;
        assert_eq!(status, 200, "{name}: /api/v1/targets?{query}");
        if let Err(why) = compare_targets(normalised(got), want.clone(), &bounds) {
            failures.push(format!("{name}: /api/v1/targets?{query}:{why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Where Go's JSON decoder's words follow Prometheus' own.
const LABELS_ERROR: &str = "error parsing labels: ";

/// Every recorded `relabel_steps` query against kubesd.
async fn check_relabel_steps(name: &str, service: &Service) {
    let text = std::fs::read_to_string(oracle_dir(name).join("relabel_steps.json"))
        .expect("relabel steps");
    let recorded: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    assert!(!recorded.is_empty());
    for case in recorded {
        let query = case["query"].as_str().expect("a query");
        let (status, mut got) = service
            .get(&format!("/api/v1/targets/relabel_steps?{query}"))
            .await;
        let mut want = case["answer"].clone();
        let decoder_words = want["error"]
            .as_str()
            .is_some_and(|e| e.starts_with(LABELS_ERROR));
        if decoder_words
            && got["error"]
                .as_str()
                .is_some_and(|e| e.starts_with(LABELS_ERROR))
        {
            got["error"] = LABELS_ERROR.into();
            want["error"] = LABELS_ERROR.into();
        }
        assert_eq!(
            (status, &got),
            (case["status"].as_u64().unwrap_or(0) as u16, &want),
            "{name}: relabel_steps?{query}"
        );
    }
}

/// The `scrape_configs` of a status/config YAML, as JSON.
fn scrape_configs(yaml: &str) -> Value {
    let config: Value = serde_norway::from_str(yaml).expect("YAML");
    config["scrape_configs"].clone()
}

/// Prometheus' recorded scrape configs, its `API_SERVER_URL` `url`.
fn recorded_scrape_configs(name: &str, url: &str) -> Value {
    let text =
        std::fs::read_to_string(oracle_dir(name).join("status_config.yml")).expect("status config");
    scrape_configs(&text.replace("API_SERVER_URL", url))
}

/// The scrape configs of `/api/v1/status/config` against Prometheus'.
async fn check_status_config(name: &str, service: &Service, url: &str) {
    let (status, answer) = service.get("/api/v1/status/config").await;
    assert_eq!(status, 200);
    let got = scrape_configs(answer["data"]["yaml"].as_str().expect("yaml"));
    let want = recorded_scrape_configs(name, url);
    let (got, want) = (
        got.as_array().expect("jobs"),
        want.as_array().expect("jobs"),
    );
    let names =
        |jobs: &[Value]| -> Vec<Value> { jobs.iter().map(|j| j["job_name"].clone()).collect() };
    assert_eq!(names(got), names(want), "{name}: the jobs, in order");
    for (g, w) in got.iter().zip(want) {
        for key in w.as_object().into_iter().flatten().map(|(k, _)| k) {
            assert_eq!(
                g.get(key),
                w.get(key),
                "{name}: job {}: {key}",
                w["job_name"]
            );
        }
        assert_eq!(g, w, "{name}: job {}", w["job_name"]);
    }
}

/// `/sd/{job}` and its views, what a Prometheus reading kubesd gets, byte for byte as
/// recorded (`sd_bodies.json`).
async fn check_sd_bodies(name: &str, service: &Service) {
    let text = std::fs::read_to_string(oracle_dir(name).join("sd_bodies.json")).expect("sd bodies");
    let recorded: Vec<Value> = serde_json::from_str(&text).expect("JSON");
    assert!(!recorded.is_empty());
    for answer in recorded {
        let path = answer["path"].as_str().expect("a path");
        let (status, body) = service.get_bytes(path).await;
        assert_eq!(status, 200, "{path}");
        let body = String::from_utf8(body).expect("text");
        assert_eq!(body, answer["body"].as_str().expect("a body"), "{path}");
    }
}

/// A config of the oracle against every answer recorded for it.
async fn check(name: &str) {
    check_on(name, cluster().await).await;
}

/// A config of the oracle against every answer recorded for it, on `running`.
async fn check_on(name: &str, running: SimulatedCluster) {
    let url = running.url();
    let service = Service::start(&load(name, &url)).await;
    if oracle_dir(name).join("targets.json").exists() {
        check_targets(name, &service).await;
        check_relabel_steps(name, &service).await;
    }
    if oracle_dir(name).join("sd_bodies.json").exists() {
        check_sd_bodies(name, &service).await;
    }
    check_status_config(name, &service, &url).await;
    service.stop().await;
    running.stop().await;
}

/// prometheus-operator's monitors of the simulated cluster, watched by kubesd's
/// `monitors:` section, against a Prometheus that ran the scrape configs the operator
/// generated for them: label for label, step for step, setting for setting.
#[actix_rt::test]
async fn monitors_as_the_operators_generated_config() {
    check("monitors").await;
}

/// The cluster of a monitors case: the simulated one, then the case's Namespaces,
/// Secrets and monitors (`tests/monitors/<case>/resources.yaml`, or the oracle case's
/// own where Prometheus cannot run them as they are), then the objects they select
/// (`monitors_cases/workloads.yaml`), as Prometheus discovered it.
async fn monitors_case_cluster(case: &str) -> SimulatedCluster {
    let running = cluster().await;
    let own = oracle_dir("monitors_cases")
        .join(case)
        .join("resources.yaml");
    let resources = if own.exists() {
        own
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/monitors")
            .join(case)
            .join("resources.yaml")
    };
    add_objects(running.sim(), &resources);
    add_objects(running.sim(), &oracle_dir("monitors_cases/workloads.yaml"));
    running
}

/// Creates each object of a YAML file in order; one that exists already (a Namespace
/// both files name, one the simulated cluster has) is left as it is.
fn add_objects(sim: &Simulator, file: &Path) {
    let text = std::fs::read_to_string(file).expect("objects");
    for (i, doc) in serde_norway::Deserializer::from_str(&text).enumerate() {
        let what = format!("{} document {i}", file.display());
        let object = Value::deserialize(doc).unwrap_or_else(|e| panic!("{what}: {e}"));
        if object.is_null() {
            continue;
        }
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let resource = (Resource::ALL.into_iter())
            .find(|r| r.kind() == kind)
            .unwrap_or_else(|| panic!("{what}: kind {kind:?}"));
        match sim.create(resource, object) {
            Err(e) if e.reason != "AlreadyExists" => panic!("{what}: {e}"),
            _ => {}
        }
    }
}

/// The monitors of a case of `tests/monitors/` on the simulated cluster with what they
/// select, watched by kubesd's `monitors:` section, against a Prometheus that ran the
/// scrape configs prometheus-operator generated for the cluster's monitors.
async fn check_monitors_case(case: &str) {
    let running = monitors_case_cluster(case).await;
    check_on(&format!("monitors_cases/{case}"), running).await;
}

/// `jobLabel`, `targetLabels`, `podTargetLabels`, `attachMetadata`, `filterRunning`,
/// endpoints by port name, `targetPort` number and name and none, relabelings of
/// every kind, on the `endpointslice` role.
#[actix_rt::test]
async fn monitors_service_monitor_fields() {
    check_monitors_case("service_monitor_fields").await;
}

/// The `endpoints` role, a monitor's own `EndpointSlice`, `namespaceSelector.any`,
/// `selectorMechanism: RoleSelector`.
#[actix_rt::test]
async fn monitors_service_monitor_roles() {
    check_monitors_case("service_monitor_roles").await;
}

/// PodMonitors: ports by name and number, `targetPort`, `filterRunning`, a namespace
/// selector on Namespace labels.
#[actix_rt::test]
async fn monitors_pod_monitor() {
    check_monitors_case("pod_monitor").await;
}

/// Probes of Ingresses through their prober.
#[actix_rt::test]
async fn monitors_probe_ingress() {
    check_monitors_case("probe_ingress").await;
}

/// A ScrapeConfig's `kubernetesSDConfigs`: roles, namespaces, selectors, metadata.
#[actix_rt::test]
async fn monitors_scrape_config_kinds() {
    check_monitors_case("scrape_config_kinds").await;
}

/// The same monitors' jobs as collectors read them: `/scrape_configs` serves each
/// as Prometheus ran it (its Secret's password redacted, as Prometheus shows it),
/// `/jobs` links each to its targets, and `/sd/<job>` serves its targets.
#[actix_rt::test]
async fn monitors_jobs_are_served_to_collectors() {
    let running = cluster().await;
    let url = running.url();
    let service = Service::start(&load("monitors", &url)).await;
    let (status, configs) = service.get("/scrape_configs").await;
    assert_eq!(status, 200);
    let prometheus = recorded_scrape_configs("monitors", &url);
    let (_, links) = service.get("/jobs").await;
    let jobs = prometheus.as_array().expect("jobs");
    assert!(!jobs.is_empty());
    for job in jobs {
        let name = job["job_name"].as_str().expect("a name");
        assert_eq!(&configs[name], job, "/scrape_configs: {name}");
        let escaped = name.replace('/', "%2F");
        assert_eq!(
            links[name]["_link"],
            format!("/jobs/{escaped}/targets"),
            "/jobs: {name}"
        );
        let (status, groups) = service.get(&format!("/sd/{name}")).await;
        assert_eq!(status, 200, "/sd/{name}");
        let targets: usize = (groups.as_array().expect("groups").iter())
            .map(|g| g["targets"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(targets > 0, "/sd/{name}: no targets");
    }
    assert_eq!(
        configs.as_object().map(|c| c.len()),
        Some(jobs.len()),
        "/scrape_configs: the monitors' jobs and no other"
    );
    service.stop().await;
    running.stop().await;
}

/// Every role, with every metadata attachment it takes.
#[actix_rt::test]
async fn every_role_and_attachment() {
    check("roles").await;
}

/// `keep_dropped_targets`, the job's and `global`'s.
#[actix_rt::test]
async fn keep_dropped_targets() {
    check("keep-dropped").await;
}

/// `params` with several values, set by a rule, and values a URL escapes.
#[actix_rt::test]
async fn multi_valued_params() {
    check("params").await;
}

/// Targets without an address, with a path in it, or with a bad interval or timeout.
#[actix_rt::test]
async fn targets_prometheus_cannot_scrape() {
    check("invalid").await;
}

/// Two discovery configs of a job that find the same targets.
#[actix_rt::test]
async fn duplicate_discovery_configs() {
    check("duplicates").await;
}

/// Settings Prometheus fills in and writes back: the scrape configs only.
#[actix_rt::test]
async fn settings_written_back() {
    check("settings").await;
}

/// The repository's example config, which names no API server (Prometheus ran in a
/// pod's environment; kubesd here reads a kubeconfig, as outside a cluster).
#[actix_rt::test]
async fn the_example_config() {
    let running = cluster().await;
    let url = running.url();
    let dir = std::env::temp_dir().join(format!("kubesd-oracle-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let kubeconfig = dir.join("kubeconfig");
    let text = format!(
        "current-context: c\ncontexts: [{{name: c, context: {{cluster: k, user: u}}}}]\nclusters: [{{name: k, cluster: {{server: \"{url}\"}}}}]\nusers: [{{name: u, user: {{}}}}]\n"
    );
    std::fs::write(&kubeconfig, text).expect("kubeconfig");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/kubesd.yml");
    let config = std::fs::read_to_string(&example).expect("the example");
    let options = LoadOptions {
        default_kubeconfig: Some(kubeconfig),
        ..LoadOptions::default()
    };
    let loaded = parse_config_with(&config, &example, &options, &|_| None).expect("loads");
    let service = Service::start(&loaded).await;
    check_targets("example", &service).await;
    check_relabel_steps("example", &service).await;
    check_status_config("example", &service, &url).await;
    service.stop().await;
    running.stop().await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// The allocator config's jobs and the paths Go's `url.QueryEscape` makes of their
/// names (Go 1.27's answers), as the collector asks for their targets.
const ESCAPED: [(&str, &str); 5] = [
    ("node exporter+textfile", "node+exporter%2Btextfile"),
    ("a b", "a+b"),
    ("a+b", "a%2Bb"),
    (
        "serviceMonitor/default/app/0",
        "serviceMonitor%2Fdefault%2Fapp%2F0",
    ),
    ("100%~*ünïcødé", "100%25~%2A%C3%BCn%C3%AFc%C3%B8d%C3%A9"),
];

/// The collectors of the allocator's check: `create_scrapers`' pods.
const COLLECTORS: [&str; 3] = ["scraper-0", "scraper-1", "scraper-2"];

/// A scrape target as Prometheus' targets API shows it, for the allocator's check.
fn shown(pool: &str, labels: &Labels, params: &[(String, Vec<String>)]) -> Value {
    let public: BTreeMap<String, String> = public_labels(labels)
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect();
    serde_json::json!({"scrapePool": pool, "labels": public, "scrapeUrl": scrape_url(labels, params, "/metrics")})
}

/// What a collector scrapes of one job: its share's discovered targets (HTTP SD
/// groups) relabelled with the served config, as Prometheus makes scrape targets.
fn collector_targets(pool: &str, config: &Value, share: &Value) -> Vec<Value> {
    let mut rules = match &config["relabel_configs"] {
        Value::Null => Value::Array(Vec::new()),
        rules => rules.clone(),
    };
    // Prometheus reads a null regex (an empty one, written back) as empty.
    for rule in rules.as_array_mut().into_iter().flatten() {
        if rule.get("regex") == Some(&Value::Null) {
            rule["regex"] = "".into();
        }
    }
    let rules: Vec<RelabelConfig> = serde_json::from_value(rules).expect("rules decode");
    let rules = compile_all(&rules).expect("rules compile");
    let text = |key: &str| ArcStr::from(config[key].as_str().expect(key));
    let params: Vec<(String, Vec<String>)> =
        serde_json::from_value::<BTreeMap<String, Vec<String>>>(config["params"].clone())
            .unwrap_or_default()
            .into_iter()
            .collect();
    let mut scrape = ScrapeSettings::new(pool);
    (scrape.scheme, scrape.metrics_path) = (text("scheme"), text("metrics_path"));
    (scrape.scrape_interval, scrape.scrape_timeout) =
        (text("scrape_interval"), text("scrape_timeout"));
    scrape.params = (params.iter())
        .map(|(n, v)| {
            (
                ArcStr::from(format!("__param_{n}")),
                ArcStr::from(v[0].as_str()),
            )
        })
        .collect();
    let mut out = Vec::new();
    for group in share.as_array().expect("groups") {
        for address in group["targets"].as_array().expect("targets") {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(group["labels"].clone()).expect("labels");
            let discovered = Labels::from_pairs(
                (labels.iter().map(|(n, v)| (n.as_str(), v.as_str())))
                    .chain([("__address__", address.as_str().expect("an address"))]),
            );
            let target = process(&discovered, &scrape, &rules);
            match target {
                Target::Keep(kept) if prometheus_target(&Target::Keep(kept.clone()), &scrape) => {
                    out.push(shown(pool, &kept, &params))
                }
                _ => {}
            }
        }
    }
    out
}

/// The collector's side: `/scrape_configs` as Prometheus loads the jobs, each job's
/// targets at the path the collector builds, and per collector what the real
/// Prometheus, set up as the collector sets itself up, scraped.
#[actix_rt::test]
async fn the_target_allocator_as_the_collector_reads_it() {
    let running = cluster().await;
    let scrapers = create_scrapers(running.sim(), COLLECTORS.len()).expect("scrapers");
    assert_eq!(scrapers, COLLECTORS);
    let url = running.url();
    let service = Service::start(&load("allocator", &url)).await;
    service.wait_for_members(COLLECTORS.len()).await;
    let (status, configs) = service.get("/scrape_configs").await;
    assert_eq!(status, 200);
    let prometheus = recorded_scrape_configs("allocator", &url);
    for job in prometheus.as_array().expect("jobs") {
        let name = job["job_name"].as_str().expect("a name");
        assert_eq!(&configs[name], job, "/scrape_configs: {name}");
    }
    let (_, links) = service.get("/jobs").await;
    for (name, escaped) in ESCAPED {
        assert_eq!(
            links[name]["_link"],
            format!("/jobs/{escaped}/targets"),
            "{name}"
        );
    }
    let text = std::fs::read_to_string(oracle_dir("allocator").join("collectors.json"))
        .expect("collectors");
    let scraped: BTreeMap<String, Vec<Value>> = serde_json::from_str(&text).expect("JSON");
    for (collector, want) in scraped {
        let mut got = Vec::new();
        for (name, escaped) in ESCAPED {
            let path = format!("/jobs/{escaped}/targets?collector_id={collector}");
            let (status, share) = service.get(&path).await;
            assert_eq!(status, 200, "{path}");
            got.extend(collector_targets(name, &configs[name], &share));
        }
        let key = |t: &Value| t.to_string();
        got.sort_by_cached_key(key);
        got.dedup();
        let mut want = want;
        want.sort_by_cached_key(key);
        assert_eq!(got, want, "{collector}: what it scrapes");
    }
    // Without `collector_id`, every collector's share keyed by its name, as the
    // allocator's `GetAllTargetsByJob` answers: `{"<id>": {"_link":
    // "/debug/jobs/<url.QueryEscape(job)>/targets?collector_id=<id>", "targets":
    // <what ?collector_id=<id> answers>}}`; for a job that does not exist, every
    // collector with none.
    for (name, escaped) in ESCAPED.into_iter().chain([("no such job", "no+such+job")]) {
        let (status, every) = service.get(&format!("/jobs/{escaped}/targets")).await;
        assert_eq!(status, 200, "{name}");
        let mut want = serde_json::Map::new();
        for collector in COLLECTORS {
            let path = format!("/jobs/{escaped}/targets?collector_id={collector}");
            let (_, share) = service.get(&path).await;
            let link = format!("/debug/jobs/{escaped}/targets?collector_id={collector}");
            want.insert(
                collector.to_string(),
                serde_json::json!({"_link": link, "targets": share}),
            );
        }
        assert_eq!(
            every,
            Value::Object(want),
            "{name}: every collector's share"
        );
    }
    check_sd_bodies("allocator", &service).await;
    // A job that does not exist has no targets, as the allocator answers.
    let (status, none) = service
        .get("/jobs/no+such+job/targets?collector_id=scraper-0")
        .await;
    assert_eq!((status, none), (200, Value::Array(Vec::new())));
    service.stop().await;
    running.stop().await;
}
