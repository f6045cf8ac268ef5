//! Chaos: random churn across every role while faults fire at random, then every
//! subscription must converge to the simulator's final state within a bounded time. Plus
//! one focused test per fault class.
//!
//! Seeded and reproducible: the seed comes from `KUBESD_CHAOS_SEED`, or is picked at
//! random and printed when a test fails (rerun with `KUBESD_CHAOS_SEED=<seed>`).

mod support;

use std::time::Duration;

use kubesd::config::ListMode;
use kubesd::metrics::Metrics;
use kubesd::model::Role;
use kubesd::simulator::{
    Churn, ChurnRates, ClusterSpec, Failure, Injection, SimulatedCluster, Simulator,
    SimulatorConfig,
};
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Subscription};
use support::{all_jobs, converge_within, keep_all, subscribe_all};

/// Prints the seed if the test panics, so a failure can be replayed.
struct SeedGuard(u64);

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("chaos seed {0}: rerun with KUBESD_CHAOS_SEED={0}", self.0);
        }
    }
}

fn seed() -> SeedGuard {
    support::init_logs();
    let seed = std::env::var("KUBESD_CHAOS_SEED")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    SeedGuard(seed)
}

/// Engine options for chaos: paged consistent lists (so continue tokens can expire
/// under compaction), short watches and progress deadline, and no periodic relist, so
/// that nothing but the watch protocol itself can make a test converge.
fn chaos_options() -> EngineOptions {
    EngineOptions {
        list_from_watch_cache: false,
        list_page_size: 25,
        watch_stall_timeout: Duration::from_millis(300),
        watch_timeout: (Duration::from_secs(1), Duration::from_secs(1)),
        relist_interval: None,
        ..SimulatedCluster::engine_options()
    }
}

async fn cluster(seed: u64, history: usize) -> SimulatedCluster {
    let config = SimulatorConfig {
        seed,
        history_limit: history,
        bookmark_interval: Duration::from_millis(50),
        split_pause: Duration::from_millis(2),
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        seed,
        nodes: 5,
        pods: 60,
        namespaces: 3,
        pods_per_workload: 4,
    };
    SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts")
}

async fn converge_all(
    subs: &[Subscription<Labels>],
    sim: &Simulator,
    jobs: &[SdConfig],
    what: &str,
) {
    for (sub, config) in subs.iter().zip(jobs) {
        converge_within(sub, sim, config, what, Duration::from_secs(30)).await;
    }
}

/// Random churn and faults for 40 rounds, then the faults stop and every job must
/// converge. `restarts` adds API-server restarts that reset resourceVersions.
async fn random_chaos(restarts: bool, options: EngineOptions) {
    let guard = seed();
    let mut rng = fastrand::Rng::with_seed(guard.0);
    let running = cluster(guard.0, 400).await;
    let sim = running.sim();
    let discovery = Discovery::start(options);
    let jobs = all_jobs(&running.url());
    let subs = subscribe_all(&discovery, &jobs).await;
    let mut churn = Churn::new(guard.0, ChurnRates::default());
    let mut fired = Vec::new();
    for _ in 0..40 {
        churn.step(sim, rng.usize(1..15)).expect("churn");
        if rng.bool() {
            support::touch_dependencies(sim, &mut rng);
        }
        fired.push(support::random_fault(sim, &mut rng, restarts));
        // Let the engine get into the middle of something before the next round.
        actix_rt::time::sleep(Duration::from_millis(rng.u64(1..25))).await;
    }
    // The faults stop; the final state must be reached.
    sim.stall_watches(false);
    sim.faults().fail_next(Failure::ServerError, 0);
    converge_all(&subs, sim, &jobs, &format!("after faults {fired:?}")).await;
    running.stop().await;
}

/// Every fault but restarts, with the periodic relist off: only the watch protocol
/// (resume, 410 handling, relist after bad events) can make this converge.
#[actix_rt::test]
async fn random_faults_under_churn_converge() {
    random_chaos(false, chaos_options()).await;
}

/// With restarts that reset resourceVersions. A watcher that reconnects only after
/// the new history has passed its old resourceVersion is accepted and silently misses
/// changes (the etcd-restore hazard); no watch can tell. The periodic relist is the
/// safety net that bounds it, here every second.
#[actix_rt::test]
async fn random_faults_with_restarts_converge_through_the_relist_safety_net() {
    let options = EngineOptions {
        relist_interval: Some(Duration::from_secs(1)),
        ..chaos_options()
    };
    random_chaos(true, options).await;
}

/// Runs `fault` once under churn against a pod and an endpoints job, keeps it armed for
/// `hold`, then checks they converge and that `metric` moved.
async fn focused(
    name: &str,
    fault: impl Fn(&Simulator),
    hold: Duration,
    metric: fn(&Metrics) -> u64,
) {
    focused_with(chaos_options(), name, fault, hold, metric).await;
}

