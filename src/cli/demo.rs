//! `kubesd demo`: everything on one machine with nothing else installed. It starts the
//! simulator with a generated cluster, runs discovery for several jobs through the same
//! config path as `kubesd run` (the YAML below), drives churn, serves HTTP SD, and shows
//! a live summary. `--once` prints every job's targets as HTTP SD JSON and exits.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use super::run::collect_once;
use crate::metrics::Metrics;
use crate::model::Role;
use crate::promconfig::parse_config;
use crate::service::{
    Job, JobSet, JobSetOptions, Monitors, ServiceMetrics, ServiceState, Shard, serve_http,
};
use crate::simulator::{
    Churn, ChurnRates, SimulatedCluster, SimulatorConfig, StreamingLists, start_monitor_churn,
};

/// How often the demo's churn edits a monitor: often enough to see its jobs replaced.
const MONITOR_CHURN_EVERY: Duration = Duration::from_secs(5);
use crate::{Discovery, EngineOptions, Semantics};

/// Arguments of `kubesd demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Nodes in the generated cluster.
    #[arg(long, default_value_t = 20)]
    pub nodes: usize,
    /// Pods in the generated cluster.
    #[arg(long, default_value_t = 400)]
    pub pods: usize,
    /// Namespaces.
    #[arg(long, default_value_t = 4)]
    pub namespaces: usize,
    /// Pod changes per second.
    #[arg(long, default_value_t = 40)]
    pub churn: u32,
    /// Address of the HTTP SD server.
    #[arg(long, default_value = "127.0.0.1:9097")]
    pub listen: SocketAddr,
    /// Print every job's targets as HTTP SD JSON once synced, and exit.
    #[arg(long)]
    pub once: bool,
    /// Stop after this many seconds (default: run until Ctrl-C).
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Seed of the generated cluster and churn.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Whose target semantics to follow: prometheus or victoriametrics (SEMANTICS.md).
    #[arg(long, default_value_t = Semantics::Prometheus)]
    pub semantics: Semantics,
    /// How the simulated API server answers streaming lists: served, refused (422,
    /// no WatchList feature), ended-at-once (one ERROR event: an API server on etcd
    /// older than 3.5.13), ignored (an API server from before streaming lists).
    #[arg(long = "streaming-lists", value_enum, default_value_t = StreamingLists::Served)]
    pub streaming_lists: StreamingLists,
}

/// The demo's jobs, in the config format `kubesd run` reads, against `api_server`.
fn demo_config(api_server: &str) -> String {
    include_str!("demo.yml").replace("API_SERVER", api_server)
}

/// The role each demo job discovers, for the summary.
fn role_of(job: &str) -> Role {
    if job.starts_with("serviceMonitor/") {
        return Role::EndpointSlice;
    }
    if job.starts_with("podMonitor/") {
        return Role::Pod;
    }
    match job {
        "pods" => Role::Pod,
        "endpoints" => Role::Endpoints,
        "nodes" => Role::Node,
        "routes" => Role::HttpRoute,
        _ => Role::Ingress,
    }
}

/// Runs the demo.
pub async fn run(args: DemoArgs) -> Result<(), String> {
    let service_metrics = Arc::new(ServiceMetrics::default());
    let mut monitors = Monitors::new(
        Arc::clone(&service_metrics.monitors),
        JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
    );
    let (sim, mut jobs, published) = start(&args, &mut monitors).await?;
    if args.once {
        let output = collect_once(&jobs, Duration::from_secs(30), None).await;
        monitors.stop();
        jobs.stop_all().await;
        sim.stop().await;
        println!("{}", output?);
        return Ok(());
    }
    let state = Arc::new(ServiceState {
        jobs: published,
        reload: None,
        engine_metrics: Arc::clone(jobs.discovery().metrics()),
        service_metrics,
    });
    let (server, bound) = serve_http(args.listen, state, None).map_err(|e| {
        format!(
            "cannot listen on {} (try --listen 127.0.0.1:0): {e}",
            args.listen
        )
    })?;
    let server_handle = server.handle();
    actix_rt::spawn(server);
    let churn = (args.churn > 0).then(|| {
        Churn::new(args.seed, ChurnRates::default()).start_per_second(sim.sim().clone(), args.churn)
    });
    let monitor_churn = (args.churn > 0)
        .then(|| start_monitor_churn(sim.sim().clone(), args.seed, MONITOR_CHURN_EVERY));
    let header = header(&args, &sim, bound);
    show_live(&args, &header, &mut jobs, &mut monitors).await;
    if let Some(c) = churn {
        c.stop();
    }
    if let Some(task) = monitor_churn {
        task.abort();
    }
    monitors.stop();
    jobs.stop_all().await;
    server_handle.stop(true).await;
    sim.stop().await;
    Ok(())
}

