// Field faults: API servers that misbehave as real ones (and broken proxies) have,
// each a small fake on 127.0.0.1 that the test controls byte by byte
// (`support/fake_api.rs`). Every scenario runs as an operator would meet it: the
// server is healthy with three pods, misbehaves for a while, then heals with three
// new pods. Throughout, the job must keep the last good targets, the URL must make at
// most 20 requests per two backoff caps (20 a minute with the default 30 s cap), and
// the new pods must appear soon after the server heals.
//
// Timings are the engine's, shortened through `EngineOptions`: a backoff cap of
// 400 ms stands for 30 s.
//
// The file runs twice: as `field_faults`, with the default list mode (these fakes tell
// no version, so LIST and WATCH), and as `field_faults_streaming`, which includes it,
// with streaming lists forced, so that every scenario also holds for the streaming
// path. (Plain comments here: an included file has no crate docs.)

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use kubesd::config::ListMode;
use kubesd::metrics::Metrics;
use kubesd::model::Role;
use kubesd::{Discovery, EngineOptions, SdConfig};
use serde_json::{Value, json};
use support::fake_api::{BodyWriter, FakeApi, Reply, Request};

/// The longest retry delay in these tests (30 s in production).
const CAP: Duration = Duration::from_millis(400);

/// How long each fault lasts.
const FAULT: Duration = Duration::from_millis(2500);

/// The list mode this build of the file runs its scenarios in.
fn list_mode() -> ListMode {
    if env!("CARGO_CRATE_NAME") == "field_faults_streaming" {
        ListMode::Stream
    } else {
        ListMode::default()
    }
}

fn options() -> EngineOptions {
    EngineOptions {
        list_mode: list_mode(),
        ..support::field_fault_options()
    }
}

fn pod(name: &str, ip: &str, rv: u64) -> Value {
    json!({"metadata": {"name": name, "namespace": "shop", "resourceVersion": rv.to_string()},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
           "status": {"phase": "Running", "podIP": ip}})
}

fn event(kind: &str, object: &Value) -> String {
    json!({"type": kind, "object": object}).to_string()
}

/// The cluster the healthy server serves: its pods now, and every change with its
/// resourceVersion, so that a watch from any version replays what came since.
struct World {
    pods: Vec<Value>,
    rv: u64,
    history: Vec<(u64, String)>,
}

impl World {
    fn new() -> World {
        World {
            pods: vec![
                pod("old-1", "10.0.0.1", 10),
                pod("old-2", "10.0.0.2", 10),
                pod("old-3", "10.0.0.3", 10),
            ],
            rv: 10,
            history: Vec::new(),
        }
    }

    fn list(&self) -> String {
        json!({"kind": "PodList", "apiVersion": "v1",
               "metadata": {"resourceVersion": self.rv.to_string()}, "items": self.pods})
        .to_string()
    }

    /// The old pods are deleted and three new ones added.
    fn heal(&mut self) {
        for p in std::mem::take(&mut self.pods) {
            self.rv += 1;
            let mut gone = p.clone();
            gone["metadata"]["resourceVersion"] = json!(self.rv.to_string());
            self.history.push((self.rv, event("DELETED", &gone)));
        }
        for (i, ip) in ["10.0.1.1", "10.0.1.2", "10.0.1.3"].iter().enumerate() {
            self.rv += 1;
            let p = pod(&format!("new-{}", i + 1), ip, self.rv);
            self.history.push((self.rv, event("ADDED", &p)));
            self.pods.push(p);
        }
    }

    fn since(&self, rv: u64) -> Vec<String> {
        self.history
            .iter()
            .filter(|(v, _)| *v > rv)
            .map(|(_, e)| e.clone())
            .collect()
    }
}

