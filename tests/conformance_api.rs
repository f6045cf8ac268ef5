//! The targets API against the conformance corpus, under Prometheus' semantics: each
//! case's objects are served by the simulator, one job discovers them, and
//! `/api/v1/targets` must list as each target's discovered labels the case's
//! `expected` label sets (with the job's settings seeded, as Prometheus lists them;
//! those Prometheus cannot scrape left out, those with the same labels once), as its
//! labels what Prometheus' relabelling makes of them, and `relabel_steps` must
//! end where kubesd's relabelling (`tests/relabel.rs` checks it against Prometheus'
//! cases) ends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::model::Role;
use kubesd::promconfig::parse_config;
use kubesd::relabel::{Target, process, relabel, seeded};
use kubesd::service::api::listing::prometheus_target;
use kubesd::service::{JobSet, JobSetOptions, ServiceState, Shard, serve_http};
use kubesd::simulator::server::{RunningSimulator, serve};
use kubesd::simulator::{Resource, SimulatedCluster, SimulatorConfig};
use kubesd::targets::{AttachMetadata, Semantics};
use kubesd::{Discovery, EngineOptions, Labels};
use serde::Deserialize;
use serde_json::Value;

type LabelMap = BTreeMap<String, String>;

#[derive(Deserialize)]
struct CaseFile {
    #[serde(default)]
    semantics: Option<Semantics>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    role: Role,
    #[serde(default)]
    attach_metadata: AttachMetadata,
    objects: BTreeMap<String, Vec<Value>>,
    expected: Vec<LabelMap>,
}

/// Kinds kubesd never reads (as `tests/conformance.rs` skips them).
const UNREAD_KINDS: [&str; 2] = ["deployment", "cronjob"];

/// Rules that keep some targets and drop others, and rename what they keep: a target
/// whose `__address__` ends in an even digit is dropped.
const RULES: &str = r#"
      - action: labelmap
        regex: __meta_kubernetes_(.+)
      - source_labels: [__address__]
        regex: '.*[02468]'
        action: drop
      - source_labels: [__address__]
        target_label: address"#;

fn corpus() -> Vec<(PathBuf, CaseFile)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let file: CaseFile =
                serde_json::from_slice(&std::fs::read(&p).expect("read")).expect("case file");
            (p, file)
        })
        .filter(|(_, f)| f.semantics == Some(Semantics::Prometheus))
        .collect()
}

fn labels(map: &LabelMap) -> Labels {
    Labels::from_pairs(
        map.iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.as_str(), v.as_str())),
    )
}

