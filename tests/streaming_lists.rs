//! Streaming lists against the simulator over real HTTP: every role and
//! attach_metadata gives the same targets through a streaming list as through LIST;
//! a server that refuses, ignores or cuts streaming lists is listed with LIST, ends
//! synced with the same targets, and is not asked for a streaming list again; a 410
//! relists through a streaming list.

mod support;

use kubesd::config::ListMode;
use kubesd::metrics::{ListMethod, Metrics};
use kubesd::model::Role;
use kubesd::simulator::{
    Churn, ChurnRates, ClusterSpec, SimulatedCluster, Simulator, StreamingLists,
};
use kubesd::{Discovery, EngineOptions, Labels, SdConfig, Subscription};
use support::{actual, all_jobs, converge, subscribe_all};

async fn cluster(seed: u64) -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 3,
        pods: 30,
        namespaces: 3,
        pods_per_workload: 3,
        ..ClusterSpec::default()
    };
    SimulatedCluster::seeded(seed, spec)
        .await
        .expect("cluster starts")
}

fn options(list_mode: ListMode) -> EngineOptions {
    EngineOptions {
        list_mode,
        ..SimulatedCluster::engine_options()
    }
}

/// Every role's job with the metadata it can attach, and again with none.
fn jobs(url: &str) -> Vec<SdConfig> {
    let mut jobs = all_jobs(url);
    for role in Role::DISCOVERY {
        jobs.push(SdConfig::new(role, url));
    }
    jobs
}

/// URL watchers of `url` that list with `method` now, over every role.
fn watchers_listing(metrics: &Metrics, url: &str, method: ListMethod) -> i64 {
    let server = metrics.api_server(url);
    Role::ALL
        .into_iter()
        .map(|role| server.role(role).list_mode.get(method))
        .sum()
}

/// 410s met at `url`, over every role.
fn gone_at(metrics: &Metrics, url: &str) -> u64 {
    let server = metrics.api_server(url);
    Role::ALL
        .into_iter()
        .map(|role| server.role(role).gone.get())
        .sum()
}

/// Answers every watch request with 410 until one was met, so that the URLs relist.
async fn force_410(metrics: &Metrics, running: &SimulatedCluster) {
    let before = gone_at(metrics, &running.url());
    running.sim().faults().gone_next_watches(u32::MAX);
    running.sim().drop_watches(false);
    while gone_at(metrics, &running.url()) == before {
        actix_rt::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    running.sim().faults().gone_next_watches(0);
}

async fn converge_all(
    subs: &[Subscription<Labels>],
    sim: &Simulator,
    jobs: &[SdConfig],
    what: &str,
) {
    for (sub, config) in subs.iter().zip(jobs) {
        converge(sub, sim, config, what).await;
    }
}

async fn stop_all(subs: Vec<Subscription<Labels>>) {
    for sub in subs {
        sub.stop().await;
    }
}

#[actix_rt::test]
async fn every_role_and_attachment_gives_the_same_targets_streamed_as_listed() {
    support::init_logs();
    let running = cluster(301).await;
    let sim = running.sim();
    let jobs = jobs(&running.url());
    let listing = Discovery::start(options(ListMode::List));
    let listed = subscribe_all(&listing, &jobs).await;
    assert_eq!(sim.faults().streaming_list_requests(), 0, "LIST only");
    let streaming = Discovery::start(options(ListMode::Stream));
    let streamed = subscribe_all(&streaming, &jobs).await;
    assert!(sim.faults().streaming_list_requests() > 0);
    let url = running.url();
    assert!(watchers_listing(streaming.metrics(), &url, ListMethod::Streaming) > 0);
    assert!(watchers_listing(listing.metrics(), &url, ListMethod::List) > 0);
    for ((a, b), config) in listed.iter().zip(&streamed).zip(&jobs) {
        let (a, b) = (actual(a).await, actual(b).await);
        assert!(
            !a.is_empty() || config.role == Role::Ingress,
            "{}",
            config.role
        );
        assert_eq!(a, b, "{} with {:?}", config.role, config.attach_metadata);
    }
    converge_all(&streamed, sim, &jobs, "streamed").await;
    // The streams go on as watches.
    let mut churn = Churn::new(3011, ChurnRates::default());
    churn.step(sim, 30).expect("churn");
    converge_all(&streamed, sim, &jobs, "after churn").await;
    stop_all(listed).await;
    stop_all(streamed).await;
    running.stop().await;
}

/// A server that does not serve streaming lists, acted out as `mode`: every job ends
/// synced with the right targets, and the fallback is remembered.
async fn falls_back_and_remembers(seed: u64, mode: StreamingLists) {
    support::init_logs();
    let running = cluster(seed).await;
    let sim = running.sim();
    sim.faults().set_streaming_lists(mode);
    let jobs = jobs(&running.url());
    let discovery = Discovery::start(options(ListMode::Stream));
    let subs = subscribe_all(&discovery, &jobs).await;
    converge_all(&subs, sim, &jobs, &format!("{mode:?}")).await;
    let asked = sim.faults().streaming_list_requests();
    assert!(asked > 0, "{mode:?}: a streaming list was tried");
    assert_eq!(
        watchers_listing(discovery.metrics(), &running.url(), ListMethod::Streaming),
        0,
        "{mode:?}: every URL fell back"
    );
    // Served from now on, but the watchers remember: their relists after a 410 LIST.
    sim.faults().set_streaming_lists(StreamingLists::Served);
    force_410(discovery.metrics(), &running).await;
    let mut churn = Churn::new(seed, ChurnRates::default());
    churn.step(sim, 20).expect("churn");
    converge_all(&subs, sim, &jobs, &format!("{mode:?}, after a 410")).await;
    assert_eq!(sim.faults().streaming_list_requests(), asked, "{mode:?}");
    stop_all(subs).await;
    running.stop().await;
}

#[actix_rt::test]
async fn a_server_that_refuses_streaming_lists_with_422_is_listed() {
    falls_back_and_remembers(302, StreamingLists::Refused).await;
}

#[actix_rt::test]
async fn a_server_that_ends_the_stream_at_once_is_listed() {
    falls_back_and_remembers(303, StreamingLists::EndedAtOnce).await;
}

#[actix_rt::test]
async fn a_server_that_ignores_send_initial_events_is_listed() {
    falls_back_and_remembers(304, StreamingLists::Ignored).await;
}

#[actix_rt::test]
async fn a_410_relists_through_a_streaming_list() {
    support::init_logs();
    let running = cluster(305).await;
    let sim = running.sim();
    let jobs = vec![running.sd_config(Role::Pod)];
    let discovery = Discovery::start(EngineOptions {
        healthy_after: std::time::Duration::from_millis(200),
        ..options(ListMode::Stream)
    });
    let subs = subscribe_all(&discovery, &jobs).await;
    let asked = sim.faults().streaming_list_requests();
    // The watch is cut and its reconnect answered 410: the URL is listed again.
    force_410(discovery.metrics(), &running).await;
    let mut churn = Churn::new(3051, ChurnRates::default());
    churn.step(sim, 20).expect("churn");
    converge_all(&subs, sim, &jobs, "after a 410").await;
    assert!(
        sim.faults().streaming_list_requests() > asked,
        "the relist was a streaming list"
    );
    // A streaming list that met the 410 too was followed by a LIST; streaming lists
    // come back once the watch is healthy.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while watchers_listing(discovery.metrics(), &running.url(), ListMethod::Streaming) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "streaming lists came back"
        );
        actix_rt::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop_all(subs).await;
    running.stop().await;
}

