//! kubesd as the OpenTelemetry target allocator, end to end against the simulator: a
//! fake collector does what the `prometheus` receiver's target allocator client does
//! (GET `/scrape_configs`, then each job's `/jobs/{job}/targets?collector_id=ID` as
//! HTTP SD, then the job's `relabel_configs` from the served config applied to the
//! discovered labels), and its relabelled share equals `/sd/{job}?member=ID`, label for
//! label, for jobs with every rule kind (`replace`, `keep`/`drop` with regexes over
//! several labels, `labelmap`, `labeldrop`/`labelkeep`, `hashmod`,
//! `keepequal`/`dropequal`, `lowercase`, a rewritten address): the shares leave out
//! the `__meta_*` labels no rule of the job reads, and change nothing the collector
//! computes; served with every label (`--allocator.keep-unread-labels`) they relabel
//! to the same. Inline secrets in `/scrape_configs` are redacted but to a client whose
//! TLS client certificate the web config's client CA verified; an unknown collector
//! gets `[]`; without `collector_id`, every collector's share; `/jobs` lists the jobs
//! with targets.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kubesd::config::TlsConfig;
use kubesd::http::{build_client, build_tls_config};
use kubesd::promconfig::{ServedConfig, parse_config};
use kubesd::relabel::{ReadableMeta, RelabelConfig, ScrapeSettings, Target, compile_all, process};
use kubesd::service::web::guard::WebGuard;
use kubesd::service::{CollectorLabels, Job, JobSet, JobSetOptions, Shard};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster};
use kubesd::{ArcStr, Discovery, Labels};
use serde_json::{Value, json};

/// One target: address and its other labels.
type Served = (String, BTreeMap<String, String>);

const MEMBERS: [&str; 3] = ["otel-0", "otel-1", "otel-2"];

fn config(url: &str) -> String {
    config_of(url, &rule_sets())
}

/// The jobs' rules, one job each.
fn rule_sets() -> Vec<&'static str> {
    vec![
        // labelmap, and the pod's name as a label.
        "[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)},
          {source_labels: [__meta_kubernetes_pod_name], target_label: pod}]",
        // keep about half by hashmod; drop pods whose name ends in a-m.
        "[{source_labels: [__address__], modulus: 2, target_label: __tmp_hash, action: hashmod},
          {source_labels: [__tmp_hash], regex: '0', action: keep},
          {source_labels: [__meta_kubernetes_pod_name], regex: '.*[a-m]', action: drop},
          {source_labels: [__meta_kubernetes_namespace], target_label: namespace}]",
        // the address rewritten: targets are assigned by the relabelled one.
        "[{source_labels: [__meta_kubernetes_pod_ip], regex: '(.+)', replacement: '$1:9999', target_label: __address__},
          {source_labels: [__meta_kubernetes_pod_phase], regex: Running, action: keep},
          {action: labelmap, regex: __meta_kubernetes_pod_(node_name|ip)}]",
        // replace over several labels; keep and drop with regexes over several labels.
        "[{source_labels: [__meta_kubernetes_namespace, __meta_kubernetes_pod_label_app], separator: '/',
           regex: '(.+)/(.+)', replacement: '$2.$1', target_label: app_ns},
          {source_labels: [__meta_kubernetes_pod_phase, __meta_kubernetes_pod_ready], regex: 'Running;.*|Succeeded;false', action: keep},
          {source_labels: [__meta_kubernetes_pod_container_name, __meta_kubernetes_pod_container_port_number], regex: '.*;9.*', action: drop}]",
        // labelkeep, then labelmap of what is left, then labeldrop.
        "[{action: labelkeep, regex: '__address__|__meta_kubernetes_pod_(name|node_name|label_.+)'},
          {action: labelmap, regex: '__meta_kubernetes_pod_(.+)'},
          {action: labeldrop, regex: 'label_pod_template_hash|node_name'}]",
        // dropequal, keepequal, lowercase.
        "[{source_labels: [__meta_kubernetes_pod_host_ip], target_label: __meta_kubernetes_pod_ip, action: dropequal},
          {source_labels: [__meta_kubernetes_pod_controller_kind], target_label: __meta_kubernetes_pod_controller_kind, action: keepequal},
          {source_labels: [__meta_kubernetes_pod_controller_kind], target_label: kind, action: lowercase},
          {source_labels: [__meta_kubernetes_pod_name], target_label: pod}]",
    ]
}

