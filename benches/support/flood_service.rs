//! The service path's scenarios: `service` (`kubesd run` with N pod jobs, a reader
//! polling one job's `/sd` under the flood), `roles` (a job per role) and `clusters`
//! (two API server URLs), each `kubesd run` in-process against the fake API server.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use kubesd::Discovery;

use super::flood_child::Server;
use super::flood_engine::options;
use super::flood_members;
use super::flood_meter::{Meter, rename_new_threads, rss_mb, thread_ticks, trim_heap};
use super::flood_rows::Row;
use crate::flood_args::Args;

/// A Prometheus config of `jobs` pod jobs against `api_server`, each relabelling as
/// users commonly do: the pod's labels mapped, namespace and pod copied from the meta
/// labels, and a drop rule that never matches.
pub fn service_config(api_server: &str, jobs: usize, membership: Option<&str>) -> String {
    let mut out = membership_section(api_server, membership);
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

/// The `membership` section of the flood server's scraper pods, zone-aware, weighed by
/// their annotation, with `handover`; none without.
fn membership_section(api_server: &str, handover: Option<&str>) -> String {
    let Some(handover) = handover else {
        return String::new();
    };
    format!(
        "membership:\n  namespace: {}\n  label_selector: {}\n  api_server: {api_server}\n  \
         zone_aware: true\n  weight_from: annotation:kubesd.io/weight\n  handover: {handover}\n",
        flood_members::NAMESPACE,
        flood_members::SELECTOR,
    )
}

/// The job of a ServiceMonitor selecting every service's `http` port, relabelling as
/// prometheus-operator generates it (`$(SHARD)` as 0, as its config reloader expands
/// it), named `servicemonitor-0`: role endpoints, whose targets carry their pods'
/// labels too.
pub fn service_monitor_config(api_server: &str, membership: Option<&str>) -> String {
    let mut out = membership_section(api_server, membership);
    out.push_str(&format!(
        r#"scrape_configs:
  - job_name: servicemonitor-0
    kubernetes_sd_configs:
      - role: endpoints
        api_server: {api_server}
    relabel_configs:
      - {{source_labels: [job], target_label: __tmp_prometheus_job_name}}
      - {{action: keep, source_labels: [__meta_kubernetes_endpoint_port_name], regex: http}}
      - {{source_labels: [__meta_kubernetes_endpoint_address_target_kind, __meta_kubernetes_endpoint_address_target_name],
          separator: ;, regex: Node;(.*), replacement: '${{1}}', target_label: node}}
      - {{source_labels: [__meta_kubernetes_endpoint_address_target_kind, __meta_kubernetes_endpoint_address_target_name],
          separator: ;, regex: Pod;(.*), replacement: '${{1}}', target_label: pod}}
      - {{source_labels: [__meta_kubernetes_namespace], target_label: namespace}}
      - {{source_labels: [__meta_kubernetes_service_name], target_label: service}}
      - {{source_labels: [__meta_kubernetes_pod_name], target_label: pod}}
      - {{source_labels: [__meta_kubernetes_pod_container_name], target_label: container}}
      - {{action: drop, source_labels: [__meta_kubernetes_pod_phase], regex: (Failed|Succeeded)}}
      - {{source_labels: [__meta_kubernetes_service_name], target_label: job, replacement: '${{1}}'}}
      - {{target_label: endpoint, replacement: http}}
      - {{source_labels: [__address__, __tmp_hash], target_label: __tmp_hash, regex: (.+);, replacement: $1, action: replace}}
      - {{source_labels: [__tmp_hash], target_label: __tmp_hash, modulus: 1, action: hashmod}}
      - {{source_labels: [__tmp_hash, __tmp_disable_sharding], regex: '0;|.+;.+', action: keep}}
"#
    ));
    out
}

/// The roles scenario's config: one job per role a cluster's monitoring commonly uses
/// (pod, endpoints, service, node) against `api_server`, each relabelling as users do.
pub fn roles_config(api_server: &str) -> String {
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
pub fn clusters_config(api_server: &str) -> String {
    let other = api_server.replace("127.0.0.1", "localhost");
    format!(
        "scrape_configs:\n{}{}",
        relabelling_job("pod", "pod", "pod", api_server),
        relabelling_job("pod-localhost", "pod", "pod", &other)
    )
}

/// A job of role `role` against `api_server` that maps the labels of its objects (of
/// kind `name`: an endpoints object's are its service's) and copies their name.
pub fn relabelling_job(job: &str, role: &str, name: &str, api_server: &str) -> String {
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
pub fn http_get(addr: &str, path: &str) -> std::io::Result<(u16, usize)> {
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
pub enum BenchJobs {
    /// This many relabelling pod jobs.
    Pods(usize),
    /// The roles scenario's four jobs ([`roles_config`]).
    Roles,
    /// The clusters scenario's two pod jobs ([`clusters_config`]).
    Clusters,
    /// A ServiceMonitor's job ([`service_monitor_config`]).
    ServiceMonitor,
}

/// `kubesd run`'s job set for `jobs` against `server`, served over HTTP SD on a free
/// port: the set, the server's handle and its address.
pub async fn start_service(
    args: &Args,
    server: &Server,
    jobs: BenchJobs,
    membership: Option<&str>,
) -> (
    kubesd::service::JobSet,
    actix_web::dev::ServerHandle,
    String,
) {
    use kubesd::service::{
        CollectorLabels, JobSet, JobSetOptions, ServiceState, Shard, serve_http,
    };
    use std::collections::BTreeMap;
    use std::sync::RwLock;

    let text = match jobs {
        BenchJobs::Roles => roles_config(&server.url),
        BenchJobs::Clusters => clusters_config(&server.url),
        BenchJobs::Pods(n) => service_config(&server.url, n, membership),
        BenchJobs::ServiceMonitor => service_monitor_config(&server.url, membership),
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
    )
    .serving_collectors(match args.fleet_collector_labels.as_str() {
        "all" => CollectorLabels::All,
        _ => CollectorLabels::Readable,
    });
    set.apply(&config).await.expect("jobs start");
    let state = Arc::new(ServiceState {
        jobs: published,
        reload: None,
        engine_metrics: Default::default(),
        service_metrics: Default::default(),
    });
    let before = thread_ticks();
    let (http, bound) =
        serve_http("127.0.0.1:0".parse().expect("address"), state, None).expect("listens");
    let handle = http.handle();
    actix_rt::spawn(http);
    name_http_workers(&before).await;
    (set, handle, bound.to_string())
}

/// The name the HTTP server's workers are given here, so that their CPU counts with
/// the serving side's: in an actix system they are arbiters, named as every other
/// arbiter is (`actix-rt|system:0|arbiter:N`, which the kernel cuts to
/// `actix-rt|system`).
pub const HTTP_WORKER: &str = "http-worker";

/// Waits until the HTTP server started after `before` was taken has its acceptor (it
/// starts its workers first), then names the arbiters that appeared meanwhile
/// [`HTTP_WORKER`].
async fn name_http_workers(before: &HashMap<u64, (String, u64)>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let started = || {
        (thread_ticks().iter())
            .any(|(tid, (name, _))| !before.contains_key(tid) && name.starts_with("actix-server"))
    };
    while !started() && Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
    let named = rename_new_threads(before, "actix-rt|system", HTTP_WORKER);
    assert!(named > 0, "the HTTP server's worker thread was not found");
}

/// `kubesd run` in-process with `jobs` jobs: sync (until `/ready` answers 200 and every
/// job actor has relabelled every pod once: `/ready` says the discovery listed, not that
/// the relabelled targets are all in `/sd`), then
/// the flood (until every job's target count shows the deletion that follows the last
/// event), with a reader polling the first job's `/sd` throughout.
pub async fn service_run(args: &Args, server: &Server, jobs: usize) -> Vec<Row> {
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
pub fn job_statuses(set: &kubesd::service::JobSet) -> Vec<kubesd::service::JobStatus> {
    set.jobs().iter().map(|(_, job)| job.status()).collect()
}

/// Waits until every job serves fewer targets than `before` (the flood removed some),
/// or `deadline`; false at the deadline.
pub async fn wait_targets_below(
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
pub async fn wait_synced(
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
pub async fn roles_run(args: &Args, server: &Server, jobs: BenchJobs) -> Vec<Row> {
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
pub async fn idle_sd_requests(addr: &str) -> Vec<String> {
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
pub fn spawn_sd_reader(
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
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    sorted
        .get(((sorted.len() as f64 - 1.0) * q) as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// The targets API's dropped listing of job `pods-0`, timed, as a note for the row: it
/// relabels every one of the job's objects in its actor (the API unused until then, so
/// the peak RSS measured before is that of a kubesd nobody asks).
pub async fn dropped_listing(addr: &str) -> String {
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
