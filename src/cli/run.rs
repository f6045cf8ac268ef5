//! `kubesd run` and `kubesd once`: discovery for the jobs of a Prometheus-style config
//! file, served over HTTP SD until stopped, or printed once.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use actix_rt::signal::unix::{SignalKind, signal};
use tracing::{error, info, warn};

use crate::config::{ListMode, WireEncoding};
use crate::http::resolve_endpoint;
use crate::promconfig::{LoadOptions, LoadedConfig, load_config_with};
use crate::relabel::Dialect;
use crate::sd_output::write_file_atomically;
use crate::service::web::guard::WebGuard;
use crate::service::{
    CollectorLabels, JobSet, JobSetOptions, Monitors, ReloadRequest, ServiceMetrics, ServiceState,
    Shard, serve_http,
};
use crate::{Discovery, EngineOptions, Semantics};

/// Options shared by `run` and `once`.
#[derive(Debug, clap::Args)]
pub struct JobArgs {
    /// The config file: Prometheus' `scrape_configs` with `kubernetes_sd_configs`.
    #[arg(long)]
    pub config: PathBuf,
    /// Keep only the targets of shard N (of --shards), for replicas of kubesd itself
    /// (FNV-1a of the address; Prometheus' hashmod shards are the views
    /// `/sd/{job}?shard=I&shards=N`)...
    #[arg(long, default_value_t = 0, requires = "shards")]
    pub shard: u64,
    /// ...when M replicas share the targets by address hash.
    #[arg(long, default_value_t = 1)]
    pub shards: u64,
    /// Also write each job's targets to DIR/JOB.json (Prometheus file SD), atomically;
    /// the job name is percent-encoded into one file name (`a/b` is `a%2Fb.json`).
    #[arg(long)]
    pub output_dir: Option<PathBuf>,
    /// Whose target semantics to follow: prometheus or victoriametrics (SEMANTICS.md).
    #[arg(long, default_value_t = Semantics::Prometheus)]
    pub semantics: Semantics,
    /// What to ask the API server for: auto (protobuf where offered, JSON elsewhere,
    /// per response) or json.
    #[arg(long, default_value_t = WireEncoding::Auto)]
    pub encoding: WireEncoding,
    /// Whose meaning to follow where Prometheus and vmagent read a config differently:
    /// `hashmod`'s hash, `{{label}}` in replacements, `%{VAR}` placeholders
    /// (prometheus or victoriametrics; default: as --semantics).
    #[arg(long = "config.dialect")]
    pub config_dialect: Option<Dialect>,
    /// Expand prometheus-operator's `$(VAR)` placeholders (`$(SHARD)`, `$(NODE_NAME)`)
    /// from the environment, as its config reloader does.
    #[arg(long = "config.expand-reloader-vars")]
    pub expand_reloader_vars: bool,
    /// A kubeconfig for jobs that name no `api_server` (nor `kubeconfig_file`) when
    /// kubesd runs outside a cluster; default `$KUBECONFIG`.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// How to get each URL's state from the API server: auto (by the server's
    /// `/version`: streaming lists on Kubernetes 1.32, LIST and WATCH on 1.33 and
    /// later, on older servers and when the version cannot be read), list (LIST and
    /// WATCH only) or stream (streaming lists, `sendInitialEvents`, wherever the
    /// server serves them).
    #[arg(long = "kubernetes.list-mode", default_value_t = ListMode::Auto)]
    pub list_mode: ListMode,
    /// The least time between two updates of a job's `/sd` body and views while
    /// changes keep coming (a quiet job's first change is served at once). Longer
    /// saves CPU under heavy churn; `0s` updates after every batch.
    #[arg(long = "sd.publish-interval", default_value = "250ms", value_parser = humantime::parse_duration)]
    pub publish_interval: Duration,
}

impl JobArgs {
    /// The engine's options these arguments choose.
    fn engine_options(&self) -> EngineOptions {
        EngineOptions {
            semantics: self.semantics,
            list_mode: self.list_mode,
            encoding: self.encoding,
            ..EngineOptions::default()
        }
    }

