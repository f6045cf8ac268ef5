//! End-to-end tests of the Kubernetes API simulator over real HTTP: list
//! (selectors, pagination, resourceVersion rules), watch (ordering, selector
//! transitions, 410, bookmarks, timeouts), writes, auth, TLS, every fault,
//! and the generator's endpoints staying consistent under churn.
//!
//! Nothing here sleeps to wait for the server: streams are read until the
//! expected event arrives (bounded by a safety timeout so a bug fails
//! instead of hanging), and time-based behaviour uses millisecond settings.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use awc::Client;
use bytes::Bytes;
use futures_util::StreamExt;
use kubesd::simulator::{
    Churn, ChurnPace, ChurnRates, ClusterSpec, Failure, Injection, Resource, RunningSimulator,
    Simulator, SimulatorConfig, StreamingLists, generate, serve,
};
use serde_json::{Value, json};

/// Upper bound for any single read; only reached when something is broken.
const SAFETY: Duration = Duration::from_secs(5);

fn config() -> SimulatorConfig {
    SimulatorConfig {
        bookmark_interval: Duration::from_millis(20),
        split_pause: Duration::from_millis(20),
        timeout_second: Duration::from_millis(30),
        ..SimulatorConfig::default()
    }
}

async fn start(config: SimulatorConfig) -> RunningSimulator {
    serve(config).await.expect("simulator starts")
}

fn client() -> Client {
    Client::builder().disable_timeout().finish()
}

fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
        "status": {"phase": "Running", "podIP": "10.1.0.1", "conditions": [{"type": "Ready", "status": "True"}]},
    })
}

