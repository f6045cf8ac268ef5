//! The flood benchmark's fake API server: serves PRE-BUILT bytes over plain HTTP/1.1 so
//! that it costs next to nothing per event and is never the bottleneck.
//!
//! It runs in a child process (the bench binary re-executed with `--serve`), so the
//! bench's `getrusage` measures kubesd alone.
//!
//! - `GET /api/v1/pods`, `/api/v1/nodes`, `/api/v1/services`, `/api/v1/endpoints`: the
//!   LIST (one body with `Content-Length`), or with `watch=1` a chunked WATCH stream.
//!   With `sendInitialEvents=true` too (a streaming list), the stream starts with the
//!   LIST's items as `ADDED` events and the bookmark annotated
//!   `k8s.io/initial-events-end`, then goes on as the WATCH.
//! - The pods WATCH streams `MODIFIED` events of the listed pods, cycling over them:
//!   event `k` (from 1) modifies pod `(k - 1) % pods`, with annotations
//!   `bench/seq = k` and `bench/sent = ` the wall clock in ns when its chunk was written
//!   (with `touch_label`, `k` goes into the pod label `bench-seq` too).
//!   It streams only as far as the *gate* allows: `GET /bench/go?upto=K` lets every open
//!   pods watch stream up to event `K` (0 holds them). Other watches stay open, idle.
//!   Event `events + 1`, past the flood, `DELETED`s pod 0: a change every reader sees
//!   in its target count, which marks that it has applied everything before it.
//! - With `members`, the namespaced `GET /api/v1/namespaces/monitoring/pods` serves
//!   scraper pods that `GET /bench/roll?step=K` rolls (see `flood_members`).
//! - `GET /bench/stream`: every event at once, then the end of the stream: the
//!   self-check of how fast the server alone can push.
//! - In protobuf (built with `ServerSpec::protobuf`) to a request whose `Accept` puts
//!   `application/vnd.kubernetes.protobuf` first: the same objects and events,
//!   encoded once at start (`flood_protobuf`), with that `Content-Type` (`;stream=watch`
//!   for watches); the stamps are the same annotations, patched in place.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use kubesd::simulator::Resource;
use kubesd::simulator::protobuf;

use super::{flood_members, flood_protobuf, realistic_pod};

/// What the server serves.
#[derive(Clone, Copy, Debug)]
pub struct ServerSpec {
    pub pods: usize,
    pub nodes: usize,
    pub services: usize,
    pub events: usize,
    /// Each event also writes its sequence number into the pod's label `bench-seq`:
    /// every event changes what a job mapping pod labels serves.
    pub touch_label: bool,
    /// Also serve protobuf, to requests whose `Accept` puts it first (built only when
    /// the bench may ask for it: it doubles the server's memory).
    pub protobuf: bool,
    /// Scraper pods in `monitoring`, rolled by `/bench/roll` (see `flood_members`).
    pub members: usize,
}

/// Width of the `bench/sent` and `bench/seq` values; fixed so they are patched in place.
const SENT_WIDTH: usize = 20;
const SEQ_WIDTH: usize = 10;

/// One pod's watch event (a JSON line or a protobuf frame) with the offsets of its
/// patchable fields.
struct EventLine {
    bytes: Vec<u8>,
    sent_at: usize,
    seq_at: usize,
    /// Where the `bench-seq` label's value is, if the pods have it.
    label_seq_at: Option<usize>,
}

/// What a streaming list sends before the watch.
enum Initial {
    /// JSON: where each item is in the LIST body; each `ADDED` event is written around
    /// it as it is sent.
    Items(Vec<Range<usize>>),
    /// Protobuf: the `ADDED` frames and the bookmark, pre-built.
    Frames(Vec<u8>),
}

/// A LIST body and its streaming list's start.
struct Listing {
    body: Vec<u8>,
    initial: Initial,
}

/// Everything served in one encoding.
struct Served {
    content_type: &'static str,
    watch_content_type: &'static str,
    pods_list: Listing,
    nodes_list: Listing,
    services_list: Listing,
    endpoints_list: Listing,
    events: Vec<EventLine>,
    /// The event after the flood: pod 0 deleted.
    end: Vec<u8>,
}

struct Data {
    spec: ServerSpec,
    json: Served,
    /// Built when the bench may ask for protobuf.
    protobuf: Option<Served>,
    /// The gate: pods watches may stream events `1..=upto`.
    gate: Mutex<usize>,
    opened: Condvar,
    members: flood_members::Members,
}

