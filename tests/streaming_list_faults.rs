//! Streaming lists that fail in each way a server or a proxy can make them fail,
//! against small fakes on 127.0.0.1 that serve LIST and WATCH well and that the test
//! controls byte by byte, in JSON and in protobuf. Whatever a streaming list does,
//! kubesd syncs through LIST within one backoff step, applies no partial or empty
//! state (the last good targets are served throughout), keeps its requests bounded,
//! and follows the server once it heals.
//!
//! The fakes say they are Kubernetes 1.32, where `--kubernetes.list-mode auto` (the
//! default, used here) streams lists.

mod support;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kubesd::metrics::{Metrics, RequestError};
use kubesd::model::Role;
use kubesd::simulator::{Resource, protobuf};
use kubesd::{Discovery, EngineOptions, SdConfig};
use serde_json::{Value, json};
use support::fake_api::{BodyWriter, FakeApi, Reply, Request};

/// The backoff cap of these tests: "a minute" of a real cluster is two of them.
const CAP: Duration = Duration::from_millis(400);

/// How long each fault lasts while the targets are watched.
const FAULT: Duration = Duration::from_millis(2400);

/// The most requests a URL may make in two backoff caps (a real minute).
const MAX_REQUESTS_PER_TWO_CAPS: usize = 20;

/// The object cap of the tests whose fault streams objects without end.
const MAX_OBJECTS: usize = 2000;

fn options() -> EngineOptions {
    EngineOptions {
        max_list_objects: MAX_OBJECTS,
        ..support::field_fault_options()
    }
}

/// The encoding the fake answers in.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Wire {
    Json,
    Protobuf,
}

/// How the fake answers a streaming list while it misbehaves.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// `ERROR` 410 Expired and the end of the stream, as a proxy that does not know
    /// the streaming-list parameters may answer.
    Expired,
    /// Some initial events, then `ERROR` 500.
    ErrorAfterEvents,
    /// HTTP 500.
    ServerError,
    /// HTTP 429 with a short `Retry-After`.
    TooManyRequests,
    /// Some initial events, then the connection is cut mid-stream.
    Cut,
    /// Well-framed events that cannot be decoded, without end.
    Undecodable,
    /// One good initial event, three that cannot be decoded, then the bookmark.
    MostlyRejected,
    /// Distinct new objects without end, never the bookmark.
    Endless,
    /// A plain watch: an `ADDED` event, then a `MODIFIED` one before any bookmark, as
    /// a server (or a proxy in between) that ignores `sendInitialEvents` answers.
    PlainWatch,
}

fn pod(name: &str, ip: &str, rv: u64) -> Value {
    json!({"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": name, "namespace": "shop", "resourceVersion": rv.to_string()},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
           "status": {"phase": "Running", "podIP": ip}})
}

/// The cluster the fake serves, and how it misbehaves now.
struct World {
    wire: Wire,
    pods: Vec<Value>,
    rv: u64,
    history: Vec<(u64, &'static str, Value)>,
    /// How streaming lists fail; `None`: they are served.
    fault: Option<Fault>,
    /// Plain watches answer `ERROR` 410, so that the URL relists.
    gone_watches: bool,
    /// Objects written by the last endless stream, counted by the fake.
    endless_written: Rc<Cell<usize>>,
}

impl World {
    fn new(wire: Wire, fault: Fault) -> World {
        World {
            wire,
            pods: vec![
                pod("old-1", "10.0.0.1", 10),
                pod("old-2", "10.0.0.2", 10),
                pod("old-3", "10.0.0.3", 10),
            ],
            rv: 10,
            history: Vec::new(),
            fault: Some(fault),
            gone_watches: false,
            endless_written: Rc::new(Cell::new(0)),
        }
    }

    /// The server heals, and the old pods are replaced by three new ones.
    fn heal(&mut self) {
        self.fault = None;
        self.gone_watches = false;
        for p in std::mem::take(&mut self.pods) {
            self.rv += 1;
            self.history.push((self.rv, "DELETED", p));
        }
        for (i, ip) in ["10.0.1.1", "10.0.1.2", "10.0.1.3"].iter().enumerate() {
            self.rv += 1;
            let p = pod(&format!("new-{}", i + 1), ip, self.rv);
            self.history.push((self.rv, "ADDED", p.clone()));
            self.pods.push(p);
        }
    }

