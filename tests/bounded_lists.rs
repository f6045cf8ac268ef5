//! Bounded LIST attempts, against a fake server on 127.0.0.1 that counts requests:
//! pages that never end, a continue token when no `limit` was asked for, pages that
//! come round again or bring nothing new, and redirect loops each end the attempt
//! after a bounded number of requests; the last good targets are kept and the next
//! attempt waits for the backoff. A server whose every page names a next one costs at
//! most 20 requests a minute in each list mode.

mod support;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use kubesd::config::ListMode;
use kubesd::metrics::RequestError;
use kubesd::model::Role;
use kubesd::simulator::SimulatedCluster;
use kubesd::{Discovery, EngineOptions, SdConfig};
use support::fake_api::{FakeApi, Reply, Request};
use support::{actual, keep_all};

const BUDGET: usize = 5;
const BACKOFF: Duration = Duration::from_millis(200);

fn options(list_from_watch_cache: bool) -> EngineOptions {
    EngineOptions {
        list_mode: ListMode::List,
        list_from_watch_cache,
        max_list_pages: BUDGET,
        backoff_initial: BACKOFF,
        backoff_max: Duration::from_secs(2),
        ..SimulatedCluster::engine_options()
    }
}

fn pod(name: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"5"}},"spec":{{"containers":[{{"name":"c"}}]}},"status":{{"phase":"Running","podIP":"10.0.0.{}"}}}}"#,
        name.len()
    )
}

