//! Kubernetes' protobuf encoding end to end: the simulator answers LIST and WATCH in
//! protobuf when asked (and in JSON otherwise, and for kinds it has no schema for),
//! and kubesd's protobuf decoder gives from those answers exactly the objects the JSON
//! path gives. Also the decoder's answers to broken input: truncated bodies, unknown
//! fields and wire types, frames over the limit. And the engine reading protobuf:
//! the same targets as in JSON, and a clear error for a `Content-Type` it cannot read.

mod support;

use std::time::Duration;

use awc::Client;
use futures_util::StreamExt;
use kubesd::DecodeError;
use kubesd::config::{ListMode, WireEncoding};
use kubesd::metrics::ResponseEncoding;
use kubesd::model::{Object, Role};
use kubesd::simulator::{
    Churn, ChurnRates, ClusterSpec, Injection, Resource, RunningSimulator, SimulatedCluster,
    SimulatorConfig, generate, protobuf, serve,
};
use kubesd::wire::json::{self, WatchEvent};
use kubesd::wire::proto::{self, FrameBuffer, WireError};
use kubesd::wire::{ACCEPT_PROTOBUF, Encoding, PROTOBUF};
use kubesd::{Discovery, EngineOptions, SdConfig};
use serde_json::json;
use support::fake_api::{FakeApi, Reply};
use support::{all_jobs, converge, subscribe_all};

/// Upper bound for any single read; only reached when something is broken.
const SAFETY: Duration = Duration::from_secs(5);

async fn start() -> RunningSimulator {
    let config = SimulatorConfig {
        bookmark_interval: Duration::from_millis(20),
        ..SimulatorConfig::default()
    };
    let running = serve(config).await.expect("simulator starts");
    let spec = ClusterSpec {
        seed: 30,
        nodes: 3,
        pods: 40,
        namespaces: 2,
        pods_per_workload: 4,
    };
    generate(running.sim(), &spec).expect("cluster generated");
    running
}

/// GET `path` with `accept`: the Content-Type and the body.
async fn get(running: &RunningSimulator, path: &str, accept: &str) -> (String, Vec<u8>) {
    let client = Client::builder().disable_timeout().finish();
    let mut resp = client
        .get(format!("{}{path}", running.url()))
        .insert_header(("Accept", accept))
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200, "{path}");
    let content_type = resp
        .headers()
        .get("Content-Type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.body().limit(64 << 20).await.expect("body");
    (content_type, body.to_vec())
}

fn collection(role: Role) -> String {
    let resource = Resource::from(role);
    format!("{}/{}", resource.path_prefix(), resource.plural())
}

#[actix_rt::test]
async fn every_role_lists_the_same_objects_in_protobuf_as_in_json() {
    let running = start().await;
    for role in Role::ALL {
        let path = collection(role);
        let (json_type, json_body) = get(&running, &path, "application/json").await;
        assert_eq!(json_type, "application/json");
        let (proto_type, proto_body) = get(&running, &path, ACCEPT_PROTOBUF).await;
        if matches!(role, Role::Gateway | Role::HttpRoute | Role::GrpcRoute) {
            // Custom resources: JSON whatever the client prefers, as a real server.
            assert_eq!(proto_type, "application/json", "{role}");
            continue;
        }
        assert_eq!(proto_type, PROTOBUF, "{role}");
        let from_json = json::decode_list(role, &json_body).expect("JSON list");
        let (from_proto, errors) = proto::decode_list(role, &proto_body).expect("protobuf list");
        assert!(errors.is_empty(), "{role}: {errors:?}");
        assert_eq!(from_proto, from_json, "{role}");
        assert!(
            !from_proto.items.is_empty() || role == Role::Ingress,
            "{role} listed nothing"
        );
    }
    running.stop().await;
}