    fn answer(&self, r: &Request) -> Reply {
        if r.target.starts_with("/version") {
            return Reply::json(r#"{"major":"1","minor":"32","gitVersion":"v1.32.4"}"#);
        }
        if !r.is_watch() {
            return self.list();
        }
        if r.target.contains("sendInitialEvents=true") {
            return match self.fault {
                Some(fault) => self.faulty(fault),
                None => self.streaming_list(),
            };
        }
        if self.gone_watches {
            return self.stream(vec![self.error(410, "Expired")], Duration::ZERO);
        }
        let from = r
            .resource_version()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        let since = self.history.iter().filter(|(v, _, _)| *v > from);
        let events = since.map(|(_, kind, p)| self.event(kind, p)).collect();
        self.stream(events, Duration::from_millis(400))
    }

    fn list(&self) -> Reply {
        match self.wire {
            Wire::Json => Reply::json(
                json!({"kind": "PodList", "apiVersion": "v1",
                       "metadata": {"resourceVersion": self.rv.to_string()}, "items": self.pods})
                .to_string(),
            ),
            Wire::Protobuf => {
                let items: Vec<Vec<u8>> = self
                    .pods
                    .iter()
                    .map(|p| protobuf::encode_fields(Resource::Pods, p).expect("a pod"))
                    .collect();
                let rv = self.rv.to_string();
                let body = protobuf::encode_list(Resource::Pods, "v1", &items, &rv, None);
                let mut bytes = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    protobuf::CONTENT_TYPE,
                    body.len()
                )
                .into_bytes();
                bytes.extend_from_slice(&body);
                Reply::Raw(bytes)
            }
        }
    }

    /// A served streaming list: the pods as `ADDED`, the initial-events-end bookmark,
    /// then a quiet watch.
    fn streaming_list(&self) -> Reply {
        let mut events: Vec<Vec<u8>> = self.pods.iter().map(|p| self.event("ADDED", p)).collect();
        events.push(self.initial_events_end());
        self.stream(events, Duration::from_millis(400))
    }

    fn faulty(&self, fault: Fault) -> Reply {
        let added = |p: &Value| self.event("ADDED", p);
        match fault {
            Fault::Expired => self.stream(vec![self.error(410, "Expired")], Duration::ZERO),
            Fault::ErrorAfterEvents => {
                let mut events: Vec<_> = self.pods.iter().take(2).map(added).collect();
                events.push(self.error(500, "InternalError"));
                self.stream(events, Duration::ZERO)
            }
            Fault::ServerError => Reply::k8s_status(500, "InternalError", "etcd is down"),
            Fault::TooManyRequests => Reply::Whole {
                status: 429,
                headers: vec![("Retry-After".into(), "1".into())],
                body: b"{}".to_vec(),
            },
            Fault::Cut => {
                let events: Vec<_> = self.pods.iter().take(2).map(added).collect();
                self.typed(move |mut w| async move {
                    for e in events {
                        let _ = w.chunk(&e).await;
                    }
                    // Dropped without the last chunk: the connection is cut.
                    let _ = w.raw(b"5\r\nab").await;
                })
            }
            Fault::Undecodable => {
                let bad = self.undecodable();
                self.typed(move |mut w| async move {
                    for _ in 0..100_000 {
                        if w.chunk(&bad).await.is_err() {
                            return;
                        }
                    }
                })
            }
            Fault::MostlyRejected => {
                let mut events = vec![added(&self.pods[0])];
                events.extend(std::iter::repeat_n(self.undecodable(), 3));
                events.push(self.initial_events_end());
                self.stream(events, Duration::from_millis(400))
            }
            Fault::Endless => self.endless(),
            Fault::PlainWatch => {
                let events = vec![added(&self.pods[0]), self.event("MODIFIED", &self.pods[0])];
                self.stream(events, Duration::from_millis(400))
            }
        }
    }