/// A well-behaved server for `world`: LISTs, and watches that replay what came since
/// their resourceVersion and then stay open a while, ended by the server as its
/// `timeoutSeconds` would.
fn healthy(world: Rc<RefCell<World>>) -> impl Fn(&Request) -> Reply + 'static {
    move |r: &Request| {
        let w = world.borrow();
        if r.is_watch() {
            let from = r
                .resource_version()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            Reply::watch(w.since(from), Duration::from_millis(400))
        } else {
            Reply::json(w.list())
        }
    }
}

const OLD: [&str; 3] = ["10.0.0.1:80", "10.0.0.2:80", "10.0.0.3:80"];
const NEW: [&str; 3] = ["10.0.1.1:80", "10.0.1.2:80", "10.0.1.3:80"];

/// What a scenario saw.
struct Seen {
    /// Requests while the server misbehaved.
    during: Vec<Request>,
    /// How long after the server healed the new pods were served.
    healed_in: Duration,
    /// Requests in the first second after the new pods were served.
    after: Vec<Request>,
    /// The engine's metrics.
    metrics: std::sync::Arc<Metrics>,
}

/// Runs one scenario: healthy, then `fault` (built from the healthy server's world)
/// for [`FAULT`], then healed. Asserts the targets before, at every sample during,
/// and after, the request rate during, and returns what it saw.
async fn scenario<F, H>(name: &str, options: EngineOptions, fault: F) -> Seen
where
    F: FnOnce(&Rc<RefCell<World>>) -> H,
    H: Fn(&Request) -> Reply + 'static,
{
    support::init_logs();
    let world = Rc::new(RefCell::new(World::new()));
    let api = FakeApi::start(healthy(Rc::clone(&world))).await;
    let discovery = Discovery::start(options);
    let config = SdConfig::new(Role::Pod, &api.url);
    let sub = discovery
        .subscribe(&config, support::keep_all)
        .await
        .expect("subscribes");
    actix_rt::time::timeout(Duration::from_secs(5), sub.synced())
        .await
        .unwrap_or_else(|_| panic!("{name}: no first sync"));
    assert_eq!(support::addresses(&sub).await, OLD, "{name}: before");

    api.set(fault(&world));
    let start = Instant::now();
    while start.elapsed() < FAULT {
        assert_eq!(
            support::addresses(&sub).await,
            OLD,
            "{name}: the last good targets, {:?} into the fault",
            start.elapsed()
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let during = api.requests_since(start);
    let allowed = 20 * FAULT.as_millis() / (2 * CAP.as_millis());
    assert!(
        during.len() as u128 <= allowed,
        "{name}: {} requests in {FAULT:?}, over {allowed} (20 per two backoff caps): {:?}",
        during.len(),
        during.iter().map(|r| &r.target).collect::<Vec<_>>()
    );

    world.borrow_mut().heal();
    api.set(healthy(Rc::clone(&world)));
    let healed = Instant::now();
    loop {
        let now = support::addresses(&sub).await;
        if now == NEW {
            break;
        }
        assert!(
            healed.elapsed() < CAP * 5,
            "{name}: the new pods were not served within {:?} of the server healing: {now:?}",
            CAP * 5
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    let healed_in = healed.elapsed();
    eprintln!(
        "{name}: {} requests ({} LISTs) in {FAULT:?} of fault; new pods served {healed_in:?} after healing",
        during.len(),
        lists(&during)
    );
    let quiet = Instant::now();
    actix_rt::time::sleep(Duration::from_secs(1)).await;
    let after = api.requests_since(quiet);
    // Healthy again: watches that the server ends after 400 ms, and nothing else.
    assert!(
        after.len() <= 4 && after.iter().all(Request::is_watch),
        "{name}: after healing, {:?}",
        after.iter().map(|r| &r.target).collect::<Vec<_>>()
    );
    sub.stop().await;
    Seen {
        during,
        healed_in,
        after,
        metrics: std::sync::Arc::clone(discovery.metrics()),
    }
}

fn lists(requests: &[Request]) -> usize {
    requests.iter().filter(|r| !r.is_watch()).count()
}

/// Answers LISTs as the healthy world does, and watches with `watch`.
fn list_ok_and(
    world: Rc<RefCell<World>>,
    watch: impl Fn(&Request) -> Reply + 'static,
) -> impl Fn(&Request) -> Reply + 'static {
    move |r: &Request| {
        if r.is_watch() {
            watch(r)
        } else {
            Reply::json(world.borrow().list())
        }
    }
}

/// Answers watches with HTTP 410 (so that the URL relists) and LISTs with `list`.
fn gone_and_list(list: impl Fn() -> Reply + 'static) -> impl Fn(&Request) -> Reply + 'static {
    move |r: &Request| {
        if r.is_watch() {
            Reply::k8s_status(410, "Expired", "too old resource version")
        } else {
            list()
        }
    }
}

const GONE_EVENT: &str = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 10 (4242)","reason":"Expired","code":410}}"#;

#[actix_rt::test]
async fn every_watch_answering_an_error_410_event_relists_at_a_bounded_rate() {
    let seen = scenario("ERROR 410 events", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            Reply::watch(vec![GONE_EVENT.to_string()], Duration::from_secs(5))
        })
    })
    .await;
    assert!(lists(&seen.during) >= 3, "it does relist");
}

#[actix_rt::test]
async fn every_watch_answering_http_410_relists_at_a_bounded_rate() {
    let seen = scenario("HTTP 410", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            Reply::k8s_status(410, "Expired", "too old")
        })
    })
    .await;
    assert!(lists(&seen.during) >= 3, "it does relist");
}