/// The simulated cluster and the demo's jobs discovering it, through the config path
/// of `kubesd run`, with the map of jobs the HTTP SD server reads.
async fn start(
    args: &DemoArgs,
    monitors: &mut Monitors,
) -> Result<(SimulatedCluster, JobSet, PublishedJobs), String> {
    let config = SimulatorConfig {
        seed: args.seed,
        ..SimulatorConfig::default()
    };
    let spec = super::simulate::cluster_spec(args.seed, args.nodes, args.pods, args.namespaces);
    let sim = SimulatedCluster::start(config, &spec)
        .await
        .map_err(|e| e.to_string())?;
    sim.sim().faults().set_streaming_lists(args.streaming_lists);
    let config =
        parse_config(&demo_config(&sim.url()), Path::new("demo.yml")).map_err(|e| e.to_string())?;
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let options = JobSetOptions {
        shard: Shard::ALL,
        output_dir: None,
        publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
    };
    let engine = EngineOptions {
        // A person watches the demo: one update a second is enough, and shows the
        // batching.
        flush_interval: Duration::from_secs(1),
        semantics: args.semantics,
        ..SimulatedCluster::engine_options()
    };
    let mut jobs = JobSet::new(Discovery::start(engine), options, Arc::clone(&published));
    let load_options = crate::promconfig::LoadOptions::default();
    (monitors.configure(jobs.discovery(), &config, &load_options)).await?;
    // The monitors' first publish, once their watches have listed.
    actix_rt::time::timeout(Duration::from_secs(30), monitors.changed())
        .await
        .map_err(|_| "monitors: not listed within 30 s".to_string())?;
    (monitors.apply(&mut jobs, &config).await).map_err(|e| e.to_string())?;
    Ok((sim, jobs, published))
}

/// The jobs by name, as the HTTP SD server reads them.
type PublishedJobs = Arc<RwLock<BTreeMap<String, Job>>>;

/// The summary's first lines: the cluster and where to read it.
fn header(args: &DemoArgs, sim: &SimulatedCluster, bound: SocketAddr) -> String {
    let made = &sim.made;
    format!(
        "kubesd demo: simulated cluster at {} ({} nodes, {} pods of {} deployments, {} jobs and {} cronjobs, {} services, {} ingresses, {} HTTPRoutes, {} monitors; ~{} pod changes/s)\n\
         HTTP SD: http://{bound}/sd/<job>   status page: http://{bound}/   metrics: http://{bound}/metrics   Ctrl-C stops",
        sim.url(),
        made.nodes,
        made.pods,
        made.deployments,
        made.jobs - made.cron_jobs,
        made.cron_jobs,
        made.services,
        made.ingresses,
        made.routes.http_routes,
        made.monitors.service_monitors + made.monitors.pod_monitors,
        args.churn
    )
}

/// Shows the live summary once a second until Ctrl-C or `--seconds`: a screen redrawn
/// on a terminal, a line a second otherwise.
async fn show_live(args: &DemoArgs, header: &str, jobs: &mut JobSet, monitors: &mut Monitors) {
    let tty = std::io::stdout().is_terminal();
    if !tty {
        println!("{header}");
    }
    let started = Instant::now();
    let mut summary = Summary::new(Arc::clone(jobs.discovery().metrics()));
    let mut tick = actix_rt::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = actix_rt::signal::ctrl_c() => break,
            () = monitors.changed() => {
                if let Err(e) = monitors.reapply(jobs).await {
                    tracing::error!("monitors' jobs not applied: {e}");
                }
                continue;
            }
        }
        if args
            .seconds
            .is_some_and(|s| started.elapsed() >= Duration::from_secs(s))
        {
            break;
        }
        let rows = summary.rows(jobs).await;
        let counters = summary.counters();
        let up = started.elapsed().as_secs();
        let mut out = std::io::stdout().lock();
        if tty {
            summary.draw(&mut out, header, up, &rows, &counters);
        } else {
            let counts: Vec<String> = rows
                .iter()
                .map(|r| r.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
                .collect();
            let _ = writeln!(out, "[{up:>3}s] {} | {counters}", counts.join(" | "));
        }
        let _ = out.flush();
    }
}

