//! Soak: a million watch events with churn and faults against the in-process simulator,
//! printing the process' RSS as it goes, then checking that every subscription
//! converged to the simulator's state and that memory levelled off.
//!
//! ```text
//! cargo bench --bench soak                      # 1,000,000 events
//! cargo bench --bench soak -- --events 200000 --every 20000 --seed 7 --pods 1000
//! ```
//!
//! Events are watch events the engine decoded (ADDED, MODIFIED, DELETED over every
//! watcher: one pod change reaches the pod, endpoints and endpointslice groups' pod
//! watchers, and the controllers' endpoint updates follow it). The loop applies churn
//! in batches, fires a random fault every few batches, and waits for the engine to go
//! quiet before the next batch, so the simulator's history is not outrun (compaction
//! faults do that on purpose). Columns: the simulator's pods, resourceVersion and open
//! watches (its registry), the objects in the engine's caches, and the interned strings
//! made permanent (`kubesd_permanent_string_bytes`). Exits non-zero if a subscription
//! does not converge or RSS keeps growing.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use kubesd::metrics::{Metrics, RoleMetrics};
use kubesd::model::Role;
use kubesd::simulator::{
    Churn, ChurnRates, ClusterSpec, Failure, Resource, SimulatedCluster, Simulator, SimulatorConfig,
};
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Subscription};
use std::sync::Arc;

struct Args {
    /// Engine events to process.
    events: u64,
    /// Print a line every this many events.
    every: u64,
    seed: u64,
    /// Pods in the generated cluster.
    pods: usize,
    /// Pod changes per batch of churn.
    batch: usize,
    /// A fault every this many batches.
    fault_every: u64,
}

fn parse_args() -> Args {
    let mut args = Args {
        events: 1_000_000,
        every: 0,
        seed: 1,
        pods: 500,
        batch: 100,
        fault_every: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut num = |name: &str| -> u64 {
            it.next()
                .and_then(|v| v.replace('_', "").parse().ok())
                .unwrap_or_else(|| panic!("{name} takes a number"))
        };
        match a.as_str() {
            "--events" => args.events = num("--events"),
            "--every" => args.every = num("--every"),
            "--seed" => args.seed = num("--seed"),
            "--pods" => args.pods = num("--pods") as usize,
            "--batch" => args.batch = num("--batch") as usize,
            "--fault-every" => args.fault_every = num("--fault-every").max(1),
            // `cargo bench` passes `--bench`; ignore it and anything else unknown.
            _ => {}
        }
    }
    if args.every == 0 {
        args.every = (args.events / 20).max(1);
    }
    args
}

/// VmRSS of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn total(metrics: &Metrics, f: fn(&RoleMetrics) -> u64) -> u64 {
    Role::ALL.iter().map(|r| metrics.role_total(*r, f)).sum()
}

/// Watch events the engine has decoded, over every role.
fn engine_events(metrics: &Metrics) -> u64 {
    total(metrics, |m| {
        m.events_added.get() + m.events_modified.get() + m.events_deleted.get()
    })
}

/// Waits until the engine decodes no event for a few milliseconds (or 2 s pass).
async fn settle(metrics: &Metrics) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut quiet = 0;
    while quiet < 2 && Instant::now() < deadline {
        let before = engine_events(metrics);
        actix_rt::time::sleep(Duration::from_millis(2)).await;
        quiet = if engine_events(metrics) == before {
            quiet + 1
        } else {
            0
        };
    }
}

struct Sample {
    events: u64,
    rss_kib: u64,
    elapsed: Duration,
}

fn main() {
    let args = parse_args();
    let ok = actix_rt::System::new().block_on(soak(args));
    if !ok {
        std::process::exit(1);
    }
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cores} cores, {cpu}")
}

async fn soak(args: Args) -> bool {
    println!(
        "soak: {} events, seed {}, {} pods, batches of {}, a fault every {} batches; {}",
        args.events,
        args.seed,
        args.pods,
        args.batch,
        args.fault_every,
        machine()
    );
    let running = start_cluster(&args).await;
    let sim = running.sim().clone();
    let discovery = Discovery::start(engine_options());
    let jobs = support::all_jobs(&running.url());
    let subs = support::subscribe_all(&discovery, &jobs).await;

    let metrics = Arc::clone(discovery.metrics());
    let start_events = engine_events(&metrics);
    let start = Instant::now();
    println!(
        "synced: {} objects, RSS {} MiB",
        Role::ALL
            .iter()
            .map(|r| sim.store().count((*r).into()))
            .sum::<usize>(),
        rss_kib() / 1024
    );
    print_header();
    let mut driver = Driver::new(&args, Arc::clone(&metrics));
    let mut progress = Progress::new(args.every);
    loop {
        let done = engine_events(&metrics) - start_events;
        progress.report(done, start.elapsed(), &sim, args.events, &driver);
        if done >= args.events {
            break;
        }
        driver.step(&sim, &args).await;
    }
    let elapsed = start.elapsed();
    let done = engine_events(&metrics) - start_events;

    let converged = converge(&sim, &subs, &jobs).await;
    print_summary(done, elapsed, &sim, &driver);
    let levels_off = verdict(&progress.samples, done);
    for s in subs {
        s.stop().await;
    }
    running.stop().await;
    converged && levels_off
}

