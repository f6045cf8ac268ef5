//! Flood benchmarks: the REAL engine (Discovery → URL watchers over HTTP → group →
//! subscribers) under synthetic event floods from a fake API server that serves
//! pre-built bytes from a child process.
//!
//! `cargo bench --bench flood -- [--quick] [--scenario sync,flood,fanout,deps,service,roles,clusters,fleet] ...`
//! (`--help` lists every option). Prints one table row per scenario, then
//! `summary: flood_events_per_s=N ceiling_events_per_s=N sync_s=X peak_rss_mb=N`.
//! See BENCHMARKS.md for what each column means.
//!
//! `service` is the path `kubesd run` users run: a Prometheus config of `--jobs` pod
//! jobs with realistic relabelling, `JobSet` and the HTTP SD server, and a reader
//! polling one job's `/sd` meanwhile.
//!
//! `fleet` is the service with one pod job under a flood paced at `--fleet-rate`
//! events/s, while `--fleet-nodes` per-node and `--fleet-shards` shard consumers poll
//! their views every `--fleet-poll-s` with `If-None-Match`; `--fleet-views off` runs
//! the same flood with no consumer, for the peak RSS and CPU to compare with.

use std::alloc::{GlobalAlloc, Layout, System as SysAlloc};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use kubesd::config::{ListMode, Secret, WireEncoding};
use kubesd::metrics::Metrics;
use kubesd::model::Role;
use kubesd::targets::AttachMetadata;
use kubesd::wire::json::{LineBuffer, WatchEvent, decode_event};
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Semantics, Subscription};

#[path = "support/fleet_consumers.rs"]
mod fleet_consumers;
#[path = "support/fleet_coverage.rs"]
mod fleet_coverage;
#[path = "support/flood_members.rs"]
mod flood_members;
#[path = "support/flood_protobuf.rs"]
mod flood_protobuf;
#[path = "support/flood_server.rs"]
mod flood_server;
#[path = "support/realistic_pod.rs"]
mod realistic_pod;

// ---------------------------------------------------------------------------------
// Allocation counting: a counter per thread, bumped with a plain load and store. A
// shared atomic add (`lock xadd`) drains the store buffer at every allocation, CPU the
// bench would charge to kubesd. Each thread takes a slot of its own at its first allocation, so the plain
// increment is exact; threads past the last exclusive slot share it atomically.

struct Counting;

#[repr(align(64))]
struct Shard(AtomicU64);

const ALLOC_SLOTS: usize = 64;
static ALLOCS: [Shard; ALLOC_SLOTS] = [const { Shard(AtomicU64::new(0)) }; ALLOC_SLOTS];
static NEXT_ALLOC_SLOT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static COUNT_ALLOCS: AtomicBool = AtomicBool::new(true);

thread_local! {
    /// This thread's slot in `ALLOCS` (`usize::MAX` until its first allocation). Const
    /// and without a destructor: usable inside the allocator, even at thread exit.
    static ALLOC_SLOT: std::cell::Cell<usize> = const { std::cell::Cell::new(usize::MAX) };
}

fn count_alloc() {
    if !COUNT_ALLOCS.load(Relaxed) {
        return;
    }
    let shared = ALLOC_SLOTS - 1;
    let slot = ALLOC_SLOT
        .try_with(|cell| {
            if cell.get() == usize::MAX {
                cell.set(NEXT_ALLOC_SLOT.fetch_add(1, Relaxed).min(shared));
            }
            cell.get()
        })
        .unwrap_or(shared);
    let counter = &ALLOCS[slot].0;
    if slot == shared {
        counter.fetch_add(1, Relaxed);
    } else {
        // Only this thread writes this slot.
        counter.store(counter.load(Relaxed) + 1, Relaxed);
    }
}

fn allocs() -> u64 {
    ALLOCS.iter().map(|s| s.0.load(Relaxed)).sum()
}

/// Which allocator the bench runs on: mimalloc, as the `kubesd` binary does, unless
/// `KUBESD_BENCH_SYSTEM_ALLOC` is set (to compare with glibc's malloc). Decided at the
/// first allocation, before any thread exists, with `getenv` (which does not allocate).
fn use_system() -> bool {
    static CHOICE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    match CHOICE.load(Relaxed) {
        1 => true,
        2 => false,
        _ => {
            // SAFETY: a NUL-terminated name; nothing else touches the environment yet.
            let set = !unsafe { libc::getenv(c"KUBESD_BENCH_SYSTEM_ALLOC".as_ptr()) }.is_null();
            CHOICE.store(if set { 1 } else { 2 }, Relaxed);
            set
        }
    }
}

static MIMALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.alloc(layout) }
        } else {
            unsafe { MIMALLOC.alloc(layout) }
        }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if use_system() {
            unsafe { SysAlloc.dealloc(ptr, layout) }
        } else {
            unsafe { MIMALLOC.dealloc(ptr, layout) }
        }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.alloc_zeroed(layout) }
        } else {
            unsafe { MIMALLOC.alloc_zeroed(layout) }
        }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_alloc();
        if use_system() {
            unsafe { SysAlloc.realloc(ptr, layout, new_size) }
        } else {
            unsafe { MIMALLOC.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------------

#[derive(Parser, Debug, Clone)]
#[command(about = "kubesd flood benchmarks")]
struct Args {
    /// Pods in the LIST (~5 KB each, 3 containers x 2 ports: 6 targets each).
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// Nodes in the LIST.
    #[arg(long, default_value_t = 2000)]
    nodes: usize,
    /// MODIFIED pod events streamed by the WATCH.
    #[arg(long, default_value_t = 200_000)]
    events: usize,
    /// Services (and Endpoints objects) for the deps scenario; a multiple of 20.
    #[arg(long, default_value_t = 2000)]
    services: usize,
    /// Events of the deps scenario (0: `--events / 10`).
    #[arg(long, default_value_t = 0)]
    deps_events: usize,
    /// What each flood event changes besides its annotations: `annotation` (nothing
    /// else: no job's targets change) or `label` (the pod label `bench-seq` too: every
    /// event changes the targets of a job that maps pod labels).
    #[arg(long, default_value = "annotation", value_parser = ["annotation", "label"])]
    flood_touches: String,
    /// Job counts of the service scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 20])]
    jobs: Vec<usize>,
    /// How often the service scenario's reader asks for a job's `/sd`, ms (one request
    /// at a time, the whole body read, no `If-None-Match`).
    #[arg(long, default_value_t = 1000)]
    sd_poll_ms: u64,
    /// The service and fleet scenarios' `--sd.publish-interval`, ms: the least time
    /// between two snapshots of a job actor while changes keep coming.
    #[arg(long, default_value_t = 250)]
    publish_ms: u64,
    /// Fleet scenario: per-node consumers (one per node, `node-0000`...).
    #[arg(long, default_value_t = 2000)]
    fleet_nodes: usize,
    /// Fleet scenario: shard consumers (`shard=I&shards=N`).
    #[arg(long, default_value_t = 20)]
    fleet_shards: usize,
    /// Fleet scenario: how often each consumer polls its view, s.
    #[arg(long, default_value_t = 10)]
    fleet_poll_s: u64,
    /// Fleet scenario: the flood's pace, events/s.
    #[arg(long, default_value_t = 20_000)]
    fleet_rate: usize,
    /// Fleet scenario: `on` (consumers poll their views) or `off` (no consumer: the
    /// same kubesd serving no views).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    fleet_views: String,
    /// Fleet scenario: member scrapers (pods `scraper-NN` in `monitoring` over the three
    /// zones, weights 1 and 2, rolled one by one; 0: no `membership` section). Each
    /// polls `?member=` every `--fleet-member-poll-s` and, as a collector,
    /// `/jobs/pods-0/targets?collector_id=` every `--fleet-collector-poll-s`.
    #[arg(long, default_value_t = 0)]
    fleet_members: usize,
    /// Fleet scenario: how often each member scraper polls `?member=`, s.
    #[arg(long, default_value_t = 10.0)]
    fleet_member_poll_s: f64,
    /// Fleet scenario: how often each collector polls its allocator share, s (0: no
    /// collectors).
    #[arg(long, default_value_t = 30.0)]
    fleet_collector_poll_s: f64,
    /// Fleet scenario: one roll step (a member NotReady, deleted, or back) every this
    /// many ms while the flood runs.
    #[arg(long, default_value_t = 1000)]
    fleet_roll_ms: u64,
    /// Fleet scenario: `membership.handover`.
    #[arg(long, default_value = "2m")]
    fleet_handover: String,
    /// Subscriber counts of the fanout scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [20, 100])]
    subscribers: Vec<usize>,
    /// Scenarios to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["sync".to_string(), "flood".into(), "fanout".into(), "deps".into()])]
    scenario: Vec<String>,
    /// Small sizes: finishes in well under 2 minutes.
    #[arg(long)]
    quick: bool,
    /// Run subscribers on this many extra arbiters (0: the group's arbiter).
    #[arg(long, default_value_t = 0)]
    sub_arbiters: usize,
    /// The dirty flusher's interval, ms.
    #[arg(long, default_value_t = 1000)]
    flush_ms: u64,
    /// Batches a subscriber may have unhandled before the group holds more back
    /// (`EngineOptions::subscriber_in_flight`; default: the engine's).
    #[arg(long)]
    subscriber_in_flight: Option<usize>,
    /// Whose target semantics the discoveries follow: prometheus or victoriametrics.
    #[arg(long, default_value_t = Semantics::Prometheus)]
    semantics: Semantics,
    /// How URLs are listed: auto (streaming lists, which the fake server serves) or
    /// list (LIST, then WATCH).
    #[arg(long, default_value_t = ListMode::Auto)]
    list_mode: ListMode,
    /// What the engine asks for: auto (protobuf, which the fake server then serves) or
    /// json (`EngineOptions::encoding`; default: the engine's).
    #[arg(long, default_value_t = EngineOptions::default().encoding)]
    encoding: WireEncoding,
    /// Do not count allocations.
    #[arg(long)]
    no_count_allocs: bool,
    /// Skip the serde_json ceiling measurement.
    #[arg(long)]
    no_ceiling: bool,
    /// Use this API server instead of the built-in fake one (no gate, no latency).
    #[arg(long)]
    api_server: Option<String>,
    /// Bearer token for `--api-server`.
    #[arg(long)]
    token: Option<String>,
    /// Give up on a scenario after this many seconds.
    #[arg(long, default_value_t = 600)]
    timeout_s: u64,
    /// Internal: run as the fake API server.
    #[arg(long, hide = true)]
    serve: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Args {
    fn apply_quick(&mut self) {
        if self.quick {
            self.pods = 5000;
            self.events = 20_000;
            self.services = 200;
        }
        if self.deps_events == 0 {
            self.deps_events = self.events / 10;
        }
        self.services = (self.services / 20).max(1) * 20;
    }
}

// ---------------------------------------------------------------------------------
// Process measurements.

fn cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn rss_mb() -> f64 {
    status_kb("VmRSS:") as f64 / 1024.0
}

fn peak_rss_mb() -> f64 {
    status_kb("VmHWM:") as f64 / 1024.0
}

/// Resets VmHWM to the current RSS, so each scenario reports its own peak.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

unsafe extern "C" {
    /// mimalloc's own "give free memory back now" (linked through the `mimalloc` crate).
    fn mi_collect(force: bool);
}

/// Returns freed memory to the OS, whichever allocator runs, so "RSS after stop" shows
/// what is still held rather than what the allocator keeps cached.
fn trim_heap() {
    if use_system() {
        unsafe { libc::malloc_trim(0) };
    } else {
        unsafe { mi_collect(true) };
    }
}

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// CPU, wall, allocations and peak RSS between `start` and `finish`.
struct Meter {
    wall: Instant,
    cpu: f64,
    allocs: u64,
    threads: HashMap<u64, (String, u64)>,
}

struct Measured {
    wall_s: f64,
    cpu_s: f64,
    allocs: u64,
    peak_rss_mb: f64,
    /// CPU seconds of the busiest threads over the scenario, busiest first: shows which
    /// stage of the pipeline (watcher arbiter, group arbiter) is the bottleneck.
    threads: Vec<(String, f64)>,
}

impl Measured {
    fn threads_note(&self) -> String {
        let busy: Vec<String> = self
            .threads
            .iter()
            .filter(|(_, s)| *s >= 0.01)
            .take(4)
            .map(|(name, s)| format!("{name} {s:.2}"))
            .collect();
        format!("cpu s by thread: {}", busy.join(", "))
    }
}

/// CPU ticks (user + system) of each thread of this process, by thread id, with its name.
fn thread_ticks() -> HashMap<u64, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "tid (comm) state ..." — comm may hold spaces; fields follow the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the comm.
        let ticks = fields
            .get(11)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
            + fields
                .get(12)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        out.insert(tid, (name, ticks));
    }
    out
}

fn ticks_per_s() -> f64 {
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

impl Meter {
    fn start() -> Meter {
        reset_peak();
        Meter {
            wall: Instant::now(),
            cpu: cpu_s(),
            allocs: allocs(),
            threads: thread_ticks(),
        }
    }
    fn finish(&self) -> Measured {
        Measured {
            wall_s: self.wall.elapsed().as_secs_f64(),
            cpu_s: cpu_s() - self.cpu,
            allocs: allocs() - self.allocs,
            peak_rss_mb: peak_rss_mb(),
            threads: {
                let hz = ticks_per_s();
                let mut busy: Vec<(String, f64)> = thread_ticks()
                    .into_iter()
                    .map(|(tid, (name, ticks))| {
                        let before = self.threads.get(&tid).map_or(0, |(_, t)| *t);
                        (
                            format!("{name}[{tid}]"),
                            ticks.saturating_sub(before) as f64 / hz,
                        )
                    })
                    .collect();
                busy.sort_by(|a, b| b.1.total_cmp(&a.1));
                busy
            },
        }
    }
}

// ---------------------------------------------------------------------------------
// The server child process.

struct Server {
    child: Option<Child>,
    url: String,
    addr: Option<String>,
    /// The `Accept` of the self-check, as the engine's requests send it.
    accept: &'static str,
}

impl Server {
    fn spawn(args: &Args) -> Server {
        let exe = std::env::current_exe().expect("current exe");
        let mut child = Command::new(exe)
            .args([
                "--serve",
                "--pods",
                &args.pods.to_string(),
                "--nodes",
                &args.nodes.to_string(),
                "--services",
                &args.services.to_string(),
                "--events",
                &args.events.to_string(),
                "--flood-touches",
                &args.flood_touches,
                "--encoding",
                &args.encoding.to_string(),
                "--fleet-members",
                &args.fleet_members.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("server says where it listens");
        let addr = line
            .split_whitespace()
            .nth(1)
            .expect("listening line")
            .to_string();
        println!("server (child pid {}): {}", child.id(), line.trim());
        Server {
            child: Some(child),
            url: format!("http://{addr}"),
            addr: Some(addr),
            accept: args.encoding.accept(),
        }
    }

    fn external(url: &str) -> Server {
        Server {
            child: None,
            url: url.to_string(),
            addr: None,
            accept: "application/json",
        }
    }

    /// Lets the pods watches stream up to event `upto`.
    fn gate(&self, upto: usize) {
        let Some(addr) = &self.addr else { return };
        let mut s = TcpStream::connect(addr).expect("server reachable");
        write!(
            s,
            "GET /bench/go?upto={upto} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("gate request");
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }

    /// Lets the member pods' roll go as far as step `step`.
    fn roll(&self, step: usize) {
        let Some(addr) = &self.addr else { return };
        let mut s = TcpStream::connect(addr).expect("server reachable");
        write!(
            s,
            "GET /bench/roll?step={step} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .expect("roll request");
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
    }

    /// Reads the whole event stream with a trivial client: how fast the server alone
    /// pushes (events/s, MB/s).
    fn self_check(&self, events: usize) -> Option<(f64, f64)> {
        let addr = self.addr.as_ref()?;
        let mut s = TcpStream::connect(addr).ok()?;
        write!(
            s,
            "GET /bench/stream HTTP/1.1\r\nHost: x\r\nAccept: {}\r\n\r\n",
            self.accept
        )
        .ok()?;
        let t = Instant::now();
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0usize;
        let tail = b"\r\n0\r\n\r\n";
        let mut last = Vec::new();
        loop {
            let n = s.read(&mut buf).ok()?;
            if n == 0 {
                break;
            }
            total += n;
            last.extend_from_slice(&buf[..n]);
            if last.len() > 16 {
                last.drain(..last.len() - 16);
            }
            if last.ends_with(tail) {
                break;
            }
        }
        let secs = t.elapsed().as_secs_f64();
        Some((events as f64 / secs, total as f64 / secs / 1e6))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------
// What the subscribers' constructors record.

const SENT: &str = "__meta_kubernetes_pod_annotation_bench_sent";
const SEQ: &str = "__meta_kubernetes_pod_annotation_bench_seq";
const ADDRESS: &str = "__address__";

/// Shared by every subscriber of a scenario.
struct Probe {
    /// Per event seq: the latest latency (µs) at which any subscriber saw it, +1.
    latency_us: Vec<AtomicU32>,
    /// The event that ends the scenario.
    last: AtomicUsize,
    /// Subscribers that have seen `last` (reset by `expect`).
    done: AtomicUsize,
    /// Events seen (first target of each pod per subscriber).
    seen: AtomicU64,
    notify: tokio::sync::Notify,
}

impl Probe {
    fn new(events: usize) -> Arc<Probe> {
        Arc::new(Probe {
            latency_us: (0..=events).map(|_| AtomicU32::new(0)).collect(),
            last: AtomicUsize::new(usize::MAX),
            done: AtomicUsize::new(0),
            seen: AtomicU64::new(0),
            notify: tokio::sync::Notify::new(),
        })
    }

    /// Called by a constructor for each target; `mine` is the subscriber's own flag.
    fn observe(&self, labels: &Labels, mine: &AtomicUsize) {
        // One target per pod: the first port of the first container. Found by its
        // address, the first of a target's own labels, so that the probe stays a cheap
        // constructor (a scan to the port-number label would cost more than the rest of
        // the fanout's work per target).
        if !labels.get(ADDRESS).is_some_and(|a| a.ends_with(":8080")) {
            return;
        }
        let Some(seq) = labels.get(SEQ).and_then(|s| s.parse::<usize>().ok()) else {
            return;
        };
        if seq == 0 {
            return;
        }
        self.seen.fetch_add(1, Relaxed);
        if let Some(sent) = labels.get(SENT).and_then(|s| s.parse::<u64>().ok())
            && let Some(slot) = self.latency_us.get(seq)
        {
            let us = now_ns().saturating_sub(sent) / 1000;
            slot.fetch_max(us.min(u32::MAX as u64 - 1) as u32 + 1, Relaxed);
        }
        let last = self.last.load(Relaxed);
        if seq >= last && mine.fetch_max(last, Relaxed) < last {
            self.done.fetch_add(1, Relaxed);
            self.notify.notify_one();
        }
    }

    /// p50 and p99 latency in ms over events that were seen.
    fn percentiles(&self) -> (f64, f64, usize) {
        let mut v: Vec<u32> = self
            .latency_us
            .iter()
            .map(|a| a.load(Relaxed))
            .filter(|&x| x > 0)
            .map(|x| x - 1)
            .collect();
        if v.is_empty() {
            return (f64::NAN, f64::NAN, 0);
        }
        v.sort_unstable();
        let p = |q: f64| v[((v.len() as f64 - 1.0) * q) as usize] as f64 / 1000.0;
        (p(0.5), p(0.99), v.len())
    }

    /// The phase that ends when every subscriber has seen event `last`.
    fn expect(&self, last: usize) {
        self.done.store(0, Relaxed);
        self.last.store(last, Relaxed);
    }

    /// Waits until `subscribers` have each seen event `last`.
    async fn wait_done(&self, subscribers: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.done.load(Relaxed) < subscribers {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let _ = actix_rt::time::timeout(
                left.min(Duration::from_millis(200)),
                self.notify.notified(),
            )
            .await;
        }
        true
    }
}

/// The target the 1-subscriber jobs keep: the whole label set (as an agent does before
/// relabelling), shared, not copied.
type Kept = Labels;

// ---------------------------------------------------------------------------------
// Rows.

struct Row {
    scenario: String,
    subs: usize,
    events: usize,
    m: Measured,
    p50_ms: f64,
    p99_ms: f64,
    extra: String,
}

fn header() {
    println!(
        "| {:<12} | {:>4} | {:>8} | {:>7} | {:>10} | {:>7} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | notes",
        "scenario",
        "subs",
        "events",
        "wall_s",
        "events/s",
        "cpu_s",
        "cpu_us/ev",
        "allocs/ev",
        "p50_ms",
        "p99_ms",
        "peak_mb",
    );
    println!(
        "|{}|------|----------|---------|------------|---------|-----------|-----------|----------|----------|----------|------",
        "-".repeat(14)
    );
}

impl Row {
    fn events_per_s(&self) -> f64 {
        self.events as f64 / self.m.wall_s
    }
    fn print(&self) {
        let ev = self.events.max(1) as f64;
        println!(
            "| {:<12} | {:>4} | {:>8} | {:>7.2} | {:>10.0} | {:>7.2} | {:>9.2} | {:>9.1} | {:>8.1} | {:>8.1} | {:>8.0} | {}; {}",
            self.scenario,
            self.subs,
            self.events,
            self.m.wall_s,
            self.events_per_s(),
            self.m.cpu_s,
            self.m.cpu_s * 1e6 / ev,
            self.m.allocs as f64 / ev,
            self.p50_ms,
            self.p99_ms,
            self.m.peak_rss_mb,
            self.extra,
            self.m.threads_note()
        );
    }
}

// ---------------------------------------------------------------------------------
// Scenarios.

fn options(args: &Args) -> EngineOptions {
    let defaults = EngineOptions::default();
    EngineOptions {
        flush_interval: Duration::from_millis(args.flush_ms),
        subscriber_in_flight: args
            .subscriber_in_flight
            .unwrap_or(defaults.subscriber_in_flight),
        semantics: args.semantics,
        list_mode: args.list_mode,
        encoding: args.encoding,
        ..defaults
    }
}

fn config(args: &Args, server: &Server, role: Role) -> SdConfig {
    let mut c = SdConfig::new(role, server.url.clone());
    c.attach_metadata = AttachMetadata {
        node: true,
        namespace: false,
        ..AttachMetadata::default()
    };
    if let Some(t) = &args.token {
        c.http.bearer_token = Secret(t.clone());
    }
    c
}

fn arbiters(n: usize) -> Vec<actix::Arbiter> {
    (0..n).map(|_| actix::Arbiter::new()).collect()
}

async fn subscribe<T, F>(
    discovery: &Discovery,
    arbiters: &[actix::Arbiter],
    i: usize,
    config: &SdConfig,
    ctor: F,
) -> Subscription<T>
where
    T: Clone + Send + Sync + Unpin + 'static,
    F: Fn(&Labels) -> Option<T> + Send + Sync + 'static,
{
    let r = if arbiters.is_empty() {
        discovery.subscribe(config, ctor).await
    } else {
        discovery
            .subscribe_on(&arbiters[i % arbiters.len()].handle(), config, ctor)
            .await
    };
    r.expect("subscribes")
}

/// Role pod, attach node: sync (LIST of pods and nodes until every target is at the
/// subscriber), then flood (the events until every subscriber saw the last one).
/// `subs == 1` keeps whole label sets; more subscribers have a cheap constructor.
async fn pod_run(
    args: &Args,
    server: &Server,
    subs: usize,
    flood: bool,
    name: &str,
) -> (Option<Row>, Option<Row>) {
    server.gate(0);
    let baseline = {
        trim_heap();
        rss_mb()
    };
    let probe = Probe::new(args.events);
    let extra_arbiters = arbiters(args.sub_arbiters);
    let sync_meter = Meter::start();
    let discovery = Discovery::start(options(args));
    let cfg = config(args, server, Role::Pod);
    let (full, cheap) = subscribe_pods(&discovery, &extra_arbiters, &cfg, subs, &probe).await;
    for s in &full {
        s.synced().await;
    }
    for s in &cheap {
        s.synced().await;
    }
    let synced = sync_meter.finish();
    let targets = match (full.first(), cheap.first()) {
        (Some(s), _) => s.targets().await.len(),
        (_, Some(s)) => s.targets().await.len(),
        _ => 0,
    };
    let sync_row = Row {
        scenario: "sync".into(),
        subs,
        events: args.pods + args.nodes,
        m: synced,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        extra: format!(
            "objects/s; {targets} targets at the subscriber; rss before {baseline:.0} MB; \
             permanent strings {:.0} KB",
            kubesd::model::permanent_string_bytes() as f64 / 1024.0
        ),
    };
    let flood_row = if flood {
        Some(pod_flood(args, server, &probe, subs, name, discovery.metrics()).await)
    } else {
        None
    };
    for s in full {
        s.stop().await;
    }
    for s in cheap {
        s.stop().await;
    }
    drop(discovery);
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    trim_heap();
    let after = rss_mb();
    for a in extra_arbiters {
        a.stop();
    }
    let note = format!("; rss after stop {after:.0} MB");
    let (mut sync_row, mut flood_row) = (sync_row, flood_row);
    match &mut flood_row {
        Some(r) => r.extra.push_str(&note),
        None => sync_row.extra.push_str(&note),
    }
    (Some(sync_row), flood_row)
}

/// `subs` subscriptions to the pods of `cfg`, each observed by `probe`: one keeps
/// every target (`full`), more keep a count each (`cheap`).
async fn subscribe_pods(
    discovery: &Discovery,
    extra_arbiters: &[actix::Arbiter],
    cfg: &SdConfig,
    subs: usize,
    probe: &Arc<Probe>,
) -> (Vec<Subscription<Kept>>, Vec<Subscription<u32>>) {
    let mut full: Vec<Subscription<Kept>> = Vec::new();
    let mut cheap: Vec<Subscription<u32>> = Vec::new();
    for i in 0..subs {
        let (p, mine) = (Arc::clone(probe), Arc::new(AtomicUsize::new(0)));
        if subs == 1 {
            full.push(
                subscribe(discovery, extra_arbiters, i, cfg, move |l: &Labels| {
                    p.observe(l, &mine);
                    Some(l.clone())
                })
                .await,
            );
        } else {
            cheap.push(
                subscribe(discovery, extra_arbiters, i, cfg, move |l: &Labels| {
                    p.observe(l, &mine);
                    Some(l.len() as u32)
                })
                .await,
            );
        }
    }
    (full, cheap)
}

/// The flood after sync: `args.events` events, until every subscriber saw the last
/// (or, against an external server, the watcher decoded them all); its row.
async fn pod_flood(
    args: &Args,
    server: &Server,
    probe: &Probe,
    subs: usize,
    name: &str,
    metrics: &Metrics,
) -> Row {
    let events = args.events;
    probe.expect(events);
    let coalesced0 = metrics.engine.subscriber_coalesced.get();
    let meter = Meter::start();
    let modified0 = metrics.role_total(Role::Pod, |m| m.events_modified.get());
    server.gate(events);
    let ok = if server.addr.is_some() {
        probe
            .wait_done(subs, Duration::from_secs(args.timeout_s))
            .await
    } else {
        let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
        while metrics.role_total(Role::Pod, |m| m.events_modified.get()) - modified0 < events as u64
            && Instant::now() < deadline
        {
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
        Instant::now() < deadline
    };
    let m = meter.finish();
    let (p50, p99, seen) = probe.percentiles();
    let seen_total = probe.seen.load(Relaxed);
    Row {
        scenario: name.into(),
        subs,
        events,
        m,
        p50_ms: p50,
        p99_ms: p99,
        extra: format!(
            "{}{seen} distinct events seen, {:.2} per subscriber; coalesced {}x",
            if ok { "" } else { "TIMED OUT; " },
            seen_total as f64 / subs as f64 / events as f64,
            metrics.engine.subscriber_coalesced.get() - coalesced0,
        ),
    }
}

/// Role endpoints with attach node over `services` services: pod churn dirties the one
/// endpoints object that references each pod; flushes recompute only those.
async fn deps_run(args: &Args, server: &Server) -> Vec<Row> {
    server.gate(0);
    let probe = Probe::new(args.events);
    let sync_meter = Meter::start();
    let discovery = Discovery::start(options(args));
    let cfg = config(args, server, Role::Endpoints);
    let (p, mine) = (Arc::clone(&probe), Arc::new(AtomicUsize::new(0)));
    let sub = discovery
        .subscribe(&cfg, move |l: &Labels| {
            p.observe(l, &mine);
            Some(l.clone())
        })
        .await
        .expect("subscribes");
    sub.synced().await;
    let synced = sync_meter.finish();
    let targets = sub.targets().await.len();
    let mut rows = vec![Row {
        scenario: "deps-sync".into(),
        subs: 1,
        events: args.pods + args.nodes + 2 * args.services,
        m: synced,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        extra: format!("objects/s; {targets} endpoint targets"),
    }];
    // Let the sync's own flushes settle, then one event: exactly one endpoints object
    // must be recomputed.
    actix_rt::time::sleep(Duration::from_millis(args.flush_ms * 2 + 200)).await;
    let (f0, r0) = (
        discovery.metrics().engine.flushes.get(),
        discovery.metrics().engine.flush_recomputed.get(),
    );
    probe.expect(1);
    server.gate(1);
    probe.wait_done(1, Duration::from_secs(60)).await;
    actix_rt::time::sleep(Duration::from_millis(args.flush_ms + 200)).await;
    let one = discovery.metrics().engine.flush_recomputed.get() - r0;
    let _ = f0;

    // The churn.
    let events = args.deps_events.max(2);
    probe.expect(events);
    let (f0, r0, u0) = (
        discovery.metrics().engine.flushes.get(),
        discovery.metrics().engine.flush_recomputed.get(),
        discovery.metrics().engine.target_updates.get(),
    );
    let meter = Meter::start();
    server.gate(events);
    let ok = probe
        .wait_done(1, Duration::from_secs(args.timeout_s))
        .await;
    let m = meter.finish();
    let flushes = discovery.metrics().engine.flushes.get() - f0;
    let recomputed = discovery.metrics().engine.flush_recomputed.get() - r0;
    let updates = discovery.metrics().engine.target_updates.get() - u0;
    let (p50, p99, _) = probe.percentiles();
    let cpu_per_recompute = m.cpu_s * 1e6 / recomputed.max(1) as f64;
    rows.push(Row {
        scenario: "deps".into(),
        subs: 1,
        events: events - 1,
        m,
        p50_ms: p50,
        p99_ms: p99,
        extra: format!(
            "{}1 pod event -> {one} endpoints recomputed; churn: {flushes} flushes recomputed {recomputed} endpoints ({:.1}/flush, {:.0} us CPU per recompute incl. decode), {updates} object updates pushed",
            if ok { "" } else { "TIMED OUT; " },
            recomputed as f64 / flushes.max(1) as f64,
            cpu_per_recompute,
        ),
    });
    sub.stop().await;
    drop(discovery);
    rows
}

// ---------------------------------------------------------------------------------
// The service path.

/// A Prometheus config of `jobs` pod jobs against `api_server`, each relabelling as
/// users commonly do: the pod's labels mapped, namespace and pod copied from the meta
/// labels, and a drop rule that never matches.
fn service_config(api_server: &str, jobs: usize, membership: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(handover) = membership {
        out.push_str(&format!(
            "membership:\n  namespace: {}\n  label_selector: {}\n  api_server: {api_server}\n  \
             zone_aware: true\n  weight_from: annotation:kubesd.io/weight\n  handover: {handover}\n",
            flood_members::NAMESPACE,
            flood_members::SELECTOR,
        ));
    }
    out.push_str("scrape_configs:\n");
    for j in 0..jobs {
        out.push_str(&format!(
            r#"  - job_name: pods-{j}
    kubernetes_sd_configs:
      - role: pod
        api_server: {api_server}
    relabel_configs:
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Unknown
        action: drop
"#
        ));
    }
    out
}

/// The roles scenario's config: one job per role a cluster's monitoring commonly uses
/// (pod, endpoints, service, node) against `api_server`, each relabelling as users do.
fn roles_config(api_server: &str) -> String {
    let mut out = String::from("scrape_configs:\n");
    for (role, name) in [
        ("pod", "pod"),
        ("endpoints", "service"),
        ("service", "service"),
        ("node", "node"),
    ] {
        out.push_str(&relabelling_job(role, role, name, api_server));
    }
    out
}

/// The clusters scenario's config: the roles scenario's pod job twice, against the
/// flood server as `127.0.0.1` and as `localhost`. Two API server URLs are two
/// independent groups (as two clusters are), each listing and labelling every pod.
fn clusters_config(api_server: &str) -> String {
    let other = api_server.replace("127.0.0.1", "localhost");
    format!(
        "scrape_configs:\n{}{}",
        relabelling_job("pod", "pod", "pod", api_server),
        relabelling_job("pod-localhost", "pod", "pod", &other)
    )
}

/// A job of role `role` against `api_server` that maps the labels of its objects (of
/// kind `name`: an endpoints object's are its service's) and copies their name.
fn relabelling_job(job: &str, role: &str, name: &str, api_server: &str) -> String {
    format!(
        r#"  - job_name: {job}
    kubernetes_sd_configs:
      - role: {role}
        api_server: {api_server}
    relabel_configs:
      - action: labelmap
        regex: __meta_kubernetes_{name}_label_(.+)
      - source_labels: [__meta_kubernetes_{name}_name]
        target_label: {name}
"#
    )
}

/// One plain HTTP/1.1 GET on a new connection; the status and the body's length.
fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, usize)> {
    let mut s = TcpStream::connect(addr)?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n"
    )?;
    let mut r = BufReader::new(s);
    let mut status = String::new();
    r.read_line(&mut status)?;
    let code = status
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut len = 0;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        len += n;
    }
    Ok((code, len))
}

/// The jobs of an in-process `kubesd run`.
#[derive(Clone, Copy)]
enum BenchJobs {
    /// This many relabelling pod jobs.
    Pods(usize),
    /// The roles scenario's four jobs ([`roles_config`]).
    Roles,
    /// The clusters scenario's two pod jobs ([`clusters_config`]).
    Clusters,
}

/// `kubesd run`'s job set for `jobs` against `server`, served over HTTP SD on a free
/// port: the set, the server's handle and its address.
async fn start_service(
    args: &Args,
    server: &Server,
    jobs: BenchJobs,
    membership: Option<&str>,
) -> (
    kubesd::service::JobSet,
    actix_web::dev::ServerHandle,
    String,
) {
    use kubesd::service::{JobSet, JobSetOptions, ServiceState, Shard, serve_http};
    use std::collections::BTreeMap;
    use std::sync::RwLock;

    let text = match jobs {
        BenchJobs::Roles => roles_config(&server.url),
        BenchJobs::Clusters => clusters_config(&server.url),
        BenchJobs::Pods(n) => service_config(&server.url, n, membership),
    };
    let config = kubesd::promconfig::parse_config(&text, std::path::Path::new("bench.yml"))
        .expect("the bench's config loads");
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let mut set = JobSet::new(
        Discovery::start(options(args)),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: Duration::from_millis(args.publish_ms),
        },
        Arc::clone(&published),
    );
    set.apply(&config).await.expect("jobs start");
    let state = Arc::new(ServiceState {
        jobs: published,
        reload: None,
        engine_metrics: Default::default(),
        service_metrics: Default::default(),
    });
    let (http, bound) =
        serve_http("127.0.0.1:0".parse().expect("address"), state, None).expect("listens");
    let handle = http.handle();
    actix_rt::spawn(http);
    (set, handle, bound.to_string())
}

/// `kubesd run` in-process with `jobs` jobs: sync (until `/ready` answers 200 and every
/// job actor has relabelled every pod once: `/ready` says the discovery listed, not that
/// the relabelled targets are all in `/sd`), then
/// the flood (until every job's target count shows the deletion that follows the last
/// event), with a reader polling the first job's `/sd` throughout.
async fn service_run(args: &Args, server: &Server, jobs: usize) -> Vec<Row> {
    server.gate(0);
    trim_heap();
    let baseline = rss_mb();
    let sync_meter = Meter::start();
    let (mut set, http, addr) = start_service(args, server, BenchJobs::Pods(jobs), None).await;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    wait_synced(&addr, &set, (args.pods * set.job_actors()) as u64, deadline).await;
    let synced = sync_meter.finish();
    let targets0: Vec<usize> = job_statuses(&set).iter().map(|s| s.targets).collect();
    let work0 = set.work();
    let mut rows = vec![Row {
        scenario: "service-sync".into(),
        subs: jobs,
        events: args.pods,
        m: synced,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        extra: format!(
            "pods/s; {} targets per job; {} job actor(s); rss before {baseline:.0} MB",
            targets0.first().copied().unwrap_or(0),
            set.job_actors(),
        ),
    }];
    let idle_ms = idle_sd_requests(&addr).await;
    let stop = Arc::new(AtomicBool::new(false));
    let reader = spawn_sd_reader(&addr, Duration::from_millis(args.sd_poll_ms), &stop);
    let events = args.events;
    let meter = Meter::start();
    server.gate(events + 1);
    let ok = wait_targets_below(&set, &targets0, deadline).await;
    let m = meter.finish();
    stop.store(true, Relaxed);
    // Joined off this thread, as the fleet's consumers are: a request in flight needs
    // the job actor, which runs here (a blocking join here deadlocked with it).
    let (mut latencies, body_bytes) = actix_rt::task::spawn_blocking(move || reader.join())
        .await
        .expect("joins the reader")
        .expect("reader");
    latencies.sort_by(f64::total_cmp);
    let pct = |q: f64| percentile(&latencies, q);
    let work = set.work();
    let last = job_statuses(&set);
    let visible = last.first().map(|s| s.latency.count()).unwrap_or(0);
    rows.push(Row {
        scenario: "service".into(),
        subs: jobs,
        events,
        m,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        extra: format!(
            "{}p50/p99 are /sd/pods-0 ({} requests, {:.1} MB body; before the flood: {} ms); \
             job actors relabelled {} objects, saw {} unseen changes, \
             changed {}, changed {} bodies; job 0 applied {} object changes ({visible} observed)",
            if ok { "" } else { "TIMED OUT; " },
            latencies.len(),
            body_bytes as f64 / 1e6,
            idle_ms.join("/"),
            work.objects_relabelled - work0.objects_relabelled,
            work.objects_unseen - work0.objects_unseen,
            work.objects_changed - work0.objects_changed,
            work.bodies_changed - work0.bodies_changed,
            last.first().map_or(0, |s| s.applied),
        ),
    });
    let api_note = dropped_listing(&addr).await;
    set.stop_all().await;
    http.stop(true).await;
    drop(set);
    actix_rt::time::sleep(Duration::from_millis(500)).await;
    trim_heap();
    let note = format!("{api_note}; rss after stop {:.0} MB", rss_mb());
    if let Some(r) = rows.last_mut() {
        r.extra.push_str(&note);
    }
    rows
}

/// Each job's status, in the set's order.
fn job_statuses(set: &kubesd::service::JobSet) -> Vec<kubesd::service::JobStatus> {
    set.jobs().iter().map(|(_, job)| job.status()).collect()
}

/// Waits until every job serves fewer targets than `before` (the flood removed some),
/// or `deadline`; false at the deadline.
async fn wait_targets_below(
    set: &kubesd::service::JobSet,
    before: &[usize],
    deadline: Instant,
) -> bool {
    while Instant::now() < deadline {
        let now = job_statuses(set);
        if now.iter().zip(before).all(|(s, t0)| s.targets < *t0) {
            return true;
        }
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
    false
}

/// Waits until `/ready` answers 200 and the job actors have relabelled `everything`
/// objects, or `deadline`.
async fn wait_synced(
    addr: &str,
    set: &kubesd::service::JobSet,
    everything: u64,
    deadline: Instant,
) {
    loop {
        let a = addr.to_string();
        let ready = actix_rt::task::spawn_blocking(move || http_get(&a, "/ready"))
            .await
            .ok()
            .and_then(|r| r.ok())
            .is_some_and(|(code, _)| code == 200);
        if ready || Instant::now() > deadline {
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    while set.work().objects_relabelled < everything && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
}

/// `kubesd run` with `jobs` (a job per role, pod, endpoints, service and node; or the
/// pod job against two API server URLs) syncing 100k pods: until `/ready` answers 200
/// and the job actors have relabelled no object for a second; the sync ends at the last
/// relabelling (so the quiet second is not counted, though its little CPU is).
async fn roles_run(args: &Args, server: &Server, jobs: BenchJobs) -> Vec<Row> {
    server.gate(0);
    trim_heap();
    let meter = Meter::start();
    let started = Instant::now();
    let (mut set, http, addr) = start_service(args, server, jobs, None).await;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    wait_synced(&addr, &set, 0, deadline).await;
    let (mut seen, mut last_change) = (set.work().objects_relabelled, Instant::now());
    while last_change.elapsed() < Duration::from_secs(1) && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
        let now = set.work().objects_relabelled;
        if now != seen {
            (seen, last_change) = (now, Instant::now());
        }
    }
    let mut m = meter.finish();
    m.wall_s = (last_change - started).as_secs_f64();
    let targets: Vec<String> = job_statuses(&set)
        .iter()
        .map(|s| s.targets.to_string())
        .collect();
    let (scenario, events) = match jobs {
        BenchJobs::Clusters => ("clusters-sync", 2 * args.pods),
        _ => ("roles-sync", args.pods + args.nodes + 2 * args.services),
    };
    let row = Row {
        scenario: scenario.into(),
        subs: set.job_actors(),
        events,
        m,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        extra: format!(
            "objects/s; targets per job {}; objects relabelled {seen}",
            targets.join("/")
        ),
    };
    http.stop(false).await;
    set.stop_all().await;
    vec![row]
}

/// `/sd/pods-0` three times with nothing else running, in ms: the transfer's floor,
/// against which the flood's latencies read (the first also assembles the body).
async fn idle_sd_requests(addr: &str) -> Vec<String> {
    let mut idle_ms = Vec::new();
    for _ in 0..3 {
        let a = addr.to_string();
        let t = Instant::now();
        let ok = actix_rt::task::spawn_blocking(move || http_get(&a, "/sd/pods-0"))
            .await
            .ok()
            .and_then(|r| r.ok())
            .is_some_and(|(code, _)| code == 200);
        if ok {
            idle_ms.push(format!("{:.0}", t.elapsed().as_secs_f64() * 1000.0));
        }
    }
    idle_ms
}

/// The reader: one job's `/sd`, `every` so often, on a thread of its own until `stop`;
/// its latencies in ms and the last body's size.
fn spawn_sd_reader(
    addr: &str,
    every: Duration,
    stop: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<(Vec<f64>, usize)> {
    let (stop, addr) = (Arc::clone(stop), addr.to_string());
    std::thread::spawn(move || {
        let mut latencies = Vec::new();
        let mut bytes = 0;
        while !stop.load(Relaxed) {
            let t = Instant::now();
            if let Ok((200, len)) = http_get(&addr, "/sd/pods-0") {
                latencies.push(t.elapsed().as_secs_f64() * 1000.0);
                bytes = len;
            }
            std::thread::sleep(every.saturating_sub(t.elapsed()));
        }
        (latencies, bytes)
    })
}

/// The value at quantile `q` of `sorted` (NaN when empty).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * q) as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// The targets API's dropped listing of job `pods-0`, timed, as a note for the row: it
/// relabels every one of the job's objects in its actor (the API unused until then, so
/// the peak RSS measured before is that of a kubesd nobody asks).
async fn dropped_listing(addr: &str) -> String {
    let a = addr.to_string();
    let t = Instant::now();
    let dropped = "/api/v1/targets?state=dropped&scrapePool=pods-0";
    let listed = actix_rt::task::spawn_blocking(move || http_get(&a, dropped)).await;
    match listed.ok().and_then(|r| r.ok()) {
        Some((code, len)) => format!(
            "; {dropped}: {code} in {:.0} ms, {:.1} MB",
            t.elapsed().as_secs_f64() * 1000.0,
            len as f64 / 1e6
        ),
        None => format!("; {dropped}: failed"),
    }
}

/// The fleet: one pod job served by `kubesd run`'s path, a flood paced at
/// `--fleet-rate`, and (with `--fleet-views on`) the view consumers polling throughout.
/// With `--fleet-members`, a `membership` section too, whose pods roll while the flood
/// runs (with the views off as well: the same kubesd serving no views).
async fn fleet_run(args: &Args, server: &Server) -> Vec<Row> {
    server.gate(0);
    server.roll(0);
    let sync_meter = Meter::start();
    let membership = (args.fleet_members > 0).then_some(args.fleet_handover.as_str());
    let (mut set, http, addr) = start_service(args, server, BenchJobs::Pods(1), membership).await;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    while set.work().objects_relabelled < args.pods as u64 && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let synced = sync_meter.finish();
    let job = set.jobs().into_iter().next().expect("one job").1;
    let targets0 = job.status().targets;
    let views = args.fleet_views == "on";
    let consumers = fleet_consumers_of(args);
    let coverage = Arc::new(Mutex::new(fleet_coverage::Coverage::new(
        args.pods,
        args.fleet_members,
    )));
    // Each view asked for once before the flood: the first request for a kind builds
    // its index (every object relabelled once), timed here apart from the polling.
    let first = Instant::now();
    let mut uncovered = None;
    if views {
        let (a, c, cov) = (addr.clone(), consumers.clone(), Arc::clone(&coverage));
        uncovered = actix_rt::task::spawn_blocking(move || first_asks(&a, &c, &cov, deadline))
            .await
            .ok();
    }
    let first_s = first.elapsed().as_secs_f64();
    // The flood's meter resets the peak: the views' first build is taken here.
    let peak_after_first = peak_rss_mb();
    let stop = Arc::new(AtomicBool::new(false));
    let polling = views.then(|| {
        let c = consumers.clone();
        fleet_consumers::poll(addr.clone(), c, 8, Arc::clone(&coverage), Arc::clone(&stop))
    });
    let meter = Meter::start();
    let (ok, steps) = fleet_flood(args, server, &job, targets0, deadline).await;
    let m = meter.finish();
    stop.store(true, Relaxed);
    // Joined off this thread: a request in flight needs the job actor, which runs here.
    let polled = match polling {
        Some(c) => actix_rt::task::spawn_blocking(move || c.join().expect("consumers"))
            .await
            .expect("consumers joined"),
        None => fleet_consumers::Polled::default(),
    };
    let idle = match views {
        true => idle_collector_asks(&addr, &consumers).await,
        false => String::new(),
    };
    let sync_row = Row {
        scenario: "fleet-sync".into(),
        subs: usize::from(views),
        events: args.pods,
        m: synced,
        p50_ms: f64::NAN,
        p99_ms: f64::NAN,
        extra: format!("pods/s; {targets0} targets; views asked once in {first_s:.1} s"),
    };
    let flood = FleetFlood {
        ok,
        consumers: if views { consumers.len() } else { 0 },
        m,
        peak_after_first,
        steps,
        uncovered,
        idle,
    };
    let row = fleet_row(args, flood, polled, &coverage.lock().expect("coverage"));
    let rows = vec![sync_row, row];
    set.stop_all().await;
    http.stop(true).await;
    rows
}

/// Asks every consumer's path once; the member views' answers go to `coverage`, waiting
/// first (until `deadline`) for the member watch to have assigned some targets. The
/// targets no member holds then, once every member has answered.
fn first_asks(
    addr: &str,
    consumers: &[fleet_consumers::Consumer],
    coverage: &Mutex<fleet_coverage::Coverage>,
    deadline: Instant,
) -> usize {
    if let Some(c) = consumers.iter().find(|c| c.member.is_some()) {
        while Instant::now() < deadline {
            match fleet_consumers::get_with_etag(addr, &c.path, "") {
                Ok((200, len, _)) if len > 2 => break,
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
    let mut scanner = fleet_coverage::Scanner::default();
    for c in consumers {
        scanner.clear();
        let scan = c.member.is_some().then_some(&mut scanner);
        let _ = fleet_consumers::get(addr, &c.path, "", scan);
        if let Some(m) = c.member {
            coverage.lock().expect("coverage").update(m, &mut scanner);
        }
    }
    let mut coverage = coverage.lock().expect("coverage");
    if consumers.iter().any(|c| c.member.is_some()) {
        coverage.arm()
    } else {
        0
    }
}

/// What the fleet scenario's flood measured, beside what its consumers saw.
struct FleetFlood {
    /// False when it timed out.
    ok: bool,
    /// How many consumers polled.
    consumers: usize,
    /// The process over the flood.
    m: Measured,
    /// The peak RSS once the views were first asked for, MB.
    peak_after_first: f64,
    /// Roll steps taken during the flood.
    steps: usize,
    /// Targets no member view held once every member had answered before the flood.
    uncovered: Option<usize>,
    /// A collector's share asked after the flood ([`idle_collector_asks`]).
    idle: String,
}

/// A collector's share asked three times once the flood is over, with nothing else
/// running: the transfer's floor, against which the collectors' latencies read (ms,
/// and the answer's size).
async fn idle_collector_asks(addr: &str, consumers: &[fleet_consumers::Consumer]) -> String {
    let Some(c) = consumers.iter().find(|c| c.kind == "collector") else {
        return String::new();
    };
    let (mut ms, mut mb) = (Vec::new(), 0.0);
    for _ in 0..3 {
        let (a, p) = (addr.to_string(), c.path.clone());
        let t = Instant::now();
        let got =
            actix_rt::task::spawn_blocking(move || fleet_consumers::get_with_etag(&a, &p, ""))
                .await
                .ok()
                .and_then(|r| r.ok());
        if let Some((200, len, _)) = got {
            ms.push(format!("{:.0}", t.elapsed().as_secs_f64() * 1000.0));
            mb = len as f64 / 1e6;
        }
    }
    format!("idle collector {} ms ({mb:.0} MB); ", ms.join("/"))
}

/// The fleet scenario's flood row: latencies over all the consumers' requests, the
/// process's CPU less the consumers', and the peaks; with members, the member views'
/// and collectors' latencies, gaps and cross-zone targets.
fn fleet_row(
    args: &Args,
    flood: FleetFlood,
    mut polled: fleet_consumers::Polled,
    coverage: &fleet_coverage::Coverage,
) -> Row {
    let FleetFlood {
        ok,
        consumers,
        m,
        peak_after_first,
        steps,
        uncovered,
        idle,
    } = flood;
    let (p50, p99) = (polled.quantile(0.5), polled.quantile(0.99));
    let mut kinds = String::new();
    for kind in ["node", "shard", "member", "collector"] {
        let (k50, k99) = (
            polled.kind_quantile(kind, 0.5),
            polled.kind_quantile(kind, 0.99),
        );
        if k50.is_finite() {
            let n = polled.by_kind.get(kind).map_or(0, Vec::len);
            kinds.push_str(&format!("{kind} p50/p99 {k50:.1}/{k99:.1} ms ({n}); "));
        }
    }
    let members = if args.fleet_members > 0 {
        format!(
            "{} members, {steps} roll steps, handover {}; member polls {}: gaps after {} \
             (most {}), most cross-zone in one answer {}, unknown addresses {}, \
             uncovered before the flood {:?}; ",
            args.fleet_members,
            args.fleet_handover,
            coverage.polls,
            coverage.gap_polls,
            coverage.max_gap,
            coverage.max_cross_zone,
            coverage.unknown,
            uncovered,
        )
    } else {
        String::new()
    };
    let extra = format!(
        "{}views {}: {} consumers: {} answers 200, {} 304, {} failed, {:.1} MB; {kinds}\
         {idle}{members}process less consumers {:.3} of a core; peak rss {:.0} MB \
         (synced and views asked {:.0} MB, flood {:.0} MB)",
        if ok { "" } else { "TIMED OUT; " },
        args.fleet_views,
        consumers,
        polled.ok,
        polled.not_modified,
        polled.failed,
        polled.bytes as f64 / 1e6,
        (m.cpu_s - polled.cpu_s) / m.wall_s,
        peak_after_first.max(m.peak_rss_mb),
        peak_after_first,
        m.peak_rss_mb,
    );
    Row {
        scenario: "fleet".into(),
        subs: usize::from(consumers > 0),
        events: args.events,
        p50_ms: p50,
        p99_ms: p99,
        extra,
        m,
    }
}

/// The consumers: one per node and one per shard (every `--fleet-poll-s`), then per
/// member a scraper (`?member=`) and a collector (the allocator's share).
/// A consumer's place in the list is its phase in the polling interval, so the shard
/// consumers are spread among the node consumers as scrapers started at different
/// times are, not all polling in the same instant.
fn fleet_consumers_of(args: &Args) -> Vec<fleet_consumers::Consumer> {
    use fleet_consumers::Consumer;
    let every = Duration::from_secs(args.fleet_poll_s);
    let view = |path: String, kind| Consumer {
        path,
        every,
        kind,
        member: None,
    };
    let mut all: Vec<Consumer> = (0..args.fleet_nodes)
        .map(|n| view(format!("/sd/pods-0?node=node-{n:04}"), "node"))
        .collect();
    let spacing = (args.fleet_nodes / args.fleet_shards.max(1)).max(1);
    // Shard `i` at place `i * (spacing + 1)`: every shard then `spacing` node consumers.
    for i in 0..args.fleet_shards {
        let at = (i * (spacing + 1)).min(all.len());
        let path = format!("/sd/pods-0?shard={i}&shards={}", args.fleet_shards);
        all.insert(at, view(path, "shard"));
    }
    for m in 0..args.fleet_members {
        let name = flood_members::member_name(m);
        all.push(Consumer {
            path: format!("/sd/pods-0?member={name}"),
            every: Duration::from_secs_f64(args.fleet_member_poll_s),
            kind: "member",
            member: Some(m),
        });
        if args.fleet_collector_poll_s > 0.0 {
            all.push(Consumer {
                path: format!("/jobs/pods-0/targets?collector_id={name}"),
                every: Duration::from_secs_f64(args.fleet_collector_poll_s),
                kind: "collector",
                member: None,
            });
        }
    }
    all
}

/// Opens the gate at `--fleet-rate` events/s until every event is out, rolling the
/// members one step every `--fleet-roll-ms` meanwhile, then waits for the deletion that
/// follows the last event to show in the job's target count. Whether it did, and the
/// roll steps taken.
async fn fleet_flood(
    args: &Args,
    server: &Server,
    job: &kubesd::service::Job,
    targets0: usize,
    deadline: Instant,
) -> (bool, usize) {
    let start = Instant::now();
    let mut upto = 0;
    let mut steps = 0;
    while upto <= args.events && Instant::now() < deadline {
        let elapsed = start.elapsed();
        let due = (elapsed.as_secs_f64() * args.fleet_rate as f64) as usize;
        let next = due.min(args.events + 1);
        if next > upto {
            upto = next;
            server.gate(upto);
        }
        let step = (elapsed.as_millis() / u128::from(args.fleet_roll_ms.max(1))) as usize;
        if args.fleet_members > 0 && step > steps {
            steps = step;
            server.roll(steps);
        }
        if upto > args.events {
            break;
        }
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
    while Instant::now() < deadline {
        let status = job.status();
        if status.targets < targets0 {
            return (true, steps);
        }
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
    (false, steps)
}

/// serde_json alone, one core: the same watch byte stream (the same pod events) framed
/// and decoded into the same structs, no engine.
fn ceiling(args: &Args) -> f64 {
    let distinct = 1000.min(args.pods);
    let mut stream = Vec::new();
    for i in 0..distinct {
        let pod = flood_server::bench_pod_json(i, false);
        stream
            .extend_from_slice(format!("{{\"type\":\"MODIFIED\",\"object\":{pod}}}\n").as_bytes());
    }
    let rounds = args.events.div_ceil(distinct);
    let t = Instant::now();
    let mut decoded = 0usize;
    let mut lines = LineBuffer::new(64 << 20);
    for _ in 0..rounds {
        for chunk in stream.chunks(64 * 1024) {
            lines
                .push(chunk, |line| {
                    if let Ok(WatchEvent::Modified(o)) = decode_event(Role::Pod, line) {
                        std::hint::black_box(o);
                        decoded += 1;
                    }
                })
                .expect("lines");
        }
    }
    assert_eq!(decoded, rounds * distinct);
    decoded as f64 / t.elapsed().as_secs_f64()
}

/// Every scenario `args` names, in order, each row printed as it comes.
async fn run_scenarios(args: &Args, server: &Server) -> Vec<Row> {
    let run = |s: &str| args.scenario.iter().any(|x| x == s);
    let mut rows = Vec::new();
    header();
    if run("sync") || run("flood") {
        let (sync, flood) = pod_run(args, server, 1, run("flood"), "flood").await;
        keep(&mut rows, [sync, flood].into_iter().flatten());
    }
    if run("fanout") {
        for &n in &args.subscribers {
            let (_, flood) = pod_run(args, server, n, true, "fanout").await;
            keep(&mut rows, flood);
        }
    }
    if run("deps") {
        keep(&mut rows, deps_run(args, server).await);
    }
    if run("fleet") {
        keep(&mut rows, fleet_run(args, server).await);
    }
    if run("roles") {
        keep(&mut rows, roles_run(args, server, BenchJobs::Roles).await);
    }
    if run("clusters") {
        keep(
            &mut rows,
            roles_run(args, server, BenchJobs::Clusters).await,
        );
    }
    if run("service") {
        for &n in &args.jobs {
            keep(&mut rows, service_run(args, server, n).await);
        }
    }
    rows
}

/// Prints `new` rows and keeps them.
fn keep(rows: &mut Vec<Row>, new: impl IntoIterator<Item = Row>) {
    for r in new {
        r.print();
        rows.push(r);
    }
}

fn main() {
    let mut args = Args::parse();
    if args.serve {
        flood_server::serve(flood_server::ServerSpec {
            pods: args.pods,
            nodes: args.nodes,
            services: args.services,
            events: args.events,
            touch_label: args.flood_touches == "label",
            protobuf: args.encoding == WireEncoding::Auto,
            members: args.fleet_members,
        });
    }
    args.apply_quick();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .try_init();
    COUNT_ALLOCS.store(!args.no_count_allocs, Relaxed);
    println!(
        "flood bench: pods={} nodes={} events={} flood_touches={} encoding={} services={} deps_events={} subscribers={:?} sub_arbiters={} cores={}",
        args.pods,
        args.nodes,
        args.events,
        args.flood_touches,
        args.encoding,
        args.services,
        args.deps_events,
        args.subscribers,
        args.sub_arbiters,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let t = Instant::now();
    let server = match &args.api_server {
        Some(url) => Server::external(url),
        None => Server::spawn(&args),
    };
    if let Some((evs, mbs)) = server.self_check(args.events) {
        println!("server alone: {evs:.0} events/s ({mbs:.0} MB/s) to a trivial reader");
    }
    println!("setup {:.1}s", t.elapsed().as_secs_f64());

    let system = actix_rt::System::new();
    let rows = system.block_on(run_scenarios(&args, &server));
    let ceiling = if args.no_ceiling {
        f64::NAN
    } else {
        let c = ceiling(&args);
        println!(
            "ceiling: serde_json alone decodes {c:.0} events/s on one core (same pod events, LineBuffer + decode_event)"
        );
        c
    };
    let find = |s: &str| rows.iter().find(|r| r.scenario == s && r.subs == 1);
    let flood = find("flood").map_or(f64::NAN, |r| r.events_per_s());
    let sync_s = find("sync").map_or(f64::NAN, |r| r.m.wall_s);
    let peak = rows.iter().map(|r| r.m.peak_rss_mb).fold(0.0, f64::max);
    println!(
        "summary: flood_events_per_s={flood:.0} ceiling_events_per_s={ceiling:.0} sync_s={sync_s:.2} peak_rss_mb={peak:.0}"
    );
}