/// What the live summary remembers from one second to the next: each job's targets
/// (to show what changed), the last changes, and the event count.
struct Summary {
    /// The engine's metrics, which the counters read.
    metrics: Arc<Metrics>,
    previous: BTreeMap<String, BTreeSet<String>>,
    recent: VecDeque<String>,
    last_events: u64,
}

impl Summary {
    fn new(metrics: Arc<Metrics>) -> Summary {
        Summary {
            last_events: events_total(&metrics),
            metrics,
            previous: BTreeMap::new(),
            recent: VecDeque::new(),
        }
    }

    /// One row per job (name, role, targets, synced), noting the targets that came and
    /// went since the last call.
    async fn rows(&mut self, jobs: &JobSet) -> Vec<String> {
        let mut rows = Vec::new();
        for (name, job) in jobs.jobs() {
            let targets = job.targets().await;
            let synced = job.status().synced;
            let now: BTreeSet<String> = targets.iter().map(describe).collect();
            if let Some(before) = self.previous.get(&name) {
                for t in now.difference(before) {
                    self.recent.push_back(format!("+ {name:<10} {t}"));
                }
                for t in before.difference(&now) {
                    self.recent.push_back(format!("- {name:<10} {t}"));
                }
            }
            while self.recent.len() > 8 {
                self.recent.pop_front();
            }
            rows.push(format!(
                "{name:<10} {:<10} {:>8} {:>7}",
                role_of(&name).as_str(),
                now.len(),
                if synced { "yes" } else { "no" }
            ));
            self.previous.insert(name, now);
        }
        rows
    }

    /// Watch events per second since the last call, relists, 410s and decode errors.
    fn counters(&mut self) -> String {
        let m = &self.metrics;
        let events = events_total(m);
        let rate = events.saturating_sub(self.last_events);
        self.last_events = events;
        format!(
            "watch events: {rate}/s (total {events})   relists: {}   410s: {}   decode errors: {}",
            sum(m, |r| r.relists.total()),
            sum(m, |r| r.gone.get()),
            sum(m, |r| r.rejected.total()),
        )
    }

    /// The whole screen, redrawn.
    fn draw(&self, out: &mut impl Write, header: &str, up: u64, rows: &[String], counters: &str) {
        let _ = write!(
            out,
            "\x1b[2J\x1b[H{header}\n   up {up}s\n\n{:<10} {:<10} {:>8} {:>7}\n",
            "JOB", "ROLE", "TARGETS", "SYNCED"
        );
        for r in rows {
            let _ = writeln!(out, "{r}");
        }
        let _ = writeln!(out, "\n{counters}\n\nlast changes:");
        for c in &self.recent {
            let _ = writeln!(out, "  {c}");
        }
    }
}

fn sum(metrics: &Metrics, f: impl Fn(&crate::metrics::RoleMetrics) -> u64) -> u64 {
    Role::ALL.iter().map(|r| metrics.role_total(*r, &f)).sum()
}

fn events_total(metrics: &Metrics) -> u64 {
    sum(metrics, |r| {
        r.events_added.get() + r.events_modified.get() + r.events_deleted.get()
    })
}

/// A target in one line: its address and a few identifying labels.
fn describe(t: &crate::Labels) -> String {
    let mut s = t.get("__address__").unwrap_or("?").to_string();
    for key in ["namespace", "pod", "service", "node", "__param_target"] {
        if let Some(v) = t.get(key) {
            s += &format!(" {key}={v}");
        }
    }
    s
}