/// The simulated cluster the soak runs against.
async fn start_cluster(args: &Args) -> SimulatedCluster {
    let config = SimulatorConfig {
        seed: args.seed,
        // Small, so that the simulator's own memory (every retained change is a whole
        // object) reaches its plateau in the first percent of the run and RSS growth
        // after that is the engine's.
        history_limit: 2_000,
        bookmark_interval: Duration::from_millis(500),
        split_pause: Duration::from_millis(1),
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        seed: args.seed,
        nodes: 20,
        pods: args.pods,
        namespaces: 5,
        pods_per_workload: 5,
    };
    SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts")
}

/// The engine's settings for the soak.
fn engine_options() -> EngineOptions {
    EngineOptions {
        // Longer than a test's: at this scale a flush, a stall or a request takes
        // longer on a loaded machine.
        flush_interval: Duration::from_millis(100),
        backoff_max: Duration::from_millis(500),
        watch_stall_timeout: Duration::from_secs(3),
        request_timeout: Duration::from_secs(10),
        // The safety net for restarts that reset resourceVersions.
        relist_interval: Some(Duration::from_secs(20)),
        ..SimulatedCluster::engine_options()
    }
}

/// What changes the cluster: churn in batches, dependencies touched, faults fired.
struct Driver {
    rng: fastrand::Rng,
    /// Churn keeps the pod count at the generated size, so memory can be judged.
    churn: Churn,
    faults: std::collections::BTreeMap<&'static str, u64>,
    stalled: bool,
    batches: u64,
    churn_time: Duration,
    settle_time: Duration,
    /// The engine's metrics: what it decoded, what it met.
    metrics: Arc<Metrics>,
}

impl Driver {
    fn new(args: &Args, metrics: Arc<Metrics>) -> Driver {
        Driver {
            metrics,
            rng: fastrand::Rng::with_seed(args.seed),
            churn: Churn::new(args.seed, ChurnRates::default()),
            faults: Default::default(),
            stalled: false,
            batches: 0,
            churn_time: Duration::ZERO,
            settle_time: Duration::ZERO,
        }
    }

    /// One batch of churn (and every tenth a dependency touched, every
    /// `fault_every`-th a fault), then a wait for the engine to go quiet.
    async fn step(&mut self, sim: &Simulator, args: &Args) {
        let t = Instant::now();
        self.churn.step(sim, args.batch).expect("churn");
        self.churn_time += t.elapsed();
        self.batches += 1;
        if self.batches.is_multiple_of(10) {
            support::touch_dependencies(sim, &mut self.rng);
        }
        if self.stalled {
            sim.stall_watches(false);
            self.stalled = false;
        }
        if self.batches.is_multiple_of(args.fault_every) {
            let fault = support::random_fault(sim, &mut self.rng, true);
            self.stalled = fault == "stall";
            *self.faults.entry(fault).or_default() += 1;
        }
        let t = Instant::now();
        settle(&self.metrics).await;
        self.settle_time += t.elapsed();
    }
}

/// The table's rows as the run goes, and the samples the verdict reads.
struct Progress {
    every: u64,
    next_report: u64,
    last: (u64, Duration),
    samples: Vec<Sample>,
}

impl Progress {
    fn new(every: u64) -> Progress {
        Progress {
            every,
            next_report: every,
            last: (0, Duration::ZERO),
            samples: Vec::new(),
        }
    }

    /// Prints a row and keeps a sample when `done` events passed the next report's
    /// mark (or the end).
    fn report(&mut self, done: u64, elapsed: Duration, sim: &Simulator, end: u64, d: &Driver) {
        if done < self.next_report && done < end {
            return;
        }
        let rate = (done - self.last.0) as f64 / (elapsed - self.last.1).as_secs_f64().max(1e-9);
        self.last = (done, elapsed);
        let rss = rss_kib();
        println!(
            "{done:>10} {:>9.1} {:>8} {rate:>10.0} {:>7} {:>8} {:>9} {:>9} {:>8.0}",
            rss as f64 / 1024.0,
            sim.store().count(Resource::Pods),
            d.faults.values().sum::<u64>(),
            sim.resource_version(),
            sim.store().open_watches(),
            Role::ALL
                .iter()
                .map(|r| d
                    .metrics
                    .role_total(*r, |m| u64::try_from(m.objects.get()).unwrap_or(0)))
                .sum::<u64>(),
            // Interned strings made permanent: must level off as RSS does.
            kubesd::model::permanent_string_bytes() as f64 / 1024.0
        );
        self.samples.push(Sample {
            events: done,
            rss_kib: rss,
            elapsed,
        });
        while self.next_report <= done {
            self.next_report += self.every;
        }
    }
}