/// A config with a job `job-I` per rule set of `rules`, and the collectors as members.
fn config_of(url: &str, rules: &[&str]) -> String {
    let mut text = format!(
        "membership:\n  namespace: monitoring\n  label_selector: role=collector\n  api_server: {url}\n  handover: 0s\nscrape_configs:\n"
    );
    for (i, rules) in rules.iter().enumerate() {
        text.push_str(&format!(
            "  - job_name: job-{i}\n    scrape_interval: 30s\n    scrape_timeout: 10s\n    basic_auth: {{username: u, password: hunter{i}}}\n    kubernetes_sd_configs: [{{role: pod, api_server: '{url}'}}]\n    relabel_configs: {rules}\n"
        ));
    }
    text
}

fn collector_pod(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "monitoring", "uid": format!("uid-{name}"),
                     "labels": {"role": "collector"}},
        "spec": {"nodeName": "node-000", "containers": [{"name": "otelcol"}]},
        "status": {"phase": "Running", "podIP": ip,
                   "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

async fn get(client: &awc::Client, url: &str) -> (u16, Vec<u8>) {
    let mut resp = client.get(url).send().await.expect("request");
    let body = resp.body().limit(64 << 20).await.expect("body");
    (resp.status().as_u16(), body.to_vec())
}

/// HTTP SD JSON as (address, labels) pairs; labels with `__address__` set from the
/// target when `with_address`.
fn groups(body: &[u8]) -> Vec<(String, BTreeMap<String, String>)> {
    let json: Value = serde_json::from_slice(body).expect("JSON");
    let mut out = Vec::new();
    for group in json.as_array().expect("a list of groups") {
        let labels: BTreeMap<String, String> =
            serde_json::from_value(group["labels"].clone()).expect("labels");
        for t in group["targets"].as_array().expect("targets") {
            out.push((t.as_str().expect("an address").to_string(), labels.clone()));
        }
    }
    out
}

/// What the collector does with one job: its share's discovered targets relabelled by
/// the rules and scrape settings of the served config.
fn collector_relabels(job: &str, config: &Value, share: &[Served]) -> BTreeSet<Served> {
    let rules: Vec<RelabelConfig> =
        serde_json::from_value(config["relabel_configs"].clone()).expect("rules decode");
    let rules = compile_all(&rules).expect("rules compile");
    let mut scrape = ScrapeSettings::new(job);
    scrape.scrape_interval = ArcStr::from(config["scrape_interval"].as_str().expect("interval"));
    scrape.scrape_timeout = ArcStr::from(config["scrape_timeout"].as_str().expect("timeout"));
    let mut out = BTreeSet::new();
    for (address, labels) in share {
        let discovered = Labels::from_pairs(
            labels
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .chain([("__address__", address.as_str())]),
        );
        if let Target::Keep(target) = process(&discovered, &scrape, &rules) {
            let address = target.get("__address__").unwrap_or_default().to_string();
            let rest = target
                .iter()
                .filter(|l| &*l.name != "__address__" && !l.value.is_empty())
                .map(|l| (l.name.to_string(), l.value.to_string()))
                .collect();
            out.insert((address, rest));
        }
    }
    out
}

/// A running kubesd (its jobs, its listener's base URL) serving collectors `labels`,
/// over a simulated cluster with the collectors as members.
struct Running {
    cluster: SimulatedCluster,
    jobs: JobSet,
    handle: actix_web::dev::ServerHandle,
    base: String,
}

async fn start(labels: CollectorLabels) -> Running {
    let spec = ClusterSpec {
        nodes: 3,
        pods: 60,
        namespaces: 2,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    let cluster = SimulatedCluster::seeded(21, spec).await.expect("cluster");
    let (sim, url) = (cluster.sim(), cluster.url());
    for (i, name) in MEMBERS.iter().enumerate() {
        sim.create(Resource::Pods, collector_pod(name, &format!("10.98.0.{i}")))
            .expect("collector pod");
    }
    let config = parse_config(&config(&url), Path::new("ta.yml")).expect("config loads");
    let mut jobs = JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    )
    .serving_collectors(labels);
    jobs.apply(&config).await.expect("starts");
    let (bound, handle) = support::service::serve(
        Arc::new(RwLock::new(jobs.jobs().into_iter().collect())),
        None,
    );
    Running {
        cluster,
        jobs,
        handle,
        base: format!("http://{bound}"),
    }
}

/// Every job: each collector's share, relabelled, is its member view, and together
/// the shares are the job. The names of the labels the shares served, by job.
async fn shares_relabel_to_member_views(
    client: &awc::Client,
    base: &str,
    configs: &BTreeMap<String, Value>,
) -> BTreeMap<String, BTreeSet<String>> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut served_names = BTreeMap::new();
    for (job, served_config) in configs {
        loop {
            let mut all = BTreeSet::new();
            let mut names = BTreeSet::new();
            let mut agree = true;
            for member in MEMBERS {
                let ta = format!("{base}/jobs/{job}/targets?collector_id={member}");
                let (s1, share) = get(client, &ta).await;
                let (s2, view) = get(client, &format!("{base}/sd/{job}?member={member}")).await;
                if (s1, s2) != (200, 200) {
                    agree = false;
                    break;
                }
                let share = groups(&share);
                names.extend(share.iter().flat_map(|(_, l)| l.keys().cloned()));
                let relabelled = collector_relabels(job, served_config, &share);
                let view: BTreeSet<Served> = groups(&view).into_iter().collect();
                agree &= relabelled == view;
                all.extend(view);
            }
            let (status, whole) = get(client, &format!("{base}/sd/{job}")).await;
            let whole: BTreeSet<Served> = match status {
                200 => groups(&whole).into_iter().collect(),
                _ => BTreeSet::new(),
            };
            if agree && !whole.is_empty() && all == whole {
                served_names.insert(job.clone(), names);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{job}: the collectors' shares never matched"
            );
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
    }
    served_names
}

/// The `__meta_*` labels the rules of `config` (a served scrape config) read.
fn readable(config: &Value) -> ReadableMeta {
    let rules: Vec<RelabelConfig> =
        serde_json::from_value(config["relabel_configs"].clone()).expect("rules decode");
    ReadableMeta::new(Arc::new(compile_all(&rules).expect("rules compile")))
}

#[actix_rt::test]
async fn a_collector_relabelling_its_share_gets_its_member_view() {
    let Running {
        cluster,
        mut jobs,
        handle,
        base,
    } = start(CollectorLabels::Readable).await;
    let client = awc::Client::default();

    // The collector's first poll: the scrape configs, secrets redacted, no discovery.
    let (status, body) = get(&client, &format!("{base}/scrape_configs")).await;
    assert_eq!(status, 200);
    let configs: BTreeMap<String, Value> = serde_json::from_slice(&body).expect("a map");
    assert_eq!(configs.len(), rule_sets().len());
    assert!(
        !String::from_utf8_lossy(&body).contains("hunter"),
        "a secret served"
    );
    for (job, c) in &configs {
        assert_eq!(c["basic_auth"]["password"], "<secret>", "{job}");
        // As Prometheus fills a job in: the collector takes no default of its own.
        assert_eq!(c["scrape_interval"], "30s", "{job}");
        assert_eq!(c["metrics_path"], "/metrics", "{job}");
        assert_eq!(c["kubernetes_sd_configs"][0]["role"], "pod", "{job}");
    }

    // Each share relabels to its member view, though it carries only the `__meta_*`
    // labels a rule of its job reads: the pods' uid, read by one job's `labelmap`
    // alone, is left out of the others'.
    let served = shares_relabel_to_member_views(&client, &base, &configs).await;
    let uid = "__meta_kubernetes_pod_uid";
    let mut pruned = 0;
    for (job, names) in &served {
        let readable = readable(&configs[job]);
        for name in names {
            assert!(
                readable.keeps(name),
                "{job} serves {name}, which no rule reads"
            );
        }
        assert_eq!(names.contains(uid), readable.keeps(uid), "{job}: {names:?}");
        pruned += usize::from(!names.contains(uid));
    }
    assert_eq!(pruned, served.len() - 1, "{served:?}");

    // Every job has targets now, and is listed.
    let (_, body) = get(&client, &format!("{base}/jobs")).await;
    let links: Value = serde_json::from_slice(&body).expect("JSON");
    for job in configs.keys() {
        assert_eq!(links[job]["_link"], format!("/jobs/{job}/targets"));
    }

    // An unknown collector, or an empty `collector_id`, gets an empty list.
    for id in ["nobody", ""] {
        let path = format!("{base}/jobs/job-0/targets?collector_id={id}");
        let (status, body) = get(&client, &path).await;
        assert_eq!((status, body.as_slice()), (200, b"[]".as_slice()), "{id:?}");
    }
    // Without `collector_id`, every collector's share keyed by its name, as the
    // allocator's `GetAllTargetsByJob` answers: `{"<id>": {"_link":
    // "/debug/jobs/<url.QueryEscape(job)>/targets?collector_id=<id>", "targets":
    // <what ?collector_id=<id> answers>}}`.
    let (status, body) = get(&client, &format!("{base}/jobs/job-0/targets")).await;
    assert_eq!(status, 200);
    let every: Value = serde_json::from_slice(&body).expect("JSON");
    let mut want = serde_json::Map::new();
    for member in MEMBERS {
        let path = format!("{base}/jobs/job-0/targets?collector_id={member}");
        let (_, share) = get(&client, &path).await;
        let share: Value = serde_json::from_slice(&share).expect("JSON");
        assert!(share.as_array().is_some_and(|s| !s.is_empty()), "{member}");
        let link = format!("/debug/jobs/job-0/targets?collector_id={member}");
        want.insert(member.into(), json!({"_link": link, "targets": share}));
    }
    assert_eq!(every, Value::Object(want));

    handle.stop(false).await;
    jobs.stop_all().await;
    cluster.stop().await;
}

/// `/jobs` lists a job only while it has a target, as the allocator lists the jobs of
/// the targets it holds (`JobsHandler` walks `TargetItems()`); `/scrape_configs`
/// serves every job.
#[actix_rt::test]
async fn jobs_lists_only_the_jobs_that_have_targets() {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 4,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::seeded(5, spec).await.expect("cluster");
    let url = running.url();
    let text = format!(
        "scrape_configs:
  - job_name: nodes
    kubernetes_sd_configs: [{{role: node, api_server: '{url}'}}]
  - job_name: all dropped
    kubernetes_sd_configs: [{{role: node, api_server: '{url}'}}]
    relabel_configs: [{{source_labels: [__address__], regex: '.+', action: drop}}]
"
    );
    let config = parse_config(&text, Path::new("ta.yml")).expect("config loads");
    let mut jobs = JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: Duration::ZERO,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    );
    jobs.apply(&config).await.expect("starts");
    support::service::wait_synced(&jobs).await;
    let (bound, handle) = support::service::serve(
        Arc::new(RwLock::new(jobs.jobs().into_iter().collect())),
        None,
    );
    let client = awc::Client::default();
    let (_, body) = get(&client, &format!("http://{bound}/jobs")).await;
    let links: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(links, json!({"nodes": {"_link": "/jobs/nodes/targets"}}));
    let (_, body) = get(&client, &format!("http://{bound}/scrape_configs")).await;
    let configs: BTreeMap<String, Value> = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(
        configs.keys().collect::<Vec<_>>(),
        ["all dropped", "nodes"],
        "every job's config"
    );
    handle.stop(false).await;
    jobs.stop_all().await;
    running.stop().await;
}