    /// New pods without end (bounded by the test), counted as they are written.
    fn endless(&self) -> Reply {
        let wire = self.wire;
        let written = Rc::clone(&self.endless_written);
        written.set(0);
        self.typed(move |mut w| async move {
            for i in 0..200_000u64 {
                let p = pod(&format!("flood-{i}"), "10.9.9.9", 100 + i);
                let e = event_bytes(wire, "ADDED", &p);
                if w.chunk(&e).await.is_err() {
                    return;
                }
                written.set(written.get() + 1);
            }
        })
    }

    fn event(&self, kind: &str, p: &Value) -> Vec<u8> {
        event_bytes(self.wire, kind, p)
    }

    fn initial_events_end(&self) -> Vec<u8> {
        let rv = self.rv.to_string();
        match self.wire {
            Wire::Json => line(
                json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"resourceVersion": rv, "annotations": {"k8s.io/initial-events-end": "true"}}}}),
            ),
            Wire::Protobuf => protobuf::encode_watch_frame(
                "BOOKMARK",
                &protobuf::encode_bookmark(Resource::Pods, &rv, true),
            ),
        }
    }

    fn error(&self, code: u16, reason: &str) -> Vec<u8> {
        let message = "too old resource version";
        match self.wire {
            Wire::Json => line(
                json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                "status": "Failure", "message": message, "reason": reason, "code": code}}),
            ),
            Wire::Protobuf => protobuf::encode_watch_frame(
                "ERROR",
                &protobuf::encode_status(code, reason, message),
            ),
        }
    }

    /// A well-framed `ADDED` event whose object cannot be decoded: a pod without a
    /// name in JSON, a pod whose metadata is cut short in protobuf.
    fn undecodable(&self) -> Vec<u8> {
        match self.wire {
            Wire::Json => line(json!({"type": "ADDED", "object": {"kind": "Pod"}})),
            Wire::Protobuf => protobuf::encode_watch_frame(
                "ADDED",
                &protobuf::envelope("v1", "Pod", &[0x0a, 0x7f, 0x01]),
            ),
        }
    }

    /// A watch response of `events`, held open for `hold`, then ended.
    fn stream(&self, events: Vec<Vec<u8>>, hold: Duration) -> Reply {
        self.typed(move |mut w| async move {
            for e in events {
                if w.chunk(&e).await.is_err() {
                    return;
                }
            }
            actix_rt::time::sleep(hold).await;
            let _ = w.end().await;
        })
    }

    fn typed<F, Fut>(&self, body: F) -> Reply
    where
        F: FnOnce(BodyWriter) -> Fut + 'static,
        Fut: std::future::Future<Output = ()> + 'static,
    {
        let content_type = match self.wire {
            Wire::Json => "application/json",
            Wire::Protobuf => protobuf::WATCH_CONTENT_TYPE,
        };
        Reply::TypedStream(content_type, Box::new(move |w| Box::pin(body(w))))
    }
}

