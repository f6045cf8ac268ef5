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
//! events/s (500 for a cluster's realistic pace, 20,000 for the stress flood), while
//! `--fleet-nodes` per-node and `--fleet-shards` shard consumers, and with
//! `--fleet-members` member scrapers and collectors, poll as the real clients do
//! (plain GETs at random phases; `--fleet-conditional` adds `If-None-Match`);
//! `--fleet-views off` runs the same flood with no consumer, for the peak RSS and CPU
//! to compare with.

use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use clap::Parser;
use kubesd::config::{ListMode, WireEncoding};
use kubesd::model::Role;
use kubesd::wire::json::{LineBuffer, WatchEvent, decode_event};
use kubesd::{EngineOptions, Semantics};

use flood_allocs::COUNT_ALLOCS;
use flood_child::Server;
use flood_engine::{deps_run, pod_run};
use flood_fleet::fleet_run;
use flood_rows::{Row, header};
use flood_service::{BenchJobs, roles_run, service_run};

#[path = "support/fleet_consumers.rs"]
mod fleet_consumers;
#[path = "support/fleet_coverage.rs"]
mod fleet_coverage;
#[path = "support/flood_allocs.rs"]
mod flood_allocs;
#[path = "support/flood_child.rs"]
mod flood_child;
#[path = "support/flood_engine.rs"]
mod flood_engine;
#[path = "support/flood_fleet.rs"]
mod flood_fleet;
#[path = "support/flood_members.rs"]
mod flood_members;
#[path = "support/flood_meter.rs"]
mod flood_meter;
#[path = "support/flood_probe.rs"]
mod flood_probe;
#[path = "support/flood_protobuf.rs"]
mod flood_protobuf;
#[path = "support/flood_rows.rs"]
mod flood_rows;
#[path = "support/flood_server.rs"]
mod flood_server;
#[path = "support/flood_service.rs"]
mod flood_service;
#[path = "support/realistic_pod.rs"]
mod realistic_pod;

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
    /// Fleet scenario: how often each per-node and shard consumer polls its view, s
    /// (an HTTP SD `refresh_interval`).
    #[arg(long, default_value_t = 30.0)]
    fleet_poll_s: f64,
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
    #[arg(long, default_value_t = 30.0)]
    fleet_member_poll_s: f64,
    /// Fleet scenario: how often each collector polls `/scrape_configs` and its
    /// allocator share, s (0: no collectors; the collector's `interval` and its HTTP
    /// SD's `refresh_interval`, both 30 s by default).
    #[arg(long, default_value_t = 30.0)]
    fleet_collector_poll_s: f64,
    /// Fleet scenario: one roll step (a member NotReady, deleted, or back) every this
    /// many ms while the flood runs.
    #[arg(long, default_value_t = 1000)]
    fleet_roll_ms: u64,
    /// Fleet scenario: consumers send the ETag of their last answer in `If-None-Match`:
    /// kubesd's own optimisation, which neither Prometheus' HTTP SD nor the
    /// collector's allocator client uses (they poll with plain GETs).
    #[arg(long)]
    fleet_conditional: bool,
    /// Fleet scenario: the job, `pods` (the pod job the service scenario runs, with
    /// the member views' gaps and zones checked) or `service-monitor` (role endpoints,
    /// relabelling as prometheus-operator generates it for a ServiceMonitor).
    #[arg(long, default_value = "pods", value_parser = ["pods", "service-monitor"])]
    fleet_job: String,
    /// Fleet scenario: the discovered labels collectors are served, `readable` (those
    /// the job's rules read; kubesd's default) or `all` (`--allocator.keep-unread-labels`).
    #[arg(long, default_value = "readable", value_parser = ["readable", "all"])]
    fleet_collector_labels: String,
    /// Fleet scenario: seeds the consumers' random phases.
    #[arg(long, default_value_t = 1)]
    fleet_seed: u64,
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
