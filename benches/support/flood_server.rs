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
//! - `GET /bench/stream`: every event at once, then the end of the stream: the
//!   self-check of how fast the server alone can push.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use super::realistic_pod;

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
}

/// Width of the `bench/sent` and `bench/seq` values; fixed so they are patched in place.
const SENT_WIDTH: usize = 20;
const SEQ_WIDTH: usize = 10;

/// One pod's watch event line with the offsets of its patchable fields.
struct EventLine {
    bytes: Vec<u8>,
    sent_at: usize,
    seq_at: usize,
    /// Where the `bench-seq` label's value is, if the pods have it.
    label_seq_at: Option<usize>,
}

/// A LIST body and where each of its items is in it (for streaming lists).
struct ListBody {
    body: Vec<u8>,
    items: Vec<Range<usize>>,
}

struct Data {
    spec: ServerSpec,
    pods_list: ListBody,
    nodes_list: ListBody,
    services_list: ListBody,
    endpoints_list: ListBody,
    events: Vec<EventLine>,
    /// The event after the flood: pod 0 deleted.
    end: Vec<u8>,
    /// The gate: pods watches may stream events `1..=upto`.
    gate: Mutex<usize>,
    opened: Condvar,
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

fn list_body(kind: &str, items: impl Iterator<Item = String>) -> ListBody {
    let mut out = format!(
        r#"{{"kind":"{kind}","apiVersion":"v1","metadata":{{"resourceVersion":"1000"}},"items":["#
    )
    .into_bytes();
    let mut ranges = Vec::new();
    for (n, item) in items.enumerate() {
        if n > 0 {
            out.push(b',');
        }
        ranges.push(out.len()..out.len() + item.len());
        out.extend_from_slice(item.as_bytes());
    }
    out.extend_from_slice(b"]}");
    ListBody {
        body: out,
        items: ranges,
    }
}

/// Builds `f(0..n)` on two threads, in order.
fn build_par(n: usize, f: impl Fn(usize) -> String + Sync) -> Vec<String> {
    let half = n / 2;
    std::thread::scope(|s| {
        let first = s.spawn(|| (0..half).map(&f).collect::<Vec<_>>());
        let second: Vec<String> = (half..n).map(&f).collect();
        let mut all = first.join().expect("builder thread");
        all.extend(second);
        all
    })
}

fn build(spec: ServerSpec) -> Data {
    let pods = build_par(spec.pods, |i| bench_pod_json(i, spec.touch_label));
    let events = pods
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
    let end = format!("{{\"type\":\"DELETED\",\"object\":{}}}\n", pods[0]).into_bytes();
    let pods_list = list_body("PodList", pods.into_iter());
    Data {
        spec,
        pods_list,
        nodes_list: list_body("NodeList", (0..spec.nodes).map(node_json)),
        services_list: list_body("ServiceList", (0..spec.services).map(service_json)),
        endpoints_list: list_body(
            "EndpointsList",
            (0..spec.services).map(|s| endpoints_json(s, &spec)),
        ),
        events,
        end,
        gate: Mutex::new(0),
        opened: Condvar::new(),
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

/// Runs the server: prints `listening <addr> built_s=<s> list_mb=<n>` on stdout, then
/// serves until killed.
pub fn serve(spec: ServerSpec) -> ! {
    let t = std::time::Instant::now();
    let data = Arc::new(build(spec));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    println!(
        "listening {} built_s={:.1} pods_list_mb={:.0} events_mb={:.0}",
        listener.local_addr().expect("addr"),
        t.elapsed().as_secs_f64(),
        data.pods_list.body.len() as f64 / 1e6,
        data.spec.events as f64 * data.events[0].bytes.len() as f64 / 1e6,
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

fn handle(conn: TcpStream, data: &Data) -> std::io::Result<()> {
    conn.set_nodelay(true)?;
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    loop {
        // Request line, then headers up to a blank line; GETs have no body.
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
                break;
            }
        }
        let (path, query) = target.split_once('?').unwrap_or((&target, ""));
        let watch = query
            .split('&')
            .any(|p| p == "watch=1" || p == "watch=true");
        if path == "/bench/go" {
            let upto = query
                .split('&')
                .find_map(|p| p.strip_prefix("upto="))
                .and_then(|v| v.parse().ok())
                .unwrap_or(data.spec.events);
            *data.gate.lock().expect("gate") = upto;
            data.opened.notify_all();
            return respond(&mut out, b"ok");
        }
        if path == "/bench/stream" {
            out.write_all(WATCH_HEAD)?;
            return stream_events(&mut out, data, false);
        }
        let resource = path.rsplit('/').next().unwrap_or("");
        let list = match resource {
            "pods" => Some(&data.pods_list),
            "nodes" => Some(&data.nodes_list),
            "services" => Some(&data.services_list),
            "endpoints" => Some(&data.endpoints_list),
            _ => None,
        };
        if watch {
            out.write_all(WATCH_HEAD)?;
            if query.split('&').any(|p| p == "sendInitialEvents=true") {
                initial_events(&mut out, list)?;
            }
            return if resource == "pods" {
                stream_events(&mut out, data, true)
            } else {
                idle_watch(&mut reader)
            };
        }
        let body: &[u8] = match list {
            Some(list) => &list.body,
            None => br#"{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1000"},"items":[]}"#,
        };
        respond(&mut out, body)?;
    }
}

fn respond(out: &mut TcpStream, body: &[u8]) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    out.write_all(body)
}

const WATCH_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";

/// A streaming list's start: the items of `list` as `ADDED` events, in chunks of about
/// 64 KiB, then the bookmark that ends them, at the LIST's resourceVersion.
fn initial_events(out: &mut TcpStream, list: Option<&ListBody>) -> std::io::Result<()> {
    let mut chunk: Vec<u8> = Vec::with_capacity(80 * 1024);
    let (body, items) = list.map_or((&[][..], &[][..]), |l| (&l.body[..], &l.items[..]));
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
fn stream_events(out: &mut TcpStream, data: &Data, gated: bool) -> std::io::Result<()> {
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
                chunk.extend_from_slice(&data.end);
                k += 1;
                continue;
            }
            let ev = &data.events[(k - 1) % data.events.len()];
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
