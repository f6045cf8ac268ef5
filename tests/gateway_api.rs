//! The Gateway API roles end to end: routes in the simulator reach a job's `/sd` body
//! through their whole life (added, changed, re-parented, deleted); a Gateway listener's
//! change re-labels exactly the routes attached to that listener (counted, not timed);
//! and a cluster without the Gateway API's CRDs is one clear, bounded state.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kubesd::model::Role;
use kubesd::promconfig::{LoadedConfig, parse_config};
use kubesd::service::{JobSet, JobSetOptions, Shard};
use kubesd::simulator::gateway_api::{GATEWAY_NAME, http_route_object};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster, Simulator};
use kubesd::{Discovery, EngineOptions, Semantics};
use serde_json::{Value, json};
use support::fake_api::{FakeApi, Reply, Request};

/// A blackbox-style job over the routes: the probe URL and the route's name.
fn config(url: &str) -> LoadedConfig {
    let text = format!(
        r#"scrape_configs:
  - job_name: routes
    kubernetes_sd_configs:
      - role: httproute
        api_server: {url}
    relabel_configs:
      - source_labels: [__meta_kubernetes_httproute_scheme, __address__, __meta_kubernetes_httproute_path]
        regex: (.+);(.+);(.+)
        replacement: ${{1}}://${{2}}${{3}}
        target_label: url
      - source_labels: [__meta_kubernetes_httproute_name]
        target_label: route
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
"#
    );
    parse_config(&text, Path::new("gateway_api.yml")).expect("config loads")
}

async fn cluster() -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 24,
        namespaces: 2,
        pods_per_workload: 3,
        ..ClusterSpec::default()
    };
    SimulatedCluster::seeded(3, spec)
        .await
        .expect("cluster starts")
}

async fn job_set(url: &str) -> JobSet {
    let options = EngineOptions {
        semantics: Semantics::VictoriaMetrics,
        ..SimulatedCluster::engine_options()
    };
    let mut set = JobSet::new(
        Discovery::start(options),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    );
    set.apply(&config(url)).await.expect("jobs start");
    set
}

/// The `(namespace, route, url)` of every target the job serves.
async fn served(set: &JobSet) -> BTreeSet<(String, String, String)> {
    let (_, job) = set.jobs().into_iter().next().expect("one job");
    let body = job.sd();
    let json: Value = serde_json::from_slice(&body.to_vec()).expect("valid JSON");
    let label = |g: &Value, name: &str| g["labels"][name].as_str().unwrap_or("").to_string();
    json.as_array()
        .expect("an array of groups")
        .iter()
        .flat_map(|g| {
            let n = g["targets"].as_array().map_or(0, Vec::len);
            std::iter::repeat_n(
                (label(g, "namespace"), label(g, "route"), label(g, "url")),
                n,
            )
        })
        .collect()
}

/// The served URLs of route `name` in `ns`.
async fn urls_of(set: &JobSet, ns: &str, name: &str) -> BTreeSet<String> {
    served(set)
        .await
        .into_iter()
        .filter(|(n, r, _)| n == ns && r == name)
        .map(|(_, _, url)| url)
        .collect()
}

/// Waits until route `name` in `ns` is served with exactly `want`.
async fn converge(set: &JobSet, ns: &str, name: &str, want: &[&str], what: &str) {
    let want: BTreeSet<String> = want.iter().map(|u| u.to_string()).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = urls_of(set, ns, name).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: route {ns}/{name} serves {got:?}, want {want:?}"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
}

fn update(sim: &Simulator, resource: Resource, mut object: Value) {
    if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
    sim.update(resource, object).expect("update");
}