fn line(value: Value) -> Vec<u8> {
    let mut bytes = value.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

fn event_bytes(wire: Wire, kind: &str, p: &Value) -> Vec<u8> {
    match wire {
        Wire::Json => line(json!({"type": kind, "object": p})),
        Wire::Protobuf => protobuf::encode_watch_frame(
            kind,
            &protobuf::encode_object(Resource::Pods, p).expect("a pod"),
        ),
    }
}

const OLD: [&str; 3] = ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"];
const NEW: [&str; 3] = ["10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"];

/// The most requests in any window of two backoff caps among `requests`.
fn busiest_window(requests: &[Request]) -> usize {
    requests
        .iter()
        .map(|r| {
            requests
                .iter()
                .filter(|o| o.at >= r.at && o.at < r.at + CAP * 2)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// One fault in one encoding, from the first sync to the server healing; the fake's
/// URL and world, and the engine's metrics, for what a test checks more.
async fn scenario(fault: Fault, wire: Wire) -> (String, Rc<RefCell<World>>, Arc<Metrics>) {
    let what = format!("{fault:?} in {wire:?}");
    let world = Rc::new(RefCell::new(World::new(wire, fault)));
    let answering = Rc::clone(&world);
    let api = FakeApi::start(move |r| answering.borrow().answer(r)).await;
    let discovery = Discovery::start(options());
    let config = SdConfig::new(Role::Pod, &api.url);
    let sub = discovery
        .subscribe(&config, support::keep_all)
        .await
        .expect("subscribes");

    // The first sync goes through LIST, within one backoff step of the failure.
    let synced = actix_rt::time::timeout(CAP * 4, sub.synced()).await;
    assert!(synced.is_ok(), "{what}: not synced through LIST");
    assert_eq!(support::addresses(&sub).await, OLD, "{what}");
    let lists = api
        .requests()
        .iter()
        .filter(|r| !r.is_watch() && !r.target.starts_with("/version"))
        .count();
    assert!(lists >= 1, "{what}: synced without a LIST");

    // Watches now fail with 410: the URL relists while streaming lists still fail.
    // The last good targets are served at every look, and requests stay bounded.
    actix_rt::time::sleep(Duration::from_millis(300)).await;
    world.borrow_mut().gone_watches = true;
    let started = Instant::now();
    while started.elapsed() < FAULT {
        assert_eq!(
            support::addresses(&sub).await,
            OLD,
            "{what}: last good targets kept"
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let during = api.requests_since(started);
    assert!(
        busiest_window(&during) <= MAX_REQUESTS_PER_TWO_CAPS,
        "{what}: {} requests in two backoff caps",
        busiest_window(&during)
    );
    let streamed = during
        .iter()
        .filter(|r| r.target.contains("sendInitialEvents=true"))
        .count();
    assert!(
        streamed >= 1,
        "{what}: no streaming list was tried again after a healthy watch"
    );

    // The server heals: the new pods are discovered.
    world.borrow_mut().heal();
    let healed = Instant::now();
    while support::addresses(&sub).await != NEW {
        assert!(
            healed.elapsed() < CAP * 10,
            "{what}: the new targets did not come"
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    sub.stop().await;
    (api.url.clone(), world, Arc::clone(discovery.metrics()))
}

#[actix_rt::test]
async fn an_error_410_to_every_streaming_list_is_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::Expired, wire).await;
    }
}

#[actix_rt::test]
async fn an_error_event_after_initial_events_is_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::ErrorAfterEvents, wire).await;
    }
}

#[actix_rt::test]
async fn server_errors_and_throttling_of_streaming_lists_are_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::ServerError, wire).await;
        scenario(Fault::TooManyRequests, wire).await;
    }
}

#[actix_rt::test]
async fn a_streaming_list_cut_mid_stream_is_listed_and_streams_again_later() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::Cut, wire).await;
    }
}

#[actix_rt::test]
async fn a_stream_of_undecodable_events_is_ended_and_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::Undecodable, wire).await;
    }
}

#[actix_rt::test]
async fn initial_events_mostly_rejected_are_refused_whole_and_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        scenario(Fault::MostlyRejected, wire).await;
    }
}

/// A server that streams new objects and never the bookmark: each attempt ends at the
/// object cap, counted as a bad body, and LIST syncs. The fake counts what it wrote
/// to the last attempt: the cap and what the socket buffers held, never the flood.
#[actix_rt::test]
async fn endless_initial_events_end_at_the_object_cap_and_are_listed() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        let (url, world, metrics) = scenario(Fault::Endless, wire).await;
        let role = metrics.api_server(&url);
        let bad_bodies = role
            .role(Role::Pod)
            .request_errors
            .get(RequestError::BadBody);
        assert!(bad_bodies >= 1, "{wire:?}: the cap was never reached");
        let written = world.borrow().endless_written.get();
        assert!(
            written < 100_000,
            "{wire:?}: {written} objects written to one attempt"
        );
    }
}

