//! The engine's scenarios: `sync` and `flood` (one subscriber keeping every target),
//! `fanout` (many subscribers sharing one group) and `deps` (role endpoints, whose
//! objects a pod event dirties), each through `Discovery` over HTTP.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use kubesd::config::Secret;
use kubesd::metrics::Metrics;
use kubesd::model::Role;
use kubesd::targets::AttachMetadata;
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Subscription};

use super::flood_child::Server;
use super::flood_meter::{Meter, rss_mb, trim_heap};
use super::flood_probe::{Kept, Probe};
use super::flood_rows::Row;
use crate::flood_args::Args;

pub fn options(args: &Args) -> EngineOptions {
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

pub fn config(args: &Args, server: &Server, role: Role) -> SdConfig {
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

pub fn arbiters(n: usize) -> Vec<actix::Arbiter> {
    (0..n).map(|_| actix::Arbiter::new()).collect()
}

pub async fn subscribe<T, F>(
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
pub async fn pod_run(
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
pub async fn subscribe_pods(
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
pub async fn pod_flood(
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
pub async fn deps_run(args: &Args, server: &Server) -> Vec<Row> {
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