/// Served every discovered label (`--allocator.keep-unread-labels`), the shares hold
/// the labels no rule reads too, and relabel to the same member views.
#[actix_rt::test]
async fn every_label_is_served_when_asked_and_relabels_to_the_same() {
    let Running {
        cluster,
        mut jobs,
        handle,
        base,
    } = start(CollectorLabels::All).await;
    let client = awc::Client::default();
    let (_, body) = get(&client, &format!("{base}/scrape_configs")).await;
    let configs: BTreeMap<String, Value> = serde_json::from_slice(&body).expect("a map");
    let served = shares_relabel_to_member_views(&client, &base, &configs).await;
    for (job, names) in &served {
        assert!(
            names.contains("__meta_kubernetes_pod_uid"),
            "{job}: {names:?}"
        );
    }
    handle.stop(false).await;
    jobs.stop_all().await;
    cluster.stop().await;
}

/// What Prometheus 3.12 computed, checked against: `target_allocator/` holds a
/// collector's share of a ServiceMonitor-style job as kubesd served it with every
/// discovered label (`servicemonitor_share.json`, a simulator of 6 nodes and 200 pods,
/// collector `scraper-0`), the job's relabelling as prometheus-operator generates it
/// (`servicemonitor_rules.yaml`), and the targets Prometheus made of that share with
/// those rules (`servicemonitor_prometheus_targets.json`, from its
/// `/api/v1/targets`). The share with only the `__meta_*` labels the rules read,
/// relabelled, gives Prometheus' targets (with `instance`, which it sets), and is a
/// fraction of the bytes.
#[test]
fn a_pruned_share_relabels_to_what_prometheus_made_of_the_whole() {
    let read = |name: &str| {
        std::fs::read_to_string(Path::new("tests/target_allocator").join(name)).expect(name)
    };
    let rules: Vec<RelabelConfig> =
        serde_norway::from_str(&read("servicemonitor_rules.yaml")).expect("rules parse");
    let rules = Arc::new(compile_all(&rules).expect("rules compile"));
    let share = groups(read("servicemonitor_share.json").as_bytes());
    let prometheus: Vec<BTreeMap<String, String>> =
        serde_json::from_str(&read("servicemonitor_prometheus_targets.json")).expect("targets");
    let readable = ReadableMeta::new(Arc::clone(&rules));
    let scrape = ScrapeSettings::new("servicemonitor");
    let (mut whole_bytes, mut pruned_bytes) = (0, 0);
    let mut made = BTreeSet::new();
    for (address, labels) in &share {
        let pruned: Vec<(&str, &str)> = (labels.iter())
            .filter(|(name, _)| readable.keeps(name))
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let size = |pairs: &mut dyn Iterator<Item = (&String, &String)>| -> usize {
            pairs.map(|(n, v)| n.len() + v.len() + 6).sum()
        };
        whole_bytes += size(&mut labels.iter());
        pruned_bytes += size(&mut labels.iter().filter(|(n, _)| readable.keeps(n)));
        let discovered = Labels::from_pairs(
            pruned
                .into_iter()
                .chain([("__address__", address.as_str())]),
        );
        if let Target::Keep(target) = process(&discovered, &scrape, &rules) {
            let mut out: BTreeMap<String, String> = (target.iter())
                .filter(|l| &*l.name != "__address__")
                .map(|l| (l.name.to_string(), l.value.to_string()))
                .collect();
            out.entry("instance".into())
                .or_insert_with(|| address.clone());
            made.insert(out);
        }
    }
    let prometheus: BTreeSet<BTreeMap<String, String>> = prometheus.into_iter().collect();
    assert_eq!(made, prometheus);
    assert!(
        pruned_bytes * 4 < whole_bytes,
        "{pruned_bytes} of {whole_bytes} label bytes"
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`.
fn certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, sans) in [("server", "127.0.0.1"), ("client", "otel-0")] {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec![sans.to_string()])
            .expect("params")
            .signed_by(&key, &issuer)
            .expect("cert");
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).expect("write");
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).expect("write");
    }
    std::fs::write(dir.join("ca.crt"), ca.pem()).expect("write");
}

fn tls_client(dir: &Path, with_cert: bool) -> awc::Client {
    let tls = build_tls_config(
        &TlsConfig {
            ca_file: Some(dir.join("ca.crt")),
            cert_file: with_cert.then(|| dir.join("client.crt")),
            key_file: with_cert.then(|| dir.join("client.key")),
            ..TlsConfig::default()
        },
        false,
    )
    .expect("client TLS");
    build_client(Some(tls), false, Duration::from_secs(10))
}

/// The password `/scrape_configs` serves to `client` for the job.
async fn served_password(client: &awc::Client, base: &str) -> String {
    let (status, body) = get(client, &format!("{base}/scrape_configs")).await;
    assert_eq!(status, 200);
    let configs: Value = serde_json::from_slice(&body).expect("JSON");
    configs["job-0"]["basic_auth"]["password"]
        .as_str()
        .expect("a password")
        .to_string()
}

/// Over TLS with `client_auth_type` `client_auth`, the secrets are served only to a
/// client whose certificate the client CA verified; to others (and whenever the
/// policy does not verify certificates) they are redacted.
async fn secrets_over_tls(client_auth: &str, with_cert: &str, without: &str) {
    let dir = std::env::temp_dir().join(format!(
        "kubesd-ta-tls-{}-{client_auth}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("dir");
    certificates(&dir);
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: {client_auth}\n  client_ca_file: ca.crt\n"
        ),
    )
    .expect("web config");
    let guard = WebGuard::load(&web, false, Default::default()).expect("web config loads");
    let entry: serde_norway::Value = serde_norway::from_str(
        "{job_name: job-0, basic_auth: {username: u, password: hunter0}, kubernetes_sd_configs: [{role: pod}]}",
    )
    .expect("yaml");
    let job = Job::new("job-0", Vec::new()).serving(ServedConfig::of(&entry));
    let (bound, handle) = support::service::serve(
        Arc::new(RwLock::new(BTreeMap::from([("job-0".to_string(), job)]))),
        Some(guard),
    );
    let base = format!("https://{bound}");
    assert_eq!(
        served_password(&tls_client(&dir, true), &base).await,
        with_cert
    );
    assert_eq!(
        served_password(&tls_client(&dir, false), &base).await,
        without
    );
    handle.stop(false).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn secrets_go_only_to_a_verified_client_certificate() {
    secrets_over_tls("VerifyClientCertIfGiven", "hunter0", "<secret>").await;
    // A certificate asked for but not verified proves nothing.
    secrets_over_tls("RequestClientCert", "<secret>", "<secret>").await;
}