/// With `--kubernetes.list-mode list` the same server is listed at once, and no
/// streaming list is ever asked for.
#[actix_rt::test]
async fn list_mode_list_never_asks_for_a_streaming_list() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        let world = Rc::new(RefCell::new(World::new(wire, Fault::Expired)));
        let answering = Rc::clone(&world);
        let api = FakeApi::start(move |r| answering.borrow().answer(r)).await;
        let discovery = Discovery::start(EngineOptions {
            list_mode: kubesd::config::ListMode::List,
            ..options()
        });
        let config = SdConfig::new(Role::Pod, &api.url);
        let sub = discovery
            .subscribe(&config, support::keep_all)
            .await
            .expect("subscribes");
        let synced = actix_rt::time::timeout(CAP, sub.synced()).await;
        assert!(synced.is_ok(), "{wire:?}: not synced at once");
        assert_eq!(support::addresses(&sub).await, OLD, "{wire:?}");
        let requests = api.requests();
        assert!(
            requests
                .iter()
                .all(|r| !r.target.contains("sendInitialEvents")
                    && !r.target.starts_with("/version")),
            "{wire:?}: {requests:?}"
        );
        sub.stop().await;
    }
}

/// Waits (at most `within`) until `api` has a request since `since` that `wanted` picks.
async fn a_request(
    api: &FakeApi,
    since: Instant,
    within: Duration,
    wanted: impl Fn(&Request) -> bool,
) {
    let started = Instant::now();
    while !api.requests_since(since).iter().any(&wanted) {
        assert!(
            started.elapsed() < within,
            "no such request within {within:?}"
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A server that served a streaming list, and then answers one with a plain watch (a
/// proxy in between that drops `sendInitialEvents`): the URL lists with LIST while it
/// does, the last good targets served, and once the server serves them again it gets
/// a streaming list at the first relist after a healthy watch. Streaming lists are off
/// for good only where the server never served one.
#[actix_rt::test]
async fn a_server_that_served_a_streaming_list_gets_one_again_after_a_plain_watch() {
    support::init_logs();
    for wire in [Wire::Json, Wire::Protobuf] {
        let world = Rc::new(RefCell::new(World::new(wire, Fault::PlainWatch)));
        world.borrow_mut().fault = None;
        let answering = Rc::clone(&world);
        let api = FakeApi::start(move |r| answering.borrow().answer(r)).await;
        let discovery = Discovery::start(options());
        let config = SdConfig::new(Role::Pod, &api.url);
        let sub = discovery
            .subscribe(&config, support::keep_all)
            .await
            .expect("subscribes");
        actix_rt::time::timeout(CAP * 4, sub.synced())
            .await
            .expect("synced");
        assert_eq!(support::addresses(&sub).await, OLD, "{wire:?}");
        let is_list = |r: &Request| !r.is_watch() && !r.target.starts_with("/version");
        assert!(
            !api.requests().iter().any(is_list),
            "{wire:?}: synced through a streaming list"
        );

        // Healthy, then streaming lists are answered with plain watches and watches
        // with 410: the URL lists with LIST.
        actix_rt::time::sleep(Duration::from_millis(300)).await;
        let fault = Instant::now();
        world.borrow_mut().fault = Some(Fault::PlainWatch);
        world.borrow_mut().gone_watches = true;
        a_request(&api, fault, CAP * 10, is_list).await;
        assert_eq!(
            support::addresses(&sub).await,
            OLD,
            "{wire:?}: last good targets"
        );

        // The server heals: new pods come through LIST and watch; once the watch has
        // been healthy, the next relist (forced by a 410) is a streaming list again.
        world.borrow_mut().heal();
        let healed = Instant::now();
        while support::addresses(&sub).await != NEW {
            assert!(
                healed.elapsed() < CAP * 10,
                "{wire:?}: the new targets did not come"
            );
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
        actix_rt::time::sleep(Duration::from_millis(300)).await;
        let relist = Instant::now();
        world.borrow_mut().gone_watches = true;
        a_request(&api, relist, CAP * 10, |r| {
            r.target.contains("sendInitialEvents=true")
        })
        .await;
        sub.stop().await;
    }
}