#[actix_rt::test]
async fn a_route_added_changed_reparented_and_deleted_reaches_sd() {
    let running = cluster().await;
    let (sim, url) = (running.sim(), running.url());
    let mut set = job_set(&url).await;
    let ns = sim.list(Resource::Gateways, None)[0]["metadata"]["namespace"]
        .as_str()
        .expect("a generated Gateway")
        .to_string();
    let host = format!("probe.{ns}.example.com");

    // Added: on the Gateway's `http` listener, two rules (paths `/` and `/api`).
    let mut route = http_route_object(&ns, "probe", Some("http"));
    route["spec"]["hostnames"] = json!([host]);
    sim.create(Resource::HttpRoutes, route).expect("created");
    let plain = [format!("http://{host}/"), format!("http://{host}/api")];
    converge(&set, &ns, "probe", &[&plain[0], &plain[1]], "added").await;

    // Changed: a third rule.
    let mut route = sim.get(Resource::HttpRoutes, &ns, "probe").expect("stored");
    route["spec"]["rules"]
        .as_array_mut()
        .expect("rules")
        .push(json!({"matches": [{"path": {"type": "Exact", "value": "/healthz"}}]}));
    update(sim, Resource::HttpRoutes, route);
    let health = format!("http://{host}/healthz");
    converge(
        &set,
        &ns,
        "probe",
        &[&plain[0], &plain[1], &health],
        "changed",
    )
    .await;

    // Re-parented: to the `https` listener.
    let mut route = sim.get(Resource::HttpRoutes, &ns, "probe").expect("stored");
    route["spec"]["parentRefs"][0]["sectionName"] = json!("https");
    update(sim, Resource::HttpRoutes, route);
    let tls: Vec<String> = ["/", "/api", "/healthz"]
        .iter()
        .map(|p| format!("https://{host}{p}"))
        .collect();
    converge(
        &set,
        &ns,
        "probe",
        &[&tls[0], &tls[1], &tls[2]],
        "re-parented",
    )
    .await;

    // Deleted.
    sim.delete(Resource::HttpRoutes, &ns, "probe")
        .expect("deleted");
    converge(&set, &ns, "probe", &[], "deleted").await;
    set.stop_all().await;
    running.stop().await;
}