    /// How the config file is read (also by tests/docs_commands.rs, to load the
    /// config files the documents' commands name as kubesd would).
    pub fn load_options(&self) -> LoadOptions {
        let dialect = self.config_dialect.unwrap_or(match self.semantics {
            Semantics::Prometheus => Dialect::Prometheus,
            Semantics::VictoriaMetrics => Dialect::VictoriaMetrics,
        });
        LoadOptions {
            dialect,
            expand_reloader_vars: self.expand_reloader_vars,
            default_kubeconfig: self
                .kubeconfig
                .clone()
                .or_else(|| std::env::var_os("KUBECONFIG").map(PathBuf::from))
                .filter(|p| !p.as_os_str().is_empty()),
        }
    }
}

/// Arguments of `kubesd run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub jobs: JobArgs,
    /// Address of the HTTP server (/sd/{job}, /metrics, /healthz, /ready).
    #[arg(long, default_value = "127.0.0.1:9097")]
    pub listen: SocketAddr,
    /// How often to check the config file for changes (SIGHUP and `POST /-/reload`
    /// reload at once).
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub reload_check: Duration,
    /// The exporter-toolkit web config file: TLS, client certificates, basic auth
    /// users, response headers. Re-read when it changes.
    #[arg(long = "web.config.file")]
    pub web_config_file: Option<PathBuf>,
    /// With --web.config.file: serve /healthz and /ready without credentials (for
    /// probes that cannot send them). Off: every endpoint needs them.
    #[arg(long = "web.open-health-endpoints", requires = "web_config_file")]
    pub web_open_health_endpoints: bool,
    /// Serve OpenTelemetry collectors (`/jobs/{job}/targets`) every discovered
    /// `__meta_*` label. Off: those no rule of the job reads are left out, since they
    /// change nothing the collector computes.
    #[arg(long = "allocator.keep-unread-labels")]
    pub allocator_keep_unread_labels: bool,
}