/// A server that ignores `sendInitialEvents` and has nothing to send: a plain watch that
/// stays open and quiet. After `watch_stall_timeout` with nothing, the URL is listed.
#[actix_rt::test]
async fn a_quiet_plain_watch_instead_of_a_streaming_list_is_listed_after_the_stall_timeout() {
    use support::fake_api::{FakeApi, Reply, Request};
    support::init_logs();
    let pod = r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"5"},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","podIP":"10.0.0.1"}}"#;
    let list = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"5"}},"items":[{pod}]}}"#
    );
    let api = FakeApi::start(move |r: &Request| {
        if r.is_watch() {
            Reply::watch(Vec::new(), std::time::Duration::from_secs(30))
        } else {
            Reply::json(list.clone())
        }
    })
    .await;
    let discovery = Discovery::start(EngineOptions {
        watch_stall_timeout: std::time::Duration::from_millis(200),
        ..options(ListMode::Stream)
    });
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), support::keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    let targets = actual(&sub).await;
    assert_eq!(targets.len(), 1, "{targets:?}");
    let requests: Vec<String> = api.requests().into_iter().map(|r| r.target).collect();
    assert!(
        requests[0].contains("sendInitialEvents=true"),
        "{requests:?}"
    );
    assert!(
        !requests[1].contains("watch=1"),
        "then a LIST: {requests:?}"
    );
    assert_eq!(
        requests
            .iter()
            .filter(|t| t.contains("sendInitialEvents"))
            .count(),
        1,
        "{requests:?}"
    );
    sub.stop().await;
}

