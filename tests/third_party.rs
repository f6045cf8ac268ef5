//! Configs that others wrote, kept as they are in `tests/third_party/` (their sources in
//! `tests/third_party/SOURCES.md`): Prometheus' Kubernetes example, the
//! prometheus-community and VictoriaMetrics charts' scrape configs, prometheus-operator's
//! golden files and vmagent's documented examples.
//!
//! Each must load with only `api_server` set, and give, from the simulator, the targets
//! its rules make of the simulator's objects. `KUBESD_THIRD_PARTY_DIR` names a further
//! directory of configs to treat the same way.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::Labels;
use kubesd::model::Role;
use kubesd::promconfig::{Job, LoadOptions, LoadedConfig, parse_config_with};
use kubesd::relabel::{Target, process};
use kubesd::service::{JobSet, JobSetOptions, Shard};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster, SimulatorConfig};
use kubesd::{Discovery, SdConfig};
use serde_json::json;
use serde_norway::Value;
use support::to_map;

/// Every config file under `dir` (and its subdirectories), sorted.
fn config_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(config_files(&path));
        } else if path
            .extension()
            .is_some_and(|e| e == "yml" || e == "yaml" || e == "golden")
        {
            out.push(path);
        }
    }
    out.sort();
    out
}

/// The fixtures, and those of `KUBESD_THIRD_PARTY_DIR`.
fn all_configs() -> Vec<PathBuf> {
    let mut files = config_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/third_party"));
    if let Some(dir) = std::env::var_os("KUBESD_THIRD_PARTY_DIR") {
        files.extend(config_files(Path::new(&dir)));
    }
    files
}

/// `text` with `api_server: url` in every `kubernetes_sd_configs` entry, the only change
/// made to a third-party config. With `plain`, the entries' client settings (the
/// in-cluster files they name, which do not exist here) are dropped too, for running
/// against the simulator.
fn with_api_server(text: &str, url: &str, plain: bool) -> String {
    let mut root: Value = serde_norway::from_str(text).expect("fixture is YAML");
    if let Some(jobs) = root
        .get_mut("scrape_configs")
        .and_then(Value::as_sequence_mut)
    {
        for job in jobs {
            let Some(sds) = job
                .get_mut("kubernetes_sd_configs")
                .and_then(Value::as_sequence_mut)
            else {
                continue;
            };
            for sd in sds {
                let Some(map) = sd.as_mapping_mut() else {
                    continue;
                };
                map.remove("kubeconfig_file");
                if plain {
                    let keep = ["role", "namespaces", "selectors", "attach_metadata"];
                    map.retain(|k, _| k.as_str().is_some_and(|k| keep.contains(&k)));
                }
                map.insert(Value::from("api_server"), Value::from(url));
            }
        }
    }
    serde_norway::to_string(&root).expect("serialises")
}

fn load(path: &Path, url: &str, plain: bool) -> Result<LoadedConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let text = with_api_server(&text, url, plain);
    // Outside a cluster, with no environment: placeholders stay as written.
    parse_config_with(&text, path, &LoadOptions::default(), &|_| None).map_err(|e| e.to_string())
}

