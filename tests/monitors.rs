//! Monitors translated as prometheus-operator translates them. Each case in
//! `tests/monitors/` holds the `monitors:` section (`monitors.yml`), the cluster's
//! Namespaces, Secrets, ConfigMaps and monitors (`resources.yaml`), and what the
//! operator itself answered for them (`expected.yaml`: its generated `scrape_configs`;
//! `rejected.yaml`: the monitors it refused); `tests/monitors/README.md` says how.
//! kubesd's selection and translation must give the same entries, rules in order and
//! every scrape setting, compared as parsed YAML, and refuse the same monitors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kubesd::monitors::jobs::load_jobs;
use kubesd::monitors::model::{
    ConfigMapObject, NamespaceObject, PodMonitor, Probe, ScrapeConfig, SecretObject, ServiceMonitor,
};
use kubesd::monitors::section::{MonitorsSection, parse_section};
use kubesd::monitors::{
    MemoryStore, Monitor, MonitorError, NamespaceLabels, Reason, Settings, translate,
};
use kubesd::promconfig::{LoadOptions, REDACTED};
use serde_norway::Value;

/// A case's cluster.
#[derive(Default)]
struct Cluster {
    namespaces: NamespaceLabels,
    store: MemoryStore,
    monitors: Vec<Monitor>,
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn yaml(text: &str, what: &str) -> Value {
    serde_norway::from_str(text).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn decode<T: serde::de::DeserializeOwned>(doc: Value, what: &str) -> T {
    serde_norway::from_value(doc).unwrap_or_else(|e| panic!("{what}: {e}"))
}

fn cluster(text: &str) -> Cluster {
    let mut c = Cluster::default();
    for (i, doc) in text.split("\n---").enumerate() {
        let doc = yaml(doc, &format!("resources.yaml document {i}"));
        if doc.is_null() {
            continue;
        }
        let what = format!("resources.yaml document {i}");
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "Namespace" => {
                let ns: NamespaceObject = decode(doc, &what);
                c.namespaces.insert(ns.metadata.name, ns.metadata.labels);
            }
            "Secret" => c.store.add_secret(decode::<SecretObject>(doc, &what)),
            "ConfigMap" => c
                .store
                .add_config_map(decode::<ConfigMapObject>(doc, &what)),
            "ServiceMonitor" => c
                .monitors
                .push(Monitor::ServiceMonitor(decode::<ServiceMonitor>(
                    doc, &what,
                ))),
            "PodMonitor" => c
                .monitors
                .push(Monitor::PodMonitor(decode::<PodMonitor>(doc, &what))),
            "Probe" => c.monitors.push(Monitor::Probe(decode::<Probe>(doc, &what))),
            "ScrapeConfig" => c
                .monitors
                .push(Monitor::ScrapeConfig(decode::<ScrapeConfig>(doc, &what))),
            other => panic!("{what}: kind {other:?}"),
        }
    }
    c
}

fn section(dir: &Path) -> MonitorsSection {
    let value = yaml(&read(&dir.join("monitors.yml")), "monitors.yml");
    let mut section = parse_section(&value, dir, None).unwrap_or_else(|e| panic!("{e:?}"));
    if let Ok(text) = std::fs::read_to_string(dir.join("oracle.yml")) {
        let extra = yaml(&text, "oracle.yml");
        if let Some(shards) = extra.get("shards").and_then(Value::as_u64) {
            section.settings.shards = u32::try_from(shards).expect("shards");
        }
    }
    section
}

/// The cases, by directory.
fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitors");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("tests/monitors")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("monitors.yml").exists())
        .collect();
    dirs.sort();
    dirs
}

/// What kubesd makes of a case: the entries of the selected monitors that translate, in
/// order, and the monitors refused.
fn run(section: &MonitorsSection, cluster: &Cluster) -> (Vec<Value>, Vec<MonitorError>) {
    let mut entries = Vec::new();
    let mut refused = Vec::new();
    for monitor in section.select(&cluster.monitors, &cluster.namespaces) {
        match translate(monitor, &section.settings, &cluster.store) {
            Ok(t) => {
                assert!(t.warnings.is_empty(), "{:?}", t.warnings);
                entries.extend(t.jobs.into_iter().map(|j| j.config));
            }
            Err(e) => refused.push(e),
        }
    }
    (entries, refused)
}

