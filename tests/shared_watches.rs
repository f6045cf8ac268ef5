//! One list and one watch per resource, whatever the jobs attach: two jobs of one role,
//! one with `attach_metadata` and one without, against a fake API server on 127.0.0.1
//! that counts requests. Each resource they read is listed once and watched once in
//! all; each job's targets are exactly those it gets running alone; when the server
//! restarts (every watch ends with a 410), each resource is listed again once, not
//! once per job.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kubesd::config::ListMode;
use kubesd::model::Role;
use kubesd::targets::AttachMetadata;
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Subscription};
use serde_json::{Value, json};
use support::actual;
use support::fake_api::{FakeApi, Reply, Request};
use tokio::sync::watch;

/// Short retry timings; LIST and WATCH as every server serves them.
fn options() -> EngineOptions {
    EngineOptions {
        list_mode: ListMode::List,
        flush_interval: Duration::from_millis(20),
        backoff_initial: Duration::from_millis(10),
        backoff_max: Duration::from_millis(100),
        relist_interval: None,
        ..EngineOptions::default()
    }
}

const PODS: &str = "/api/v1/pods";
const NODES: &str = "/api/v1/nodes";
const NAMESPACES: &str = "/api/v1/namespaces";
const SERVICES: &str = "/api/v1/services";
const ENDPOINTS: &str = "/api/v1/endpoints";
const ENDPOINTSLICES: &str = "/apis/discovery.k8s.io/v1/endpointslices";