/// The names of the HTTPRoutes in `ns` attached to listener `section` of its Gateway
/// (a route without `sectionName` is attached to every listener).
fn attached_to(sim: &Simulator, ns: &str, section: &str) -> BTreeSet<String> {
    sim.list(Resource::HttpRoutes, Some(ns))
        .iter()
        .filter(|r| {
            let parent = &r["spec"]["parentRefs"][0];
            parent["name"] == GATEWAY_NAME
                && parent["sectionName"].as_str().is_none_or(|s| s == section)
        })
        .map(|r| r["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect()
}

#[actix_rt::test]
async fn a_listener_change_relabels_exactly_the_routes_attached_to_it() {
    let running = cluster().await;
    let (sim, url) = (running.sim(), running.url());
    let mut set = job_set(&url).await;
    let gateway = sim.list(Resource::Gateways, None)[0].clone();
    let ns = gateway["metadata"]["namespace"]
        .as_str()
        .expect("namespace")
        .to_string();
    let on_https = attached_to(sim, &ns, "https");
    let only_http = &attached_to(sim, &ns, "http") - &on_https;
    assert!(
        !on_https.is_empty() && !only_http.is_empty(),
        "the generated routes use both listeners: {on_https:?}, {only_http:?}"
    );
    // Every route of the namespace is served before the change.
    let deadline = Instant::now() + Duration::from_secs(20);
    for name in on_https.iter().chain(&only_http) {
        while urls_of(&set, &ns, name).await.is_empty() {
            assert!(Instant::now() < deadline, "route {name} never served");
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let before = set.work();
    let http_urls: Vec<BTreeSet<String>> = {
        let mut v = Vec::new();
        for name in &only_http {
            v.push(urls_of(&set, &ns, name).await);
        }
        v
    };

    // The `https` listener becomes a `TLS` one: its routes' scheme changes.
    let mut gateway = gateway;
    gateway["spec"]["listeners"][1]["protocol"] = json!("TLS");
    update(sim, Resource::Gateways, gateway);
    let deadline = Instant::now() + Duration::from_secs(20);
    for name in &on_https {
        while !urls_of(&set, &ns, name)
            .await
            .iter()
            .any(|u| u.starts_with("tls://"))
        {
            assert!(Instant::now() < deadline, "route {name} not re-labelled");
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let after = set.work();
    assert_eq!(
        after.objects_changed - before.objects_changed,
        on_https.len() as u64,
        "exactly the routes on the changed listener changed: {on_https:?}"
    );
    for (name, urls) in only_http.iter().zip(&http_urls) {
        assert_eq!(
            &urls_of(&set, &ns, name).await,
            urls,
            "route {name} untouched"
        );
    }
    set.stop_all().await;
    running.stop().await;
}

/// The longest retry delay in the CRD-less test (30 s in production).
const CAP: Duration = Duration::from_millis(200);

/// A cluster without the Gateway API: its group answers 404 to everything; the
/// core group serves an empty service list and quiet watches.
fn crd_less(r: &Request) -> Reply {
    if r.target.starts_with("/apis/gateway.networking.k8s.io/") {
        let path = r.target.split('?').next().unwrap_or("");
        return Reply::k8s_status(
            404,
            "NotFound",
            &format!("the server could not find the requested resource ({path})"),
        );
    }
    if r.is_watch() {
        return Reply::watch(Vec::new(), Duration::from_millis(300));
    }
    Reply::json(
        r#"{"kind":"ServiceList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}"#,
    )
}

#[actix_rt::test]
async fn a_cluster_without_the_crds_is_one_clear_state_rechecked_at_the_backoff_cap() {
    support::init_logs();
    let api = FakeApi::start(crd_less).await;
    // VictoriaMetrics' semantics: the routes' Gateways are watched too.
    let discovery = Discovery::start(EngineOptions {
        backoff_initial: Duration::from_millis(10),
        backoff_max: CAP,
        semantics: Semantics::VictoriaMetrics,
        ..SimulatedCluster::engine_options()
    });
    let config = kubesd::SdConfig::new(Role::HttpRoute, &api.url);
    let sub = discovery
        .subscribe(&config, support::keep_all)
        .await
        .expect("subscribes");
    let reason = sub
        .synced_within(CAP * 3)
        .await
        .expect_err("a cluster without the CRDs cannot sync the routes");
    let kubesd::NotSynced::Failing(error) = &reason else {
        panic!("{reason}");
    };
    assert_eq!(error.problem, kubesd::UrlProblem::NotInstalled);
    assert!(error.configuration, "{error}");

    // Both Gateway API URLs (routes, and the Gateways they attach to) report it.
    let window = CAP * 10;
    let start = Instant::now();
    actix_rt::time::sleep(window).await;
    let status = sub.status().await;
    let missing: Vec<&str> = status
        .iter()
        .filter(|s| {
            s.last_error
                .as_ref()
                .is_some_and(|e| e.problem == kubesd::UrlProblem::NotInstalled)
        })
        .map(|s| s.url.as_str())
        .collect();
    assert_eq!(missing.len(), 2, "{status:?}");
    assert!(
        api.requests().iter().any(|r| r
            .target
            .starts_with("/apis/gateway.networking.k8s.io/v1beta1/")),
        "v1beta1 is tried after v1's 404"
    );
    // Re-checked once per backoff cap, per URL (v1, then v1beta1): never a storm.
    let requests = api.requests_since(start);
    let gateway_api = requests
        .iter()
        .filter(|r| r.target.starts_with("/apis/gateway.networking.k8s.io/"))
        .count() as u128;
    let allowed = 2 * 2 * (window.as_millis() / CAP.as_millis() + 1);
    eprintln!("without the CRDs: {gateway_api} Gateway API requests in {window:?} (cap {CAP:?})");
    assert!(
        (1..=allowed).contains(&gateway_api),
        "{gateway_api} Gateway API requests in {window:?}, allowed {allowed}"
    );
    sub.stop().await;
}

#[actix_rt::test]
async fn crds_installed_later_are_picked_up_at_the_next_check() {
    let running = cluster().await;
    let (sim, url) = (running.sim(), running.url());
    sim.set_gateway_api(false);
    let client = awc::Client::default();
    let status = |path: &'static str| {
        let request = client.get(format!("{url}{path}"));
        async move { request.send().await.expect("request").status().as_u16() }
    };
    assert_eq!(
        status("/apis/gateway.networking.k8s.io/v1/httproutes").await,
        404
    );
    assert_eq!(status("/apis/gateway.networking.k8s.io/v1").await, 404);

    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let sub = discovery
        .subscribe(&running.sd_config(Role::HttpRoute), support::keep_all)
        .await
        .expect("subscribes");
    let reason = sub
        .synced_within(Duration::from_secs(2))
        .await
        .expect_err("no CRDs, no sync");
    assert!(
        matches!(&reason, kubesd::NotSynced::Failing(e) if e.problem == kubesd::UrlProblem::NotInstalled),
        "{reason}"
    );

    sim.set_gateway_api(true);
    assert_eq!(status("/apis/gateway.networking.k8s.io/v1").await, 200);
    // `synced_within` would answer at once with the standing error: wait for the sync.
    actix_rt::time::timeout(Duration::from_secs(10), sub.synced())
        .await
        .expect("synced once the CRDs are served");
    let routes = sim.list(Resource::HttpRoutes, None).len();
    assert!(routes > 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while support::actual(&sub).await.is_empty() {
        assert!(
            Instant::now() < deadline,
            "no route targets after the CRDs came"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    sub.stop().await;
    running.stop().await;
}

/// Waits until `sub` serves what the simulator's state gives a job of `config` in
/// `semantics`.
async fn converge_in(
    sub: &kubesd::Subscription<kubesd::Labels>,
    sim: &Simulator,
    config: &kubesd::SdConfig,
    semantics: Semantics,
    what: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let want = support::expected_in(sim, config, semantics);
        let got = support::actual(sub).await;
        if want == got {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what} ({semantics}): {}",
            support::diff(&want, &got)
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Replaces Gateway `from` in `ns` by an equal one called `to`.
fn rename_gateway(sim: &Simulator, ns: &str, from: &str, to: &str) {
    let mut gateway = sim.get(Resource::Gateways, ns, from).expect("gateway");
    if let Some(meta) = gateway["metadata"].as_object_mut() {
        for server_owned in ["uid", "resourceVersion", "creationTimestamp"] {
            meta.remove(server_owned);
        }
        meta.insert("name".into(), json!(to));
    }
    sim.create(Resource::Gateways, gateway).expect("created");
    sim.delete(Resource::Gateways, ns, from).expect("deleted");
}

#[actix_rt::test]
async fn namespaces_selectors_and_namespace_metadata_apply_to_routes_and_their_parents() {
    let running = cluster().await;
    let sim = running.sim();
    let ns = sim.list(Resource::Gateways, None)[0]["metadata"]["namespace"]
        .as_str()
        .expect("namespace")
        .to_string();
    let left_out = sim.list(Resource::HttpRoutes, Some(&ns))[0]["metadata"]["name"]
        .as_str()
        .expect("a route")
        .to_string();
    for semantics in Semantics::ALL {
        let discovery = Discovery::start(EngineOptions {
            semantics,
            ..SimulatedCluster::engine_options()
        });
        let mut config = running.sd_config(Role::HttpRoute);
        config.namespaces.names = vec![ns.clone()];
        config.attach_metadata.namespace = true;
        config.selectors = vec![
            kubesd::api::RoleSelector {
                role: "httproute".into(),
                label: format!("app!={left_out}"),
                field: String::new(),
            },
            kubesd::api::RoleSelector {
                role: "gateway".into(),
                label: String::new(),
                field: format!("metadata.name={GATEWAY_NAME}"),
            },
        ];
        let sub = discovery
            .subscribe(&config, support::keep_all)
            .await
            .expect("subscribes");
        converge_in(&sub, sim, &config, semantics, "initial list").await;
        assert!(!support::actual(&sub).await.is_empty());

        // The Gateway leaves the selector: in victoriametrics semantics its routes
        // lose their listeners, in prometheus semantics nothing changes.
        rename_gateway(sim, &ns, GATEWAY_NAME, "edge-2");
        converge_in(&sub, sim, &config, semantics, "gateway renamed").await;
        let routes_left = support::actual(&sub).await.len();
        assert_eq!(routes_left == 0, semantics == Semantics::VictoriaMetrics);

        // Put back for the next semantics.
        rename_gateway(sim, &ns, "edge-2", GATEWAY_NAME);
        converge_in(&sub, sim, &config, semantics, "gateway back").await;
        sub.stop().await;
    }
    running.stop().await;
}