/// The name of pod `i` (as `realistic_pod_json` names it) and its namespace.
pub fn pod_name(i: usize) -> (String, String) {
    (format!("app-7d9f8b6c5-{i:05}"), format!("team-{}", i % 20))
}

fn pod_ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// A pod's JSON with the two benchmark annotations (zeroed) added first, and with
/// `touch_label` the `bench-seq` label (zeroed).
pub fn bench_pod_json(i: usize, touch_label: bool) -> String {
    let mut json = realistic_pod::realistic_pod_json(i);
    if touch_label {
        let at = json.find("\"labels\":{").expect("pod has labels") + 10;
        json.insert_str(at, &format!("\"bench-seq\":\"{}\",", "0".repeat(SEQ_WIDTH)));
    }
    let at = json.find("\"annotations\":{").expect("pod has annotations") + 15;
    let mut out = String::with_capacity(json.len() + 64);
    out.push_str(&json[..at]);
    out.push_str(&format!(
        "\"bench/sent\":\"{}\",\"bench/seq\":\"{}\",",
        "0".repeat(SENT_WIDTH),
        "0".repeat(SEQ_WIDTH)
    ));
    out.push_str(&json[at..]);
    out
}

fn node_json(i: usize) -> String {
    format!(
        r#"{{"kind":"Node","apiVersion":"v1","metadata":{{"name":"node-{i:04}","uid":"6c2a5e5e-0000-4000-8000-{i:012}","resourceVersion":"{rv}","labels":{{"kubernetes.io/hostname":"node-{i:04}","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","node.kubernetes.io/instance-type":"m5.2xlarge","topology.kubernetes.io/region":"eu-west-1","topology.kubernetes.io/zone":"eu-west-1{z}","node-role.kubernetes.io/worker":"","pool":"general"}},"annotations":{{"node.alpha.kubernetes.io/ttl":"0","volumes.kubernetes.io/controller-managed-attach-detach":"true"}}}},"spec":{{"providerID":"aws:///eu-west-1a/i-{i:017x}","podCIDR":"10.{i}.0.0/24"}},"status":{{"addresses":[{{"type":"InternalIP","address":"192.168.{h1}.{h2}"}},{{"type":"Hostname","address":"node-{i:04}"}}],"daemonEndpoints":{{"kubeletEndpoint":{{"Port":10250}}}},"nodeInfo":{{"kubeletVersion":"v1.31.0","osImage":"Ubuntu 24.04"}},"conditions":[{{"type":"Ready","status":"True"}}]}}}}"#,
        rv = 10 + i,
        z = ["a", "b", "c"][i % 3],
        h1 = i / 250,
        h2 = (i % 250) + 1,
    )
}

fn service_json(s: usize) -> String {
    format!(
        r#"{{"kind":"Service","apiVersion":"v1","metadata":{{"name":"svc-{s:04}","namespace":"team-{ns}","uid":"5d1c0000-0000-4000-8000-{s:012}","resourceVersion":"{rv}","labels":{{"app":"svc-{s:04}","team":"payments","app.kubernetes.io/managed-by":"helm"}},"annotations":{{"prometheus.io/scrape":"true"}}}},"spec":{{"type":"ClusterIP","clusterIP":"172.20.{a}.{b}","ports":[{{"name":"http","port":8080,"protocol":"TCP","targetPort":8080}}],"selector":{{"app":"app"}}}},"status":{{"loadBalancer":{{}}}}}}"#,
        ns = s % 20,
        rv = 20 + s,
        a = s / 250,
        b = s % 250 + 1,
    )
}

/// Endpoints of service `s`: the pods `i` with `i % services == s` (same namespace, as
/// `services` is a multiple of 20).
fn endpoints_json(s: usize, spec: &ServerSpec) -> String {
    let addresses: Vec<String> = (s..spec.pods)
        .step_by(spec.services)
        .map(|i| {
            let (name, ns) = pod_name(i);
            format!(
                r#"{{"ip":"{ip}","nodeName":"node-{node:04}","targetRef":{{"kind":"Pod","namespace":"{ns}","name":"{name}","uid":"9d328156-75d1-411a-bdd0-{i:012}"}}}}"#,
                ip = pod_ip(i),
                node = i % 2000,
            )
        })
        .collect();
    format!(
        r#"{{"kind":"Endpoints","apiVersion":"v1","metadata":{{"name":"svc-{s:04}","namespace":"team-{ns}","resourceVersion":"{rv}","labels":{{"app":"svc-{s:04}"}}}},"subsets":[{{"addresses":[{addrs}],"ports":[{{"name":"http","port":8080,"protocol":"TCP"}}]}}]}}"#,
        ns = s % 20,
        rv = 30 + s,
        addrs = addresses.join(","),
    )
}