fn page(name: &str, token: Option<&str>) -> String {
    let cont = token
        .map(|t| format!(r#","continue":"{t}""#))
        .unwrap_or_default();
    format!(
        r#"{{"kind":"PodList","apiVersion":"v1","metadata":{{"resourceVersion":"5"{cont}}},"items":[{}]}}"#,
        pod(name)
    )
}

/// A watch ended at once by a 410 `ERROR` event: the URL is listed again.
fn gone() -> Reply {
    let line = r#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version"}}"#;
    Reply::watch(vec![line.to_string()], Duration::ZERO)
}

/// The LIST requests (not watches) since `since`, grouped into attempts: each starts
/// with a request that is neither a next page nor a redirect's target.
fn attempts(api: &FakeApi, since: Instant, starts: impl Fn(&Request) -> bool) -> Vec<Vec<Request>> {
    let mut out: Vec<Vec<Request>> = Vec::new();
    for r in api
        .requests_since(since)
        .into_iter()
        .filter(|r| !r.is_watch())
    {
        match out.last_mut() {
            Some(attempt) if !starts(&r) => attempt.push(r),
            _ => out.push(vec![r]),
        }
    }
    out
}

fn endless_errors(discovery: &Discovery) -> u64 {
    discovery.metrics().role_total(Role::Pod, |m| {
        m.request_errors.get(RequestError::EndlessList)
    })
}

/// Syncs a pod job against `api` (one pod, `old`), then answers LISTs with `list` and
/// watches with a 410 until at least `n` attempts were made after the sync; those
/// attempts, and how many ended as endless.
async fn after_a_good_sync(
    api: &FakeApi,
    list_from_watch_cache: bool,
    list: impl Fn(&Request) -> Reply + 'static,
    starts: impl Fn(&Request) -> bool,
    n: usize,
) -> (Vec<Vec<Request>>, u64) {
    api.set(|r: &Request| {
        if r.is_watch() {
            // Ends soon: the watcher then watches again, and meets what is set below.
            Reply::watch(Vec::new(), Duration::from_millis(100))
        } else {
            Reply::json(page("old", None))
        }
    });
    let discovery = Discovery::start(options(list_from_watch_cache));
    let sub = discovery
        .subscribe(&SdConfig::new(Role::Pod, &api.url), keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    let good = actual(&sub).await;
    assert_eq!(good.len(), 1);
    let since = Instant::now();
    api.set(move |r: &Request| if r.is_watch() { gone() } else { list(r) });
    while attempts(api, since, &starts).len() <= n {
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    // The last good targets are kept.
    assert_eq!(actual(&sub).await, good);
    let made = attempts(api, since, &starts);
    sub.stop().await;
    // The last one may still be under way.
    (made[..n].to_vec(), endless_errors(&discovery))
}

/// Each attempt made exactly `requests` requests, and the next began after the
/// backoff's shortest delay (half the initial one, for the jitter).
fn assert_bounded(attempts: &[Vec<Request>], requests: usize, what: &str) {
    for (i, attempt) in attempts.iter().enumerate() {
        let targets: Vec<&str> = attempt.iter().map(|r| r.target.as_str()).collect();
        assert_eq!(attempt.len(), requests, "{what}, attempt {i}: {targets:?}");
    }
    for pair in attempts.windows(2) {
        let (Some(last), Some(next)) = (pair[0].last(), pair[1].first()) else {
            continue;
        };
        assert!(
            next.at.duration_since(last.at) >= BACKOFF / 2,
            "{what}: the next attempt did not wait for the backoff"
        );
    }
}

fn first_page(r: &Request) -> bool {
    !r.target.contains("continue=")
}

#[actix_rt::test]
async fn pages_that_never_end_end_the_attempt_after_its_budget() {
    support::init_logs();
    let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
    let n = Rc::new(Cell::new(0u64));
    // A new pod on every page: only the budget ends the attempt.
    let list = move |_: &Request| {
        n.set(n.get() + 1);
        let name = format!("new-{}", n.get());
        Reply::json(page(&name, Some(&format!("t{}", n.get()))))
    };
    let (made, endless) = after_a_good_sync(&api, false, list, first_page, 2).await;
    assert_bounded(&made, BUDGET, "endless pages");
    assert!(made[0][0].target.contains("limit="), "a paged LIST");
    assert!(endless > 0);
}

#[actix_rt::test]
async fn a_continue_token_when_no_limit_was_sent_ends_the_attempt_after_its_budget() {
    support::init_logs();
    let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
    let n = Rc::new(Cell::new(0u64));
    let list = move |_: &Request| {
        n.set(n.get() + 1);
        let name = format!("new-{}", n.get());
        Reply::json(page(&name, Some(&format!("t{}", n.get()))))
    };
    let (made, _) = after_a_good_sync(&api, true, list, first_page, 2).await;
    assert!(
        made[0][0].target.contains("resourceVersion=0") && !made[0][0].target.contains("limit="),
        "a watch-cache LIST without limit: {}",
        made[0][0].target
    );
    assert_bounded(&made, BUDGET, "continue without limit");
}

#[actix_rt::test]
async fn pages_that_come_round_again_end_the_attempt_at_once() {
    support::init_logs();
    let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
    // t1, t2, then t1 again.
    let list = |r: &Request| {
        let token = if r.target.contains("continue=t1") {
            "t2"
        } else {
            "t1"
        };
        Reply::json(page("new", Some(token)))
    };
    let (made, _) = after_a_good_sync(&api, false, list, first_page, 2).await;
    assert_bounded(&made, 3, "pages round again");
}

#[actix_rt::test]
async fn a_redirect_loop_ends_the_attempt_at_once() {
    support::init_logs();
    let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
    let redirect = |to: &str| Reply::Whole {
        status: 302,
        headers: vec![("Location".into(), to.into())],
        body: Vec::new(),
    };
    // The LIST to /a, /a to /b, /b back to /a.
    let list = move |r: &Request| {
        if r.target.starts_with("/a") {
            redirect("/b")
        } else {
            redirect("/a")
        }
    };
    let starts = |r: &Request| r.target.starts_with("/api/");
    let (made, _) = after_a_good_sync(&api, false, list, starts, 2).await;
    // The LIST, /a, /b: then back to /a, which the attempt already asked for.
    assert_bounded(&made, 3, "redirect loop");
}

#[actix_rt::test]
async fn pages_that_bring_nothing_new_end_the_attempt_at_the_third() {
    support::init_logs();
    let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
    // A fresh continue token every time, the same pod on every page: the third page
    // brings nothing the second did not.
    let n = Rc::new(Cell::new(0u64));
    let list = move |_: &Request| {
        n.set(n.get() + 1);
        Reply::json(page("new", Some(&format!("t{}", n.get()))))
    };
    let (made, _) = after_a_good_sync(&api, false, list, first_page, 2).await;
    assert_bounded(&made, 3, "nothing new");
}

/// The longest retry delay of the rate test (30 s in production).
const CAP: Duration = Duration::from_millis(400);

/// How long the rate test's server pages without end.
const FAULT: Duration = Duration::from_millis(2500);

/// A server that lists one pod and then, for [`FAULT`], names a next page on every
/// page (a fresh continue token, the same pod) and ends every watch with a 410: in
/// every list mode the URL makes at most 20 requests per two backoff caps (20 a minute
/// with the default 30 s cap) with the default page budget, and the last good targets
/// are served throughout. Streaming lists are refused (403), so the stream mode lists
/// with LIST.
#[actix_rt::test]
async fn a_server_whose_pages_never_end_costs_at_most_twenty_requests_a_minute_in_every_list_mode()
{
    support::init_logs();
    for mode in [ListMode::Auto, ListMode::List, ListMode::Stream] {
        let api = FakeApi::start(|_: &Request| Reply::json("{}")).await;
        let refuse_streaming = |r: &Request| {
            r.target
                .contains("sendInitialEvents=true")
                .then(|| Reply::k8s_status(403, "Forbidden", "sendInitialEvents is forbidden"))
        };
        api.set(move |r: &Request| {
            if let Some(refused) = refuse_streaming(r) {
                refused
            } else if r.is_watch() {
                Reply::watch(Vec::new(), Duration::from_millis(100))
            } else {
                Reply::json(page("old", None))
            }
        });
        let options = EngineOptions {
            list_mode: mode,
            ..support::field_fault_options()
        };
        let discovery = Discovery::start(options);
        let sub = discovery
            .subscribe(&SdConfig::new(Role::Pod, &api.url), keep_all)
            .await
            .expect("subscribes");
        sub.synced().await;
        let good = actual(&sub).await;
        assert_eq!(good.len(), 1, "{mode}");

        let n = Rc::new(Cell::new(0u64));
        api.set(move |r: &Request| {
            if let Some(refused) = refuse_streaming(r) {
                return refused;
            }
            if r.is_watch() {
                return gone();
            }
            n.set(n.get() + 1);
            Reply::json(page("new", Some(&format!("t{}", n.get()))))
        });
        let start = Instant::now();
        while start.elapsed() < FAULT {
            assert_eq!(actual(&sub).await, good, "{mode}: the last good targets");
            actix_rt::time::sleep(Duration::from_millis(20)).await;
        }
        let during = api.requests_since(start);
        let allowed = 20 * FAULT.as_millis() / (2 * CAP.as_millis());
        assert!(
            during.len() as u128 <= allowed,
            "{mode}: {} requests in {FAULT:?}, over {allowed} (20 per two backoff caps)",
            during.len()
        );
        assert!(
            during.iter().filter(|r| !r.is_watch()).count() >= 6,
            "{mode}: it does list again"
        );
        sub.stop().await;
    }
}