/// GET returning (status, JSON body).
async fn get_json(url: &str) -> (u16, Value) {
    let mut resp = client().get(url).send().await.expect("request");
    let body = resp.body().limit(64 << 20).await.expect("body");
    (
        resp.status().as_u16(),
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// GET returning (status, body as text).
async fn get_text(url: &str) -> (u16, String) {
    let mut resp = client().get(url).send().await.expect("request");
    let body = resp.body().limit(16 << 20).await.expect("body");
    (
        resp.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// Reads a watch stream line by line, remembering the raw chunks.
struct Watch {
    body: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>>>,
    >,
    buf: Vec<u8>,
    chunks: Vec<Bytes>,
}

/// What reading the next line gave.
#[derive(Debug)]
enum Next {
    Line(String),
    /// End of the stream at a line boundary.
    End,
    /// The connection broke, or ended inside a line; carries the unterminated bytes.
    Broken(Vec<u8>),
}

impl Watch {
    async fn open(url: &str) -> Watch {
        let resp = client().get(url).send().await.expect("watch request");
        assert_eq!(resp.status().as_u16(), 200, "watch status for {url}");
        Watch {
            body: Box::pin(resp),
            buf: Vec::new(),
            chunks: Vec::new(),
        }
    }

    async fn next(&mut self) -> Next {
        loop {
            if let Some(pos) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Next::Line(String::from_utf8_lossy(&line).trim_end().to_string());
            }
            match tokio::time::timeout(SAFETY, self.body.next()).await {
                Err(_) => panic!("watch produced nothing within the safety timeout"),
                // A stream that ends inside a line was cut, whatever the framing said.
                Ok(None) if !self.buf.is_empty() => {
                    return Next::Broken(std::mem::take(&mut self.buf));
                }
                Ok(None) => return Next::End,
                Ok(Some(Err(_))) => return Next::Broken(std::mem::take(&mut self.buf)),
                Ok(Some(Ok(chunk))) => {
                    self.buf.extend_from_slice(&chunk);
                    self.chunks.push(chunk);
                }
            }
        }
    }

    /// The next event as JSON; panics on anything else.
    async fn event(&mut self) -> Value {
        match self.next().await {
            Next::Line(line) => {
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"))
            }
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// The next non-bookmark event.
    async fn change(&mut self) -> Value {
        loop {
            let ev = self.event().await;
            if ev["type"] != "BOOKMARK" {
                return ev;
            }
        }
    }
}

fn summary(ev: &Value) -> (String, String) {
    (
        ev["type"].as_str().unwrap_or("").to_string(),
        ev["object"]["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

#[actix_rt::test]
async fn list_selectors_of_every_kind() {
    let running = start(config()).await;
    let sim = running.sim();
    for (name, labels) in [
        ("a", json!({"app": "web", "tier": "front"})),
        ("b", json!({"app": "web"})),
        ("c", json!({"app": "db", "tier": "back"})),
        ("d", json!({"app": "cache"})),
    ] {
        sim.create(Resource::Pods, pod("ns1", name, labels))
            .expect("create");
    }
    let mut other = pod("ns2", "e", json!({"app": "web"}));
    other["spec"]["nodeName"] = json!("node-2");
    other["status"]["phase"] = json!("Pending");
    sim.create(Resource::Pods, other).expect("create");

    let base = running.url();
    let cases: [(&str, &[&str]); 12] = [
        ("labelSelector=app%3Dweb", &["a", "b", "e"]),
        ("labelSelector=app%3D%3Dweb", &["a", "b", "e"]),
        ("labelSelector=app!%3Dweb", &["c", "d"]),
        ("labelSelector=app%20in%20(db,cache)", &["c", "d"]),
        ("labelSelector=app%20notin%20(web)", &["c", "d"]),
        ("labelSelector=tier", &["a", "c"]),
        ("labelSelector=!tier", &["b", "d", "e"]),
        ("labelSelector=app%3Dweb,tier", &["a"]),
        ("fieldSelector=metadata.name%3Dc", &["c"]),
        ("fieldSelector=metadata.namespace!%3Dns1", &["e"]),
        ("fieldSelector=spec.nodeName%3D%3Dnode-2", &["e"]),
        (
            "fieldSelector=status.phase%3DRunning,metadata.name!%3Da",
            &["b", "c", "d"],
        ),
    ];
    for (query, want) in cases {
        let (status, list) = get_json(&format!("{base}/api/v1/pods?{query}")).await;
        assert_eq!(status, 200, "{query}");
        assert_eq!(names(&list), want, "{query}");
        assert_eq!(list["kind"], "PodList");
        assert!(
            list["items"][0].get("kind").is_none(),
            "list items carry no kind"
        );
    }
    // Per-namespace path.
    let (_, list) = get_json(&format!("{base}/api/v1/namespaces/ns2/pods")).await;
    assert_eq!(names(&list), ["e"]);
    // Unknown field, bad label syntax: 400 with a Status.
    let (status, body) =
        get_json(&format!("{base}/api/v1/pods?fieldSelector=spec.bogus%3D1")).await;
    assert_eq!(
        (status, body["kind"].clone(), body["code"].clone()),
        (400, json!("Status"), json!(400))
    );
    let (status, _) = get_json(&format!("{base}/api/v1/pods?labelSelector=app%20in%20(x")).await;
    assert_eq!(status, 400);
    running.stop().await;
}

#[actix_rt::test]
async fn pagination_and_expired_continue() {
    let running = start(config()).await;
    let sim = running.sim();
    for i in 0..7 {
        sim.create(Resource::Pods, pod("ns", &format!("p{i}"), json!({})))
            .expect("create");
    }
    let base = format!("{}/api/v1/pods", running.url());
    let (_, first) = get_json(&format!("{base}?limit=3")).await;
    assert_eq!(names(&first), ["p0", "p1", "p2"]);
    let list_rv = first["metadata"]["resourceVersion"].clone();
    // Writes between pages do not leak into the paginated snapshot.
    sim.create(Resource::Pods, pod("ns", "p3a", json!({})))
        .expect("create");
    sim.delete(Resource::Pods, "ns", "p5").expect("delete");
    let mut all = names(&first);
    let mut token = first["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    loop {
        let (status, page) = get_json(&format!("{base}?limit=3&continue={token}")).await;
        assert_eq!(status, 200);
        assert_eq!(page["metadata"]["resourceVersion"], list_rv);
        all.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(t) => token = t.to_string(),
            None => break,
        }
    }
    assert_eq!(all, ["p0", "p1", "p2", "p3", "p4", "p5", "p6"]);

    // rv=0 may ignore limit (as the watch cache does); Exact serves the past.
    let (_, any) = get_json(&format!("{base}?limit=2&resourceVersion=0")).await;
    assert_eq!(names(&any).len(), 7);
    let (_, exact) = get_json(&format!(
        "{base}?resourceVersion={}&resourceVersionMatch=Exact",
        list_rv.as_str().unwrap_or("")
    ))
    .await;
    assert_eq!(names(&exact).len(), 7);
    assert!(names(&exact).contains(&"p5".to_string()));
    let (status, _) = get_json(&format!(
        "{base}?resourceVersion=1&resourceVersionMatch=NotOlderThan"
    ))
    .await;
    assert_eq!(status, 200);

    // Once the snapshot leaves the history window, continuing is 410 Expired.
    let (_, first) = get_json(&format!("{base}?limit=2")).await;
    let token = first["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_string();
    sim.create(Resource::Pods, pod("ns", "late", json!({})))
        .expect("create");
    sim.compact();
    let (status, body) = get_json(&format!("{base}?limit=2&continue={token}")).await;
    assert_eq!((status, body["reason"].clone()), (410, json!("Expired")));
    let (status, _) = get_json(&format!(
        "{base}?resourceVersion={}&resourceVersionMatch=Exact",
        list_rv.as_str().unwrap_or("")
    ))
    .await;
    assert_eq!(status, 410);
    let (status, _) = get_json(&format!("{base}?limit=2&continue=nothex")).await;
    assert_eq!(status, 400);
    running.stop().await;
}

#[actix_rt::test]
async fn watch_from_resource_version_streams_in_order() {
    let running = start(config()).await;
    let sim = running.sim();
    let rv0 = sim
        .create(Resource::Pods, pod("ns", "before", json!({})))
        .expect("create");
    let rv1 = sim
        .create(Resource::Pods, pod("ns", "a", json!({})))
        .expect("create");
    let url = format!(
        "{}/api/v1/namespaces/ns/pods?watch=1&resourceVersion={rv0}",
        running.url()
    );
    let mut watch = Watch::open(&url).await;
    // History first: "a" was created after rv0.
    let ev = watch.change().await;
    assert_eq!(summary(&ev), ("ADDED".into(), "a".into()));
    assert_eq!(ev["object"]["kind"], "Pod");
    assert_eq!(ev["object"]["metadata"]["resourceVersion"], rv1.to_string());
    // Then live, in write order.
    sim.patch(
        Resource::Pods,
        "ns",
        "a",
        &json!({"metadata": {"labels": {"x": "1"}}}),
    )
    .expect("patch");
    sim.delete(Resource::Pods, "ns", "before").expect("delete");
    sim.create(Resource::Pods, pod("other", "elsewhere", json!({})))
        .expect("create");
    sim.create(Resource::Pods, pod("ns", "b", json!({})))
        .expect("create");
    let got: Vec<_> = [
        watch.change().await,
        watch.change().await,
        watch.change().await,
    ]
    .iter()
    .map(summary)
    .collect();
    assert_eq!(
        got,
        [
            ("MODIFIED".into(), "a".into()),
            ("DELETED".into(), "before".into()),
            ("ADDED".into(), "b".into())
        ]
    );
    // A watch without resourceVersion starts with the current state.
    let mut fresh = Watch::open(&format!("{}/api/v1/pods?watch=true", running.url())).await;
    let initial: BTreeSet<_> = [
        fresh.change().await,
        fresh.change().await,
        fresh.change().await,
    ]
    .iter()
    .map(|e| summary(e).1)
    .collect();
    assert_eq!(
        initial,
        ["a", "b", "elsewhere"]
            .into_iter()
            .map(String::from)
            .collect()
    );
    running.stop().await;
}

#[actix_rt::test]
async fn selector_transitions_on_watch() {
    let running = start(config()).await;
    let sim = running.sim();
    let rv = sim
        .create(Resource::Pods, pod("ns", "p", json!({"app": "db"})))
        .expect("create");
    let url = format!(
        "{}/api/v1/pods?watch=1&resourceVersion={rv}&labelSelector=app%3Dweb",
        running.url()
    );
    let mut watch = Watch::open(&url).await;
    sim.patch(
        Resource::Pods,
        "ns",
        "p",
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .expect("to web");
    sim.patch(
        Resource::Pods,
        "ns",
        "p",
        &json!({"metadata": {"labels": {"v": "2"}}}),
    )
    .expect("still web");
    let leave_rv = sim
        .patch(
            Resource::Pods,
            "ns",
            "p",
            &json!({"metadata": {"labels": {"app": "db"}}}),
        )
        .expect("to db");
    sim.patch(
        Resource::Pods,
        "ns",
        "p",
        &json!({"metadata": {"labels": {"v": "3"}}}),
    )
    .expect("invisible");
    sim.patch(
        Resource::Pods,
        "ns",
        "p",
        &json!({"metadata": {"labels": {"app": "web"}}}),
    )
    .expect("back");
    assert_eq!(watch.change().await["type"], "ADDED");
    assert_eq!(watch.change().await["type"], "MODIFIED");
    let deleted = watch.change().await;
    assert_eq!(deleted["type"], "DELETED");
    // The previous (still matching) state, at the transition's resourceVersion.
    assert_eq!(deleted["object"]["metadata"]["labels"]["app"], "web");
    assert_eq!(
        deleted["object"]["metadata"]["resourceVersion"],
        leave_rv.to_string()
    );
    let back = watch.change().await;
    assert_eq!(
        (
            back["type"].clone(),
            back["object"]["metadata"]["labels"]["v"].clone()
        ),
        (json!("ADDED"), json!("3"))
    );
    running.stop().await;
}

#[actix_rt::test]
async fn watch_from_compacted_version_gets_410_event() {
    let running = start(config()).await;
    let sim = running.sim();
    let rv = sim
        .create(Resource::Pods, pod("ns", "a", json!({})))
        .expect("create");
    sim.create(Resource::Pods, pod("ns", "b", json!({})))
        .expect("create");
    sim.compact();
    let mut watch = Watch::open(&format!(
        "{}/api/v1/pods?watch=1&resourceVersion={rv}",
        running.url()
    ))
    .await;
    let ev = watch.event().await;
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["kind"], "Status");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");
    assert!(
        ev["object"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("too old resource version"))
    );
    assert!(matches!(watch.next().await, Next::End));
    running.stop().await;
}

#[actix_rt::test]
async fn bookmarks_and_timeout() {
    let running = start(config()).await;
    let sim = running.sim();
    let rv = sim
        .create(Resource::Pods, pod("ns", "a", json!({})))
        .expect("create");
    let url = format!(
        "{}/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true",
        running.url()
    );
    let mut watch = Watch::open(&url).await;
    let ev = watch.event().await;
    assert_eq!(ev["type"], "BOOKMARK");
    assert_eq!(ev["object"]["kind"], "Pod");
    assert_eq!(ev["object"]["metadata"]["resourceVersion"], rv.to_string());
    assert!(ev["object"]["metadata"].get("name").is_none());
    // No bookmarks unless asked: the first line of a plain watch is the write.
    let mut plain = Watch::open(&format!(
        "{}/api/v1/pods?watch=1&resourceVersion={rv}",
        running.url()
    ))
    .await;
    sim.create(Resource::Pods, pod("ns", "b", json!({})))
        .expect("create");
    assert_eq!(summary(&plain.event().await), ("ADDED".into(), "b".into()));

    // timeoutSeconds=2 (60 ms with the test's time scale) ends cleanly.
    let url = format!("{}/api/v1/pods?watch=1&timeoutSeconds=2", running.url());
    let mut timed = Watch::open(&url).await;
    let mut events = 0;
    loop {
        match timed.next().await {
            Next::Line(_) => events += 1,
            Next::End => break,
            Next::Broken(_) => panic!("timeout must end the stream cleanly"),
        }
    }
    assert_eq!(
        events, 2,
        "the two synthetic ADDED events, then the clean end"
    );
    running.stop().await;
}

#[actix_rt::test]
async fn bearer_token_required() {
    let running = start(SimulatorConfig {
        token: Some("s3cret".into()),
        ..config()
    })
    .await;
    let url = format!("{}/api/v1/pods", running.url());
    let mut resp = client().get(&url).send().await.expect("request");
    assert_eq!(resp.status().as_u16(), 401);
    let body: Value = resp.json().await.expect("status body");
    assert_eq!(
        (body["kind"].clone(), body["code"].clone()),
        (json!("Status"), json!(401))
    );
    let resp = client()
        .get(&url)
        .bearer_auth("wrong")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 401);
    let resp = client()
        .get(&url)
        .bearer_auth("s3cret")
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200);
    running.stop().await;
}

#[actix_rt::test]
async fn writes_over_http_and_merge_patch() {
    let running = start(config()).await;
    let base = format!("{}/api/v1/namespaces/ns/pods", running.url());
    let c = client();
    let mut resp = c
        .post(&base)
        .send_json(&pod("ns", "p", json!({"a": "1"})))
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 201);
    let created: Value = resp.json().await.expect("json");
    assert_eq!(created["kind"], "Pod");
    assert!(created["metadata"]["uid"].is_string());
    assert!(created["metadata"]["creationTimestamp"].is_string());
    let resp = c
        .post(&base)
        .send_json(&pod("ns", "p", json!({})))
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 409);
    let resp = c
        .post(&base)
        .send_json(&pod("other", "q", json!({})))
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 400, "namespace mismatch");
    let resp = c.post(&base).send_body("{not json").await.expect("post");
    assert_eq!(resp.status().as_u16(), 400);

    let mut resp = c
        .patch(format!("{base}/p"))
        .insert_header(("Content-Type", "application/merge-patch+json"))
        .send_body(r#"{"metadata":{"labels":{"a":null,"b":"2"}},"status":{"phase":"Failed"}}"#)
        .await
        .expect("patch");
    assert_eq!(resp.status().as_u16(), 200);
    let patched: Value = resp.json().await.expect("json");
    assert_eq!(patched["metadata"]["labels"], json!({"b": "2"}));
    assert_eq!(patched["status"]["phase"], "Failed");
    assert_eq!(patched["metadata"]["uid"], created["metadata"]["uid"]);
    let resp = c
        .patch(format!("{base}/p"))
        .insert_header(("Content-Type", "application/json-patch+json"))
        .send_body("[]")
        .await
        .expect("patch");
    assert_eq!(resp.status().as_u16(), 415);

    let mut stale = created.clone();
    stale["metadata"]["labels"] = json!({"c": "3"});
    let resp = c
        .put(format!("{base}/p"))
        .send_json(&stale)
        .await
        .expect("put");
    assert_eq!(resp.status().as_u16(), 409, "stale resourceVersion");
    let resp = c
        .put(format!("{base}/zz"))
        .send_json(&pod("ns", "zz", json!({})))
        .await
        .expect("put");
    assert_eq!(resp.status().as_u16(), 404);
    let (status, got) = get_json(&format!("{base}/p")).await;
    assert_eq!(
        (status, got["metadata"]["labels"].clone()),
        (200, json!({"b": "2"}))
    );
    let resp = c.delete(format!("{base}/p")).send().await.expect("delete");
    assert_eq!(resp.status().as_u16(), 200);
    let (status, body) = get_json(&format!("{base}/p")).await;
    assert_eq!((status, body["reason"].clone()), (404, json!("NotFound")));

    // Discovery documents kubectl needs.
    let (_, v1) = get_json(&format!("{}/api/v1", running.url())).await;
    assert!(v1["resources"].as_array().is_some_and(|r| {
        r.iter()
            .any(|r| r["name"] == "pods" && r["namespaced"] == true)
    }));
    let (_, apis) = get_json(&format!("{}/apis", running.url())).await;
    // The Gateway API's and prometheus-operator's groups are listed while their CRDs
    // are "installed".
    assert_eq!(apis["groups"].as_array().map(Vec::len), Some(4));
    assert_eq!(apis["groups"][3]["name"], "monitoring.coreos.com");
    let monitoring = format!("{}/apis/monitoring.coreos.com/v1alpha1", running.url());
    let (_, alpha) = get_json(&monitoring).await;
    assert_eq!(alpha["resources"][0]["kind"], "ScrapeConfig");
    let (_, slices) = get_json(&format!("{}/apis/discovery.k8s.io/v1", running.url())).await;
    assert_eq!(slices["resources"][0]["kind"], "EndpointSlice");
    let gateway_v1 = format!("{}/apis/gateway.networking.k8s.io/v1", running.url());
    let (_, gateway) = get_json(&gateway_v1).await;
    let kinds: Vec<&str> = gateway["resources"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["kind"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(kinds, ["Gateway", "HTTPRoute", "GRPCRoute"]);
    running.sim().set_gateway_api(false);
    running.sim().set_monitoring_served(false);
    let (_, apis) = get_json(&format!("{}/apis", running.url())).await;
    assert_eq!(apis["groups"].as_array().map(Vec::len), Some(2));
    let (status, _) = get_json(&gateway_v1).await;
    assert_eq!(status, 404);
    let (status, _) = get_json(&monitoring).await;
    assert_eq!(status, 404);
    running.stop().await;
}

#[actix_rt::test]
async fn request_faults_500_429_403_and_410_watch() {
    let running = start(config()).await;
    let sim = running.sim();
    let url = format!("{}/api/v1/pods", running.url());
    sim.faults().fail_next(Failure::ServerError, 2);
    assert_eq!(get_json(&url).await.0, 500);
    assert_eq!(get_json(&url).await.0, 500);
    assert_eq!(get_json(&url).await.0, 200);
    sim.faults().fail_next(Failure::TooManyRequests, 1);
    let resp = client().get(&url).send().await.expect("request");
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(
        resp.headers()
            .get("Retry-After")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    sim.faults().fail_next(Failure::Forbidden, 1);
    assert_eq!(get_json(&url).await.0, 403);
    sim.faults().gone_next_watches(1);
    let (status, body) = get_json(&format!("{url}?watch=1")).await;
    assert_eq!((status, body["code"].clone()), (410, json!(410)));
    // The same faults over HTTP.
    let resp = client()
        .post(format!("{}/sim/faults", running.url()))
        .send_json(&json!({"fault": "fail", "failure": "server_error", "count": 1}))
        .await
        .expect("fault request");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(get_json(&url).await.0, 500);
    assert_eq!(get_json(&url).await.0, 200);
    running.stop().await;
}

/// Opens a pod watch that has delivered its first event (so it is registered).
async fn established_watch(running: &RunningSimulator) -> Watch {
    running
        .sim()
        .apply(Resource::Pods, pod("ns", "seed", json!({})))
        .expect("seed pod");
    let mut watch = Watch::open(&format!("{}/api/v1/pods?watch=1", running.url())).await;
    assert_eq!(summary(&watch.event().await).1, "seed");
    watch
}

/// A raw HTTP/1.1 watch, to see the chunked framing itself: awc reports a
/// connection closed at a chunk boundary as a clean end, so only the bytes
/// on the wire show whether the terminating zero-length chunk was sent.
struct RawWatch {
    stream: tokio::net::TcpStream,
    data: Vec<u8>,
}

impl RawWatch {
    async fn open(running: &RunningSimulator, path: &str) -> RawWatch {
        use tokio::io::AsyncWriteExt;
        let mut stream = tokio::net::TcpStream::connect(running.addr())
            .await
            .expect("connect");
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("send request");
        RawWatch {
            stream,
            data: Vec::new(),
        }
    }

    /// Reads until `needle` has been received.
    async fn read_until(&mut self, needle: &str) {
        use tokio::io::AsyncReadExt;
        while !String::from_utf8_lossy(&self.data).contains(needle) {
            let mut buf = [0u8; 4096];
            let n = tokio::time::timeout(SAFETY, self.stream.read(&mut buf))
                .await
                .expect("safety timeout")
                .expect("read");
            assert!(n > 0, "connection closed before {needle:?}");
            self.data.extend_from_slice(&buf[..n]);
        }
    }

    /// Reads until the server closes the connection (a reset counts as closed).
    async fn read_to_close(&mut self) {
        use tokio::io::AsyncReadExt;
        loop {
            let mut buf = [0u8; 4096];
            match tokio::time::timeout(SAFETY, self.stream.read(&mut buf))
                .await
                .expect("safety timeout")
            {
                Ok(0) | Err(_) => return,
                Ok(n) => self.data.extend_from_slice(&buf[..n]),
            }
        }
    }

    fn ended_cleanly(&self) -> bool {
        self.data.ends_with(b"\r\n0\r\n\r\n")
    }
}

#[actix_rt::test]
async fn fault_drop_watches_abruptly() {
    let running = start(config()).await;
    running
        .sim()
        .apply(Resource::Pods, pod("ns", "seed", json!({})))
        .expect("seed pod");

    // Contrast: a watch ending by timeout sends the terminating chunk.
    let mut timed = RawWatch::open(&running, "/api/v1/pods?watch=1&timeoutSeconds=1").await;
    timed.read_to_close().await;
    assert!(
        timed.ended_cleanly(),
        "clean end: {:?}",
        String::from_utf8_lossy(&timed.data)
    );

    // Dropped between events: the connection closes without it.
    let mut raw = RawWatch::open(&running, "/api/v1/pods?watch=1").await;
    raw.read_until("\"seed\"").await;
    raw.read_until("\n\r\n").await;
    running.sim().drop_watches(false);
    raw.read_to_close().await;
    assert!(
        !raw.ended_cleanly(),
        "abrupt end: {:?}",
        String::from_utf8_lossy(&raw.data)
    );

    // Dropped mid-event: half an event line arrives, then the connection breaks.
    let mut watch = established_watch(&running).await;
    running.sim().drop_watches(true);
    match watch.next().await {
        Next::Broken(partial) => {
            assert!(
                !partial.is_empty(),
                "half an event was written before the cut"
            );
            assert!(serde_json::from_slice::<Value>(&partial).is_err());
        }
        other => panic!("expected a broken stream, got {other:?}"),
    }
    running.stop().await;
}

#[actix_rt::test]
async fn fault_split_event_across_chunks() {
    let running = start(config()).await;
    let sim = running.sim();
    let mut watch = established_watch(&running).await;
    sim.faults().split_next_events(2);
    sim.create(Resource::Pods, pod("ns", "split-1", json!({})))
        .expect("create");
    sim.create(Resource::Pods, pod("ns", "split-2", json!({})))
        .expect("create");
    sim.create(Resource::Pods, pod("ns", "whole", json!({})))
        .expect("create");
    for name in ["split-1", "split-2", "whole"] {
        assert_eq!(
            summary(&watch.change().await),
            ("ADDED".into(), name.into())
        );
    }
    // The first halves arrived as chunks of their own, not ending a line.
    let partial = watch.chunks.iter().filter(|c| !c.ends_with(b"\n")).count();
    assert!(
        partial >= 2,
        "expected split chunks, got {:?}",
        watch.chunks.len()
    );
    running.stop().await;
}

#[actix_rt::test]
async fn fault_injected_lines() {
    let running = start(config()).await;
    let sim = running.sim();
    let mut watch = established_watch(&running).await;
    sim.inject(Injection::MalformedLine);
    sim.inject(Injection::UnknownType);
    sim.inject(Injection::WrongKind);
    sim.create(Resource::Pods, pod("ns", "after", json!({})))
        .expect("create");
    let Next::Line(malformed) = watch.next().await else {
        panic!("expected a line")
    };
    assert!(serde_json::from_str::<Value>(&malformed).is_err());
    assert_eq!(watch.event().await["type"], "WEIRD");
    let wrong = watch.event().await;
    assert_eq!(
        (wrong["type"].clone(), wrong["object"]["kind"].clone()),
        (json!("ADDED"), json!("ConfigMap"))
    );
    assert_eq!(
        summary(&watch.event().await),
        ("ADDED".into(), "after".into())
    );
    running.stop().await;
}

#[actix_rt::test]
async fn fault_stall_sends_nothing_until_resumed() {
    let running = start(config()).await;
    let sim = running.sim();
    sim.apply(Resource::Pods, pod("ns", "seed", json!({})))
        .expect("seed");
    let url = format!(
        "{}/api/v1/pods?watch=1&allowWatchBookmarks=true",
        running.url()
    );
    let mut watch = Watch::open(&url).await;
    assert_eq!(summary(&watch.event().await).1, "seed");
    sim.stall_watches(true);
    sim.create(Resource::Pods, pod("ns", "held", json!({})))
        .expect("create");
    // Bookmarks are due every 20 ms; a stalled stream stays silent for 10 of them.
    let silent = tokio::time::timeout(Duration::from_millis(200), watch.body.next()).await;
    assert!(silent.is_err(), "a stalled watch sent {silent:?}");
    sim.stall_watches(false);
    assert_eq!(
        summary(&watch.change().await),
        ("ADDED".into(), "held".into())
    );
    running.stop().await;
}

#[actix_rt::test]
async fn fault_restart_resets_versions_and_ends_watches() {
    let running = start(config()).await;
    let sim = running.sim();
    for i in 0..20 {
        sim.create(Resource::Pods, pod("ns", &format!("p{i}"), json!({})))
            .expect("create");
    }
    for i in 0..20 {
        sim.delete(Resource::Pods, "ns", &format!("p{i}"))
            .expect("delete");
    }
    sim.create(Resource::Pods, pod("ns", "survivor", json!({})))
        .expect("create");
    let before = sim.resource_version();
    let (_, page) = get_json(&format!("{}/api/v1/pods?limit=1", running.url())).await;
    assert!(page["metadata"]["continue"].is_null());
    let mut watch = established_watch(&running).await;
    assert_eq!(summary(&watch.event().await).1, "survivor");
    sim.restart();
    assert!(
        matches!(watch.next().await, Next::End),
        "restart ends watches cleanly"
    );
    let after = sim.resource_version();
    assert!(after < before, "resourceVersion reset: {after} < {before}");
    let survivor = sim
        .get(Resource::Pods, "ns", "survivor")
        .expect("object kept");
    assert!(
        survivor["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok())
            <= Some(after)
    );
    // The client's old resourceVersion is unusable now: it must relist.
    let mut old = Watch::open(&format!(
        "{}/api/v1/pods?watch=1&resourceVersion={before}",
        running.url()
    ))
    .await;
    assert_eq!(old.event().await["object"]["code"], 410);
    running.stop().await;
}

/// Independent check: every service with a selector has Endpoints and
/// EndpointSlices listing exactly its selected running pods with IPs, split
/// by readiness; terminating pods leave Endpoints but stay in slices as not
/// ready; services without a selector have none.
fn check_endpoints_consistent(sim: &Simulator) -> Result<usize, String> {
    let mut checked = 0;
    for svc in sim.list(Resource::Services, None) {
        let ns = svc["metadata"]["namespace"].as_str().unwrap_or("");
        let name = svc["metadata"]["name"].as_str().unwrap_or("");
        let Some(selector) = svc["spec"]["selector"]
            .as_object()
            .filter(|s| !s.is_empty())
        else {
            if sim.get(Resource::Endpoints, ns, name).is_some() {
                return Err(format!(
                    "{ns}/{name}: endpoints for a selector-less service"
                ));
            }
            continue;
        };
        let publish = svc["spec"]["publishNotReadyAddresses"]
            .as_bool()
            .unwrap_or(false);
        let mut want_ready = BTreeSet::new();
        let mut want_not_ready = BTreeSet::new();
        let mut want_slice_ready = BTreeSet::new();
        let mut want_slice_not_ready = BTreeSet::new();
        for p in sim.list(Resource::Pods, Some(ns)) {
            let selected = selector
                .iter()
                .all(|(k, v)| p["metadata"]["labels"].get(k) == Some(v));
            let ip = p["status"]["podIP"].as_str().unwrap_or("").to_string();
            let phase = p["status"]["phase"].as_str().unwrap_or("");
            if !selected || ip.is_empty() || phase == "Succeeded" || phase == "Failed" {
                continue;
            }
            let ready = p["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True");
            let terminating = p["metadata"].get("deletionTimestamp").is_some();
            if terminating || !(ready || publish) {
                want_slice_not_ready.insert(ip.clone());
            } else {
                want_slice_ready.insert(ip.clone());
            }
            if terminating && !publish {
                continue;
            }
            if ready || publish {
                want_ready.insert(ip);
            } else {
                want_not_ready.insert(ip);
            }
        }
        let ep = sim
            .get(Resource::Endpoints, ns, name)
            .ok_or(format!("{ns}/{name}: no endpoints"))?;
        let ips = |field: &str| -> BTreeSet<String> {
            ep["subsets"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|s| s[field].as_array().cloned().unwrap_or_default())
                .filter_map(|a| a["ip"].as_str().map(str::to_string))
                .collect()
        };
        if ips("addresses") != want_ready || ips("notReadyAddresses") != want_not_ready {
            return Err(format!(
                "{ns}/{name}: endpoints {:?}/{:?} != pods {want_ready:?}/{want_not_ready:?}",
                ips("addresses"),
                ips("notReadyAddresses")
            ));
        }
        let mut slice_ready = BTreeSet::new();
        let mut slice_not_ready = BTreeSet::new();
        for slice in sim.list(Resource::EndpointSlices, Some(ns)) {
            if slice["metadata"]["labels"]["kubernetes.io/service-name"] != name {
                continue;
            }
            for e in slice["endpoints"].as_array().into_iter().flatten() {
                let ip = e["addresses"][0].as_str().unwrap_or("").to_string();
                if e["targetRef"]["kind"] != "Pod" {
                    return Err(format!(
                        "{ns}/{name}: slice endpoint without a Pod targetRef"
                    ));
                }
                let set = if e["conditions"]["ready"] == true {
                    &mut slice_ready
                } else {
                    &mut slice_not_ready
                };
                if !set.insert(ip.clone()) {
                    return Err(format!("{ns}/{name}: duplicate slice endpoint {ip}"));
                }
            }
        }
        if slice_ready != want_slice_ready || slice_not_ready != want_slice_not_ready {
            return Err(format!(
                "{ns}/{name}: slices {slice_ready:?}/{slice_not_ready:?} != pods {want_slice_ready:?}/{want_slice_not_ready:?}"
            ));
        }
        checked += 1;
    }
    Ok(checked)
}

/// Every pod owned by a ReplicaSet or a Job names one the simulator holds, with the
/// pod's uid for it, and every such ReplicaSet is a Deployment's, every such Job a
/// CronJob's or its own: the chains `attach_metadata.deployment/job/cronjob` follow.
fn check_owners_resolve(sim: &Simulator) {
    let mut checked = 0;
    for pod in sim.list(Resource::Pods, None) {
        let owner = &pod["metadata"]["ownerReferences"][0];
        let resource = match owner["kind"].as_str() {
            Some("ReplicaSet") => Resource::ReplicaSets,
            Some("Job") => Resource::Jobs,
            _ => continue,
        };
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
        let name = owner["name"].as_str().unwrap_or("");
        let Some(object) = sim.get(resource, ns, name) else {
            panic!(
                "pod {ns}/{} names a {resource:?} {name} that does not exist",
                pod["metadata"]["name"]
            );
        };
        assert_eq!(object["metadata"]["uid"], owner["uid"], "{ns}/{name}");
        let parent = object["metadata"]["ownerReferences"][0]["kind"].as_str();
        match resource {
            Resource::ReplicaSets => assert_eq!(parent, Some("Deployment"), "{ns}/{name}"),
            _ => assert!(
                matches!(parent, None | Some("CronJob")),
                "{ns}/{name}: {parent:?}"
            ),
        }
        checked += 1;
    }
    assert!(checked > 0, "no pod is owned by a ReplicaSet or a Job");
}

#[actix_rt::test]
async fn generated_cluster_stays_consistent_under_churn() {
    let sim = config().simulator();
    let spec = ClusterSpec {
        seed: 11,
        nodes: 4,
        pods: 120,
        namespaces: 3,
        pods_per_workload: 4,
    };
    let cluster = generate(&sim, &spec).expect("generate");
    assert_eq!(sim.store().count(Resource::Pods), 120);
    assert!(cluster.deployments > 0 && cluster.cron_jobs > 0 && cluster.jobs > cluster.cron_jobs);
    check_owners_resolve(&sim);
    assert_eq!(sim.store().count(Resource::Nodes), 4);
    assert!(cluster.ingresses > 0);
    let services_checked = check_endpoints_consistent(&sim).expect("consistent after generation");
    assert_eq!(
        services_checked,
        cluster.services - cluster.namespaces.len()
    );
    let node = sim.get(Resource::Nodes, "", "node-000").expect("node");
    assert_eq!(
        node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"],
        10250
    );
    let mut churn = Churn::new(
        5,
        ChurnRates {
            add: 3,
            update: 10,
            delete: 3,
            rollout: 1,
            route: 0,
        },
    );
    let mut totals = (0, 0, 0, 0, 0);
    for _ in 0..10 {
        let stats = churn.step(&sim, 20).expect("churn");
        totals.0 += stats.added;
        totals.1 += stats.updated;
        totals.2 += stats.deleted;
        totals.3 += stats.rollouts;
        totals.4 += stats.terminating;
        check_endpoints_consistent(&sim).expect("consistent after churn");
        check_owners_resolve(&sim);
    }
    let (added, updated, deleted, rollouts, terminating) = totals;
    assert!(
        added > 0 && updated > 0 && deleted > 0 && rollouts > 0 && terminating > 0,
        "every action ran: {totals:?}"
    );
    // Pods still terminating are flagged in their slices.
    let flagged = sim
        .list(Resource::EndpointSlices, None)
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .any(|e| e["conditions"]["terminating"] == true && e["conditions"]["ready"] == false);
    let still_terminating = sim.list(Resource::Pods, None).iter().any(|p| {
        p["metadata"].get("deletionTimestamp").is_some() && p["status"]["podIP"].is_string()
    });
    assert_eq!(flagged, still_terminating);
    // A not-ready pod shows up as not ready in a slice.
    let not_ready = sim
        .list(Resource::EndpointSlices, None)
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .any(|e| e["conditions"]["ready"] == false);
    assert!(not_ready);
}

#[actix_rt::test]
async fn generated_cluster_served_over_tls() {
    let running = start(SimulatorConfig {
        tls: true,
        ..config()
    })
    .await;
    generate(running.sim(), &ClusterSpec::default()).expect("generate");
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(running.ca_der().expect("cert").clone())
        .expect("trust the simulator's cert");
    assert!(
        running
            .ca_pem()
            .is_some_and(|p| p.contains("BEGIN CERTIFICATE"))
    );
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let client = Client::builder()
        .connector(awc::Connector::new().rustls_0_23(Arc::new(tls)))
        .disable_timeout()
        .finish();
    assert!(running.url().starts_with("https://"));
    let mut resp = client
        .get(format!("{}/api/v1/pods?limit=10", running.url()))
        .send()
        .await
        .expect("https request");
    assert_eq!(resp.status().as_u16(), 200);
    let list: Value = resp.json().limit(16 << 20).await.expect("json");
    assert_eq!(names(&list).len(), 10);
    running.stop().await;
}

#[actix_rt::test]
async fn churn_driver_runs_on_an_interval() {
    let running = start(config()).await;
    let sim = running.sim();
    generate(
        sim,
        &ClusterSpec {
            pods: 30,
            ..ClusterSpec::default()
        },
    )
    .expect("generate");
    let rv = sim.resource_version();
    let url = format!("{}/api/v1/pods?watch=1&resourceVersion={rv}", running.url());
    let mut watch = Watch::open(&url).await;
    let pace = ChurnPace {
        per_second: 1000,
        tick: Duration::from_millis(2),
        report_every: Duration::from_secs(10),
    };
    let handle = Churn::new(9, ChurnRates::default()).start(sim.clone(), pace);
    // Events arrive without anyone calling step(): the interval drives churn.
    for _ in 0..10 {
        let ev = watch.change().await;
        assert!(["ADDED", "MODIFIED", "DELETED"].contains(&ev["type"].as_str().unwrap_or("")));
    }
    handle.stop();
    check_endpoints_consistent(sim).expect("consistent after driven churn");
    running.stop().await;
}

/// Captured log output, with a notice on every write, so that a test awaits a line
/// rather than polling for it.
#[derive(Clone, Default)]
struct Logs {
    text: Arc<std::sync::Mutex<Vec<u8>>>,
    written: Arc<tokio::sync::Notify>,
}

impl Logs {
    /// This binary's log, captured from the first call on: one subscriber for every
    /// thread, since a subscriber set for one thread missed events while other tests
    /// ran beside it.
    fn captured() -> &'static Logs {
        static LOGS: OnceLock<Logs> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = Logs::default();
            let writer = logs.clone();
            let _ = tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .try_init();
            logs
        })
    }

    fn text(&self) -> String {
        let text = self.text.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&text).into_owned()
    }

    /// Waits (at most [`SAFETY`]) until the log holds a line with each of `words`.
    async fn wait_for(&self, words: &[&str]) {
        let has = |text: String| text.lines().any(|l| words.iter().all(|w| l.contains(w)));
        let found = tokio::time::timeout(SAFETY, async {
            while !has(self.text()) {
                self.written.notified().await;
            }
        });
        if found.await.is_err() {
            panic!("no log line with {words:?}:\n{}", self.text());
        }
    }
}

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut text = self.text.lock().unwrap_or_else(|e| e.into_inner());
        text.extend_from_slice(buf);
        self.written.notify_one();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `--churn` is pod changes a second as a pod watch counts them: over 10 s (of paused
/// time) at 100 a second, the watch sees 1,000 events within 10 %, and the simulator's
/// `/metrics` counts as many.
#[actix_rt::test]
async fn churn_delivers_its_pace_on_a_watch() {
    let running = start(config()).await;
    let sim = running.sim();
    let spec = ClusterSpec {
        pods: 200,
        nodes: 4,
        namespaces: 2,
        ..ClusterSpec::default()
    };
    generate(sim, &spec).expect("generate");
    let rv = sim.resource_version();
    let url = format!("{}/api/v1/pods?watch=1&resourceVersion={rv}", running.url());
    let mut watch = Watch::open(&url).await;
    tokio::time::pause();
    let churn =
        Churn::new(13, ChurnRates::default()).start(sim.clone(), ChurnPace::per_second(100));
    tokio::time::sleep(Duration::from_secs(10)).await;
    churn.stop();
    tokio::time::resume();
    // The window's end, as the watch sees it.
    sim.create(Resource::Pods, pod("default", "end-of-window", json!({})))
        .expect("create");
    let mut events = 0u64;
    while summary(&watch.change().await) != ("ADDED".into(), "end-of-window".into()) {
        events += 1;
    }
    assert!(
        (900..=1100).contains(&events),
        "{events} pod events in 10 s at 100 a second"
    );
    // In paused time a step takes no time: the churn was never behind.
    assert_eq!(sim.metrics().churn_behind.get(), 0);
    let (status, metrics) = get_text(&format!("{}/metrics", running.url())).await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains(&format!(
            "\nkubesd_simulator_churn_pod_changes_total {events}\n"
        )),
        "{metrics}"
    );
    // Stopped, the churn asks for nothing.
    assert!(metrics.contains("\nkubesd_simulator_churn_asked_pod_changes_per_second 0\n"));
    running.stop().await;
}

/// Asked for more than any machine makes (50,000 pod changes a second, at most 500 in a
/// step of its 1 ms ticks), the churn says so: a warning with both paces, and the windows
/// behind counted on `/metrics`.
#[actix_rt::test]
async fn churn_reports_falling_behind_its_pace() {
    let logs = Logs::captured();
    let running = start(config()).await;
    let sim = running.sim();
    generate(sim, &ClusterSpec::default()).expect("generate");
    let pace = ChurnPace {
        per_second: 50_000,
        tick: Duration::from_millis(1),
        report_every: Duration::from_millis(20),
    };
    let churn = Churn::new(17, ChurnRates::default()).start(sim.clone(), pace);
    // Other tests log here too: this churn's warning names its pace.
    logs.wait_for(&["falls behind its pace", "asked=50000"])
        .await;
    churn.stop();
    let (_, metrics) = get_text(&format!("{}/metrics", running.url())).await;
    let behind = metrics
        .lines()
        .find_map(|l| l.strip_prefix("kubesd_simulator_churn_behind_windows_total "))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(behind.is_some_and(|n| n >= 1), "{metrics}");
    running.stop().await;
}

/// Adds and deletes keep the cluster near its size: over an hour (of paused time) at one
/// pod change a second, 3,600 changes to 100 pods, the count stays within 5 % of 100 at
/// every minute, and the endpoints stay consistent.
#[actix_rt::test]
async fn churn_keeps_the_pod_count_near_its_size() {
    tokio::time::pause();
    let sim = config().simulator();
    let spec = ClusterSpec {
        pods: 100,
        nodes: 4,
        namespaces: 2,
        ..ClusterSpec::default()
    };
    generate(&sim, &spec).expect("generate");
    let churn = Churn::new(19, ChurnRates::default()).start(sim.clone(), ChurnPace::per_second(1));
    let mut counts = Vec::new();
    for _ in 0..60 {
        tokio::time::sleep(Duration::from_secs(60)).await;
        counts.push(sim.store().count(Resource::Pods));
    }
    churn.stop();
    assert!(
        counts.iter().all(|c| (95..=105).contains(c)),
        "pods each minute: {counts:?}"
    );
    assert!(sim.metrics().churn_pod_changes.get() >= 3_590);
    // Rollouts make a window's changes lumpy at one a second; none is behind for it.
    assert_eq!(sim.metrics().churn_behind.get(), 0);
    check_endpoints_consistent(&sim).expect("consistent after an hour of churn");
    check_owners_resolve(&sim);
}

/// A streaming list: the current state as ADDED events, the bookmark annotated
/// `k8s.io/initial-events-end` at the state's resourceVersion, then the changes; or,
/// switched off, each way a server without streaming lists answers.
#[actix_rt::test]
async fn streaming_lists_are_served_or_refused_cut_or_ignored() {
    let running = start(config()).await;
    let sim = running.sim();
    sim.create(Resource::Pods, pod("ns", "a", json!({})))
        .expect("create");
    let rv = sim
        .create(Resource::Pods, pod("ns", "b", json!({})))
        .expect("create");
    let url = format!(
        "{}/api/v1/pods?watch=1&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=",
        running.url()
    );
    let mut watch = Watch::open(&url).await;
    let mut initial = vec![summary(&watch.event().await), summary(&watch.event().await)];
    initial.sort();
    assert_eq!(
        initial,
        [("ADDED".into(), "a".into()), ("ADDED".into(), "b".into())]
    );
    let end = watch.event().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["resourceVersion"], rv.to_string());
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    sim.create(Resource::Pods, pod("ns", "c", json!({})))
        .expect("create");
    assert_eq!(summary(&watch.event().await), ("ADDED".into(), "c".into()));

    sim.faults().set_streaming_lists(StreamingLists::Refused);
    let (status, body) = get_json(&url).await;
    assert_eq!(status, 422);
    assert_eq!(body["reason"], "Invalid");

    // Ended at once: one ERROR event, as a real API server on an old etcd sends.
    sim.faults()
        .set_streaming_lists(StreamingLists::EndedAtOnce);
    let mut ended = Watch::open(&url).await;
    let error = ended.event().await;
    assert_eq!(error["type"], "ERROR");
    assert_eq!(error["object"]["code"], 500);
    assert!(matches!(ended.next().await, Next::End));

    // Ignored: a plain watch, whose bookmarks carry no annotation.
    sim.faults().set_streaming_lists(StreamingLists::Ignored);
    let mut plain = Watch::open(&url).await;
    let mut seen = Vec::new();
    loop {
        let ev = plain.event().await;
        if ev["type"] == "BOOKMARK" {
            assert!(
                ev["object"]["metadata"].get("annotations").is_none(),
                "{ev}"
            );
            break;
        }
        seen.push(summary(&ev).1);
    }
    seen.sort();
    assert_eq!(seen, ["a", "b", "c"]);
    assert_eq!(sim.faults().streaming_list_requests(), 4);
    running.stop().await;
}