/// The objects served, as JSON: each encoding is built from the same ones.
struct Objects {
    pods: Vec<String>,
    nodes: Vec<String>,
    services: Vec<String>,
    endpoints: Vec<String>,
}

fn objects(spec: &ServerSpec) -> Objects {
    Objects {
        pods: build_par(spec.pods, |i| bench_pod_json(i, spec.touch_label)),
        nodes: (0..spec.nodes).map(node_json).collect(),
        services: (0..spec.services).map(service_json).collect(),
        endpoints: (0..spec.services)
            .map(|s| endpoints_json(s, spec))
            .collect(),
    }
}

fn list_body(kind: &str, items: &[String]) -> Listing {
    let mut out = format!(
        r#"{{"kind":"{kind}","apiVersion":"v1","metadata":{{"resourceVersion":"1000"}},"items":["#
    )
    .into_bytes();
    let mut ranges = Vec::new();
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        ranges.push(out.len()..out.len() + item.len());
        out.extend_from_slice(item.as_bytes());
    }
    out.extend_from_slice(b"]}");
    Listing {
        body: out,
        initial: Initial::Items(ranges),
    }
}

/// Builds `f(0..n)` on two threads, in order.
fn build_par<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let half = n / 2;
    std::thread::scope(|s| {
        let first = s.spawn(|| (0..half).map(&f).collect::<Vec<_>>());
        let second: Vec<T> = (half..n).map(&f).collect();
        let mut all = first.join().expect("builder thread");
        all.extend(second);
        all
    })
}

fn build_json(objects: &Objects) -> Served {
    let events = objects
        .pods
        .iter()
        .map(|p| {
            let line = format!("{{\"type\":\"MODIFIED\",\"object\":{p}}}\n");
            let sent_at = line.find("\"bench/sent\":\"").expect("sent") + 14;
            let seq_at = line.find("\"bench/seq\":\"").expect("seq") + 13;
            let label_seq_at = line.find("\"bench-seq\":\"").map(|at| at + 13);
            EventLine {
                bytes: line.into_bytes(),
                sent_at,
                seq_at,
                label_seq_at,
            }
        })
        .collect();
    Served {
        content_type: "application/json",
        watch_content_type: "application/json",
        pods_list: list_body("PodList", &objects.pods),
        nodes_list: list_body("NodeList", &objects.nodes),
        services_list: list_body("ServiceList", &objects.services),
        endpoints_list: list_body("EndpointsList", &objects.endpoints),
        events,
        end: format!("{{\"type\":\"DELETED\",\"object\":{}}}\n", objects.pods[0]).into_bytes(),
    }
}

/// The same objects and events in protobuf (see `flood_protobuf`); the stamps are the
/// same annotations (and label), found by their map entries' bytes.
fn build_protobuf(objects: &Objects) -> Served {
    let encode = |resource: Resource, items: &[String]| {
        build_par(items.len(), |i| flood_protobuf::fields(resource, &items[i]))
    };
    let listing = |resource: Resource, items: &[Vec<u8>]| {
        let (body, initial) = flood_protobuf::list_and_initial_events(resource, items);
        Listing {
            body,
            initial: Initial::Frames(initial),
        }
    };
    let pods = encode(Resource::Pods, &objects.pods);
    let sent = flood_protobuf::map_value_prefix("bench/sent", SENT_WIDTH);
    let seq = flood_protobuf::map_value_prefix("bench/seq", SEQ_WIDTH);
    let label_seq = flood_protobuf::map_value_prefix("bench-seq", SEQ_WIDTH);
    let events = build_par(pods.len(), |i| {
        let bytes = flood_protobuf::frame(Resource::Pods, "MODIFIED", &pods[i]);
        EventLine {
            sent_at: flood_protobuf::end_of(&bytes, &sent).expect("sent"),
            seq_at: flood_protobuf::end_of(&bytes, &seq).expect("seq"),
            label_seq_at: flood_protobuf::end_of(&bytes, &label_seq),
            bytes,
        }
    });
    Served {
        content_type: protobuf::CONTENT_TYPE,
        watch_content_type: protobuf::WATCH_CONTENT_TYPE,
        end: flood_protobuf::frame(Resource::Pods, "DELETED", &pods[0]),
        pods_list: listing(Resource::Pods, &pods),
        nodes_list: listing(Resource::Nodes, &encode(Resource::Nodes, &objects.nodes)),
        services_list: listing(
            Resource::Services,
            &encode(Resource::Services, &objects.services),
        ),
        endpoints_list: listing(
            Resource::Endpoints,
            &encode(Resource::Endpoints, &objects.endpoints),
        ),
        events,
    }
}

