//! The fleet scenario: one pod job served by `kubesd run`'s path under a paced flood,
//! with view consumers, member scrapers and collectors polling meanwhile.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kubesd::service::BACKGROUND_THREAD;

use super::flood_child::Server;
use super::flood_meter::{Measured, Meter, peak_rss_mb};
use super::flood_rows::Row;
use super::flood_service::{BenchJobs, HTTP_WORKER, start_service};
use super::{fleet_consumers, fleet_coverage, flood_members};
use crate::flood_args::Args;

/// The fleet: one pod job served by `kubesd run`'s path, a flood paced at
/// `--fleet-rate`, and (with `--fleet-views on`) the view consumers polling throughout.
/// With `--fleet-members`, a `membership` section too, whose pods roll while the flood
/// runs (with the views off as well: the same kubesd serving no views).
pub async fn fleet_run(args: &Args, server: &Server) -> Vec<Row> {
    server.gate(0);
    server.roll(0);
    let sync_meter = Meter::start();
    let membership = (args.fleet_members > 0).then_some(args.fleet_handover.as_str());
    let (jobs, objects) = match args.fleet_job.as_str() {
        "service-monitor" => (BenchJobs::ServiceMonitor, args.services),
        _ => (BenchJobs::Pods(1), args.pods),
    };
    let (mut set, http, addr) = start_service(args, server, jobs, membership).await;
    let deadline = Instant::now() + Duration::from_secs(args.timeout_s);
    while set.work().objects_relabelled < objects as u64 && Instant::now() < deadline {
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
    // Each view asked for once before the flood: a kind's first request builds what
    // it is served from, timed here apart from the polling.
    let mut first = FirstAsks::default();
    if views {
        let (a, c, cov) = (addr.clone(), consumers.clone(), Arc::clone(&coverage));
        first = actix_rt::task::spawn_blocking(move || first_asks(&a, &c, &cov, deadline))
            .await
            .unwrap_or_default();
    }
    // The flood's meter resets the peak: the views' first build is taken here.
    let peak_after_first = peak_rss_mb();
    let stop = Arc::new(AtomicBool::new(false));
    let polling = views.then(|| {
        let how = fleet_consumers::Polling {
            threads: 8,
            conditional: args.fleet_conditional,
            seed: args.fleet_seed,
        };
        let (c, cov) = (consumers.clone(), Arc::clone(&coverage));
        fleet_consumers::poll(addr.clone(), c, how, cov, Arc::clone(&stop))
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
        extra: format!(
            "pods/s; {targets0} targets; views asked once in {:.1} s ({})",
            first.seconds, first.slowest
        ),
    };
    let flood = FleetFlood {
        ok,
        consumers: if views { consumers.len() } else { 0 },
        m,
        peak_after_first,
        steps,
        uncovered: views.then_some(first.uncovered),
        idle,
    };
    let row = fleet_row(args, flood, polled, &coverage.lock().expect("coverage"));
    let rows = vec![sync_row, row];
    set.stop_all().await;
    http.stop(true).await;
    rows
}

/// What asking every consumer's path once before the flood took.
#[derive(Default)]
pub struct FirstAsks {
    /// All of it, s.
    pub seconds: f64,
    /// Each kind's slowest first answer, as text.
    pub slowest: String,
    /// Targets no member held once every member had answered.
    pub uncovered: usize,
}

/// Asks every consumer's path once; the member views' answers go to `coverage`, waiting
/// first (until `deadline`) for the member watch to have assigned some targets.
pub fn first_asks(
    addr: &str,
    consumers: &[fleet_consumers::Consumer],
    coverage: &Mutex<fleet_coverage::Coverage>,
    deadline: Instant,
) -> FirstAsks {
    if let Some(c) = consumers.iter().find(|c| c.member.is_some()) {
        while Instant::now() < deadline {
            match fleet_consumers::get(addr, &c.path, "", None) {
                Ok(a) if a.status == 200 && a.len > 2 => break,
                _ => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    }
    let started = Instant::now();
    let mut slowest: BTreeMap<&str, f64> = BTreeMap::new();
    let mut scanner = fleet_coverage::Scanner::default();
    for c in consumers {
        scanner.clear();
        let scan = c.member.is_some().then_some(&mut scanner);
        let t = Instant::now();
        let _ = fleet_consumers::get(addr, &c.path, "", scan);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        let most = slowest.entry(c.kind).or_default();
        *most = most.max(ms);
        if let Some(m) = c.member {
            coverage.lock().expect("coverage").update(m, &mut scanner);
        }
    }
    let mut coverage = coverage.lock().expect("coverage");
    let uncovered = match consumers.iter().any(|c| c.member.is_some()) {
        true => coverage.arm(),
        false => 0,
    };
    let slowest: Vec<String> = (slowest.iter())
        .map(|(kind, ms)| format!("{kind} {ms:.0} ms"))
        .collect();
    FirstAsks {
        seconds: started.elapsed().as_secs_f64(),
        slowest: format!("slowest first answer: {}", slowest.join(", ")),
        uncovered,
    }
}

/// What the fleet scenario's flood measured, beside what its consumers saw.
pub struct FleetFlood {
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
pub async fn idle_collector_asks(addr: &str, consumers: &[fleet_consumers::Consumer]) -> String {
    let Some(c) = consumers.iter().find(|c| c.kind == "collector") else {
        return String::new();
    };
    let (mut ms, mut mb) = (Vec::new(), 0.0);
    for _ in 0..3 {
        let (a, p) = (addr.to_string(), c.path.clone());
        let got = actix_rt::task::spawn_blocking(move || fleet_consumers::get(&a, &p, "", None))
            .await
            .ok()
            .and_then(|r| r.ok());
        if let Some(a) = got.filter(|a| a.status == 200) {
            ms.push(format!("{:.0}", a.total.as_secs_f64() * 1000.0));
            mb = a.len as f64 / 1e6;
        }
    }
    format!("idle collector {} ms ({mb:.1} MB); ", ms.join("/"))
}

/// Threads that serve requests: the listener's acceptor and workers (named
/// [`HTTP_WORKER`] by [`start_service`]), the blocking threads that write answers and
/// place for a request, and the thread that keeps the placements up to date in the
/// background. The rest of the process (less the consumers) is the event path.
const SERVING_THREADS: [&str; 5] = [
    "actix-server",
    HTTP_WORKER,
    "tokio-rt-worker",
    "tokio-runtime",
    BACKGROUND_THREAD,
];

/// The CPU seconds of `m`'s threads that serve requests, and the consumers'.
fn serving_and_consumers_s(m: &Measured) -> (f64, f64) {
    let named = |prefixes: &[&str]| -> f64 {
        (m.threads.iter())
            .filter(|(name, _)| prefixes.iter().any(|p| name.starts_with(p)))
            .map(|(_, s)| s)
            .sum()
    };
    (named(&SERVING_THREADS), named(&["fleet-consumer"]))
}

/// `m`'s CPU seconds by thread name (the threads of one pool summed), busiest first.
fn cpu_by_name(m: &Measured) -> String {
    let mut by_name: BTreeMap<&str, f64> = BTreeMap::new();
    for (name, s) in &m.threads {
        let name = name.split('[').next().unwrap_or(name);
        *by_name.entry(name).or_default() += s;
    }
    let mut named: Vec<(&str, f64)> = by_name.into_iter().filter(|(_, s)| *s >= 0.01).collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1));
    let named: Vec<String> = named.iter().map(|(n, s)| format!("{n} {s:.2}")).collect();
    format!("cpu s by thread name: {}", named.join(", "))
}

/// The figures of one kind of consumer: latencies; for members their first bytes and
/// the bench's own scanning; for collectors their first bytes and rates.
fn kind_figures(kind: &str, k: &mut fleet_consumers::KindPolled) -> String {
    use fleet_consumers::quantile;
    let n = k.latencies_ms.len();
    let (p50, p99) = (
        quantile(&mut k.latencies_ms, 0.5),
        quantile(&mut k.latencies_ms, 0.99),
    );
    let mut text = format!("{kind} p50/p99 {p50:.1}/{p99:.1} ms ({n}");
    if !k.scanning_ms.is_empty() {
        let (s50, s99) = (
            quantile(&mut k.scanning_ms, 0.5),
            quantile(&mut k.scanning_ms, 0.99),
        );
        let first99 = quantile(&mut k.first_byte_ms, 0.99);
        text.push_str(&format!(
            ", first byte p99 {first99:.1} ms, the bench's scanning p50/p99 {s50:.1}/{s99:.1} ms"
        ));
    }
    if k.rates_mb_s.is_empty() || kind != "collector" {
        return text + "); ";
    }
    let answers = k.rates_mb_s.len();
    let mean_mb = k.bytes as f64 / 1e6 / answers as f64;
    let first99 = quantile(&mut k.first_byte_ms, 0.99);
    let (slowest, median) = (
        quantile(&mut k.rates_mb_s, 0.0),
        quantile(&mut k.rates_mb_s, 0.5),
    );
    text.push_str(&format!(
        ", {mean_mb:.1} MB each): first byte p99 {first99:.1} ms, rate slowest/median \
         {slowest:.0}/{median:.0} MB/s; "
    ));
    text
}

/// The fleet scenario's flood row: latencies over all the consumers' requests, the
/// process's CPU less the consumers' (and, apart, the event path's: less the threads
/// that serve requests), and the peaks; with members, the member views' and
/// collectors' figures, gaps and cross-zone targets.
pub fn fleet_row(
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
    for (kind, k) in polled.by_kind.iter_mut() {
        kinds.push_str(&kind_figures(kind, k));
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
    let (serving_s, consumers_s) = serving_and_consumers_s(&m);
    let event_path_us = (m.cpu_s - serving_s - consumers_s) * 1e6 / args.events.max(1) as f64;
    let extra = format!(
        "{}job {}, collectors served {} labels; views {}{}: {} consumers: {} answers 200, {} 304, {} failed, {:.1} MB; {kinds}\
         {idle}{members}process less consumers {:.3} of a core (serving threads {:.3}); \
         event path {event_path_us:.1} us CPU per event; peak rss {:.0} MB \
         (synced and views asked {:.0} MB, flood {:.0} MB); {}",
        if ok { "" } else { "TIMED OUT; " },
        args.fleet_job,
        args.fleet_collector_labels,
        args.fleet_views,
        if args.fleet_conditional {
            " (conditional GETs)"
        } else {
            ""
        },
        consumers,
        polled.ok,
        polled.not_modified,
        polled.failed,
        polled.bytes() as f64 / 1e6,
        (m.cpu_s - polled.cpu_s) / m.wall_s,
        serving_s / m.wall_s,
        peak_after_first.max(m.peak_rss_mb),
        peak_after_first,
        m.peak_rss_mb,
        cpu_by_name(&m),
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
/// member a scraper (`?member=`, every `--fleet-member-poll-s`) and a collector: its
/// `/scrape_configs` and its allocator share, each every `--fleet-collector-poll-s`.
/// Each first polls at a random phase of its interval ([`fleet_consumers::poll`]).
pub fn fleet_consumers_of(args: &Args) -> Vec<fleet_consumers::Consumer> {
    use fleet_consumers::Consumer;
    let every = Duration::from_secs_f64(args.fleet_poll_s);
    let (job, pods) = match args.fleet_job.as_str() {
        "service-monitor" => ("servicemonitor-0", false),
        _ => ("pods-0", true),
    };
    let view = |path: String, kind| Consumer {
        path,
        every,
        kind,
        member: None,
    };
    let mut all: Vec<Consumer> = (0..args.fleet_nodes)
        .map(|n| view(format!("/sd/{job}?node=node-{n:04}"), "node"))
        .collect();
    for i in 0..args.fleet_shards {
        let path = format!("/sd/{job}?shard={i}&shards={}", args.fleet_shards);
        all.push(view(path, "shard"));
    }
    for m in 0..args.fleet_members {
        let name = flood_members::member_name(m);
        // The coverage knows the pod job's targets alone.
        all.push(Consumer {
            path: format!("/sd/{job}?member={name}"),
            every: Duration::from_secs_f64(args.fleet_member_poll_s),
            kind: "member",
            member: pods.then_some(m),
        });
        if args.fleet_collector_poll_s > 0.0 {
            let every = Duration::from_secs_f64(args.fleet_collector_poll_s);
            all.push(Consumer {
                path: "/scrape_configs".into(),
                every,
                kind: "scrape_configs",
                member: None,
            });
            all.push(Consumer {
                path: format!("/jobs/{job}/targets?collector_id={name}"),
                every,
                kind: "collector",
                member: None,
            });
        }
    }
    all
}

/// Opens the gate at `--fleet-rate` events/s until every event is out, rolling the
/// members one step every `--fleet-roll-ms` meanwhile, then (the pod job) waits for the
/// deletion that follows the last event to show in the job's target count. Whether it
/// did, and the roll steps taken.
pub async fn fleet_flood(
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
    // The endpoints of the ServiceMonitor's job keep pod 0's address: nothing to see.
    if args.fleet_job != "pods" {
        return (true, steps);
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