fn map(labels: &Labels) -> LabelMap {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// The labels Prometheus shows for a target: no `__` names, `instance` defaulted.
fn shown(labels: &Labels) -> LabelMap {
    let mut out: LabelMap = map(labels)
        .into_iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .collect();
    if let Some(address) = labels.get("__address__") {
        out.entry("instance".into()).or_insert(address.to_string());
    }
    out
}

/// The simulator, serving `case`'s objects and nothing else.
async fn cluster(case: &Case) -> Result<RunningSimulator, String> {
    let config = SimulatorConfig {
        controllers: false,
        ..SimulatorConfig::default()
    };
    let server = serve(config).await.map_err(|e| e.to_string())?;
    for (kind, objects) in &case.objects {
        if UNREAD_KINDS.contains(&kind.as_str()) {
            continue;
        }
        let role: Role = serde_json::from_value(Value::from(kind.as_str()))
            .map_err(|e| format!("kind {kind}: {e}"))?;
        for object in objects {
            server
                .sim()
                .upsert(Resource::from(role), object.clone())
                .map_err(|e| format!("{kind}: {e:?}"))?;
        }
    }
    Ok(server)
}

fn config(case: &Case, url: &str) -> String {
    let attach = serde_json::to_string(&case.attach_metadata).expect("attach_metadata");
    let role = serde_json::to_value(case.role).expect("role");
    format!(
        "scrape_configs:\n  - job_name: case\n    kubernetes_sd_configs:\n      - {{role: {role}, api_server: {url:?}, attach_metadata: {attach}}}\n    relabel_configs:{RULES}\n"
    )
}

/// Runs one case; `Err` says what differs.
async fn run_case(case: &Case) -> Result<(), String> {
    let cluster = cluster(case).await?;
    let loaded = parse_config(&config(case, &cluster.url()), Path::new("case.yml"))
        .map_err(|e| e.to_string())?;
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let options = JobSetOptions {
        shard: Shard::new(0, 1).map_err(|e| e.to_string())?,
        output_dir: None,
        publish_interval: Duration::ZERO,
    };
    let engine = EngineOptions {
        semantics: Semantics::Prometheus,
        ..SimulatedCluster::engine_options()
    };
    let mut jobs = JobSet::new(Discovery::start(engine), options, Arc::clone(&published));
    jobs.apply(&loaded).await.map_err(|e| e.to_string())?;
    let job = loaded.jobs.first().ok_or("no job")?;
    for (_, running) in jobs.jobs() {
        let mut polls = 0;
        while !running.status().synced {
            polls += 1;
            if polls > 1_000 {
                return Err("never synced".into());
            }
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let state = Arc::new(ServiceState {
        jobs: published,
        reload: None,
        engine_metrics: Default::default(),
        service_metrics: Default::default(),
    });
    let addr = "127.0.0.1:0".parse().map_err(|_| "addr")?;
    let (server, bound) = serve_http(addr, state, None).map_err(|e| e.to_string())?;
    let handle = server.handle();
    actix_rt::spawn(server);
    let outcome = compare(case, job, &format!("http://{bound}"), &cluster).await;
    handle.stop(true).await;
    jobs.stop_all().await;
    cluster.stop().await;
    outcome
}

async fn get(url: &str) -> Result<Value, String> {
    let client = awc::Client::default();
    let mut res = client.get(url).send().await.map_err(|e| e.to_string())?;
    let body = res
        .body()
        .limit(64 << 20)
        .await
        .map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    if value["status"] != "success" {
        return Err(format!("{url}: {value}"));
    }
    Ok(value["data"].clone())
}

/// What the API says against what the corpus and kubesd's relabelling say. As in
/// Prometheus, a target Prometheus cannot scrape (no address) is not listed, and
/// active targets with the same labels are one, with the discovered labels of any of
/// them.
async fn compare(
    case: &Case,
    job: &kubesd::promconfig::Job,
    base: &str,
    server: &RunningSimulator,
) -> Result<(), String> {
    let data = get(&format!("{base}/api/v1/targets")).await?;
    let mut want_dropped = Vec::new();
    let mut want_active: BTreeMap<LabelMap, Vec<LabelMap>> = BTreeMap::new();
    for expected in &case.expected {
        let input = labels(&with_served_uid(expected, server));
        let discovered = map(&seeded(&input, &job.scrape));
        let target = process(&input, &job.scrape, &job.rules);
        if !prometheus_target(&target, &job.scrape) {
            continue;
        }
        match target {
            Target::Keep(kept) => want_active
                .entry(shown(&kept))
                .or_default()
                .push(discovered),
            _ => want_dropped.push(discovered),
        }
    }
    let field = |list: &str, name: &str| -> Vec<LabelMap> {
        let items = data[list].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .filter_map(|t| serde_json::from_value(t[name].clone()).ok())
            .collect()
    };
    let mut got_dropped = field("droppedTargets", "discoveredLabels");
    want_dropped.sort();
    got_dropped.sort();
    if got_dropped != want_dropped {
        return Err(format!(
            "dropped targets' discovered labels: got {}, want {}; only got: {:?}; only wanted: {:?}",
            got_dropped.len(),
            want_dropped.len(),
            only_in(&got_dropped, &want_dropped),
            only_in(&want_dropped, &got_dropped),
        ));
    }
    let got_active = field("activeTargets", "labels");
    let got_discovered = field("activeTargets", "discoveredLabels");
    let mut shown_got = got_active.clone();
    shown_got.sort();
    let shown_want: Vec<LabelMap> = want_active.keys().cloned().collect();
    if shown_got != shown_want {
        return Err(format!(
            "active labels:\n got {shown_got:?}\nwant {shown_want:?}"
        ));
    }
    for (shown, discovered) in got_active.iter().zip(&got_discovered) {
        if !want_active[shown].contains(discovered) {
            return Err(format!(
                "active target {shown:?}: discovered labels {discovered:?} are none of its"
            ));
        }
    }
    let mut discovered = got_discovered;
    discovered.extend(got_dropped);
    check_steps(job, base, &discovered).await
}

/// The labels of `a`'s sets that are in none of `b`'s, for a short message.
fn only_in(a: &[LabelMap], b: &[LabelMap]) -> Vec<String> {
    let in_b = |k: &String, v: &String| b.iter().any(|m| m.get(k) == Some(v));
    a.iter()
        .filter(|m| !b.contains(m))
        .flat_map(|m| m.iter().filter(|(k, v)| !in_b(k, v)))
        .map(|(k, v)| format!("{k}={v}"))
        .collect()
}

/// `expected` with its pod's uid as the simulator assigned it: the simulator stamps a
/// uid on create, as an API server does, so the corpus' made-up uids are replaced.
fn with_served_uid(expected: &LabelMap, server: &RunningSimulator) -> LabelMap {
    let mut out = expected.clone();
    let (Some(ns), Some(name)) = (
        expected.get("__meta_kubernetes_namespace"),
        expected.get("__meta_kubernetes_pod_name"),
    ) else {
        return out;
    };
    let pod = server.sim().get(Resource::Pods, ns, name);
    let uid = pod
        .as_ref()
        .and_then(|p| p.pointer("/metadata/uid")?.as_str());
    if let (Some(uid), Some(held)) = (uid, out.get_mut("__meta_kubernetes_pod_uid")) {
        *held = uid.to_string();
    }
    out
}

/// `relabel_steps` of each discovered label set ends where `relabel` ends.
async fn check_steps(
    job: &kubesd::promconfig::Job,
    base: &str,
    discovered: &[LabelMap],
) -> Result<(), String> {
    for target in discovered {
        let query: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("scrapePool", "case")
            .append_pair(
                "labels",
                &serde_json::to_string(target).map_err(|e| e.to_string())?,
            )
            .finish();
        let data = get(&format!("{base}/api/v1/targets/relabel_steps?{query}")).await?;
        let last = data["steps"]
            .as_array()
            .and_then(|s| s.last())
            .cloned()
            .ok_or("no steps")?;
        let want = relabel(&labels(target), &job.rules);
        let got: LabelMap = serde_json::from_value(last["output"].clone()).unwrap_or_default();
        let kept = last["keep"].as_bool() == Some(true);
        match want {
            Some(want) if kept && got == map(&want) => {}
            None if !kept && got.is_empty() => {}
            want => return Err(format!("steps of {target:?}: got {last}, want {want:?}")),
        }
    }
    Ok(())
}

#[actix_rt::test]
async fn targets_api_agrees_with_the_corpus_under_prometheus_semantics() {
    let mut failures = Vec::new();
    let mut cases = 0;
    for (path, file) in corpus() {
        for case in &file.cases {
            cases += 1;
            if let Err(why) = run_case(case).await {
                let file = path.file_name().map(|f| f.to_string_lossy().into_owned());
                failures.push(format!(
                    "{} / {}: {why}",
                    file.unwrap_or_default(),
                    case.name
                ));
            }
        }
    }
    assert!(cases > 50, "the corpus' prometheus cases: {cases}");
    assert!(
        failures.is_empty(),
        "{} of {cases} cases differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