/// Arguments of `kubesd once`.
#[derive(Debug, clap::Args)]
pub struct OnceArgs {
    #[command(flatten)]
    pub jobs: JobArgs,
    /// Give up if a job has not synced within this time.
    #[arg(long, default_value = "30s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

fn load(args: &JobArgs) -> Result<LoadedConfig, String> {
    let path = args.config.as_path();
    let config = load_config_with(path, &args.load_options()).map_err(|e| e.to_string())?;
    for w in &config.warnings {
        warn!("{w}");
    }
    if config.jobs.is_empty() && config.monitors.is_none() {
        warn!(
            "{}: no job with kubernetes_sd_configs and no monitors section",
            path.display()
        );
    }
    Ok(config)
}

fn options(args: &JobArgs) -> Result<JobSetOptions, String> {
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).map_err(|e| format!("--output-dir {}: {e}", dir.display()))?;
    }
    Ok(JobSetOptions {
        shard: Shard::new(args.shard, args.shards)?,
        output_dir: args.output_dir.clone(),
        publish_interval: args.publish_interval,
    })
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Loads the config `args` name and applies it to `jobs`, recording the outcome in
/// `kubesd_config_last_reload_*`.
async fn apply_config(
    jobs: &mut JobSet,
    monitors: &mut Monitors,
    args: &JobArgs,
    metrics: &ServiceMetrics,
) -> Result<usize, String> {
    let outcome = match load(args) {
        Ok(config) => match apply_with_monitors(jobs, monitors, args, &config).await {
            Ok(()) => {
                count_discoveries(jobs, metrics);
                Ok(config.jobs.len())
            }
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let service = metrics;
    match &outcome {
        Ok(_) => {
            service.config_last_reload_successful.set(1);
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            service
                .config_last_reload_success_timestamp_seconds
                .set(i64::try_from(now).unwrap_or(i64::MAX));
        }
        Err(_) => service.config_last_reload_successful.set(0),
    }
    outcome
}

/// Records what each running job (the monitors' included) discovers from, for
/// `kubesd_job_discovery_info`.
fn count_discoveries(jobs: &JobSet, metrics: &ServiceMetrics) {
    let running = jobs.jobs();
    metrics.set_job_discoveries(running.iter().filter_map(|(_, job)| job.config()).flat_map(
        |job| {
            job.sd_configs.iter().map(|sd| {
                // In-cluster configs name no server: the resolved one, as the discovery
                // metrics' `api_server` label has it.
                let server = resolve_endpoint(sd)
                    .map(|e| e.base_url)
                    .unwrap_or_else(|_| "in-cluster".to_string());
                (job.name.clone(), sd.role, server)
            })
        },
    ));
}

/// Starts, restarts or stops the monitors' watch as `config` says, then applies its
/// jobs and the monitors' to `jobs`.
async fn apply_with_monitors(
    jobs: &mut JobSet,
    monitors: &mut Monitors,
    args: &JobArgs,
    config: &LoadedConfig,
) -> Result<(), String> {
    monitors
        .configure(jobs.discovery(), config, &args.load_options())
        .await?;
    monitors
        .apply(jobs, config)
        .await
        .map_err(|e| e.to_string())
}

/// Runs the service until SIGINT or SIGTERM.
pub async fn run(args: RunArgs) -> Result<(), String> {
    let metrics = Arc::new(ServiceMetrics::default());
    // A bad web config stops kubesd before anything starts, naming the key.
    let web = match &args.web_config_file {
        Some(path) => {
            let open_health = args.web_open_health_endpoints;
            let guard = WebGuard::load(path, open_health, Arc::clone(&metrics));
            Some(guard.map_err(|e| e.to_string())?)
        }
        None => None,
    };
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let collectors = match args.allocator_keep_unread_labels {
        true => CollectorLabels::All,
        false => CollectorLabels::Readable,
    };
    let mut jobs = JobSet::new(
        Discovery::start(args.jobs.engine_options()),
        options(&args.jobs)?,
        Arc::clone(&published),
    )
    .serving_collectors(collectors);
    let mut monitors = Monitors::new(Arc::clone(&metrics.monitors), args.jobs.publish_interval);
    let job_count = apply_config(&mut jobs, &mut monitors, &args.jobs, &metrics).await?;
    let (reload_tx, mut reload_rx) = tokio::sync::mpsc::channel::<ReloadRequest>(4);
    let state = ServiceState {
        jobs: published,
        reload: Some(reload_tx),
        engine_metrics: Arc::clone(jobs.discovery().metrics()),
        service_metrics: Arc::clone(&metrics),
    };
    let scheme = url_scheme(web.as_deref());
    let (server, bound) = serve_http(args.listen, Arc::new(state), web)
        .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
    let server_handle = server.handle();
    actix_rt::spawn(server);
    info!(listen = %bound, jobs = job_count, "serving HTTP SD at /sd/{{job}}");
    eprintln!(
        "kubesd serving {scheme}://{bound}/sd/{{job}} for {job_count} job(s); SIGHUP reloads"
    );

    let reloads = Reloads {
        every: args.reload_check,
        asked: &mut reload_rx,
        metrics: &metrics,
    };
    reload_until_stopped(&mut jobs, &mut monitors, &args.jobs, reloads).await?;
    info!("stopping");
    monitors.stop();
    jobs.stop_all().await;
    server_handle.stop(true).await;
    Ok(())
}

/// `https` when the web config turns TLS on, else `http`: for the line that says where
/// kubesd serves.
fn url_scheme(web: Option<&WebGuard>) -> &'static str {
    if web.is_some_and(|w| w.current().settings.tls.is_some()) {
        "https"
    } else {
        "http"
    }
}

/// When the run loop reloads its config, and where it counts the outcome.
struct Reloads<'a> {
    /// How often the file's modification time is checked.
    every: Duration,
    /// `POST /-/reload`'s requests.
    asked: &'a mut tokio::sync::mpsc::Receiver<ReloadRequest>,
    /// `kubesd_config_last_reload_*`.
    metrics: &'a ServiceMetrics,
}