#[actix_rt::test]
async fn a_list_of_another_kind_changes_nothing() {
    let nodes =
        json!({"kind": "NodeList", "apiVersion": "v1", "metadata": {"resourceVersion": "99"},
        "items": [{"metadata": {"name": "node-a"}}, {"metadata": {"name": "node-b"}}]})
        .to_string();
    scenario("NodeList", options(), move |_| {
        gone_and_list(move || Reply::json(nodes.clone()))
    })
    .await;
}

#[actix_rt::test]
async fn a_list_item_nested_200000_deep_is_skipped_and_the_rest_kept() {
    scenario("deep list item", options(), |w| {
        let w = Rc::clone(w);
        gone_and_list(move || {
            let good = w.borrow().list();
            let deep = format!(
                r#"{{"metadata":{{"name":"deep","namespace":"shop"}},"spec":{}}}"#,
                format_args!("{}{}", "[".repeat(200_000), "]".repeat(200_000))
            );
            let body = good.replacen(r#""items":["#, &format!(r#""items":[{deep},"#), 1);
            Reply::json(body)
        })
    })
    .await;
}

#[actix_rt::test]
async fn a_watch_line_of_a_gigabyte_is_cut_at_the_object_limit() {
    let limit = 1 << 20;
    let options = EngineOptions {
        max_event_size: limit,
        ..options()
    };
    let seen = scenario("1 GB line", options, |w| {
        list_ok_and(Rc::clone(w), |_| {
            Reply::Stream(Box::new(|mut body: BodyWriter| {
                Box::pin(async move {
                    let piece = vec![b'x'; 64 << 10];
                    // A gigabyte, unless the client hangs up first.
                    for _ in 0..(1 << 30) / piece.len() {
                        if body.chunk(&piece).await.is_err() {
                            return;
                        }
                    }
                })
            }))
        })
    })
    .await;
    assert!(!seen.during.is_empty());
}

#[actix_rt::test]
async fn a_deeply_nested_event_is_rejected_and_relisted_at_a_bounded_rate() {
    scenario("deep event", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            let deep = format!(
                r#"{{"type":"MODIFIED","object":{{"metadata":{{"name":"old-1","namespace":"shop","resourceVersion":"50"}},"spec":{}}}}}"#,
                format_args!("{}{}", "[".repeat(200_000), "]".repeat(200_000))
            );
            Reply::watch(vec![deep], Duration::from_secs(5))
        })
    })
    .await;
}