#[actix_rt::test]
async fn pages_carry_their_continue_token_in_protobuf() {
    let running = start().await;
    let (_, body) = get(&running, "/api/v1/pods?limit=7", ACCEPT_PROTOBUF).await;
    let (page, _) = proto::decode_list(Role::Pod, &body).expect("first page");
    assert_eq!(page.items.len(), 7);
    let token = page.continue_token.expect("a continue token");
    let (_, body) = get(
        &running,
        &format!("/api/v1/pods?limit=7&continue={token}"),
        ACCEPT_PROTOBUF,
    )
    .await;
    let (next, _) = proto::decode_list(Role::Pod, &body).expect("second page");
    assert_eq!(next.resource_version, page.resource_version);
    assert!(next.items.iter().all(|o| !page.items.contains(o)));
    running.stop().await;
}

#[actix_rt::test]
async fn kinds_without_a_schema_and_requests_for_json_are_answered_in_json() {
    let running = start().await;
    let (content_type, body) = get(&running, "/apis/apps/v1/deployments", ACCEPT_PROTOBUF).await;
    assert_eq!(
        Encoding::of_content_type(Some(&content_type)),
        Ok(Encoding::Json)
    );
    assert!(serde_json::from_slice::<serde_json::Value>(&body).is_ok());
    let (content_type, _) = get(
        &running,
        "/api/v1/pods",
        "application/json, application/vnd.kubernetes.protobuf",
    )
    .await;
    assert_eq!(content_type, "application/json");
    running.stop().await;
}

/// A protobuf watch of `path`: its frames, decoded, as they arrive.
struct ProtoWatch {
    body: std::pin::Pin<
        Box<dyn futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>>>,
    >,
    frames: FrameBuffer,
    decoded: std::collections::VecDeque<Result<WatchEvent, DecodeError>>,
}

impl ProtoWatch {
    async fn open(running: &RunningSimulator, path: &str) -> ProtoWatch {
        let client = Client::builder().disable_timeout().finish();
        let resp = client
            .get(format!("{}{path}", running.url()))
            .insert_header(("Accept", ACCEPT_PROTOBUF))
            .send()
            .await
            .expect("watch request");
        let content_type = resp
            .headers()
            .get("Content-Type")
            .and_then(|v| v.to_str().ok());
        assert_eq!(
            content_type,
            Some("application/vnd.kubernetes.protobuf;stream=watch")
        );
        ProtoWatch {
            body: Box::pin(resp),
            frames: FrameBuffer::new(1 << 20),
            decoded: Default::default(),
        }
    }

    /// The next event, decoded (or its decoding error).
    async fn next(&mut self) -> Result<WatchEvent, DecodeError> {
        loop {
            if let Some(event) = self.decoded.pop_front() {
                return event;
            }
            let chunk = tokio::time::timeout(SAFETY, self.body.next())
                .await
                .expect("an event within the safety timeout")
                .expect("the stream goes on")
                .expect("a chunk");
            let decoded = &mut self.decoded;
            self.frames
                .push(&chunk, |f| {
                    decoded.push_back(proto::decode_event(Role::Pod, f))
                })
                .expect("frames within the limit");
        }
    }
}