fn build(spec: ServerSpec) -> Data {
    let objects = objects(&spec);
    Data {
        spec,
        json: build_json(&objects),
        protobuf: spec.protobuf.then(|| build_protobuf(&objects)),
        gate: Mutex::new(0),
        opened: Condvar::new(),
        members: flood_members::Members::new(spec.members),
    }
}

fn write_digits(out: &mut [u8], mut v: u64) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Runs the server: prints `listening <addr> built_s=<s> ...` on stdout, then serves
/// until killed. The sizes are the protobuf ones when it serves protobuf.
pub fn serve(spec: ServerSpec) -> ! {
    let t = std::time::Instant::now();
    let data = Arc::new(build(spec));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let served = data.protobuf.as_ref().unwrap_or(&data.json);
    println!(
        "listening {} built_s={:.1} pods_list_mb={:.0} events_mb={:.0} encoding={}",
        listener.local_addr().expect("addr"),
        t.elapsed().as_secs_f64(),
        served.pods_list.body.len() as f64 / 1e6,
        data.spec.events as f64 * served.events[0].bytes.len() as f64 / 1e6,
        served.content_type,
    );
    std::io::stdout().flush().ok();
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let data = Arc::clone(&data);
        std::thread::spawn(move || {
            let _ = handle(conn, &data);
        });
    }
    std::process::exit(0)
}

/// A request's target and whether its `Accept` puts protobuf first.
struct Request {
    target: String,
    protobuf: bool,
}

/// Reads the request line, then headers up to a blank line (GETs have no body);
/// `None` when the client has gone.
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut protobuf = false;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((name, value)) = h.split_once(':')
            && name.trim().eq_ignore_ascii_case("accept")
        {
            protobuf = protobuf::wants_protobuf(Some(value.trim()));
        }
    }
    Ok(Some(Request { target, protobuf }))
}

/// The bench's own requests: `/bench/go?upto=N` opens the gate to event N,
/// `/bench/roll?step=N` rolls the members to step N. True if it was one.
fn bench_control(path: &str, query: &str, data: &Data) -> bool {
    let number = |name: &str| {
        query
            .split('&')
            .find_map(|p| p.strip_prefix(name))
            .and_then(|v| v.parse().ok())
    };
    match path {
        "/bench/go" => {
            *data.gate.lock().expect("gate") = number("upto=").unwrap_or(data.spec.events);
            data.opened.notify_all();
            true
        }
        "/bench/roll" => {
            data.members.roll_to(number("step=").unwrap_or(0));
            true
        }
        _ => false,
    }
}

fn handle(conn: TcpStream, data: &Data) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    while let Some(request) = read_request(&mut reader)? {
        let target = request.target;
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let watch = query
            .split('&')
            .any(|p| p == "watch=1" || p == "watch=true");
        if bench_control(path, query, data) {
            return respond(&mut out, "text/plain", b"ok");
        }
        if data.spec.members > 0 && flood_members::is_members_path(path) {
            // In JSON whatever the client accepts, as a custom resource is served.
            if watch {
                watch_head(&mut out, &data.json)?;
                return data.members.watch(&mut out, query);
            }
            respond(&mut out, "application/json", &data.members.list())?;
            continue;
        }
        let served = match &data.protobuf {
            Some(protobuf) if request.protobuf => protobuf,
            _ => &data.json,
        };
        if path == "/version" {
            // A server of today: `--list-mode auto` lists it with LIST and WATCH.
            // The connection stays open for the client's next request, as a LIST's does.
            let version = br#"{"major":"1","minor":"36","gitVersion":"v1.36.0-flood"}"#;
            respond(&mut out, "application/json", version)?;
            continue;
        }
        if path == "/bench/stream" {
            watch_head(&mut out, served)?;
            return stream_events(&mut out, data, served, false);
        }
        let resource = path.rsplit('/').next().unwrap_or("");
        let list = match resource {
            "pods" => Some(&served.pods_list),
            "nodes" => Some(&served.nodes_list),
            "services" => Some(&served.services_list),
            "endpoints" => Some(&served.endpoints_list),
            _ => None,
        };
        // Anything else is an empty list, in JSON (as custom resources are served).
        let served = if list.is_some() { served } else { &data.json };
        if watch {
            watch_head(&mut out, served)?;
            if query.split('&').any(|p| p == "sendInitialEvents=true") {
                initial_events(&mut out, list)?;
            }
            return if resource == "pods" {
                stream_events(&mut out, data, served, true)
            } else {
                idle_watch(&mut reader)
            };
        }
        let body: &[u8] = match list {
            Some(list) => &list.body,
            None => br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1000"},"items":[]}"#,
        };
        respond(&mut out, served.content_type, body)?;
    }
    Ok(())
}