#[actix_rt::test]
async fn an_event_of_the_wrong_kind_is_rejected_and_watches_are_calm_after_healing() {
    let seen = scenario("wrong kind", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            let node = json!({"type": "ADDED", "object": {"kind": "Node", "apiVersion": "v1",
                "metadata": {"name": "node-a", "resourceVersion": "999999"}}});
            Reply::watch(vec![node.to_string()], Duration::from_secs(5))
        })
    })
    .await;
    assert!(seen.metrics.role_total(Role::Pod, |m| m.rejected.total()) > 0);
    // Nothing resumed from the rejected event's resourceVersion.
    assert!(
        seen.after
            .iter()
            .chain(&seen.during)
            .all(|r| r.resource_version().as_deref() != Some("999999"))
    );
}

#[actix_rt::test]
async fn a_2gb_list_is_refused_by_its_length_and_a_2gb_string_streams_past() {
    // Announced: refused from the head.
    scenario("Content-Length 2 GB", options(), |_| {
        gone_and_list(|| {
            Reply::Raw(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000000000\r\nConnection: close\r\n\r\n{}",
                    r#"{"kind":"PodList","items":[{"metadata":{"name":"x","annotations":{"a":""#
                )
                .into_bytes(),
            )
        })
    })
    .await;
    // Chunked, so only the bytes say how big it is: the item is skipped at the object
    // limit and the body refused at the list limit, neither held whole.
    let options = EngineOptions {
        max_list_body: 16 << 20,
        max_event_size: 1 << 20,
        ..options()
    };
    scenario("chunked 2 GB string", options, |_| {
        gone_and_list(|| {
            Reply::Stream(Box::new(|mut body: BodyWriter| {
                Box::pin(async move {
                    let head = r#"{"kind":"PodList","metadata":{"resourceVersion":"77"},"items":[{"metadata":{"name":"x","namespace":"shop","annotations":{"a":""#;
                    if body.chunk(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let piece = vec![b'y'; 64 << 10];
                    for _ in 0..(2u64 << 30) / piece.len() as u64 {
                        if body.chunk(&piece).await.is_err() {
                            return;
                        }
                    }
                })
            }))
        })
    })
    .await;
}

#[actix_rt::test]
async fn retry_after_a_day_is_honoured_only_up_to_the_backoff_cap() {
    let seen = scenario("429 Retry-After 86400", options(), |_| {
        |_: &Request| Reply::Whole {
            status: 429,
            headers: vec![("Retry-After".into(), "86400".into())],
            body: br#"{"kind":"Status","code":429,"message":"slow down"}"#.to_vec(),
        }
    })
    .await;
    assert!(seen.healed_in < CAP * 3, "{:?}", seen.healed_in);
    assert!(seen.during.len() >= 3, "it keeps asking, at the cap");
}

#[actix_rt::test]
async fn a_watch_that_drips_a_byte_at_a_time_is_cut_and_resumed() {
    let seen = scenario("dripping watch", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            Reply::Stream(Box::new(|mut body: BodyWriter| {
                Box::pin(async move {
                    loop {
                        if body.chunk(b"{").await.is_err() {
                            return;
                        }
                        actix_rt::time::sleep(Duration::from_millis(20)).await;
                    }
                })
            }))
        })
    })
    .await;
    assert!(seen.metrics.role_total(Role::Pod, |m| m.stalls.total()) > 0);
    // Cut and resumed from the last resourceVersion: watches, not relists.
    assert_eq!(lists(&seen.during), 0);
}

// The faults that already behaved well.

#[actix_rt::test]
async fn a_truncated_list_body_changes_nothing() {
    scenario("truncated body", options(), |w| {
        let w = Rc::clone(w);
        gone_and_list(move || {
            let body = w.borrow().list();
            let mut raw = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            raw.extend_from_slice(&body.as_bytes()[..body.len() / 2]);
            Reply::Raw(raw)
        })
    })
    .await;
}