/// Reloads the config on SIGHUP, on `POST /-/reload`, or when the file's
/// modification time changes (checked every `reload_check`), until SIGTERM or SIGINT.
async fn reload_until_stopped(
    jobs: &mut JobSet,
    monitors: &mut Monitors,
    args: &JobArgs,
    reloads: Reloads<'_>,
) -> Result<(), String> {
    let signals = (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    let (Ok(mut hup), Ok(mut term), Ok(mut int)) = signals else {
        return Err("cannot install signal handlers".into());
    };
    let mut last_modified = modified(&args.config);
    let mut check = actix_rt::time::interval(reloads.every);
    loop {
        let (reload, reply) = tokio::select! {
            _ = hup.recv() => (true, None),
            _ = term.recv() => (false, None),
            _ = int.recv() => (false, None),
            Some(request) = reloads.asked.recv() => (true, Some(request.done)),
            () = monitors.changed() => {
                match monitors.reapply(jobs).await {
                    Ok(()) => count_discoveries(jobs, reloads.metrics),
                    Err(e) => error!("monitors' jobs not applied, keeping the running jobs: {e}"),
                }
                continue;
            }
            _ = check.tick() => {
                let now = modified(&args.config);
                if now == last_modified { continue; }
                last_modified = now;
                (true, None)
            }
        };
        if !reload {
            break;
        }
        apply_reload(jobs, monitors, args, reloads.metrics, reply).await;
    }
    Ok(())
}

/// Applies the config file anew; a bad new config is reported and the running one
/// kept. `reply`, for a reload asked over HTTP, hears the outcome.
async fn apply_reload(
    jobs: &mut JobSet,
    monitors: &mut Monitors,
    args: &JobArgs,
    metrics: &ServiceMetrics,
    reply: Option<tokio::sync::oneshot::Sender<Result<(), String>>>,
) {
    info!(config = %args.config.display(), "reloading");
    let outcome = apply_config(jobs, monitors, args, metrics).await;
    match &outcome {
        Ok(n) => info!(jobs = n, "reloaded"),
        Err(e) => error!("reload failed, keeping the running jobs: {e}"),
    }
    if let Some(reply) = reply {
        let _ = reply.send(outcome.map(|_| ()));
    }
}

/// Syncs every job once, prints their targets as one JSON object keyed by job name
/// (each value in HTTP SD format), and exits.
pub async fn once(args: OnceArgs) -> Result<(), String> {
    let config = load(&args.jobs)?;
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    // Lists only: a watch would be closed unread when the targets are printed.
    let engine = EngineOptions {
        watch_after_list: false,
        ..args.jobs.engine_options()
    };
    let mut jobs = JobSet::new(Discovery::start(engine), options(&args.jobs)?, published);
    let mut monitors = Monitors::new(Arc::default(), Duration::ZERO);
    let load_options = args.jobs.load_options();
    (monitors.configure(jobs.discovery(), &config, &load_options)).await?;
    if config.monitors.is_some() {
        // The monitors' first publish, once their watches have listed.
        actix_rt::time::timeout(args.timeout, monitors.changed())
            .await
            .map_err(|_| "monitors: not listed within the timeout".to_string())?;
    }
    let applied = monitors.apply(&mut jobs, &config).await;
    monitors.stop();
    applied.map_err(|e| e.to_string())?;
    let output = collect_once(&jobs, args.timeout, args.jobs.output_dir.as_deref()).await;
    jobs.stop_all().await;
    print_targets(&output?)
}

/// Writes `text` to standard output; a reader that closed the pipe (`| head`) took what
/// it wanted, which is no error.
fn print_targets(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(format!("cannot write to standard output: {e}"))
        }
        _ => Ok(()),
    }
}

/// Waits for every job to sync (up to `timeout`), then returns `{"job": [groups], ...}`.
pub async fn collect_once(
    jobs: &JobSet,
    timeout: Duration,
    output_dir: Option<&Path>,
) -> Result<String, String> {
    let deadline = std::time::Instant::now() + timeout;
    let running = jobs.jobs();
    loop {
        let mut waiting = Vec::new();
        for (name, job) in &running {
            if !job.status().synced {
                waiting.push(name.clone());
            }
        }
        if waiting.is_empty() {
            break;
        }
        if std::time::Instant::now() > deadline {
            return Err(format!(
                "not synced within {}: job(s) {}",
                humantime::format_duration(timeout),
                waiting.join(", ")
            ));
        }
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
    let mut out: BTreeMap<String, Box<serde_json::value::RawValue>> = BTreeMap::new();
    for (name, job) in &running {
        let body = job.sd();
        if let Some(dir) = output_dir {
            // Never `format!("{name}.json")`: a job name is not a path.
            let path = crate::service::job_file(dir, name);
            write_file_atomically(&path, &body.to_vec())
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        let text = String::from_utf8_lossy(&body.to_vec()).into_owned();
        let raw = serde_json::value::RawValue::from_string(text)
            .map_err(|e| format!("job {name}: {e}"))?;
        out.insert(name.clone(), raw);
    }
    serde_json::to_string_pretty(&out).map_err(|e| e.to_string())
}