fn respond(out: &mut TcpStream, content_type: &str, body: &[u8]) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    out.write_all(body)
}

fn watch_head(out: &mut TcpStream, served: &Served) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nTransfer-Encoding: chunked\r\n\r\n",
        served.watch_content_type
    )
}

/// A streaming list's start, in chunks of about 64 KiB: the items of `list` as `ADDED`
/// events, then the bookmark that ends them, at the LIST's resourceVersion.
fn initial_events(out: &mut TcpStream, list: Option<&Listing>) -> std::io::Result<()> {
    match list.map(|l| (&l.body, &l.initial)) {
        Some((_, Initial::Frames(frames))) => {
            for chunk in frames.chunks(64 * 1024) {
                write_chunk(out, chunk)?;
            }
            Ok(())
        }
        Some((body, Initial::Items(items))) => json_initial_events(out, body, items),
        None => json_initial_events(out, &[], &[]),
    }
}

fn json_initial_events(
    out: &mut TcpStream,
    body: &[u8],
    items: &[Range<usize>],
) -> std::io::Result<()> {
    let mut chunk: Vec<u8> = Vec::with_capacity(80 * 1024);
    for range in items {
        chunk.extend_from_slice(br#"{"type":"ADDED","object":"#);
        chunk.extend_from_slice(&body[range.clone()]);
        chunk.extend_from_slice(b"}\n");
        if chunk.len() >= 64 * 1024 {
            write_chunk(out, &chunk)?;
            chunk.clear();
        }
    }
    chunk.extend_from_slice(
        br#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"1000","annotations":{"k8s.io/initial-events-end":"true"}}}}"#,
    );
    chunk.push(b'\n');
    write_chunk(out, &chunk)
}

fn write_chunk(out: &mut TcpStream, chunk: &[u8]) -> std::io::Result<()> {
    write!(out, "{:x}\r\n", chunk.len())?;
    out.write_all(chunk)?;
    out.write_all(b"\r\n")
}

/// A watch that never sends an event (its head already sent): holds until the client
/// goes away.
fn idle_watch(reader: &mut BufReader<TcpStream>) -> std::io::Result<()> {
    let mut buf = [0u8; 1024];
    while reader.read(&mut buf)? > 0 {}
    Ok(())
}

/// Streams the events (the head already sent) in chunks of about 64 KiB, stamping
/// each chunk's events with the time just before it is written. Gated: waits at the
/// gate; else all, then the end.
fn stream_events(
    out: &mut TcpStream,
    data: &Data,
    served: &Served,
    gated: bool,
) -> std::io::Result<()> {
    let flood = data.spec.events;
    let total = flood + usize::from(gated);
    let mut chunk: Vec<u8> = Vec::with_capacity(80 * 1024);
    let mut marks: Vec<usize> = Vec::with_capacity(64);
    let mut k = 1;
    while k <= total {
        if gated {
            let mut upto = data.gate.lock().expect("gate");
            while *upto < k {
                upto = data.opened.wait(upto).expect("gate");
            }
        }
        let limit = if gated {
            *data.gate.lock().expect("gate")
        } else {
            total
        }
        .min(total);
        chunk.clear();
        marks.clear();
        while k <= limit && chunk.len() < 64 * 1024 {
            if k > flood {
                chunk.extend_from_slice(&served.end);
                k += 1;
                continue;
            }
            let ev = &served.events[(k - 1) % served.events.len()];
            let at = chunk.len();
            chunk.extend_from_slice(&ev.bytes);
            for seq_at in std::iter::once(ev.seq_at).chain(ev.label_seq_at) {
                write_digits(&mut chunk[at + seq_at..at + seq_at + SEQ_WIDTH], k as u64);
            }
            marks.push(at + ev.sent_at);
            k += 1;
        }
        let now = now_ns();
        for &m in &marks {
            write_digits(&mut chunk[m..m + SENT_WIDTH], now);
        }
        write!(out, "{:x}\r\n", chunk.len())?;
        out.write_all(&chunk)?;
        out.write_all(b"\r\n")?;
    }
    if gated {
        // Stay open, as a real watch does until its timeout.
        let mut buf = [0u8; 1024];
        let mut r = out.try_clone()?;
        while r.read(&mut buf)? > 0 {}
        Ok(())
    } else {
        out.write_all(b"0\r\n\r\n")
    }
}
