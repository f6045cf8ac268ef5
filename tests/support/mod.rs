//! Shared by the end-to-end tests: what a subscription's targets must be, computed
//! straight from the simulator's state (not through any watch), and waiting for a
//! subscription to converge to it, with a diff on failure.

#![allow(dead_code)]

pub mod fake_api;
pub mod service;

use std::collections::BTreeMap;
use std::time::Duration;

use kubesd::api::selectors_for_role;
use kubesd::model::{Object, Role};
use kubesd::simulator::selector::{FieldSelector, LabelSelector};
use kubesd::simulator::{Failure, Injection, Resource, Simulator};
use kubesd::targets::{ObjectCache, TargetContext, target_labels};
use kubesd::{Labels, SdConfig, Subscription};

/// The constructor the end-to-end checks use: keep every label set as it is.
pub fn keep_all(l: &Labels) -> Option<Labels> {
    Some(l.clone())
}

/// One job per discovery role, with the metadata attachments that make groups watch
/// nodes, pods, services and namespaces as dependencies.
pub fn all_jobs(url: &str) -> Vec<SdConfig> {
    Role::DISCOVERY
        .into_iter()
        .map(|role| {
            let mut config = SdConfig::new(role, url);
            config.attach_metadata.namespace = role != Role::Node;
            config.attach_metadata.node = matches!(role, Role::Pod | Role::Endpoints);
            // The pods' owners: the generator's ReplicaSets and Jobs, which churn replaces.
            let pod = role == Role::Pod;
            config.attach_metadata.deployment = pod;
            config.attach_metadata.job = pod;
            config.attach_metadata.cronjob = pod;
            config
        })
        .collect()
}

/// Subscribes `keep_all` to every job, then waits until each has synced.
pub async fn subscribe_all(
    discovery: &kubesd::Discovery,
    jobs: &[SdConfig],
) -> Vec<Subscription<Labels>> {
    let mut subs = Vec::new();
    for config in jobs {
        subs.push(
            discovery
                .subscribe(config, keep_all)
                .await
                .expect("subscribes"),
        );
    }
    for s in &subs {
        s.synced().await;
    }
    subs
}

/// A target as a sorted map, for comparison and readable diffs.
pub type Target = BTreeMap<String, String>;

/// With `KUBESD_TEST_LOG` set (to a filter such as `kubesd=debug`), the engine's logs
/// go to the test's output: how to see what a failing seed did.
pub fn init_logs() {
    if let Ok(filter) = std::env::var("KUBESD_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .try_init();
    }
}

/// The objects of `role` a job of `config` sees: namespaces and selectors applied.
fn visible(sim: &Simulator, config: &SdConfig, role: Role) -> Vec<Object> {
    let (label, field) = selectors_for_role(role, &config.selectors);
    let label = LabelSelector::parse(&label).expect("label selector parses");
    let field = FieldSelector::parse(&field, Resource::from(role)).expect("field selector parses");
    let names = &config.namespaces.names;
    sim.list(Resource::from(role), None)
        .into_iter()
        .filter(|o| {
            let ns = o
                .pointer("/metadata/namespace")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            !role.is_namespaced() || names.is_empty() || names.iter().any(|n| n == ns)
        })
        .filter(|o| label.matches(o) && field.matches(o))
        .map(|o| Object::decode(role, o.to_string().as_bytes()).expect("simulator object decodes"))
        .collect()
}

/// Every target a job of `config` must have, from the simulator's current state.
pub fn expected(sim: &Simulator, config: &SdConfig) -> Vec<Target> {
    expected_in(sim, config, kubesd::Semantics::default())
}

/// [`expected`] in `semantics`.
pub fn expected_in(
    sim: &Simulator,
    config: &SdConfig,
    semantics: kubesd::Semantics,
) -> Vec<Target> {
    let mut out: Vec<Target> = discovered_in(sim, config, semantics)
        .iter()
        .flatten()
        .map(to_map)
        .collect();
    out.sort();
    out
}

/// Each object's discovered targets for a job of `config`, from the simulator's current
/// state, as discovery builds them (an object's targets share their common labels).
pub fn discovered(sim: &Simulator, config: &SdConfig) -> Vec<Vec<Labels>> {
    discovered_in(sim, config, kubesd::Semantics::default())
}

/// [`discovered`] in `semantics`.
pub fn discovered_in(
    sim: &Simulator,
    config: &SdConfig,
    semantics: kubesd::Semantics,
) -> Vec<Vec<Labels>> {
    let mut cache = ObjectCache::default();
    let mut subjects = Vec::new();
    for role in config.watched_roles(semantics) {
        for object in visible(sim, config, role) {
            if role == config.role {
                subjects.push(object.clone());
            }
            cache.insert(object);
        }
    }
    let ctx = TargetContext {
        semantics,
        attach: config.attach_metadata,
        cache: &cache,
    };
    subjects.iter().map(|o| target_labels(o, &ctx)).collect()
}

/// A label set as a sorted map.
pub fn to_map(labels: &Labels) -> Target {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// The subscription's targets, sorted.
pub async fn actual(sub: &Subscription<Labels>) -> Vec<Target> {
    let mut out: Vec<Target> = sub.targets().await.iter().map(to_map).collect();
    out.sort();
    out
}

/// Waits (polling every few milliseconds, up to `limit`) until the subscription's
/// targets equal what the simulator's state says; panics with a diff otherwise.
pub async fn converge_within(
    sub: &Subscription<Labels>,
    sim: &Simulator,
    config: &SdConfig,
    what: &str,
    limit: Duration,
) {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let want = expected(sim, config);
        let got = actual(sub).await;
        if want == got {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "{what}: role {} did not converge within {limit:?}\n{}",
                config.role,
                diff(&want, &got)
            );
        }
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
}