#[actix_rt::test]
async fn a_protobuf_watch_gives_the_listed_objects_then_changes_bookmarks_and_faults() {
    let running = start().await;
    let (_, body) = get(&running, "/api/v1/pods", "application/json").await;
    let listed = json::decode_list(Role::Pod, &body).expect("JSON list");
    let mut stream =
        ProtoWatch::open(&running, "/api/v1/pods?watch=1&allowWatchBookmarks=true").await;
    for _ in 0..listed.items.len() {
        match stream.next().await {
            Ok(WatchEvent::Added(object)) => assert!(listed.items.contains(&object), "{object:?}"),
            other => panic!("expected an ADDED pod, got {other:?}"),
        }
    }
    let mut changed = listed.items[0].clone();
    let Object::Pod(pod) = &mut changed else {
        panic!("a pod list holds pods")
    };
    let name = pod.metadata.name.to_string();
    let namespace = pod.metadata.namespace.to_string();
    let patch = json!({"metadata": {"labels": {"changed": "yes"}}});
    running
        .sim()
        .patch(Resource::Pods, &namespace, &name, &patch)
        .expect("patched");
    loop {
        match stream.next().await {
            Ok(WatchEvent::Bookmark {
                resource_version, ..
            }) => assert!(!resource_version.is_empty()),
            Ok(WatchEvent::Modified(Object::Pod(p))) => {
                assert_eq!(
                    p.metadata.labels.get("changed").map(|v| v.as_str()),
                    Some("yes")
                );
                break;
            }
            other => panic!("expected the modified pod, got {other:?}"),
        }
    }
    running.sim().inject(Injection::MalformedLine);
    running.sim().inject(Injection::UnknownType);
    running.sim().inject(Injection::WrongKind);
    let mut errors = Vec::new();
    while errors.len() < 3 {
        match stream.next().await {
            Ok(WatchEvent::Bookmark { .. }) => {}
            Ok(other) => panic!("expected the injected faults, got {other:?}"),
            Err(e) => errors.push(e),
        }
    }
    assert!(
        matches!(
            &errors[0],
            DecodeError::Protobuf {
                source: WireError::Truncated { .. },
                ..
            }
        ),
        "{}",
        errors[0]
    );
    assert!(
        matches!(&errors[1], DecodeError::UnknownEventType { kind, .. } if kind == "WEIRD"),
        "{}",
        errors[1]
    );
    assert!(
        matches!(&errors[2], DecodeError::WrongKind { kind, .. } if kind == "ConfigMap"),
        "{}",
        errors[2]
    );
    running.stop().await;
}

