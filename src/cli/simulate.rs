//! `kubesd simulate`: the built-in Kubernetes API simulator on its own, with a generated
//! cluster, so any client (kubectl, vmagent, Prometheus, kubesd itself) can be pointed
//! at it.

use crate::simulator::Resource;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::simulator::{
    Churn, ChurnRates, ClusterSpec, ScraperRoll, SimulatedCluster, SimulatorConfig, StreamingLists,
    create_scrapers, start_monitor_churn,
};

/// Arguments of `kubesd simulate`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// Address to serve the API on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    pub listen: SocketAddr,
    /// Nodes to generate.
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Pods to generate (with their services, endpoints, endpointslices, ingresses).
    #[arg(long, default_value_t = 200)]
    pub pods: usize,
    /// Namespaces to spread the pods over.
    #[arg(long, default_value_t = 4)]
    pub namespaces: usize,
    /// Seed of the generated cluster and of the churn.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Require `Authorization: Bearer <TOKEN>` on every request.
    #[arg(long)]
    pub token: Option<String>,
    /// Serve HTTPS with a self-signed certificate; its PEM is written to --ca-file.
    #[arg(long)]
    pub tls: bool,
    /// Where to write the certificate clients must trust (with --tls).
    #[arg(long, default_value = "kubesd-simulator-ca.pem")]
    pub ca_file: PathBuf,
    /// Pod changes a second (adds, updates, deletes, rollouts: each one event on a pod
    /// watch), the pod count kept near its size; 0 for a still cluster. The pace
    /// achieved is on the simulator's /metrics, and logged when it falls behind.
    #[arg(long, default_value_t = 0)]
    pub churn: u32,
    /// Watch events kept for resuming watches (older resourceVersions get 410 Gone).
    #[arg(long, default_value_t = 10_000)]
    pub history: usize,
    /// Answer 404 for the Gateway API's resources, as a cluster without its CRDs does
    /// (the objects are generated all the same).
    #[arg(long)]
    pub without_gateway_api: bool,
    /// How streaming lists (watches with sendInitialEvents) are answered: served,
    /// refused (422, no WatchList feature), ended-at-once (one ERROR event: an API
    /// server on etcd older than 3.5.13), ignored (an API server from before
    /// streaming lists).
    #[arg(long = "streaming-lists", value_enum, default_value_t = StreamingLists::Served)]
    pub streaming_lists: StreamingLists,
    /// Scraper pods to create in `monitoring` (label
    /// app.kubernetes.io/name=kubesd-scraper, spread over the zones, annotation
    /// kubesd.io/weight 1 or 2), for kubesd's `membership` section.
    #[arg(long, default_value_t = 0)]
    pub scrapers: usize,
    /// Roll the scrapers one by one, one step (NotReady, deleted, recreated) every this
    /// many seconds; 0 leaves them alone.
    #[arg(long, default_value_t = 0)]
    pub roll_scrapers_every: u64,
}

/// Runs the simulator until interrupted.
pub async fn run(args: SimulateArgs) -> Result<(), String> {
    let running = start(&args).await?;
    print_cluster(&running, &args);
    let roll = start_scrapers(&running, &args)?;
    // After the scrapers: the churn keeps the pod count it first finds.
    let churn = (args.churn > 0).then(|| {
        Churn::new(args.seed, ChurnRates::default())
            .start_per_second(running.sim().clone(), args.churn)
    });
    // prometheus-operator's monitors change too, far less often than pods.
    let monitor_churn = (args.churn > 0)
        .then(|| start_monitor_churn(running.sim().clone(), args.seed, Duration::from_secs(10)));
    println!("try: {} get pods -A", kubectl(&running.url(), &args));
    if args.churn > 0 {
        println!(
            "churn: {} pod changes a second (adds, updates, deletes, rollouts), the pod count \
             kept near its size; the pace achieved: {}/metrics, and a warning when it falls \
             more than 10 % behind; a monitor edited every 10 s",
            args.churn,
            running.url()
        );
    }
    println!("Ctrl-C stops it.");
    let _ = actix_rt::signal::ctrl_c().await;
    if let Some(churn) = churn {
        churn.stop();
    }
    if let Some(task) = monitor_churn {
        task.abort();
    }
    if let Some(roll) = roll {
        roll.stop();
    }
    running.stop().await;
    Ok(())
}