#[actix_rt::test]
async fn truncated_json_changes_nothing() {
    scenario("truncated JSON", options(), |w| {
        let w = Rc::clone(w);
        gone_and_list(move || {
            let body = w.borrow().list();
            Reply::json(body[..body.len() - 3].to_string())
        })
    })
    .await;
}

#[actix_rt::test]
async fn a_list_dripping_a_byte_at_a_time_is_cut() {
    scenario("dripping list", options(), |w| {
        let w = Rc::clone(w);
        gone_and_list(move || {
            let body = w.borrow().list().into_bytes();
            Reply::Stream(Box::new(move |mut out: BodyWriter| {
                Box::pin(async move {
                    for b in body {
                        if out.chunk(&[b]).await.is_err() {
                            return;
                        }
                        actix_rt::time::sleep(Duration::from_millis(50)).await;
                    }
                })
            }))
        })
    })
    .await;
}

#[actix_rt::test]
async fn a_server_that_accepts_and_never_answers_changes_nothing() {
    scenario("silent", options(), |_| |_: &Request| Reply::Silence).await;
}

#[actix_rt::test]
async fn server_errors_change_nothing() {
    scenario("500s", options(), |_| {
        |_: &Request| Reply::k8s_status(500, "InternalError", "etcdserver: request timed out")
    })
    .await;
}

#[actix_rt::test]
async fn too_many_requests_with_a_short_retry_after_changes_nothing() {
    scenario("429 Retry-After 1", options(), |_| {
        |_: &Request| Reply::Whole {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: Vec::new(),
        }
    })
    .await;
}

#[actix_rt::test]
async fn resource_versions_going_backwards_are_followed() {
    // The watch sends an event with an older resourceVersion than the list's; it is
    // still the object's newest state, and is applied.
    scenario("rv backwards", options(), |w| {
        list_ok_and(Rc::clone(w), |_| {
            let same = pod("old-1", "10.0.0.1", 3);
            Reply::watch(vec![event("MODIFIED", &same)], Duration::from_millis(400))
        })
    })
    .await;
}

#[actix_rt::test]
async fn every_request_names_kubesd_and_its_version_in_its_user_agent() {
    let world = Rc::new(RefCell::new(World::new()));
    let api = FakeApi::start(healthy(Rc::clone(&world))).await;
    let discovery = Discovery::start(options());
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), support::keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    actix_rt::time::sleep(Duration::from_millis(100)).await;
    let requests = api.requests();
    assert!(requests.len() >= 2, "a LIST and a WATCH");
    let platform = format!("({}/", std::env::consts::OS);
    for r in requests {
        let ua = r.header("user-agent").unwrap_or_default();
        assert!(
            ua.starts_with(&format!("kubesd/{} ", env!("CARGO_PKG_VERSION")))
                && ua.contains(&platform)
                && ua.split(' ').count() == 3,
            "{}: {ua:?}",
            r.target
        );
    }
}

// `kubesd run` as an operator runs it, against the fake server.

/// A `kubesd run` child process, killed when dropped.
struct Run {
    child: std::process::Child,
    /// `http://127.0.0.1:<port>`.
    base: String,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Run {
    /// Starts `kubesd run` with one `role: pod` job against `api` and waits until it
    /// serves.
    fn start(api: &str, name: &str) -> Run {
        use std::io::{BufRead, BufReader};
        let dir = std::env::temp_dir().join(format!("kubesd-field-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let config = dir.join("kubesd.yml");
        std::fs::write(
            &config,
            format!("scrape_configs:\n  - job_name: pods\n    kubernetes_sd_configs:\n      - role: pod\n        api_server: {api}\n"),
        )
        .expect("config written");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubesd"))
            .args(["run", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            // The fake answers LISTs and plain watches: what is tested is the LIST.
            .args(["--kubernetes.list-mode", "list"])
            .env("RUST_LOG", "warn")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("kubesd starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("kubesd: {line}");
                let _ = tx.send(line);
            }
        });
        let base = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(60))
                .expect("kubesd says where it serves");
            if let Some((_, rest)) = line.split_once("kubesd serving http://") {
                let addr = rest.split('/').next().unwrap_or_default();
                break format!("http://{addr}");
            }
        };
        Run { child, base }
    }

    /// The highest resident memory the process has had, in bytes.
    fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    }