#[actix_rt::test]
async fn a_too_old_resource_version_is_an_error_event_in_protobuf() {
    let running = start().await;
    running.sim().compact();
    let mut stream = ProtoWatch::open(&running, "/api/v1/pods?watch=1&resourceVersion=1").await;
    match stream.next().await {
        Ok(WatchEvent::Error(status)) => assert!(status.is_gone(), "{status}"),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    running.stop().await;
}

fn sample_pod() -> serde_json::Value {
    json!({
        "metadata": {"name": "web-0", "namespace": "shop", "labels": {"app": "web"},
            "creationTimestamp": "2026-01-02T03:04:05Z",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web-5d", "controller": true}]},
        "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": "10.0.0.1", "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

#[test]
fn every_cut_of_a_list_body_is_an_error_never_a_short_list() {
    let pod = protobuf::encode_fields(Resource::Pods, &sample_pod()).expect("encoded");
    let body = protobuf::encode_list(Resource::Pods, "v1", &[pod.clone(), pod], "9", None);
    assert_eq!(
        proto::decode_list(Role::Pod, &body)
            .expect("whole")
            .0
            .items
            .len(),
        2
    );
    for cut in 0..body.len() {
        match proto::decode_list(Role::Pod, &body[..cut]) {
            Err(DecodeError::Protobuf {
                role: Role::Pod,
                source,
            }) => {
                let message = source.to_string();
                assert!(
                    message.contains("runtime.") || message.contains("k8s"),
                    "{message}"
                );
            }
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
}

/// The bytes of field `number` of `message`.
fn field(message: &[u8], number: u32) -> &[u8] {
    let mut reader = proto::Reader::new(message, "test");
    while let Some((n, value)) = reader.next_field().expect("well-formed") {
        if let (true, proto::Value::Bytes(bytes)) = (n == number, value) {
            return bytes;
        }
    }
    panic!("no field {number}")
}

/// Appends one field of each steppable wire type, with numbers no schema uses.
fn with_unknown_fields(message: &[u8]) -> Vec<u8> {
    let mut w = protobuf::Writer::default();
    w.bytes.extend_from_slice(message);
    w.varint(900, 12345);
    w.bytes(901, b"skipped");
    w.raw_varint((902 << 3) | 1);
    w.bytes.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    w.raw_varint((903 << 3) | 5);
    w.bytes.extend_from_slice(&[1, 2, 3, 4]);
    w.bytes
}

#[test]
fn unknown_field_numbers_of_every_wire_type_are_skipped() {
    let pod = sample_pod();
    let plain = protobuf::encode_fields(Resource::Pods, &pod).expect("encoded");
    let expected = proto::decode_object(Role::Pod, "v1", "", &plain).expect("plain pod");
    // Unknown fields in the object itself, and in its metadata (re-embedded).
    let mut metadata = protobuf::Writer::default();
    metadata.bytes(1, &with_unknown_fields(field(&plain, 1)));
    let mut object = with_unknown_fields(&plain);
    object.extend_from_slice(&metadata.bytes);
    let decoded =
        proto::decode_object(Role::Pod, "v1", "", &object).expect("unknown fields skipped");
    assert_eq!(decoded, expected);
    assert_eq!(
        Object::decode(Role::Pod, pod.to_string().as_bytes()).expect("JSON"),
        expected
    );
    // A group (wire type 3) cannot be stepped over: an error naming the message.
    let mut group = plain.clone();
    group.extend_from_slice(&[(904u16 << 3 | 3) as u8 | 0x80, (904u16 >> 4) as u8]);
    let err = proto::decode_object(Role::Pod, "v1", "", &group).unwrap_err();
    assert!(
        err.to_string()
            .contains("Pod field 904 has unsupported wire type 3"),
        "{err}"
    );
}

#[test]
fn a_watch_frame_over_the_limit_and_an_unknown_content_type_are_refused() {
    let object = protobuf::encode_object(Resource::Pods, &sample_pod()).expect("encoded");
    let frame = protobuf::encode_watch_frame("ADDED", &object);
    let mut frames = FrameBuffer::new(frame.len() - 5);
    let err = frames.push(&frame, |_| panic!("no frame")).unwrap_err();
    assert_eq!(err.limit, frame.len() - 5);
    assert!(Encoding::of_content_type(Some("text/html; charset=utf-8")).is_err());
    // A truncated envelope inside a whole frame is a decoding error.
    let cut = protobuf::encode_watch_frame("ADDED", &object[..object.len() - 10]);
    let mut events = Vec::new();
    FrameBuffer::new(1 << 20)
        .push(&cut, |f| events.push(proto::decode_event(Role::Pod, f)))
        .expect("within the limit");
    assert!(
        matches!(events.as_slice(), [Err(DecodeError::Protobuf { .. })]),
        "{events:?}"
    );
}

fn responses(discovery: &Discovery, encoding: ResponseEncoding) -> u64 {
    Role::ALL
        .into_iter()
        .map(|role| {
            discovery
                .metrics()
                .role_total(role, |m| m.responses.get(encoding))
        })
        .sum()
}

/// Every discovery role, with every `attach_metadata`, against the simulator in
/// protobuf (the default) and in JSON: each converges to the targets the simulator's
/// state gives, through the initial LIST and through watch events under churn.
#[actix_rt::test]
async fn the_engine_discovers_the_same_targets_in_protobuf_and_in_json() {
    let spec = ClusterSpec {
        nodes: 3,
        pods: 30,
        namespaces: 2,
        pods_per_workload: 3,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::seeded(30, spec)
        .await
        .expect("cluster starts");
    let sim = running.sim();
    let jobs = all_jobs(&running.url());
    let mut engines = Vec::new();
    for encoding in [WireEncoding::Auto, WireEncoding::Json] {
        let discovery = Discovery::start(EngineOptions {
            encoding,
            ..SimulatedCluster::engine_options()
        });
        let subs = subscribe_all(&discovery, &jobs).await;
        engines.push((encoding, discovery, subs));
    }
    let protobuf_read: u64 = (engines.iter())
        .map(|(_, discovery, _)| responses(discovery, ResponseEncoding::Protobuf))
        .sum();
    assert!(protobuf_read > 0, "protobuf was read");
    let mut churn = Churn::new(31, ChurnRates::default());
    for round in 0..3 {
        for (encoding, _, subs) in &engines {
            for (sub, config) in subs.iter().zip(&jobs) {
                converge(sub, sim, config, &format!("{encoding}, round {round}")).await;
            }
        }
        churn.step(sim, 20).expect("churn");
    }
    drop(engines);
    running.stop().await;
}

/// A LIST answered with a `Content-Type` kubesd cannot read: the URL's error says so,
/// the LIST is retried after a backoff (not in a loop), and nothing is published.
#[actix_rt::test]
async fn an_unknown_content_type_is_an_error_with_the_url_and_a_bounded_retry() {
    let api = FakeApi::start(|_| {
        let body = "<html>a proxy's login page</html>";
        Reply::Raw(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        )
    })
    .await;
    let discovery = Discovery::start(EngineOptions {
        backoff_initial: Duration::from_millis(200),
        backoff_max: Duration::from_millis(200),
        ..SimulatedCluster::engine_options()
    });
    let config = SdConfig::new(Role::Node, &api.url);
    let sub = discovery
        .subscribe(&config, support::keep_all)
        .await
        .expect("subscribes");
    let (url, error) = loop {
        let statuses = sub.status().await;
        if let Some((url, Some(error))) = statuses
            .first()
            .map(|s| (s.url.clone(), s.last_error.clone()))
        {
            break (url, error);
        }
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(url.contains("/api/v1/nodes"), "{url}");
    assert!(error.message.contains("text/html"), "{}", error.message);
    let started = std::time::Instant::now();
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    let requests = api.requests_since(started).len();
    assert!(
        (1..=4).contains(&requests),
        "{requests} requests in 500 ms with a 200 ms backoff"
    );
    assert!(sub.targets().await.is_empty());
    drop(discovery);
}

/// A LIST body of `pods` realistic-enough pods and one over-large item between them.
fn list_body(pods: usize, oversized: bool) -> Vec<u8> {
    let mut items = Vec::new();
    for i in 0..pods {
        let mut pod = sample_pod();
        pod["metadata"]["name"] = json!(format!("web-{i}"));
        if oversized && i == 1 {
            pod["metadata"]["annotations"] = json!({"big": "x".repeat(2000)});
        }
        items.push(protobuf::encode_fields(Resource::Pods, &pod).expect("encoded"));
    }
    protobuf::encode_list(Resource::Pods, "v1", &items, "42", Some("next"))
}

/// Feeds `body` to a streaming decoder in the given chunks.
fn stream(
    body: &[u8],
    cuts: &[usize],
    max_object: usize,
) -> Result<(kubesd::wire::json::ListPage, Vec<DecodeError>), DecodeError> {
    let mut list = proto::ProtoListStream::new(Role::Pod, max_object);
    let mut start = 0;
    for &cut in cuts.iter().chain([&body.len()]) {
        list.push(&body[start..cut])?;
        start = cut;
    }
    list.finish()
}

#[test]
fn a_streamed_list_cut_anywhere_decodes_as_the_whole_body_does() {
    let body = list_body(3, false);
    let (whole, _) = proto::decode_list(Role::Pod, &body).expect("whole body");
    assert_eq!(whole.items.len(), 3);
    assert_eq!(whole.continue_token.as_deref(), Some("next"));
    for cut in 0..=body.len() {
        let (page, errors) = stream(&body, &[cut], 1 << 20).expect("streamed");
        assert!(errors.is_empty(), "cut at {cut}: {errors:?}");
        assert_eq!(page, whole, "cut at {cut}");
    }
    let byte_by_byte: Vec<usize> = (1..body.len()).collect();
    assert_eq!(
        stream(&body, &byte_by_byte, 1 << 20)
            .expect("byte by byte")
            .0,
        whole
    );
}

#[test]
fn a_streamed_list_skips_an_item_over_the_limit_and_refuses_a_cut_body() {
    let body = list_body(3, true);
    let (page, errors) = stream(&body, &[100, 1500], 1000).expect("streamed");
    let names: Vec<&str> = page
        .items
        .iter()
        .map(|o| o.metadata().name.as_str())
        .collect();
    assert_eq!(names, ["web-0", "web-2"]);
    assert!(
        matches!(errors.as_slice(), [DecodeError::ListItem { index: 1, source, .. }] if matches!(**source, DecodeError::TooLarge { limit: 1000, .. })),
        "{errors:?}"
    );
    for cut in [3, 20, body.len() / 2, body.len() - 1] {
        let mut list = proto::ProtoListStream::new(Role::Pod, 1 << 20);
        list.push(&body[..cut]).expect("a prefix is not wrong yet");
        assert!(
            matches!(list.finish(), Err(DecodeError::Protobuf { .. })),
            "cut at {cut}"
        );
    }
    let nodes = protobuf::encode_list(Resource::Nodes, "v1", &[], "1", None);
    let mut list = proto::ProtoListStream::new(Role::Pod, 1 << 20);
    assert!(
        matches!(list.push(&nodes), Err(DecodeError::WrongKind { kind, .. }) if kind == "NodeList")
    );
}

/// `200` with `content_type` and `body`.
fn raw_reply(content_type: &str, body: &[u8]) -> Reply {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(body);
    Reply::Raw(bytes)
}

/// A watch frame over `max_event_size`, and a whole frame whose envelope is cut: each
/// is an error on the URL naming the problem, retried after the backoff (not in a
/// loop), and the listed node's target stays.
#[actix_rt::test]
async fn a_bad_watch_frame_keeps_the_targets_and_is_retried_after_the_backoff() {
    let node = json!({"metadata": {"name": "n1", "resourceVersion": "5"},
        "status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}});
    let item = protobuf::encode_fields(Resource::Nodes, &node).expect("node");
    let list = protobuf::encode_list(Resource::Nodes, "v1", &[item], "5", None);
    let object = protobuf::encode_object(Resource::Nodes, &node).expect("node");
    let mut oversized = 5000u32.to_be_bytes().to_vec();
    oversized.extend_from_slice(&[0; 16]);
    let truncated = protobuf::encode_watch_frame("MODIFIED", &object[..object.len() - 10]);
    for (bad, expected) in [
        (oversized, "larger than the limit"),
        (truncated, "truncated"),
    ] {
        let list = list.clone();
        let api = FakeApi::start(move |request| {
            if request.is_watch() {
                raw_reply(protobuf::WATCH_CONTENT_TYPE, &bad)
            } else {
                raw_reply(protobuf::CONTENT_TYPE, &list)
            }
        })
        .await;
        // LIST, then the bad watch: this fake server knows no streaming lists.
        let discovery = Discovery::start(EngineOptions {
            list_mode: ListMode::List,
            max_event_size: 1000,
            backoff_initial: Duration::from_millis(200),
            backoff_max: Duration::from_millis(200),
            ..SimulatedCluster::engine_options()
        });
        let config = SdConfig::new(Role::Node, &api.url);
        let sub = discovery
            .subscribe(&config, support::keep_all)
            .await
            .expect("subscribes");
        sub.synced().await;
        let error = loop {
            let statuses = sub.status().await;
            if let Some(error) = statuses.first().and_then(|s| s.last_error.clone()) {
                break error;
            }
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(error.message.contains(expected), "{}", error.message);
        let started = std::time::Instant::now();
        actix_rt::time::sleep(Duration::from_millis(500)).await;
        let requests = api.requests_since(started).len();
        assert!(
            requests <= 8,
            "{requests} requests in 500 ms with a 200 ms backoff"
        );
        assert_eq!(sub.targets().await.len(), 1, "the node's target is kept");
        drop(discovery);
    }
}

/// What the API server answers a request that preferred protobuf with an error: a
/// `Status` in protobuf, read as the JSON one is.
#[test]
fn an_error_body_in_protobuf_is_read_as_a_status() {
    let body = protobuf::encode_status(410, "Expired", "too old resource version: 1 (5)");
    let status = kubesd::wire::Status::from_body(&body).expect("a Status");
    assert!(status.is_gone());
    assert_eq!(status.message, "too old resource version: 1 (5)");
    let pod = protobuf::encode_object(Resource::Pods, &sample_pod()).expect("pod");
    assert_eq!(
        kubesd::wire::Status::from_body(&pod),
        None,
        "a Pod is no Status"
    );
}