#[test]
fn every_third_party_config_loads_with_only_api_server_added() {
    let files = all_configs();
    assert!(files.len() > 200, "the fixtures are there: {}", files.len());
    let mut failures = Vec::new();
    let mut jobs = 0;
    for file in &files {
        match load(file, "https://10.0.0.1:6443", false) {
            Ok(loaded) => jobs += loaded.jobs.len(),
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(jobs > 200, "{jobs} jobs");
}

/// A fixture's file under `tests/third_party`.
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/third_party")
        .join(name)
}

/// The simulator, with a generated cluster (whose pods and services carry
/// `prometheus.io/*` annotations) and the `default/kubernetes` service the API-server
/// jobs look for.
async fn cluster() -> SimulatedCluster {
    let config = SimulatorConfig {
        bookmark_interval: Duration::from_millis(100),
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        seed: 20,
        nodes: 3,
        pods: 30,
        namespaces: 2,
        pods_per_workload: 3,
    };
    let running = SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts");
    let sim = running.sim();
    let meta = json!({"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}});
    sim.create(
        Resource::Services,
        json!({"metadata": meta, "spec": {"clusterIP": "10.96.0.1", "type": "ClusterIP",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}}),
    )
    .expect("kubernetes service");
    sim.create(
        Resource::Endpoints,
        json!({"metadata": meta, "subsets": [{"addresses": [{"ip": "172.18.0.2"}],
            "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]}),
    )
    .expect("kubernetes endpoints");
    sim.create(
        Resource::EndpointSlices,
        json!({"metadata": {"name": "kubernetes", "namespace": "default",
                "labels": {"kubernetes.io/service-name": "kubernetes", "endpointslice.kubernetes.io/managed-by": "endpointslicemirroring-controller.k8s.io"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["172.18.0.2"], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}),
    )
    .expect("kubernetes endpointslice");
    // The pods of vmagent's `if` examples.
    for (name, ip) in [
        ("test-payment-7cbd8d77b6-4l5xv", "10.250.0.1"),
        ("backend-api-0", "10.250.0.2"),
    ] {
        sim.create(
            Resource::Pods,
            json!({"metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": "", "containers": [{"name": "app", "image": "app:1",
                    "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
                "status": {"phase": "Running", "podIP": ip, "hostIP": "172.18.0.9",
                    "conditions": [{"type": "Ready", "status": "True"}]}}),
        )
        .expect("example pod");
    }
    running
}

/// What job `job` must serve: the simulator's objects through kubesd's labels and the
/// job's own relabelling, computed without any watch.
fn expected(sim: &kubesd::simulator::Simulator, job: &Job) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    for sd in &job.sd_configs {
        // The own namespace is `default` here (see the golden files' test).
        let mut sd = sd.clone();
        if sd.namespaces.own_namespace && !sd.namespaces.names.is_empty() {
            sd.namespaces.names.push("default".into());
        } else if sd.namespaces.own_namespace {
            sd.namespaces.names = vec!["default".into()];
        }
        for labels in support::expected(sim, &sd) {
            let labels = Labels::from_pairs(labels.iter().map(|(n, v)| (n.as_str(), v.as_str())));
            if let Target::Keep(t) = process(&labels, &job.scrape, &job.rules) {
                out.push(to_map(&t));
            }
        }
    }
    out.sort();
    out
}

/// Starts the jobs of `configs` against the simulator, waits until each serves what it
/// must, and returns every job's targets by name.
async fn run_jobs(
    discovery: &Discovery,
    running: &SimulatedCluster,
    configs: &[LoadedConfig],
) -> Vec<BTreeMap<String, Vec<BTreeMap<String, String>>>> {
    let mut sets = Vec::new();
    for config in configs {
        let mut set = JobSet::new(
            discovery.clone(),
            JobSetOptions {
                shard: Shard::new(0, 1).expect("one shard"),
                output_dir: None,
                publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
            },
            Arc::new(RwLock::new(BTreeMap::new())),
        );
        set.apply(config).await.expect("jobs start");
        sets.push(set);
    }
    let mut all = Vec::new();
    for (config, set) in configs.iter().zip(&sets) {
        let mut served = BTreeMap::new();
        for (name, addr) in set.jobs() {
            let job = config
                .jobs
                .iter()
                .find(|j| j.name == name)
                .expect("a running job is in its config");
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            loop {
                let want = expected(running.sim(), job);
                let mut got: Vec<_> = addr.targets().await.iter().map(to_map).collect();
                got.sort();
                if want == got {
                    served.insert(name.clone(), got);
                    break;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "job {name:?} did not converge:\n{}",
                    support::diff(&want, &got)
                );
                actix_rt::time::sleep(Duration::from_millis(20)).await;
            }
        }
        all.push(served);
    }
    for mut set in sets {
        set.stop_all().await;
    }
    all
}

/// The targets of job `name` whose labels include all of `with`.
fn targets_with<'a>(
    served: &'a BTreeMap<String, Vec<BTreeMap<String, String>>>,
    name: &str,
    with: &[(&str, &str)],
) -> Vec<&'a BTreeMap<String, String>> {
    served
        .get(name)
        .unwrap_or_else(|| panic!("job {name:?} runs"))
        .iter()
        .filter(|t| {
            with.iter()
                .all(|(k, v)| t.get(*k).map(String::as_str) == Some(*v))
        })
        .collect()
}

#[actix_rt::test]
async fn the_three_main_fixtures_give_their_targets() {
    support::init_logs();
    let running = cluster().await;
    let url = running.url();
    let names = [
        "prometheus-kubernetes.yml",
        "prometheus-community-chart.yml",
        "victoria-metrics-agent-chart.yml",
        "vmagent-docs-kubernetes.yml",
    ];
    let configs: Vec<LoadedConfig> = names
        .iter()
        .map(|n| load(&fixture(n), &url, true).unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect();
    // Job names repeat across the files, so each file runs in its own job set.
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let by_file = run_jobs(&discovery, &running, &configs).await;
    let [prometheus, community, vmagent, vm_docs] = &by_file[..] else {
        unreachable!("four files")
    };

    // The API server, found through the default/kubernetes endpoints (and slices).
    let apiserver = [("__address__", "172.18.0.2:6443"), ("__scheme__", "https")];
    assert_eq!(
        targets_with(prometheus, "kubernetes-apiservers", &apiserver).len(),
        1
    );
    assert_eq!(
        targets_with(community, "kubernetes-api-servers", &apiserver).len(),
        1
    );
    assert_eq!(
        targets_with(vmagent, "kubernetes-apiservers", &apiserver).len(),
        1
    );

    // One target per node; cAdvisor's path is served because it is not the default.
    let nodes = running.sim().list(Resource::Nodes, None).len();
    assert_eq!(prometheus["kubernetes-nodes"].len(), nodes);
    assert_eq!(
        targets_with(
            vmagent,
            "kubernetes-nodes-cadvisor",
            &[("__metrics_path__", "/metrics/cadvisor")]
        )
        .len(),
        nodes
    );
    assert!(prometheus["kubernetes-nodes"].iter().all(
        |t| !t.contains_key("__metrics_path__") && t.keys().all(|k| !k.starts_with("__meta_"))
    ));

    // Pods: only those annotated for scraping, at the annotated port.
    let scraped_pods = running
        .sim()
        .list(Resource::Pods, None)
        .iter()
        .filter(|p| {
            p.pointer("/metadata/annotations/prometheus.io~1scrape")
                .and_then(|v| v.as_str())
                == Some("true")
                && p.pointer("/status/podIP").is_some()
        })
        .count();
    assert!(scraped_pods > 0, "the generator annotates some pods");
    // Prometheus' example keeps every pod (its keep rule is commented out), labelled.
    assert!(!prometheus["kubernetes-pods"].is_empty());
    assert!(
        prometheus["kubernetes-pods"]
            .iter()
            .all(|t| t.contains_key("namespace") && t.contains_key("pod"))
    );
    for (served, job) in [(community, "kubernetes-pods"), (vmagent, "kubernetes-pods")] {
        let targets = &served[job];
        assert!(!targets.is_empty(), "{job}");
        assert!(
            targets.iter().all(|t| t["__address__"].ends_with(":9090")),
            "{job}: every target at the annotated port: {targets:#?}"
        );
    }
    // vmagent's chart keeps a pod's container port only when it is the annotated one
    // (keep_if_equal), so exactly one target per annotated running pod.
    assert_eq!(vmagent["kubernetes-pods"].len(), scraped_pods);

    // The blackbox jobs: seeded `params` reach the targets as `__param_module`.
    let probes = targets_with(
        vmagent,
        "kubernetes-services",
        &[
            ("__param_module", "http_2xx"),
            ("__address__", "blackbox"),
            ("__metrics_path__", "/probe"),
        ],
    );
    assert_eq!(probes.len(), vmagent["kubernetes-services"].len());
    assert!(!probes.is_empty());

    // vmagent's documented `if` examples: `test-*` pods dropped, only `backend-*` kept.
    let test_pod = [("__address__", "10.250.0.1:8080")];
    let backend_pod = [("__address__", "10.250.0.2:8080")];
    assert!(targets_with(vm_docs, "prod_pods_only", &test_pod).is_empty());
    assert_eq!(
        targets_with(vm_docs, "prod_pods_only", &backend_pod).len(),
        1
    );
    assert_eq!(vm_docs["backend_pods"].len(), 1);
    assert_eq!(targets_with(vm_docs, "backend_pods", &backend_pod).len(), 1);
    assert_eq!(vm_docs["k8s"].len(), vm_docs["prod_pods_only"].len() + 1);
    running.stop().await;
}

#[actix_rt::test]
async fn prometheus_operator_golden_files_give_their_targets() {
    support::init_logs();
    let running = cluster().await;
    let url = running.url();
    let dir = fixture("prometheus-operator");
    // Every eighth file (all of them load in the test above): enough variety of
    // roles, namespaces and selectors, in a few seconds.
    let mut configs = Vec::new();
    for file in config_files(&dir).into_iter().step_by(8) {
        let loaded = load(&file, &url, true).unwrap_or_else(|e| panic!("{e}"));
        if !loaded.jobs.is_empty() {
            configs.push(loaded);
        }
    }
    assert!(
        configs.len() > 20,
        "{} golden files with jobs",
        configs.len()
    );
    // One job set per file (the operator's job names repeat across files), all running
    // at once: jobs with the same discovery share their watches. Some read the own
    // namespace, as the operator's do in a pod.
    let own = std::env::temp_dir().join(format!("kubesd-third-party-ns-{}", std::process::id()));
    std::fs::write(&own, "default").expect("own namespace file");
    let discovery =
        Discovery::start(SimulatedCluster::engine_options()).with_own_namespace_file(&own);
    let served = run_jobs(&discovery, &running, &configs).await;
    let jobs: usize = served.iter().map(BTreeMap::len).sum();
    let targets: usize = served.iter().flat_map(|s| s.values()).map(Vec::len).sum();
    assert!(jobs > 20, "{jobs} jobs ran");
    assert!(
        targets > 0,
        "some operator job finds targets in the generated cluster"
    );
    running.stop().await;
}

#[test]
fn role_endpointslices_is_read_as_endpointslice() {
    let loaded = load(
        &fixture("victoria-metrics-agent-chart.yml"),
        "https://k:6443",
        false,
    )
    .expect("loads");
    let job = loaded
        .jobs
        .iter()
        .find(|j| j.name == "kubernetes-service-endpoints")
        .expect("job");
    assert_eq!(job.sd_configs[0].role, Role::EndpointSlice);
    let _: &SdConfig = &job.sd_configs[0];
}

/// A copy of an object's `targets` whose shared labels are `change`d, each target
/// keeping its own labels (as discovery rebuilds a changed pod over its old own parts).
fn with_shared_change(
    targets: &[Labels],
    change: impl Fn(&mut Vec<(String, String)>),
) -> Vec<Labels> {
    let Some(first) = targets.first() else {
        return Vec::new();
    };
    let mut shared: Vec<(String, String)> = first
        .without_own()
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect();
    change(&mut shared);
    let base = Labels::from_pairs(shared);
    Labels::rebased_each(targets, &base)
}

/// The job actor's two shortcuts agree with relabelling each target whole, under every
/// job the third-party configs hold, over every object the simulator makes of their
/// roles: running the rules once for an object's shared labels
/// (`Relabeller::process_object`), and passing over a change the rules cannot see
/// (`Relabeller::same_targets`: whenever it says so, each target relabels alike). The
/// changes: an annotation's value, an annotation added or removed, a label's value.
#[actix_rt::test]
async fn shortcuts_agree_with_relabelling_each_target_under_third_party_rules() {
    use kubesd::relabel::{Relabeller, ScrapeSettings};
    let running = cluster().await;
    let sim = running.sim();
    let url = running.url();
    let (mut from_shared, mut unseen, mut jobs) = (0, 0, 0);
    for file in all_configs() {
        let Ok(loaded) = load(&file, &url, true) else {
            continue;
        };
        for job in &loaded.jobs {
            jobs += 1;
            let scrape: &ScrapeSettings = &job.scrape;
            let mut relabeller = Relabeller::new(Arc::new(job.rules.clone()));
            for sd in &job.sd_configs {
                for targets in support::discovered(sim, sd) {
                    let want: Vec<Target> = targets
                        .iter()
                        .map(|t| process(t, scrape, &job.rules))
                        .collect();
                    let mut got = Vec::new();
                    relabeller.process_object(&targets, scrape, |t| got.push(t));
                    assert_eq!(got, want, "{}: job {}", file.display(), job.name);

                    let annotation = |s: &mut Vec<(String, String)>| {
                        for (n, v) in s.iter_mut() {
                            if n.contains("_annotation_") && !n.contains("annotationpresent") {
                                v.push('x');
                            }
                        }
                    };
                    let added = |s: &mut Vec<(String, String)>| {
                        s.push((
                            "__meta_kubernetes_pod_annotation_deploy_revision".into(),
                            "7".into(),
                        ));
                        s.push((
                            "__meta_kubernetes_pod_annotationpresent_deploy_revision".into(),
                            "true".into(),
                        ));
                    };
                    let removed = |s: &mut Vec<(String, String)>| {
                        if let Some(at) = s.iter().position(|(n, _)| n.contains("_annotation_")) {
                            s.remove(at);
                        }
                    };
                    let label = |s: &mut Vec<(String, String)>| {
                        for (n, v) in s.iter_mut() {
                            if n.contains("_label_") && !n.contains("labelpresent") {
                                v.push('x');
                            }
                        }
                    };
                    let variants = [
                        with_shared_change(&targets, annotation),
                        with_shared_change(&targets, added),
                        with_shared_change(&targets, removed),
                        with_shared_change(&targets, label),
                    ];
                    for changed in &variants {
                        if !relabeller.same_targets(&targets, changed) {
                            continue;
                        }
                        unseen += 1;
                        for (old, new) in targets.iter().zip(changed) {
                            assert_eq!(
                                process(old, scrape, &job.rules),
                                process(new, scrape, &job.rules),
                                "{}: job {}: {new:?}",
                                file.display(),
                                job.name
                            );
                        }
                    }
                }
            }
            from_shared += relabeller.targets_from_shared();
        }
    }
    assert!(jobs > 200, "{jobs} jobs");
    assert!(
        from_shared > 0 && unseen > 0,
        "both shortcuts taken: {from_shared} targets from shared labels, {unseen} unseen changes"
    );
    running.stop().await;
}