/// The first difference between two YAML values, as a path and both sides.
fn difference(at: &str, ours: &Value, theirs: &Value) -> Option<String> {
    match (ours, theirs) {
        (Value::Mapping(a), Value::Mapping(b)) => {
            for (k, v) in b {
                let key = format!("{at}.{}", k.as_str().unwrap_or("?"));
                let Some(ours) = a.get(k) else {
                    return Some(format!("{key}: missing, the operator has {v:?}"));
                };
                if let Some(d) = difference(&key, ours, v) {
                    return Some(d);
                }
            }
            a.keys()
                .find(|k| !b.contains_key(*k))
                .map(|k| format!("{at}.{}: not in the operator's", k.as_str().unwrap_or("?")))
        }
        (Value::Sequence(a), Value::Sequence(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if let Some(d) = difference(&format!("{at}[{i}]"), x, y) {
                    return Some(d);
                }
            }
            (a.len() != b.len())
                .then(|| format!("{at}: {} items, the operator has {}", a.len(), b.len()))
        }
        (a, b) if a == b => None,
        (a, b) => Some(format!("{at}: {a:?}, the operator has {b:?}")),
    }
}

#[test]
fn each_case_translates_as_the_operator_does() {
    let cases = cases();
    assert!(cases.len() >= 10, "the cases are missing: {}", cases.len());
    let mut failures = Vec::new();
    for dir in &cases {
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        let section = section(dir);
        let cluster = cluster(&read(&dir.join("resources.yaml")));
        let (ours, refused) = run(&section, &cluster);
        let expected = yaml(&read(&dir.join("expected.yaml")), "expected.yaml");
        if let Some(d) = difference("scrape_configs", &Value::Sequence(ours), &expected) {
            failures.push(format!("{name}: {d}"));
        }
        let rejected = yaml(&read(&dir.join("rejected.yaml")), "rejected.yaml");
        let theirs: Vec<(String, String, String)> = rejected
            .as_sequence()
            .into_iter()
            .flatten()
            .map(|r| {
                let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (field("kind"), field("namespace"), field("name"))
            })
            .collect();
        let mut ours: Vec<(String, String, String)> = refused
            .iter()
            .map(|e| (e.kind.to_string(), e.namespace.clone(), e.name.clone()))
            .collect();
        ours.sort();
        if ours != theirs {
            let reasons: Vec<String> = refused.iter().map(ToString::to_string).collect();
            failures.push(format!(
                "{name}: refused {ours:?} ({reasons:?}), the operator {theirs:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The operator's own golden files (`pkg/prometheus/testdata`), a second source: each
/// case's monitors (transcribed from the Go test that made the file) give the file's
/// `scrape_configs`. Those tests call the generator directly, without selection.
#[test]
fn the_operators_golden_files_are_matched() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitors/operator_golden");
    let mut checked = 0;
    for entry in std::fs::read_dir(&root).expect("operator_golden") {
        let dir = entry.expect("entry").path();
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("name")
            .to_string();
        let section = section(&dir);
        let mut cluster = cluster(&read(&dir.join("resources.yaml")));
        cluster.monitors.sort_by_key(|m| m.kind());
        let mut ours = Vec::new();
        for monitor in &cluster.monitors {
            let t = translate(monitor, &section.settings, &cluster.store).expect("translates");
            ours.extend(t.jobs.into_iter().map(|j| j.config));
        }
        let golden = yaml(&read(&dir.join(format!("{name}.golden"))), "golden");
        let theirs = golden.get("scrape_configs").expect("scrape_configs");
        if let Some(d) = difference("scrape_configs", &Value::Sequence(ours), theirs) {
            panic!("{name}: {d}");
        }
        checked += 1;
    }
    assert!(checked >= 3, "{checked}");
}

#[test]
fn each_cases_jobs_load_as_hand_written_jobs_do() {
    for dir in cases() {
        let section = section(&dir);
        if section.settings.shards != 1 {
            continue;
        }
        let cluster = cluster(&read(&dir.join("resources.yaml")));
        for monitor in section.select(&cluster.monitors, &cluster.namespaces) {
            let Ok(t) = translate(monitor, &section.settings, &cluster.store) else {
                continue;
            };
            let loaded = load_jobs(&t.jobs, &section, &LoadOptions::default(), &|_| None)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            assert_eq!(
                loaded.jobs.len() + loaded.not_run.len(),
                t.jobs.len(),
                "{}",
                dir.display()
            );
            for job in &loaded.jobs {
                // The sharding rule's `$(SHARD)` is the one shard's 0.
                let text = format!("{:?}", job.relabel);
                assert!(!text.contains("$(SHARD)"), "{}: {text}", job.name);
                // Served as Prometheus' loader fills it in, its discovery included.
                assert!(job.served.redacted.get("kubernetes_sd_configs").is_some());
            }
        }
    }
}

#[test]
fn credentials_are_inline_in_the_job_and_redacted_where_served() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/monitors/credentials");
    let section = section(&dir);
    let cluster = cluster(&read(&dir.join("resources.yaml")));
    let mut served = Vec::new();
    for monitor in section.select(&cluster.monitors, &cluster.namespaces) {
        let t = translate(monitor, &section.settings, &cluster.store).expect("translates");
        assert!(!format!("{:?}", t.jobs).contains("hunter2"));
        let loaded =
            load_jobs(&t.jobs, &section, &LoadOptions::default(), &|_| None).expect("loads");
        served.extend(loaded.jobs.into_iter().map(|j| j.served));
    }
    assert!(!served.is_empty());
    let redacted: String = served.iter().map(|s| yaml_text(&s.redacted)).collect();
    let full: String = served.iter().map(|s| yaml_text(&s.with_secrets)).collect();
    assert!(redacted.contains(REDACTED));
    for secret in ["hunter2", "s3cr3t-token", "oauth-client-secret"] {
        assert!(
            full.contains(secret),
            "{secret} is served to a certified client"
        );
        assert!(!redacted.contains(secret), "{secret} is redacted");
    }
}

/// A served job as the YAML text a client reads.
fn yaml_text(value: &serde_norway::Value) -> String {
    serde_norway::to_string(value).expect("a served job writes as YAML")
}

/// One ServiceMonitor in namespace `shop` whose spec is `spec` (YAML).
fn service_monitor(spec: &str) -> Monitor {
    let doc =
        format!("{{metadata: {{name: web, namespace: shop, labels: {{team: a}}}}, spec: {spec}}}");
    Monitor::ServiceMonitor(decode(yaml(&doc, "monitor"), "monitor"))
}

fn refusal(monitor: &Monitor) -> Reason {
    let store = MemoryStore::default();
    translate(monitor, &Settings::default(), &store)
        .expect_err("refused")
        .reason
        .as_ref()
        .clone()
}

#[test]
fn an_invalid_selector_is_refused_naming_the_monitor_and_field() {
    let m = service_monitor(
        "{selector: {matchExpressions: [{key: app, operator: Equals, values: [web]}]},
          endpoints: [{port: metrics}]}",
    );
    let error = translate(&m, &Settings::default(), &MemoryStore::default()).expect_err("refused");
    assert_eq!(
        (error.namespace.as_str(), error.name.as_str()),
        ("shop", "web")
    );
    assert!(matches!(*error.reason, Reason::Selector { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "ServiceMonitor shop/web: selector: invalid label selector: \"Equals\" is not a \
         valid label selector operator"
    );
}

#[test]
fn a_missing_secret_is_refused_naming_it() {
    let m = service_monitor(
        "{selector: {}, endpoints: [{port: metrics},
          {port: web, basicAuth: {username: {name: creds, key: user},
                                  password: {name: creds, key: pass}}}]}",
    );
    let reason = refusal(&m);
    assert_eq!(
        reason,
        Reason::SecretNotFound {
            field: "endpoints[1].basicAuth.username".into(),
            namespace: "shop".into(),
            name: "creds".into(),
        }
    );
}

#[test]
fn a_port_that_does_not_exist_selects_no_target_as_in_the_operator() {
    // The operator does not know a Service's ports when it generates the job: a port
    // name no Service has is a keep rule that keeps nothing, not an error.
    let m = service_monitor("{selector: {}, endpoints: [{port: no-such-port}]}");
    let t = translate(&m, &Settings::default(), &MemoryStore::default()).expect("translates");
    let rules = t.jobs[0].config.get("relabel_configs").expect("rules");
    let keep_port = rules
        .as_sequence()
        .expect("list")
        .iter()
        .find(|r| r.get("regex").and_then(Value::as_str) == Some("no-such-port"));
    assert!(keep_port.is_some(), "{rules:?}");
}

#[test]
fn ten_thousand_monitors_translate_in_bounds() {
    let settings = Settings::default();
    let store = MemoryStore::default();
    let template: ServiceMonitor = decode(
        yaml(
            "{spec: {selector: {matchLabels: {tier: web}}, endpoints: [{port: metrics}]}}",
            "template",
        ),
        "template",
    );
    let mut names = BTreeMap::new();
    let mut rules_per_job = BTreeMap::new();
    for i in 0..10_000 {
        let mut m = template.clone();
        m.metadata.name = format!("m{i}");
        m.metadata.namespace = format!("ns{}", i % 100);
        m.spec
            .selector
            .match_labels
            .insert("app".into(), format!("a{i}"));
        let t = translate(&Monitor::ServiceMonitor(m), &settings, &store).expect("translates");
        for job in t.jobs {
            let rules = job
                .config
                .get("relabel_configs")
                .and_then(Value::as_sequence);
            *rules_per_job.entry(rules.map_or(0, Vec::len)).or_insert(0) += 1;
            names.insert(job.name, ());
        }
    }
    assert_eq!(names.len(), 10_000, "one job each, each name unique");
    // Every job has the same rules whatever the number of monitors: the work and the
    // memory grow with the monitors, one job's worth each.
    assert_eq!(rules_per_job.len(), 1, "{rules_per_job:?}");
}

#[test]
fn the_config_file_takes_the_section_and_names_a_bad_key() {
    let path = Path::new("kubesd.yml");
    let text = "monitors:\n  service_monitor_selector: {}\n  scrape_interval: 15s\n";
    let loaded = kubesd::promconfig::parse_config(text, path).expect("loads");
    let section = loaded.monitors.expect("the section");
    assert_eq!(section.settings.scrape_interval, "15s");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    for (text, at) in [
        (
            "monitors:\n  pod_monitor_selector: {matchExpressions: [{key: a, operator: Is}]}\n",
            "monitors.pod_monitor_selector",
        ),
        (
            "monitors:\n  scrape_classes: [{name: a, tls: {}}]\n",
            "monitors.scrape_classes[0].tls",
        ),
        ("monitors:\n  api_sever: http://x\n", "monitors"),
    ] {
        let error = kubesd::promconfig::parse_config(text, path)
            .expect_err(text)
            .to_string();
        assert!(error.contains(&format!("{at}: ")), "{text}: {error}");
    }
}

#[test]
fn the_documented_section_loads() {
    let page = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/monitors.md"));
    let block = page
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/monitors.md shows the section");
    let loaded = kubesd::promconfig::parse_config(block, Path::new("kubesd.yml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let section = loaded.monitors.expect("the section");
    assert!(section.pod_monitors.selector.is_some());
    assert!(section.settings.classes.contains("mtls"));
}

#[test]
fn the_jobs_discover_from_the_sections_api_server() {
    let dir = std::env::temp_dir().join(format!("kubesd-monitors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("prod.kubeconfig"),
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n\
         clusters: [{name: c, cluster: {server: 'https://10.9.8.7:6443'}}]\n\
         users: [{name: u, user: {token: t}}]\n\
         contexts: [{name: x, context: {cluster: c, user: u}}]\n",
    )
    .expect("kubeconfig");
    let value = yaml(
        "{service_monitor_selector: {}, kubeconfig_file: prod.kubeconfig}",
        "section",
    );
    let section = parse_section(&value, &dir, None).expect("section");
    let m = service_monitor("{selector: {}, endpoints: [{port: metrics}]}");
    let t = translate(&m, &section.settings, &MemoryStore::default()).expect("translates");
    let loaded = load_jobs(&t.jobs, &section, &LoadOptions::default(), &|_| None);
    std::fs::remove_dir_all(&dir).ok();
    let loaded = loaded.expect("loads");
    let sd = &loaded.jobs[0].sd_configs[0];
    assert_eq!(sd.api_server.as_deref(), Some("https://10.9.8.7:6443"));
}