/// The resources of the fake cluster: path, list kind, items.
fn cluster() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let pod = |name: &str, ip: &str| {
        json!({"metadata": {"name": name, "namespace": "shop", "uid": name,
                            "labels": {"app": "web"}},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
               "status": {"phase": "Running", "podIP": ip}})
    };
    let address = |name: &str, ip: &str| {
        json!({"ip": ip, "nodeName": "n1",
               "targetRef": {"kind": "Pod", "name": name, "namespace": "shop"}})
    };
    let slice_endpoint = |name: &str, ip: &str| {
        json!({"addresses": [ip], "nodeName": "n1", "conditions": {"ready": true},
               "targetRef": {"kind": "Pod", "name": name, "namespace": "shop"}})
    };
    vec![
        (
            PODS,
            "PodList",
            vec![pod("web-1", "10.0.0.1"), pod("web-2", "10.0.0.2")],
        ),
        (
            NODES,
            "NodeList",
            vec![
                json!({"metadata": {"name": "n1", "labels": {"zone": "east"}},
                        "status": {"addresses": [{"type": "InternalIP", "address": "10.1.0.1"}]}}),
            ],
        ),
        (
            NAMESPACES,
            "NamespaceList",
            vec![json!({"metadata": {"name": "shop", "labels": {"team": "a"}}})],
        ),
        (
            SERVICES,
            "ServiceList",
            vec![json!({"metadata": {"name": "web", "namespace": "shop"},
                        "spec": {"type": "ClusterIP", "clusterIP": "10.2.0.1",
                                 "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}})],
        ),
        (
            ENDPOINTS,
            "EndpointsList",
            vec![json!({"metadata": {"name": "web", "namespace": "shop"},
                        "subsets": [{"addresses": [address("web-1", "10.0.0.1"), address("web-2", "10.0.0.2")],
                                     "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]})],
        ),
        (
            ENDPOINTSLICES,
            "EndpointSliceList",
            vec![json!({"metadata": {"name": "web-a", "namespace": "shop",
                                     "labels": {"kubernetes.io/service-name": "web"}},
                        "addressType": "IPv4",
                        "endpoints": [slice_endpoint("web-1", "10.0.0.1"), slice_endpoint("web-2", "10.0.0.2")],
                        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]})],
        ),
    ]
}

/// The request's path, without its query.
fn path(r: &Request) -> &str {
    r.target.split('?').next().unwrap_or_default()
}

/// The fake API server: LISTs of [`cluster`], and watches that stay open until the
/// server "restarts" (`restarts` moves on), when each ends with a 410, as an API
/// server's watch cache answers after a restart.
async fn server(restarts: watch::Receiver<u32>) -> FakeApi {
    let resources = cluster();
    FakeApi::start(move |r: &Request| {
        let Some((_, kind, items)) = resources.iter().find(|(p, _, _)| *p == path(r)) else {
            return Reply::k8s_status(404, "NotFound", "no such resource");
        };
        if !r.is_watch() {
            let list = json!({"kind": kind, "apiVersion": "v1",
                              "metadata": {"resourceVersion": "10"}, "items": items});
            return Reply::json(list.to_string());
        }
        let mut restarts = restarts.clone();
        Reply::Stream(Box::new(move |mut w| {
            Box::pin(async move {
                restarts.mark_unchanged();
                let _ = restarts.changed().await;
                let gone = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                    "status": "Failure", "reason": "Expired", "code": 410,
                    "message": "too old resource version"}});
                let _ = w.chunk(format!("{gone}\n").as_bytes()).await;
                let _ = w.end().await;
            })
        }))
    })
    .await
}

/// (LISTs, WATCHes) of each path requested.
fn requests_by_path(api: &FakeApi) -> BTreeMap<String, (usize, usize)> {
    let mut counts = BTreeMap::new();
    for r in api.requests() {
        let count: &mut (usize, usize) = counts.entry(path(&r).to_string()).or_default();
        if r.is_watch() {
            count.1 += 1;
        } else {
            count.0 += 1;
        }
    }
    counts
}

/// Waits (bounded) until every path requested has been requested `want` times each way.
async fn wait_for_requests(
    api: &FakeApi,
    want: (usize, usize),
) -> BTreeMap<String, (usize, usize)> {
    let wait = async {
        loop {
            let counts = requests_by_path(api);
            if counts.values().all(|c| *c == want) {
                return;
            }
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
    };
    let _ = actix_rt::time::timeout(Duration::from_secs(10), wait).await;
    requests_by_path(api)
}

/// Subscribes `jobs` (at `url`) in one engine and waits for each to sync.
async fn run(url: &str, jobs: &[SdConfig]) -> (Discovery, Vec<Subscription<Labels>>) {
    let discovery = Discovery::start(options());
    let mut subs = Vec::new();
    for job in jobs {
        let mut job = job.clone();
        job.api_server = Some(url.to_string());
        let sub = discovery
            .subscribe(&job, |l: &Labels| Some(l.clone()))
            .await
            .expect("subscribes");
        sub.synced_within(Duration::from_secs(10))
            .await
            .unwrap_or_else(|e| panic!("{} syncs: {e}", job.role));
        subs.push(sub);
    }
    (discovery, subs)
}

/// The two jobs of `role`: one attaching `attach`, one attaching nothing.
fn pair(role: Role, attach: AttachMetadata) -> [SdConfig; 2] {
    let plain = SdConfig::new(role, "http://unused.invalid");
    let mut attaching = plain.clone();
    attaching.attach_metadata = attach;
    [plain, attaching]
}

/// Runs the pair of `role` together and each alone: asserts one LIST and one WATCH of
/// each resource (`paths`) together, the same targets as alone, and one relist of each
/// after a restart.
async fn shares_the_watches(role: Role, attach: AttachMetadata, paths: &[&str]) {
    support::init_logs();
    let (restart, restarts) = watch::channel(0);
    let jobs = pair(role, attach);
    let shared = server(restarts.clone()).await;
    let (discovery, together) = run(&shared.url, &jobs).await;
    assert_eq!(discovery.groups(), 1, "{role}: one group for both jobs");
    let counts = wait_for_requests(&shared, (1, 1)).await;
    let want: BTreeMap<String, (usize, usize)> =
        paths.iter().map(|p| (p.to_string(), (1, 1))).collect();
    assert_eq!(counts, want, "{role}: one LIST and one WATCH per resource");

    assert_ne!(
        actual(&together[0]).await,
        actual(&together[1]).await,
        "{role}: the attaching job's targets carry what it attaches"
    );
    for (job, sub) in jobs.iter().zip(&together) {
        let alone_api = server(restarts.clone()).await;
        let (_alone_engine, alone) = run(&alone_api.url, std::slice::from_ref(job)).await;
        let want = actual(&alone[0]).await;
        assert!(!want.is_empty(), "{role}: the job has targets");
        assert_eq!(
            actual(sub).await,
            want,
            "{role} with {:?}: the same targets as alone",
            job.attach_metadata
        );
    }

    restart.send_modify(|n| *n += 1);
    let counts = wait_for_requests(&shared, (2, 2)).await;
    let want: BTreeMap<String, (usize, usize)> =
        paths.iter().map(|p| (p.to_string(), (2, 2))).collect();
    assert_eq!(
        counts, want,
        "{role}: after the restart, one more LIST and WATCH per resource"
    );
}

fn attaching(node: bool, namespace: bool) -> AttachMetadata {
    AttachMetadata {
        node,
        namespace,
        ..AttachMetadata::default()
    }
}

#[actix_rt::test]
async fn pod_jobs_attaching_node_or_not_share_one_list_and_watch() {
    shares_the_watches(Role::Pod, attaching(true, false), &[PODS, NODES]).await;
}

#[actix_rt::test]
async fn pod_jobs_attaching_node_and_namespace_or_not_share_one_list_and_watch() {
    shares_the_watches(Role::Pod, attaching(true, true), &[PODS, NODES, NAMESPACES]).await;
}

#[actix_rt::test]
async fn endpoints_jobs_attaching_node_or_not_share_one_list_and_watch() {
    let paths = [ENDPOINTS, PODS, SERVICES, NODES, NAMESPACES];
    shares_the_watches(Role::Endpoints, attaching(true, true), &paths).await;
}

#[actix_rt::test]
async fn endpointslice_jobs_attaching_node_or_not_share_one_list_and_watch() {
    let paths = [ENDPOINTSLICES, PODS, SERVICES, NODES, NAMESPACES];
    shares_the_watches(Role::EndpointSlice, attaching(true, true), &paths).await;
}

#[actix_rt::test]
async fn service_jobs_attaching_or_not_share_one_list_and_watch() {
    // attach_metadata.node means nothing to a service: no nodes are watched.
    shares_the_watches(
        Role::Service,
        attaching(true, true),
        &[SERVICES, NAMESPACES],
    )
    .await;
}