/// [`focused`] with other engine options.
async fn focused_with(
    options: EngineOptions,
    name: &str,
    fault: impl Fn(&Simulator),
    hold: Duration,
    metric: fn(&Metrics) -> u64,
) {
    let guard = seed();
    let running = cluster(guard.0, 2_000).await;
    let sim = running.sim();
    let discovery = Discovery::start(options);
    let jobs: Vec<SdConfig> = all_jobs(&running.url())
        .into_iter()
        .filter(|c| matches!(c.role, Role::Pod | Role::Endpoints))
        .collect();
    let subs = subscribe_all(&discovery, &jobs).await;
    let before = metric(discovery.metrics());
    let mut churn = Churn::new(guard.0, ChurnRates::default());
    fault(sim);
    churn.step(sim, 10).expect("churn");
    // Give the fault time to be met by a live stream before it is cleared.
    actix_rt::time::sleep(hold).await;
    churn.step(sim, 10).expect("churn");
    sim.stall_watches(false);
    converge_all(&subs, sim, &jobs, name).await;
    assert!(
        metric(discovery.metrics()) > before,
        "{name}: the fault was not observed by the engine"
    );
    running.stop().await;
}

/// A counter summed over every role: the watchers of one group share the faults.
fn total(metrics: &Metrics, f: fn(&kubesd::metrics::RoleMetrics) -> u64) -> u64 {
    Role::ALL.iter().map(|r| metrics.role_total(*r, f)).sum()
}

const BRIEF: Duration = Duration::from_millis(50);

#[actix_rt::test]
async fn a_watch_dropped_mid_event_resumes() {
    focused(
        "drop mid-event",
        |s| s.drop_watches(true),
        BRIEF,
        |m| total(m, |r| r.watch_restarts.get()),
    )
    .await;
}

#[actix_rt::test]
async fn events_split_across_chunks_are_reassembled() {
    focused(
        "split events",
        |s| s.faults().split_next_events(50),
        BRIEF,
        |m| total(m, |r| r.events_modified.get()) + total(m, |r| r.events_added.get()),
    )
    .await;
}

#[actix_rt::test]
async fn gone_as_status_relists() {
    focused(
        "410 status",
        |s| {
            s.faults().gone_next_watches(2);
            s.drop_watches(false);
        },
        BRIEF,
        |m| total(m, |r| r.gone.get()),
    )
    .await;
}

#[actix_rt::test]
async fn server_errors_back_off_and_recover() {
    focused(
        "500s",
        |s| {
            s.faults().fail_next(Failure::ServerError, 3);
            s.drop_watches(false);
        },
        BRIEF,
        |m| total(m, |r| r.watch_restarts.get()),
    )
    .await;
}

#[actix_rt::test]
async fn too_many_requests_honours_retry_after() {
    focused(
        "429",
        |s| {
            s.faults().fail_next(Failure::TooManyRequests, 1);
            s.drop_watches(false);
        },
        BRIEF,
        |m| total(m, |r| r.watch_restarts.get()),
    )
    .await;
}

/// A stream that goes silent (no events, no bookmarks, no end) is idle, not stalled:
/// it is reopened from the same resourceVersion once its `timeoutSeconds` and the
/// progress deadline have passed. (A stream stalled mid-line is `field_faults`'.)
#[actix_rt::test]
async fn a_silent_stream_is_reopened_at_its_deadline() {
    // Held past the 1 s watch timeout and 300 ms deadline of `chaos_options`.
    focused(
        "silent stream",
        |s| s.stall_watches(true),
        Duration::from_millis(1600),
        |m| total(m, |r| r.watch_restarts.get()),
    )
    .await;
}

#[actix_rt::test]
async fn malformed_unknown_and_wrong_kind_events_relist() {
    for injection in [
        Injection::MalformedLine,
        Injection::UnknownType,
        Injection::WrongKind,
    ] {
        focused(
            &format!("{injection:?}"),
            move |s| s.inject(injection),
            BRIEF,
            |m| total(m, |r| r.rejected.total()),
        )
        .await;
    }
}

#[actix_rt::test]
async fn a_restart_with_reset_resource_versions_converges() {
    focused(
        "restart",
        |s| s.restart(),
        BRIEF,
        |m| total(m, |r| r.relists.total()),
    )
    .await;
}

#[actix_rt::test]
async fn an_expired_continue_token_restarts_the_list() {
    let guard = seed();
    let running = cluster(guard.0, 2_000).await;
    let sim = running.sim();
    let options = EngineOptions {
        list_page_size: 2,
        // Continue tokens are LIST's.
        list_mode: ListMode::List,
        ..chaos_options()
    };
    let discovery = Discovery::start(options);
    let config = running.sd_config(Role::Pod);
    let gone_before = total(discovery.metrics(), |r| r.gone.get());
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    // Compact while the 2-object pages are being fetched: a continue token expires.
    let mut churn = Churn::new(guard.0, ChurnRates::default());
    for _ in 0..40 {
        churn.step(sim, 1).expect("churn");
        sim.compact();
        actix_rt::time::sleep(Duration::from_millis(2)).await;
    }
    sub.synced().await;
    converge_within(
        &sub,
        sim,
        &config,
        "expired continue",
        Duration::from_secs(30),
    )
    .await;
    assert!(
        total(discovery.metrics(), |r| r.gone.get()) > gone_before,
        "a continue token expired"
    );
    running.stop().await;
}
