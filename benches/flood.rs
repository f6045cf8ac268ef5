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
use kubesd::config::WireEncoding;
use kubesd::model::Role;
use kubesd::wire::json::{LineBuffer, WatchEvent, decode_event};

use flood_allocs::COUNT_ALLOCS;
use flood_args::Args;
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
#[path = "support/flood_args.rs"]
mod flood_args;
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