    /// `/sd/pods`: its status and target addresses.
    async fn sd(&self) -> (u16, Vec<String>) {
        let client = awc::Client::default();
        let Ok(mut resp) = client.get(format!("{}/sd/pods", self.base)).send().await else {
            return (0, Vec::new());
        };
        let status = resp.status().as_u16();
        let body = resp.body().await.unwrap_or_default();
        let groups: Vec<Value> = serde_json::from_slice(&body).unwrap_or_default();
        let mut addresses: Vec<String> = groups
            .iter()
            .flat_map(|g| g["targets"].as_array().cloned().unwrap_or_default())
            .filter_map(|t| t.as_str().map(str::to_string))
            .collect();
        addresses.sort();
        (status, addresses)
    }
}

/// Before its first sync a job answers 503, so that Prometheus keeps the targets it
/// had; after it, the last good targets through a LIST of two gigabytes (announced,
/// then chunked with one 2 GB string), in well under 100 MB.
#[actix_rt::test]
async fn kubesd_run_answers_503_until_synced_then_serves_the_last_good_targets_in_bounded_memory() {
    let world = Rc::new(RefCell::new(World::new()));
    let api = FakeApi::start(|_: &Request| {
        Reply::k8s_status(503, "ServiceUnavailable", "the server is starting")
    })
    .await;
    let run = Run::start(&api.url, "run");
    let (status, _) = run.sd().await;
    assert_eq!(status, 503, "not synced yet");

    // Healthy: watches that stay open until the server turns bad, as a real server
    // that restarts ends them.
    let w = Rc::clone(&world);
    let healthy_phase = Rc::new(std::cell::Cell::new(true));
    let phase = Rc::clone(&healthy_phase);
    api.set(move |r: &Request| {
        if !r.is_watch() {
            return Reply::json(w.borrow().list());
        }
        let phase = Rc::clone(&phase);
        Reply::Stream(Box::new(move |mut body: BodyWriter| {
            Box::pin(async move {
                while phase.get() {
                    actix_rt::time::sleep(Duration::from_millis(50)).await;
                }
                let _ = body.end().await;
            })
        }))
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while run.sd().await != (200, OLD.map(String::from).to_vec()) {
        assert!(Instant::now() < deadline, "no sync: {:?}", run.sd().await);
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }

    // Every request from now on: a 410 for watches, and a two-gigabyte LIST.
    let written = Rc::new(std::cell::Cell::new(0u64));
    let counter = Rc::clone(&written);
    api.set(move |r: &Request| {
        if r.is_watch() {
            return Reply::k8s_status(410, "Expired", "too old resource version");
        }
        let counter = Rc::clone(&counter);
        Reply::Stream(Box::new(move |mut body: BodyWriter| {
            Box::pin(async move {
                let head = r#"{"kind":"PodList","metadata":{"resourceVersion":"77"},"items":[{"metadata":{"name":"x","namespace":"shop","annotations":{"a":""#;
                if body.chunk(head.as_bytes()).await.is_err() {
                    return;
                }
                let piece = vec![b'y'; 256 << 10];
                for _ in 0..(2u64 << 30) / piece.len() as u64 {
                    if body.chunk(&piece).await.is_err() {
                        return;
                    }
                    counter.set(counter.get() + piece.len() as u64);
                }
            })
        }))
    });
    healthy_phase.set(false);
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) && written.get() < (1 << 30) {
        let (status, targets) = run.sd().await;
        assert_eq!(
            (status, targets),
            (200, OLD.map(String::from).to_vec()),
            "the last good targets"
        );
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
    let peak = run.peak_rss();
    eprintln!(
        "kubesd run: {} MB of a 2 GB string streamed, peak RSS {} MB",
        written.get() >> 20,
        peak >> 20
    );
    assert!(peak < 100 << 20, "peak RSS {} MB", peak >> 20);
}

/// Records the status notices of one subscription.
struct StatusLog(Rc<RefCell<Vec<kubesd::UrlStatusChanged>>>);

impl actix::Actor for StatusLog {
    type Context = actix::Context<Self>;
}

impl actix::Handler<kubesd::UrlStatusChanged> for StatusLog {
    type Result = ();
    fn handle(&mut self, msg: kubesd::UrlStatusChanged, _: &mut actix::Context<Self>) {
        self.0.borrow_mut().push(msg);
    }
}

#[actix_rt::test]
async fn synced_within_returns_the_reason_when_the_server_forbids_the_list() {
    let message = r#"pods is forbidden: User "system:serviceaccount:monitoring:kubesd" cannot list resource "pods" in API group "" at the cluster scope"#;
    let api = FakeApi::start(move |_: &Request| Reply::k8s_status(403, "Forbidden", message)).await;
    let discovery = Discovery::start(options());
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), support::keep_all)
        .await
        .expect("subscribes");
    let notices = Rc::new(RefCell::new(Vec::new()));
    sub.on_status(actix::Actor::start(StatusLog(Rc::clone(&notices))).recipient());
    let started = Instant::now();
    let reason = sub
        .synced_within(Duration::from_secs(10))
        .await
        .expect_err("a repeated 403 cannot sync");
    // The second 403 in a row is the configuration problem: after one backoff.
    assert!(started.elapsed() < CAP * 3, "{:?}", started.elapsed());
    let kubesd::NotSynced::Failing(error) = &reason else {
        panic!("{reason}");
    };
    assert_eq!(
        error.problem,
        kubesd::UrlProblem::Request(kubesd::metrics::RequestError::Forbidden)
    );
    assert!(error.configuration);
    assert!(
        error.message.contains("cannot list resource \"pods\""),
        "{}",
        error.message
    );
    assert!(
        reason
            .to_string()
            .starts_with("LIST failed: 403 Forbidden: pods is forbidden"),
        "{reason}"
    );

    let status = sub.status().await;
    assert_eq!(status.len(), 1);
    assert_eq!(status[0].url, format!("{}/api/v1/pods", api.url));
    assert_eq!(status[0].phase, kubesd::UrlPhase::BackingOff);
    assert_eq!(status[0].last_sync, None);
    assert!(
        notices
            .borrow()
            .iter()
            .any(|n| n.urls.iter().any(|u| u.last_error.is_some()))
    );

    // Once the server allows it: synced at the next attempt (a configuration problem
    // is retried at the cap), and the problem is gone from the status once the watch
    // is healthy.
    let world = Rc::new(RefCell::new(World::new()));
    api.set(healthy(Rc::clone(&world)));
    actix_rt::time::timeout(Duration::from_secs(5), sub.synced())
        .await
        .expect("syncs once allowed");
    actix_rt::time::sleep(Duration::from_millis(300)).await;
    let status = sub.status().await;
    assert!(
        status[0].last_sync.is_some() && status[0].last_error.is_none(),
        "{status:?}"
    );
    assert!(status[0].relists >= 2);
    let last = notices.borrow().last().cloned().expect("notices");
    assert_eq!(last.urls, status);
}