fn print_header() {
    println!(
        "{:>10} {:>9} {:>8} {:>10} {:>7} {:>8} {:>9} {:>9} {:>8}",
        "events",
        "RSS MiB",
        "pods",
        "events/s",
        "faults",
        "sim rv",
        "sim wat.",
        "cached",
        "perm KB"
    );
}

/// The faults stop; every subscription must reach the simulator's final state within
/// two minutes.
async fn converge(sim: &Simulator, subs: &[Subscription<Labels>], jobs: &[SdConfig]) -> bool {
    sim.stall_watches(false);
    sim.faults().fail_next(Failure::ServerError, 0);
    let converge_start = Instant::now();
    let mut converged = true;
    for (sub, config) in subs.iter().zip(jobs) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let want = support::expected(sim, config);
            let got = support::actual(sub).await;
            if want == got {
                println!("converged: {:<13} {} targets", config.role, want.len());
                break;
            }
            if Instant::now() > deadline {
                println!(
                    "NOT CONVERGED: {} after 120 s: {}",
                    config.role,
                    support::diff(&want, &got)
                );
                converged = false;
                break;
            }
            actix_rt::time::sleep(Duration::from_millis(50)).await;
        }
    }
    println!(
        "convergence after the last fault: {:.1} s",
        converge_start.elapsed().as_secs_f64()
    );
    converged
}

fn print_summary(done: u64, elapsed: Duration, sim: &Simulator, d: &Driver) {
    println!(
        "{done} events in {:.1} s: {:.0} events/s; {} simulator changes; faults {:?}",
        elapsed.as_secs_f64(),
        done as f64 / elapsed.as_secs_f64(),
        sim.resource_version(),
        d.faults
    );
    println!(
        "time in churn (the simulator): {:.1} s; waiting for the engine to go quiet: {:.1} s",
        d.churn_time.as_secs_f64(),
        d.settle_time.as_secs_f64()
    );
    println!(
        "engine: relists {}, 410s {}, watch restarts {}, stalls {}, decode errors {}, request errors {}",
        total(&d.metrics, |m| m.relists.total()),
        total(&d.metrics, |m| m.gone.get()),
        total(&d.metrics, |m| m.watch_restarts.get()),
        total(&d.metrics, |m| m.stalls.total()),
        total(&d.metrics, |m| m.rejected.total()),
        total(&d.metrics, |m| m.request_errors.total()),
    );
}

/// RSS at 25, 50, 75 and 100 % of the run. Memory levels off when the second half
/// grows by no more than 10 % of the RSS at 50 % (plus 16 MiB of allocator slack):
/// growth proportional to events would add as much in the second half as in the first.
fn verdict(samples: &[Sample], done: u64) -> bool {
    let at = |fraction: f64| -> &Sample {
        let target = (done as f64 * fraction) as u64;
        samples
            .iter()
            .min_by_key(|s| s.events.abs_diff(target))
            .expect("samples")
    };
    println!(
        "{:>6} {:>10} {:>9} {:>8}",
        "at", "events", "RSS MiB", "time s"
    );
    let points: Vec<&Sample> = [0.25, 0.5, 0.75, 1.0].iter().map(|f| at(*f)).collect();
    for (label, s) in ["25%", "50%", "75%", "100%"].iter().zip(&points) {
        println!(
            "{label:>6} {:>10} {:>9.1} {:>8.1}",
            s.events,
            s.rss_kib as f64 / 1024.0,
            s.elapsed.as_secs_f64()
        );
    }
    let (q1, half, end) = (points[0].rss_kib, points[1].rss_kib, points[3].rss_kib);
    let first = half as i64 - q1 as i64;
    let second = end as i64 - half as i64;
    let ok = (second as f64) <= half as f64 * 0.10 + 16.0 * 1024.0;
    println!(
        "verdict: RSS {} (25%→50%: {:+.1} MiB, 50%→100%: {:+.1} MiB)",
        if ok { "levels off" } else { "KEEPS GROWING" },
        first as f64 / 1024.0,
        second as f64 / 1024.0
    );
    ok
}
