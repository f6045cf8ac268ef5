//! The fleet views end to end: two kubesd job sets (two replicas, each its own
//! discovery) against the simulator, one serving HTTP. Shard and node views cover the
//! job; a change in the simulated cluster reaches its node's view and only that view's
//! ETag changes (the others answer `304`); the member views follow the scraper pods'
//! readiness, and both replicas serve them byte for byte alike; malformed queries are
//! refused with a reason.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kubesd::promconfig::{LoadedConfig, parse_config};
use kubesd::service::{JobSet, JobSetOptions, Shard, ViewQuery};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster, Simulator};
use kubesd::{ArcStr, Discovery};
use serde_json::{Value, json};

/// One served target: address and labels.
type Served = (String, BTreeMap<String, String>);

/// The fleet's config; `fleet` adds settings to the `membership` section.
fn config(url: &str, fleet: &str) -> LoadedConfig {
    let text = format!(
        r#"
membership:
  namespace: monitoring
  label_selector: role=scraper
  api_server: {url}
  {fleet}
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        api_server: {url}
    relabel_configs:
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_node_name]
        target_label: node
"#
    );
    parse_config(&text, Path::new("fleet.yml")).expect("config loads")
}

/// A scraper pod in `monitoring` on node-000.
fn scraper(name: &str, ip: &str, ready: bool) -> Value {
    scraper_on(name, ip, ready, "node-000", "1")
}

/// A scraper pod in `monitoring` on `node`, weighing `weight` (its annotation).
fn scraper_on(name: &str, ip: &str, ready: bool, node: &str, weight: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "monitoring", "uid": format!("uid-{name}"),
                     "labels": {"role": "scraper"}, "annotations": {"kubesd.io/weight": weight}},
        "spec": {"nodeName": node, "containers": [{"name": "prometheus",
                 "ports": [{"name": "web", "containerPort": 9090, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": ip,
                   "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}
    })
}

async fn job_set() -> JobSet {
    JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    )
}

async fn get(client: &awc::Client, url: &str, etag: Option<&str>) -> (u16, String, Vec<u8>) {
    let mut req = client.get(url);
    if let Some(tag) = etag {
        req = req.insert_header(("If-None-Match", tag));
    }
    let mut resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let tag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = resp.body().limit(64 << 20).await.expect("body");
    (status, tag, body.to_vec())
}

fn targets(body: &[u8]) -> BTreeSet<Served> {
    let json: Value = serde_json::from_slice(body).expect("JSON");
    let mut out = BTreeSet::new();
    for group in json.as_array().expect("groups") {
        let labels: BTreeMap<String, String> =
            serde_json::from_value(group["labels"].clone()).expect("labels");
        for t in group["targets"].as_array().expect("targets") {
            out.insert((t.as_str().expect("address").to_string(), labels.clone()));
        }
    }
    out
}

/// The simulator's node names, and the empty one (targets on no node).
fn nodes(sim: &Simulator) -> Vec<String> {
    let mut names: Vec<String> = sim
        .list(Resource::Nodes, None)
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(String::from))
        .collect();
    names.push(String::new());
    names
}

/// Polls `check` until it holds (the job set is fed by watches, asynchronously).
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "{what}: never held");
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The union of the views' targets, and whether any target is in two of them.
async fn union(client: &awc::Client, base: &str, queries: &[String]) -> (BTreeSet<Served>, bool) {
    let mut all = BTreeSet::new();
    let mut overlap = false;
    for q in queries {
        let (status, _, body) = get(client, &format!("{base}/sd/pods?{q}"), None).await;
        assert_eq!(status, 200, "{q}");
        for t in targets(&body) {
            overlap |= !all.insert(t);
        }
    }
    (all, overlap)
}

/// Asserts the views' union is the job and no target is in two of them.
fn covers((union, overlap): (BTreeSet<Served>, bool), all: &BTreeSet<Served>, what: &str) {
    assert!(!overlap, "{what}: a target is in two views");
    assert!(
        union == *all,
        "{what}: {} served of {}; missing {:?}, extra {:?}",
        union.len(),
        all.len(),
        all.difference(&union).next(),
        union.difference(all).next()
    );
}

/// A cluster seeded with `seed` as `spec` says, with a Ready scraper pod of each of
/// `scrapers`' names (addresses 10.99.0.0 on).
async fn cluster_with_scrapers(
    seed: u64,
    spec: ClusterSpec,
    scrapers: &[&str],
) -> SimulatedCluster {
    let running = SimulatedCluster::seeded(seed, spec)
        .await
        .expect("cluster starts");
    for (i, name) in scrapers.iter().enumerate() {
        (running.sim())
            .create(Resource::Pods, scraper(name, &format!("10.99.0.{i}"), true))
            .expect("scraper pod created");
    }
    running
}