/// [`converge_within`] ten seconds.
pub async fn converge(sub: &Subscription<Labels>, sim: &Simulator, config: &SdConfig, what: &str) {
    converge_within(sub, sim, config, what, Duration::from_secs(10)).await
}

/// A readable difference between two sorted target lists.
pub fn diff(want: &[Target], got: &[Target]) -> String {
    let mut out = format!("expected {} targets, got {}\n", want.len(), got.len());
    let missing: Vec<&Target> = want.iter().filter(|t| !got.contains(t)).collect();
    let extra: Vec<&Target> = got.iter().filter(|t| !want.contains(t)).collect();
    for t in missing.iter().take(5) {
        let addr = t.get("__address__").map_or("?", |s| s);
        match extra
            .iter()
            .find(|e| e.get("__address__") == t.get("__address__"))
        {
            Some(e) => {
                out += &format!("  target {addr} differs:\n");
                for (k, v) in t.iter() {
                    match e.get(k) {
                        Some(ev) if ev == v => {}
                        Some(ev) => out += &format!("    ~ {k}: expected {v:?}, got {ev:?}\n"),
                        None => out += &format!("    - {k}={v:?}\n"),
                    }
                }
                for (k, v) in e.iter().filter(|(k, _)| !t.contains_key(*k)) {
                    out += &format!("    + {k}={v:?}\n");
                }
            }
            None => out += &format!("  missing target {addr}\n"),
        }
    }
    for e in extra
        .iter()
        .filter(|e| {
            !missing
                .iter()
                .any(|m| m.get("__address__") == e.get("__address__"))
        })
        .take(5)
    {
        out += &format!(
            "  unexpected target {}\n",
            e.get("__address__").map_or("?", |s| s)
        );
    }
    if missing.len() > 5 || extra.len() > 5 {
        out += &format!(
            "  ({} missing, {} unexpected in all)\n",
            missing.len(),
            extra.len()
        );
    }
    out
}

/// Changes to other roles than pods, so dependency refresh is exercised: a label on a
/// random node, namespace and service.
pub fn touch_dependencies(sim: &Simulator, rng: &mut fastrand::Rng) {
    for resource in [Resource::Nodes, Resource::Namespaces, Resource::Services] {
        let objects = sim.list(resource, None);
        let Some(o) = objects.get(rng.usize(..objects.len().max(1))) else {
            continue;
        };
        let ns = o["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = o["metadata"]["name"].as_str().unwrap_or_default();
        let _ = sim.patch(
            resource,
            ns,
            name,
            &serde_json::json!({"metadata": {"labels": {"chaos": rng.u32(..5).to_string()}}}),
        );
    }
}

/// Fires one random fault (restarts only if `restarts`); returns its name for the log.
pub fn random_fault(sim: &Simulator, rng: &mut fastrand::Rng, restarts: bool) -> &'static str {
    let mut pick = rng.u32(..13);
    if pick == 10 && !restarts {
        pick = 4;
    }
    match pick {
        0 => {
            sim.drop_watches(true);
            "drop mid-event"
        }
        1 => {
            sim.drop_watches(false);
            "drop between events"
        }
        2 => {
            sim.faults().split_next_events(rng.u32(1..20));
            "split events across chunks"
        }
        3 => {
            sim.faults().gone_next_watches(1);
            sim.drop_watches(false);
            "410 as HTTP status"
        }
        4 => {
            sim.compact();
            "compaction"
        }
        5 => {
            sim.faults().fail_next(Failure::ServerError, rng.u32(1..4));
            sim.drop_watches(false);
            "500s"
        }
        6 => {
            sim.faults().fail_next(Failure::TooManyRequests, 1);
            sim.drop_watches(false);
            "429 with Retry-After"
        }
        7 => {
            sim.inject(Injection::MalformedLine);
            "malformed JSON line"
        }
        8 => {
            sim.inject(Injection::UnknownType);
            "unknown event type"
        }
        9 => {
            sim.inject(Injection::WrongKind);
            "object of the wrong kind"
        }
        10 => {
            sim.restart();
            "restart with reset resourceVersions"
        }
        11 => {
            sim.stall_watches(true);
            "stall"
        }
        _ => {
            sim.stall_watches(false);
            "unstall"
        }
    }
}

/// A subscription's target addresses, sorted.
pub async fn addresses(sub: &Subscription<Labels>) -> Vec<String> {
    let mut out: Vec<String> = sub
        .targets()
        .await
        .iter()
        .filter_map(|l| l.get("__address__").map(str::to_string))
        .collect();
    out.sort();
    out
}

/// The engine's timings shortened for field-fault tests against fakes: a backoff cap of
/// 400 ms stands for 30 s, so two caps stand for a real minute.
pub fn field_fault_options() -> kubesd::EngineOptions {
    kubesd::EngineOptions {
        flush_interval: Duration::from_millis(50),
        backoff_initial: Duration::from_millis(15),
        backoff_max: Duration::from_millis(400),
        healthy_after: Duration::from_millis(150),
        watch_stall_timeout: Duration::from_millis(300),
        watch_timeout: (Duration::from_secs(1), Duration::from_secs(1)),
        request_timeout: Duration::from_millis(500),
        list_body_timeout: Duration::from_secs(5),
        max_list_body: 64 << 20,
        relist_interval: None,
        ..kubesd::EngineOptions::default()
    }
}