#[actix_rt::test]
async fn synced_within_times_out_with_each_urls_state() {
    let api = FakeApi::start(|_: &Request| {
        Reply::k8s_status(500, "InternalError", "etcdserver: leader changed")
    })
    .await;
    let discovery = Discovery::start(options());
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), support::keep_all)
        .await
        .expect("subscribes");
    let reason = sub
        .synced_within(Duration::from_millis(800))
        .await
        .expect_err("500s do not sync");
    assert!(
        reason
            .to_string()
            .contains("500 Internal Server Error: etcdserver: leader changed"),
        "{reason}"
    );
}

/// RBAC that lets an endpoints job list endpoints and pods but forbids services: as
/// Prometheus waits for every informer of a role, the job waits for the services. It
/// serves no target (none without its service's labels, which a relabelling may keep
/// or drop by), names the forbidden URL as the reason it has not synced, and is served
/// whole once the services may be listed.
#[actix_rt::test]
async fn an_endpoints_job_whose_services_are_forbidden_waits_for_them_and_says_why() {
    let message = r#"services is forbidden: User "system:serviceaccount:monitoring:kubesd" cannot list resource "services" in API group "" at the cluster scope"#;
    let forbidden = Rc::new(std::cell::Cell::new(true));
    let api = FakeApi::start({
        let forbidden = Rc::clone(&forbidden);
        move |r: &Request| {
            let services = r.target.starts_with("/api/v1/services");
            if services && forbidden.get() {
                return Reply::k8s_status(403, "Forbidden", message);
            }
            if r.is_watch() {
                return Reply::watch(Vec::new(), Duration::from_millis(400));
            }
            let (kind, items) = if services {
                let service = json!({"metadata": {"name": "web", "namespace": "shop",
                    "resourceVersion": "5", "labels": {"tier": "front"}},
                    "spec": {"clusterIP": "10.1.0.1", "ports": [{"name": "http", "port": 80}]}});
                ("ServiceList", vec![service])
            } else if r.target.starts_with("/api/v1/endpoints") {
                let endpoints = json!({"metadata": {"name": "web", "namespace": "shop",
                    "resourceVersion": "5"},
                    "subsets": [{"addresses": [{"ip": "10.0.0.1"}],
                                 "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]});
                ("EndpointsList", vec![endpoints])
            } else {
                ("PodList", Vec::new())
            };
            Reply::json(
                json!({"kind": kind, "apiVersion": "v1",
                       "metadata": {"resourceVersion": "5"}, "items": items})
                .to_string(),
            )
        }
    })
    .await;
    let discovery = Discovery::start(options());
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Endpoints, &api.url), support::keep_all)
        .await
        .expect("subscribes");

    let reason = sub
        .synced_within(Duration::from_secs(5))
        .await
        .expect_err("a job cannot sync while its services are forbidden");
    assert!(
        reason.to_string().contains("services is forbidden"),
        "{reason}"
    );
    // The endpoints and the pods list (with streaming lists, after falling back).
    let services = format!("{}/api/v1/services", api.url);
    let others_listed = |status: &[kubesd::UrlStatus]| {
        (status.iter())
            .filter(|u| u.url != services)
            .all(|u| u.last_sync.is_some())
    };
    let started = Instant::now();
    let mut status = sub.status().await;
    while !others_listed(&status) && started.elapsed() < Duration::from_secs(5) {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
        status = sub.status().await;
    }
    assert_eq!(status.len(), 3, "{status:?}");
    assert!(others_listed(&status), "{status:?}");
    let forbidden_url = status.iter().find(|u| u.url == services);
    assert!(
        forbidden_url.is_some_and(|u| u.last_sync.is_none() && u.last_error.is_some()),
        "{status:?}"
    );
    assert!(
        support::addresses(&sub).await.is_empty(),
        "no target before its service is known"
    );

    forbidden.set(false);
    actix_rt::time::timeout(Duration::from_secs(5), sub.synced())
        .await
        .expect("syncs once the services may be listed");
    let targets = sub.targets().await;
    assert_eq!(support::addresses(&sub).await, ["10.0.0.1:80"]);
    assert_eq!(
        targets[0].get("__meta_kubernetes_service_label_tier"),
        Some("front"),
        "{:?}",
        targets[0]
    );
}