/// Creates `--scrapers` and, with `--roll-scrapers-every`, starts rolling them.
fn start_scrapers(
    running: &SimulatedCluster,
    args: &SimulateArgs,
) -> Result<Option<crate::simulator::ChurnHandle>, String> {
    if args.scrapers == 0 {
        return Ok(None);
    }
    let names = create_scrapers(running.sim(), args.scrapers)
        .map_err(|e| format!("cannot create the scraper pods: {e}"))?;
    println!(
        "scrapers: {} in monitoring, membership label_selector {}",
        names.join(", "),
        crate::simulator::scrapers::SCRAPER_SELECTOR
    );
    if args.roll_scrapers_every == 0 {
        return Ok(None);
    }
    let every = std::time::Duration::from_secs(args.roll_scrapers_every);
    println!("rolling them one step every {}s", args.roll_scrapers_every);
    Ok(Some(ScraperRoll::new().start(running.sim().clone(), every)))
}

/// The generated cluster's shape, as `kubesd simulate` and `kubesd demo` take it from
/// their flags; the rest as the generator's defaults.
pub(super) fn cluster_spec(seed: u64, nodes: usize, pods: usize, namespaces: usize) -> ClusterSpec {
    ClusterSpec {
        seed,
        nodes,
        pods,
        namespaces,
        ..ClusterSpec::default()
    }
}

/// Serves the generated cluster as `args` say, and writes its CA certificate (also
/// tests/docs_commands.rs, to run the quick start's simulator as README.md gives it).
pub async fn start(args: &SimulateArgs) -> Result<SimulatedCluster, String> {
    let config = SimulatorConfig {
        bind: args.listen,
        token: args.token.clone(),
        tls: args.tls,
        history_limit: args.history,
        seed: args.seed,
        ..SimulatorConfig::default()
    };
    let spec = cluster_spec(args.seed, args.nodes, args.pods, args.namespaces);
    let running = SimulatedCluster::start(config, &spec)
        .await
        .map_err(|e| format!("{e} (serving on {})", args.listen))?;
    running
        .sim()
        .faults()
        .set_streaming_lists(args.streaming_lists);
    running.sim().set_gateway_api(!args.without_gateway_api);
    if let Some(pem) = running.server.ca_pem() {
        std::fs::write(&args.ca_file, pem)
            .map_err(|e| format!("cannot write {}: {e}", args.ca_file.display()))?;
    }
    Ok(running)
}

/// One line: where it serves and what the cluster holds.
fn print_cluster(running: &SimulatedCluster, args: &SimulateArgs) {
    let (made, sim) = (&running.made, running.sim());
    let count = |r: Resource| sim.list(r, None).len();
    println!(
        "kubesd simulator serving {}: {} nodes, {} pods, {} services, {} ingresses, \
         {} deployments, {} replicasets, {} cronjobs, {} jobs, {} gateways, {} httproutes, \
         {} grpcroutes{}, {} ServiceMonitors, {} PodMonitors in namespaces {}",
        running.url(),
        made.nodes,
        made.pods,
        made.services,
        made.ingresses,
        count(Resource::Deployments),
        count(Resource::ReplicaSets),
        count(Resource::CronJobs),
        count(Resource::Jobs),
        made.routes.gateways,
        made.routes.http_routes,
        made.routes.grpc_routes,
        if args.without_gateway_api {
            " (not served: --without-gateway-api)"
        } else {
            ""
        },
        made.monitors.service_monitors,
        made.monitors.pod_monitors,
        made.namespaces.join(", ")
    );
}

/// The kubectl command line that reaches the simulator. The token is named, not
/// printed: it is a secret even here.
fn kubectl(url: &str, args: &SimulateArgs) -> String {
    let mut kubectl = format!("kubectl --server {url}");
    if args.tls {
        kubectl += &format!(" --certificate-authority {}", args.ca_file.display());
    }
    if args.token.is_some() {
        kubectl += " --token \"<the token given to --token>\"";
    }
    kubectl
}