#[actix_rt::test]
async fn views_cover_the_job_and_a_change_moves_only_its_views_etag() {
    let spec = ClusterSpec {
        nodes: 4,
        pods: 40,
        namespaces: 2,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    let running = cluster_with_scrapers(11, spec, &["scraper-a", "scraper-b", "scraper-c"]).await;
    let (sim, url) = (running.sim(), running.url());
    // No handover: a member's targets leave it at once (the handover is tested below).
    let config = config(&url, "handover: 0s");
    let mut one = job_set().await;
    let mut two = job_set().await;
    one.apply(&config).await.expect("replica one starts");
    two.apply(&config).await.expect("replica two starts");
    let published = Arc::new(RwLock::new(one.jobs().into_iter().collect()));
    let (bound, handle) = support::service::serve(published, None);
    let base = format!("http://{bound}");
    let client = awc::Client::default();

    // The whole job, once every pod is listed.
    let pods = sim.list(Resource::Pods, None).len();
    let whole = || async {
        let (status, _, body) = get(&client, &format!("{base}/sd/pods"), None).await;
        (status == 200).then(|| targets(&body))
    };
    eventually("the job lists every pod", || async {
        whole().await.is_some_and(|t| {
            t.iter()
                .map(|(_, l)| l.get("pod").cloned())
                .collect::<BTreeSet<_>>()
                .len()
                + 5
                >= pods
        })
    })
    .await;
    let all = whole().await.expect("synced");

    // Shards and nodes: disjoint, covering the job.
    let shards: Vec<String> = (0..3).map(|i| format!("shard={i}&shards=3")).collect();
    covers(union(&client, &base, &shards).await, &all, "shards");
    let node_queries: Vec<String> = nodes(sim).iter().map(|n| format!("node={n}")).collect();
    covers(union(&client, &base, &node_queries).await, &all, "nodes");

    // Members: the three Ready scrapers share the job, both replicas alike.
    let members: Vec<String> = ["scraper-a", "scraper-b", "scraper-c"]
        .iter()
        .map(|m| format!("member={m}"))
        .collect();
    eventually("the members are known", || async {
        union(&client, &base, &members).await == (all.clone(), false)
    })
    .await;
    let job_two = two.jobs().into_iter().next().expect("job").1;
    for m in ["scraper-a", "scraper-b", "scraper-c"] {
        let (_, _, served_one) = get(&client, &format!("{base}/sd/pods?member={m}"), None).await;
        eventually("replica two assigns alike", || async {
            let body = job_two.view(&ViewQuery::Member(ArcStr::from(m))).await;
            body.to_vec() == served_one
        })
        .await;
    }

    // A change to one pod: its node's view changes, every other node's answers 304.
    let etags: BTreeMap<String, String> = {
        let mut tags = BTreeMap::new();
        for q in &node_queries {
            tags.insert(
                q.clone(),
                get(&client, &format!("{base}/sd/pods?{q}"), None).await.1,
            );
        }
        tags
    };
    let mut pod = sim
        .list(Resource::Pods, None)
        .into_iter()
        .find(|p| {
            p["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
                && p["status"]["podIP"]
                    .as_str()
                    .is_some_and(|ip| !ip.is_empty())
                && p["metadata"]["namespace"] != "monitoring"
        })
        .expect("a scheduled pod");
    let node = format!(
        "node={}",
        pod["spec"]["nodeName"].as_str().unwrap_or_default()
    );
    pod["metadata"]["labels"]["tier"] = json!("changed");
    sim.update(Resource::Pods, pod).expect("pod updates");
    eventually("the change reaches its node's view", || async {
        let (_, _, body) = get(&client, &format!("{base}/sd/pods?{node}"), None).await;
        targets(&body)
            .iter()
            .any(|(_, l)| l.get("tier").map(String::as_str) == Some("changed"))
    })
    .await;
    for (q, tag) in &etags {
        let (status, now, _) = get(&client, &format!("{base}/sd/pods?{q}"), Some(tag)).await;
        if *q == node {
            assert_eq!(status, 200, "{q}: changed");
            assert_ne!(&now, tag, "{q}: a new ETag");
        } else {
            assert_eq!(status, 304, "{q}: unchanged");
        }
    }

    // A scraper no longer Ready: its targets go to the others, on both replicas.
    sim.update(Resource::Pods, scraper("scraper-b", "10.99.0.1", false))
        .expect("scraper updates");
    let all = whole().await.expect("synced");
    let two_members = [members[0].clone(), members[2].clone()];
    eventually("scraper-b's targets move", || async {
        union(&client, &base, &two_members).await == (all.clone(), false)
    })
    .await;
    eventually("not Ready: nothing", || async {
        let (status, _, body) =
            get(&client, &format!("{base}/sd/pods?member=scraper-b"), None).await;
        (status, body.as_slice()) == (200, b"[]".as_slice())
    })
    .await;
    let (_, _, served_one) = get(&client, &format!("{base}/sd/pods?member=scraper-a"), None).await;
    eventually("replica two moves them alike", || async {
        let body = job_two
            .view(&ViewQuery::Member(ArcStr::from("scraper-a")))
            .await;
        body.to_vec() == served_one
    })
    .await;

    // Unknown names are empty lists; malformed queries a 400 that says why.
    for q in ["node=no-such-node", "member=no-such-pod"] {
        let (status, _, body) = get(&client, &format!("{base}/sd/pods?{q}"), None).await;
        assert_eq!((status, body.as_slice()), (200, b"[]".as_slice()), "{q}");
    }
    for (q, says) in [
        ("shard=1", "shards="),
        ("shard=3&shards=3", "0 to 2"),
        ("shards=0&shard=0", "from 1"),
    ] {
        let (status, _, body) = get(&client, &format!("{base}/sd/pods?{q}"), None).await;
        assert_eq!(status, 400, "{q}");
        assert!(String::from_utf8_lossy(&body).contains(says), "{q}");
    }

    // `/sd?views` lists them, `/metrics` counts them.
    let (_, _, listing) = get(&client, &format!("{base}/sd?views"), None).await;
    let listing: Value = serde_json::from_slice(&listing).expect("JSON");
    let views = listing[0]["views"].as_array().expect("views").len();
    assert!(views >= 3 + 2, "{listing}");
    let (_, _, metrics) = get(&client, &format!("{base}/metrics"), None).await;
    let metrics = String::from_utf8_lossy(&metrics);
    assert!(
        metrics.contains(
            "kubesd_job_view_targets{job=\"pods\",view=\"shard\",shards=\"3\",shard=\"0\"}"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("kubesd_job_view_buckets{job=\"pods\",view=\"node\"}"));

    handle.stop(false).await;
    one.stop_all().await;
    two.stop_all().await;
    running.stop().await;
}

/// The value of `metric{job="pods"}` in a `/metrics` page.
async fn metric(client: &awc::Client, base: &str, metric: &str) -> Option<f64> {
    let (_, _, page) = get(client, &format!("{base}/metrics"), None).await;
    let page = String::from_utf8_lossy(&page).into_owned();
    let prefix = format!("{metric}{{job=\"pods\"}} ");
    page.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.parse().ok())
}

/// Zone-aware, weighted members with a short handover: each member serves only targets
/// of its own zone while that zone has a member, a zone without one is served across
/// zones and counted; a member turned NotReady keeps its targets for the handover
/// while the others serve them at once, then lets them go.
#[actix_rt::test]
async fn members_keep_to_their_zone_and_hand_over() {
    let spec = ClusterSpec {
        nodes: 4,
        pods: 40,
        namespaces: 2,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::seeded(12, spec)
        .await
        .expect("cluster starts");
    let (sim, url) = (running.sim(), running.url());
    let zone_of: BTreeMap<String, String> = sim
        .list(Resource::Nodes, None)
        .iter()
        .filter_map(|n| {
            let name = n["metadata"]["name"].as_str()?;
            let zone = n["metadata"]["labels"]["topology.kubernetes.io/zone"].as_str()?;
            Some((name.to_string(), zone.to_string()))
        })
        .collect();
    // node-000 and node-003 share a zone; node-002's zone gets no member.
    let scrapers = [
        ("scraper-a0", "node-000", "1"),
        ("scraper-a1", "node-003", "2"),
        ("scraper-b0", "node-001", "1"),
    ];
    for (i, (name, node, weight)) in scrapers.iter().enumerate() {
        let pod = scraper_on(name, &format!("10.99.0.{i}"), true, node, weight);
        sim.create(Resource::Pods, pod)
            .expect("scraper pod created");
    }
    let fleet = "zone_aware: true\n  weight_from: annotation:kubesd.io/weight\n  handover: 3s";
    let mut one = job_set().await;
    one.apply(&config(&url, fleet)).await.expect("starts");
    let (bound, handle) = support::service::serve(
        Arc::new(RwLock::new(one.jobs().into_iter().collect())),
        None,
    );
    let base = format!("http://{bound}");
    let client = awc::Client::default();
    let queries: Vec<String> = scrapers
        .iter()
        .map(|(m, ..)| format!("member={m}"))
        .collect();
    let pods = sim.list(Resource::Pods, None).len();
    let all = || async {
        let (status, _, body) = get(&client, &format!("{base}/sd/pods"), None).await;
        if status == 200 {
            targets(&body)
        } else {
            BTreeSet::new()
        }
    };
    eventually("every pod and member is known", || async {
        let all = all().await;
        let pods_seen: BTreeSet<_> = all.iter().map(|(_, l)| l.get("pod").cloned()).collect();
        pods_seen.len() + 5 >= pods && union(&client, &base, &queries).await == (all, false)
    })
    .await;

    // Each member's targets are on nodes of its zone, but those of the memberless zone.
    let no_member = &zone_of["node-002"];
    let mut crossing = 0;
    for (member, node, _) in scrapers {
        let (_, _, body) = get(&client, &format!("{base}/sd/pods?member={member}"), None).await;
        for (address, labels) in targets(&body) {
            let zone = labels.get("node").and_then(|n| zone_of.get(n));
            match zone {
                Some(z) if z == no_member => crossing += 1,
                Some(z) => assert_eq!(z, &zone_of[node], "{member} serves {address}"),
                None => {}
            }
        }
    }
    assert!(crossing > 0, "node-002 has targets");
    let counted = metric(&client, &base, "kubesd_job_member_targets_cross_zone").await;
    assert_eq!(counted, Some(f64::from(crossing)));
    // The status page's counts per zone of the members: each member's targets under its
    // node's zone, nothing under node-002's memberless zone.
    let (_, _, body) = get(&client, &format!("{base}/api/v1/kubesd/jobs"), None).await;
    let jobs: serde_json::Value = serde_json::from_slice(&body).expect("jobs JSON");
    let zones = &jobs["data"][0]["memberZones"];
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for (member, node, _) in scrapers {
        let (_, _, body) = get(&client, &format!("{base}/sd/pods?member={member}"), None).await;
        *expected.entry(zone_of[node].clone()).or_default() += targets(&body).len() as u64;
    }
    for (zone, n) in &expected {
        assert_eq!(zones[zone].as_u64(), Some(*n), "zone {zone} in {zones}");
    }
    assert!(zones.get(no_member).is_none(), "{zones}");

    // scraper-b0 NotReady: zone b's targets go to zone a at once, and stay at b0 for
    // the handover.
    let before: BTreeSet<Served> = {
        let (_, _, body) = get(&client, &format!("{base}/sd/pods?member=scraper-b0"), None).await;
        targets(&body)
    };
    assert!(!before.is_empty(), "scraper-b0 serves zone b");
    sim.update(
        Resource::Pods,
        scraper_on("scraper-b0", "10.99.0.2", false, "node-001", "1"),
    )
    .expect("scraper updates");
    let zone_a = [queries[0].clone(), queries[1].clone()];
    let all_now = all().await;
    eventually("zone a serves every target", || async {
        union(&client, &base, &zone_a).await == (all_now.clone(), false)
    })
    .await;
    let (_, _, body) = get(&client, &format!("{base}/sd/pods?member=scraper-b0"), None).await;
    assert_eq!(
        targets(&body),
        before,
        "scraper-b0 keeps its targets for the handover"
    );
    let twice = metric(&client, &base, "kubesd_job_member_targets_in_handover").await;
    assert_eq!(twice, Some(before.len() as f64));
    eventually("the handover ends", || async {
        let (_, _, body) = get(&client, &format!("{base}/sd/pods?member=scraper-b0"), None).await;
        body.as_slice() == b"[]"
    })
    .await;
    let twice = metric(&client, &base, "kubesd_job_member_targets_in_handover").await;
    assert_eq!(twice, Some(0.0));
    let moves = metric(&client, &base, "kubesd_job_member_target_moves_total").await;
    assert!(moves.is_some_and(|m| m >= before.len() as f64), "{moves:?}");

    handle.stop(false).await;
    one.stop_all().await;
    running.stop().await;
}

/// The simulator's scrapers (spread over the zones, weights 1 and 2) rolled one by one,
/// zone-aware with a handover: after every step of the roll, every target of the job
/// is in some member's view; once the last handover ends no target is in two.
#[actix_rt::test]
async fn a_rolling_restart_of_the_scrapers_leaves_no_target_unserved() {
    let spec = ClusterSpec {
        nodes: 6,
        pods: 40,
        namespaces: 2,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::seeded(13, spec)
        .await
        .expect("cluster starts");
    let (sim, url) = (running.sim(), running.url());
    let scrapers = kubesd::simulator::create_scrapers(sim, 4).expect("scrapers");
    let text = format!(
        r#"
membership:
  namespace: monitoring
  label_selector: {selector}
  api_server: {url}
  zone_aware: true
  weight_from: annotation:kubesd.io/weight
  handover: 1s
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs:
      - role: pod
        api_server: {url}
    relabel_configs:
      - source_labels: [__meta_kubernetes_namespace]
        regex: monitoring
        action: drop
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
"#,
        selector = kubesd::simulator::scrapers::SCRAPER_SELECTOR
    );
    let config = parse_config(&text, Path::new("fleet.yml")).expect("config loads");
    let mut one = job_set().await;
    one.apply(&config).await.expect("starts");
    let (bound, handle) = support::service::serve(
        Arc::new(RwLock::new(one.jobs().into_iter().collect())),
        None,
    );
    let base = format!("http://{bound}");
    let client = awc::Client::default();
    let queries: Vec<String> = scrapers.iter().map(|m| format!("member={m}")).collect();
    let all = || async {
        let (status, _, body) = get(&client, &format!("{base}/sd/pods"), None).await;
        if status == 200 {
            targets(&body)
        } else {
            BTreeSet::new()
        }
    };
    eventually("the members share the job", || async {
        let all = all().await;
        !all.is_empty() && union(&client, &base, &queries).await == (all, false)
    })
    .await;
    let all = all().await;

    let mut roll = kubesd::simulator::ScraperRoll::new();
    for _ in 0..3 * scrapers.len() {
        roll.step(sim).expect("roll step").expect("a scraper");
        for _ in 0..5 {
            let (served, _) = union(&client, &base, &queries).await;
            assert!(
                served == all,
                "a target unserved: {:?}",
                all.difference(&served).next()
            );
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
    }
    eventually("the last handover ends", || async {
        union(&client, &base, &queries).await == (all.clone(), false)
    })
    .await;

    handle.stop(false).await;
    one.stop_all().await;
    running.stop().await;
}

/// A pod of an application in `apps` on node-000, one container port.
fn app_pod(name: &str, ip: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "apps", "uid": format!("uid-{name}"),
                     "labels": {"app": "late"}},
        "spec": {"nodeName": "node-000", "containers": [{"name": "app",
                 "ports": [{"name": "metrics", "containerPort": 8080, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": ip}
    })
}

/// The targets of the job's member views as `/sd?views` lists them (a target in
/// handover at both its members), and the job's.
async fn member_and_job_targets(client: &awc::Client, base: &str) -> (u64, u64) {
    let (_, _, listing) = get(client, &format!("{base}/sd?views"), None).await;
    let listing: Value = serde_json::from_slice(&listing).expect("JSON");
    let members = (listing[0]["views"].as_array().into_iter().flatten())
        .filter(|v| v["view"].as_str().is_some_and(|q| q.starts_with("member=")))
        .filter_map(|v| v["targets"].as_u64())
        .sum();
    (members, listing[0]["targets"].as_u64().unwrap_or(0))
}

#[actix_rt::test]
async fn member_views_in_use_are_placed_as_the_job_changes_not_when_next_asked() {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 10,
        namespaces: 1,
        pods_per_workload: 2,
        ..ClusterSpec::default()
    };
    let running = cluster_with_scrapers(17, spec, &["scraper-a", "scraper-b"]).await;
    let (sim, url) = (running.sim(), running.url());
    let config = config(&url, "handover: 0s");
    let mut one = job_set().await;
    one.apply(&config).await.expect("starts");
    let published = Arc::new(RwLock::new(one.jobs().into_iter().collect()));
    let (bound, handle) = support::service::serve(published, None);
    let base = format!("http://{bound}");
    let client = awc::Client::default();

    // One member's view asked for, once: the job's targets are placed.
    eventually("a member's view is served", || async {
        let url = format!("{base}/sd/pods?member=scraper-a");
        get(&client, &url, None).await.0 == 200
    })
    .await;
    eventually("every target is placed", || async {
        let (members, job) = member_and_job_targets(&client, &base).await;
        job > 0 && members == job
    })
    .await;
    let (_, before) = member_and_job_targets(&client, &base).await;

    // Pods come; no view is asked for again, and the placements follow.
    for i in 0..3 {
        sim.create(
            Resource::Pods,
            app_pod(&format!("late-{i}"), &format!("10.98.0.{i}")),
        )
        .expect("pod created");
    }
    eventually("the new pods' targets are placed unasked", || async {
        let (members, job) = member_and_job_targets(&client, &base).await;
        job == before + 3 && members == job
    })
    .await;

    handle.stop(false).await;
    one.stop_all().await;
    running.stop().await;
}

/// A scraper pod on node-000 whose containers request `containers` of CPU (`None`: no
/// request), with a native sidecar requesting `sidecar` and an init container that
/// requests more than all of them (not counted: it ends before they start).
fn scraper_requesting(name: &str, ip: &str, containers: &[Option<&str>], sidecar: &str) -> Value {
    let requests = |cpu: &Option<&str>| match cpu {
        Some(cpu) => json!({"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": {"cpu": "64"}}),
        None => json!({"limits": {"memory": "1Gi"}}),
    };
    let containers: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(i, cpu)| json!({"name": format!("c{i}"), "resources": requests(cpu)}))
        .collect();
    let mut pod = scraper(name, ip, true);
    pod["spec"]["containers"] = json!(containers);
    pod["spec"]["initContainers"] = json!([
        {"name": "setup", "resources": requests(&Some("16"))},
        {"name": "sidecar", "restartPolicy": "Always", "resources": requests(&Some(sidecar))},
    ]);
    pod
}

/// `weight_from: cpu_request`: a member weighs the CPU its containers and sidecars
/// request, in cores, read from JSON and protobuf alike; one that requests none counts
/// as 1; a resized request changes the weight.
#[actix_rt::test]
async fn members_weigh_the_cpu_their_pods_request() {
    for encoding in [
        kubesd::config::WireEncoding::Json,
        kubesd::config::WireEncoding::Auto,
    ] {
        let spec = ClusterSpec {
            nodes: 1,
            pods: 0,
            ..ClusterSpec::default()
        };
        let running = SimulatedCluster::seeded(3, spec)
            .await
            .expect("cluster starts");
        let (sim, url) = (running.sim(), running.url());
        for (name, containers, sidecar) in [
            ("cpu-a", vec![Some("250m"), Some("0.25")], "0"),
            ("cpu-b", vec![Some("2"), None], "500m"),
            ("cpu-c", vec![None], "0"),
        ] {
            let pod = scraper_requesting(name, "10.99.0.1", &containers, sidecar);
            sim.create(Resource::Pods, pod).expect("scraper created");
        }
        let membership = config(&url, "weight_from: cpu_request")
            .membership
            .expect("a membership section");
        let discovery = Discovery::start(kubesd::EngineOptions {
            encoding,
            ..SimulatedCluster::engine_options()
        });
        let (publish, fleet) = tokio::sync::watch::channel(Default::default());
        let watch = kubesd::service::MemberWatch::start(&discovery, membership, publish)
            .await
            .expect("members watched");
        let weights = || -> Vec<(String, f64)> {
            let fleet: kubesd::service::Members = fleet.borrow().clone();
            let members = fleet.current().members();
            members
                .iter()
                .map(|m| (m.name.to_string(), m.weight))
                .collect()
        };
        let expected = [("cpu-a", 0.5), ("cpu-b", 2.5), ("cpu-c", 1.0)];
        let expected: Vec<(String, f64)> =
            expected.iter().map(|(n, w)| (n.to_string(), *w)).collect();
        eventually("the members weigh their requests", || {
            let held = weights() == expected;
            async move { held }
        })
        .await;
        // cpu-c gets a request (an in-place resize): its weight follows.
        let resized = scraper_requesting("cpu-c", "10.99.0.1", &[Some("3")], "0");
        sim.update(Resource::Pods, resized)
            .expect("scraper updated");
        eventually("a resized request reweighs its member", || {
            let held = weights().last() == Some(&("cpu-c".to_string(), 3.0));
            async move { held }
        })
        .await;
        assert_eq!(weights()[..2], expected[..2], "{encoding:?}");
        watch.stop().await;
        running.stop().await;
    }
}