/// A real API server ends a watch with a 410 `ERROR` event and closes the stream at
/// once (after a restart, every resumed watch): the event and the end are read
/// together. The relist is a streaming list again; the old stream's end is not taken
/// for the end of the new one (which made the URL fall back to LIST for good).
#[actix_rt::test]
async fn a_410_event_and_the_streams_end_read_together_relist_streaming() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;
    use support::fake_api::{FakeApi, Reply, Request};
    support::init_logs();
    let pod = |name: &str| {
        format!(
            r#"{{"type":"ADDED","object":{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"5"}},"spec":{{"containers":[{{"name":"c"}}]}},"status":{{"phase":"Running","podIP":"10.0.0.1"}}}}}}"#
        )
    };
    let end = |rv: u32| {
        format!(
            r#"{{"type":"BOOKMARK","object":{{"kind":"Pod","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}","annotations":{{"k8s.io/initial-events-end":"true"}}}}}}}}"#
        )
    };
    let gone = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 5 (9)","reason":"Expired","code":410}}"#;
    let streams = AtomicUsize::new(0);
    let api = FakeApi::start(move |r: &Request| {
        if !r.target.contains("sendInitialEvents=true") {
            return Reply::k8s_status(400, "BadRequest", "this fake serves streaming lists only");
        }
        if streams.fetch_add(1, Ordering::Relaxed) == 0 {
            // The list of "p", then the watch's 410, and the end at once.
            Reply::watch(vec![pod("p"), end(5), gone.to_string()], Duration::ZERO)
        } else {
            Reply::watch(vec![pod("q"), end(9)], Duration::from_secs(30))
        }
    })
    .await;
    let discovery = Discovery::start(options(ListMode::Stream));
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), support::keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let names: Vec<String> = actual(&sub)
            .await
            .iter()
            .filter_map(|t| t.get("__meta_kubernetes_pod_name").cloned())
            .collect();
        if names == ["q"] {
            break;
        }
        let requests: Vec<String> = api.requests().into_iter().map(|r| r.target).collect();
        assert!(
            std::time::Instant::now() < deadline,
            "the relist did not complete as a streaming list: targets {names:?}, requests {requests:?}"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    let requests: Vec<String> = api.requests().into_iter().map(|r| r.target).collect();
    assert!(
        requests
            .iter()
            .all(|t| t.contains("sendInitialEvents=true")),
        "no LIST: {requests:?}"
    );
    assert!(watchers_listing(discovery.metrics(), &api.url, ListMethod::Streaming) > 0);
    sub.stop().await;
}

/// `kubesd once` against a fake server counting requests, with `args`: its targets
/// and the requests it made. With `close_stdout`, the reader hangs up at once (as
/// `| head` does when it has what it wants).
async fn once_against_fake(args: &[&str], close_stdout: bool) -> (String, Vec<String>) {
    use support::fake_api::{FakeApi, Reply, Request};
    let pod = r#"{"metadata":{"name":"p","namespace":"ns","resourceVersion":"5"},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","podIP":"10.0.0.1"}}"#;
    let list = format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"5"}},"items":[{pod}]}}"#
    );
    let initial = vec![
        format!(r#"{{"type":"ADDED","object":{pod}}}"#),
        r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}}"#.to_string(),
    ];
    let hold = std::time::Duration::from_secs(30);
    let api = FakeApi::start(move |r: &Request| {
        if r.target.contains("sendInitialEvents=true") {
            Reply::watch(initial.clone(), hold)
        } else if r.is_watch() {
            Reply::watch(Vec::new(), hold)
        } else {
            Reply::json(list.clone())
        }
    })
    .await;
    // A directory of its own for each call: the tests of this file run at once.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kubesd-once-{call}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = dir.join("kubesd.yml");
    std::fs::write(
        &config,
        format!(
            "scrape_configs:\n  - job_name: pods\n    kubernetes_sd_configs:\n      - {{role: pod, api_server: \"{}\"}}\n",
            api.url
        ),
    )
    .expect("config written");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(["once", "--timeout", "20s", "--config"])
        .arg(&config)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("kubesd starts");
    if close_stdout {
        drop(child.stdout.take());
    }
    // Polled, so that this thread keeps serving the fake meanwhile.
    let status = loop {
        if let Some(status) = child.try_wait().expect("kubesd runs") {
            break status;
        }
        actix_rt::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        std::io::Read::read_to_string(&mut stdout, &mut out).expect("stdout");
    }
    assert!(status.success(), "kubesd once {args:?} failed: {out}");
    let _ = std::fs::remove_dir_all(&dir);
    (out, api.requests().into_iter().map(|r| r.target).collect())
}

#[actix_rt::test]
async fn once_lists_and_opens_no_watch() {
    let (out, requests) = once_against_fake(&["--kubernetes.list-mode", "stream"], false).await;
    assert!(out.contains("10.0.0.1"), "{out}");
    assert_eq!(
        requests.len(),
        1,
        "one streaming list, ended at its bookmark: {requests:?}"
    );
    assert!(requests[0].contains("sendInitialEvents=true"));
    let (out, requests) = once_against_fake(&["--kubernetes.list-mode", "list"], false).await;
    assert!(out.contains("10.0.0.1"), "{out}");
    assert_eq!(requests.len(), 1, "one LIST: {requests:?}");
    assert!(!requests[0].contains("watch=1"));
    // The default asks the server's version; this one has none to tell: LIST.
    let (out, requests) = once_against_fake(&[], false).await;
    assert!(out.contains("10.0.0.1"), "{out}");
    assert_eq!(requests.len(), 2, "the version, one LIST: {requests:?}");
    assert_eq!(requests[0], "/version");
    assert!(!requests[1].contains("watch=1"));
}

/// A reader that hangs up before `kubesd once` prints (`kubesd once … | head -c0`) ends
/// nothing badly: the targets were synced, and exit is a success, not a panic.
#[actix_rt::test]
async fn once_into_a_closed_pipe_exits_quietly() {
    let (out, requests) = once_against_fake(&["--kubernetes.list-mode", "list"], true).await;
    assert!(out.is_empty());
    assert_eq!(requests.len(), 1, "it still listed: {requests:?}");
}
