//! Flow control from a URL watcher to its group, against a fake API server on
//! 127.0.0.1 that writes a watch stream piece by piece: while the group does not
//! answer, the watcher has at most `watcher_in_flight` outputs unhandled and stops
//! taking events off its stream, however many the server sends, and does not take its
//! own pause for a stalled stream; once the group answers, every event arrives, in
//! order, on the same watch. A LIST is read the same way: at most `watcher_in_flight`
//! of its parts unhandled, and its end only once the group has handled every part.

mod support;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use kubesd::actors::messages::{UrlId, WatcherOutput};
use kubesd::actors::url_watcher::{UrlWatcher, UrlWatcherSetup};
use kubesd::api::resource_urls;
use kubesd::config::ListMode;
use kubesd::http::ApiEndpoint;
use kubesd::wire::json::WatchEvent;
use kubesd::{EngineOptions, Role};
use serde_json::json;
use support::fake_api::{FakeApi, Reply};
use tokio::sync::watch;

/// The watcher's window in this test.
const WINDOW: usize = 2;

/// Events the server writes on the watch.
const EVENTS: u64 = 300;

/// The watch's progress deadline in this test; the group holds the watcher for
/// several of them.
const STALL: Duration = Duration::from_millis(100);

/// What the fake group saw: the resourceVersions of the watch events it received, one
/// list per `Deltas` output.
type Seen = Rc<RefCell<Vec<Vec<u64>>>>;

/// A group that answers the list at once and holds every watch batch unanswered while
/// `held` says so (a group that does not keep up).
struct SlowGroup {
    seen: Seen,
    held: watch::Receiver<bool>,
}

impl Actor for SlowGroup {
    type Context = Context<Self>;
}

impl Handler<WatcherOutput> for SlowGroup {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, output: WatcherOutput, _: &mut Context<Self>) -> Self::Result {
        let WatcherOutput::Deltas { deltas, .. } = output else {
            return Box::pin(async {});
        };
        let versions = deltas.iter().map(resource_version).collect();
        self.seen.borrow_mut().push(versions);
        let mut held = self.held.clone();
        Box::pin(async move {
            let _ = held.wait_for(|held| !*held).await;
        })
    }
}

fn resource_version(event: &WatchEvent) -> u64 {
    match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o.resource_version().parse().expect("a number")
        }
        other => panic!("not an object event: {other:?}"),
    }
}

fn pod(rv: u64) -> serde_json::Value {
    json!({"metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv.to_string(),
                        "labels": {"n": rv.to_string()}},
           "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
           "status": {"phase": "Running", "podIP": "10.0.0.1"}})
}

/// A server with one pod listed at resourceVersion 1, whose watch writes `EVENTS`
/// changes of it, and sets `written` when it has written them all. Every chunk ends
/// in the middle of a line (the second half of one event, the first of the next), so
/// the watcher always holds an incomplete line when it stops reading.
async fn server(written: Rc<RefCell<bool>>) -> FakeApi {
    FakeApi::start(move |request| {
        if !request.is_watch() {
            let list = json!({"kind": "PodList", "apiVersion": "v1",
                              "metadata": {"resourceVersion": "1"}, "items": [pod(1)]});
            return Reply::json(list.to_string());
        }
        let written = Rc::clone(&written);
        Reply::Stream(Box::new(move |mut w| {
            Box::pin(async move {
                let mut rest = String::new();
                for rv in 2..2 + EVENTS {
                    let line = format!("{}\n", json!({"type": "MODIFIED", "object": pod(rv)}));
                    let (head, tail) = line.split_at(line.len() / 2);
                    let piece = std::mem::replace(&mut rest, tail.to_string()) + head;
                    if w.chunk(piece.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::task::yield_now().await;
                }
                if w.chunk(rest.as_bytes()).await.is_err() {
                    return;
                }
                *written.borrow_mut() = true;
                // Open until the test ends.
                std::future::pending::<()>().await;
            })
        }))
    })
    .await
}

/// Waits (yielding to the actors and the server on this thread) until `done`, for at
/// most a few seconds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A watcher of the pods of `api`, handing its output to `group`.
fn setup(
    api: &FakeApi,
    options: EngineOptions,
    group: Recipient<WatcherOutput>,
) -> UrlWatcherSetup {
    UrlWatcherSetup {
        id: UrlId(0),
        url: resource_urls(Role::Pod, &[], &[]).remove(0),
        endpoint: ApiEndpoint {
            base_url: api.url.clone(),
            http: Default::default(),
        },
        tls: None,
        options,
        metrics: Default::default(),
        group,
        group_id: 1,
    }
}

#[actix_rt::test]
async fn a_group_that_does_not_answer_stops_its_watcher_taking_events() {
    let written = Rc::new(RefCell::new(false));
    let api = server(Rc::clone(&written)).await;
    let seen: Seen = Rc::default();
    let (hold, held) = watch::channel(true);
    let group = SlowGroup {
        seen: Rc::clone(&seen),
        held,
    }
    .start();
    let options = EngineOptions {
        watcher_in_flight: WINDOW,
        list_mode: ListMode::List,
        encoding: kubesd::config::WireEncoding::Json,
        relist_interval: None,
        watch_stall_timeout: STALL,
        ..EngineOptions::default()
    };
    let _watcher = UrlWatcher::new(setup(&api, options, group.recipient())).start();

    // The server writes every event; the watcher hands on a window's worth of batches
    // and takes no more while none is answered, for longer than the stall deadline.
    until("the server to write every event", || *written.borrow()).await;
    until("a window of batches", || seen.borrow().len() >= WINDOW).await;
    actix_rt::time::sleep(STALL * 3).await;
    let held_back: Vec<u64> = seen.borrow().iter().flatten().copied().collect();
    assert_eq!(seen.borrow().len(), WINDOW, "more batches than the window");
    assert!(
        (held_back.len() as u64) < EVENTS,
        "the watcher took every event off its stream: {} batches",
        seen.borrow().len()
    );

    // The group answers: the rest arrive, every one, in order.
    let _ = hold.send(false);
    let last = 1 + EVENTS;
    until("the last event", || {
        seen.borrow().last().and_then(|b| b.last()) == Some(&last)
    })
    .await;
    let all: Vec<u64> = seen.borrow().iter().flatten().copied().collect();
    assert_eq!(all, (2..=last).collect::<Vec<_>>());
    assert!(seen.borrow().len() > WINDOW);
    let watches = api.requests().iter().filter(|r| r.is_watch()).count();
    assert_eq!(
        watches, 1,
        "the held stream was cut as stalled and watched again"
    );
}

/// The pods of the list's two pages.
const PAGES: [usize; 2] = [1500, 700];

/// How long the list test's group holds its parts unanswered.
const HOLD: Duration = Duration::from_millis(300);

/// What a group saw of a LIST: each part's size and `first` flag, in order of arrival;
/// the parts answered so far and the most unanswered at once; and how many parts had
/// been answered when the list's end (`Relisted`) arrived.
#[derive(Default)]
struct ListSeen {
    parts: Vec<(usize, bool)>,
    answered: usize,
    most_unanswered: usize,
    relisted_after: Option<usize>,
}

/// A group that holds every part of a LIST unanswered while `held` says so.
struct ListGroup {
    seen: Rc<RefCell<ListSeen>>,
    held: watch::Receiver<bool>,
}

impl Actor for ListGroup {
    type Context = Context<Self>;
}

impl Handler<WatcherOutput> for ListGroup {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, output: WatcherOutput, _: &mut Context<Self>) -> Self::Result {
        {
            let mut seen = self.seen.borrow_mut();
            match output {
                WatcherOutput::ListPart { objects, first, .. } => {
                    seen.parts.push((objects.len(), first));
                    let unanswered = seen.parts.len() - seen.answered;
                    seen.most_unanswered = seen.most_unanswered.max(unanswered);
                }
                WatcherOutput::Relisted { .. } => {
                    seen.relisted_after = Some(seen.answered);
                    return Box::pin(async {});
                }
                _ => return Box::pin(async {}),
            }
        }
        let (seen, mut held) = (Rc::clone(&self.seen), self.held.clone());
        Box::pin(async move {
            let _ = held.wait_for(|held| !*held).await;
            seen.borrow_mut().answered += 1;
        })
    }
}

/// A server whose pod list comes in two pages (`PAGES`), each in one whole body; its
/// watch never answers.
async fn list_server() -> FakeApi {
    FakeApi::start(move |request| {
        if request.is_watch() {
            return Reply::Silence;
        }
        let (page, range, cont) = if request.target.contains("continue=") {
            (1, PAGES[0]..PAGES[0] + PAGES[1], None)
        } else {
            (0, 0..PAGES[0], Some("next"))
        };
        let items: Vec<_> = range
            .map(|i| {
                let mut pod = pod(5);
                pod["metadata"]["name"] = json!(format!("p{i}"));
                pod
            })
            .collect();
        assert_eq!(items.len(), PAGES[page]);
        let list = json!({"kind": "PodList", "apiVersion": "v1",
                          "metadata": {"resourceVersion": "5", "continue": cont},
                          "items": items});
        Reply::json(list.to_string())
    })
    .await
}

/// A LIST of [`list_server`]'s two pages read for a [`ListGroup`] that holds every part
/// until `hold` lets go: what the group saw, the server, and the watcher reading.
struct HeldList {
    api: FakeApi,
    seen: Rc<RefCell<ListSeen>>,
    hold: watch::Sender<bool>,
    _watcher: Addr<UrlWatcher>,
}

/// Starts a [`HeldList`] whose watcher cuts a list that makes no progress for `stall`.
async fn held_list(stall: Duration) -> HeldList {
    let api = list_server().await;
    let seen: Rc<RefCell<ListSeen>> = Rc::default();
    let (hold, held) = watch::channel(true);
    let group = ListGroup {
        seen: Rc::clone(&seen),
        held,
    }
    .start();
    let options = EngineOptions {
        watcher_in_flight: WINDOW,
        list_mode: ListMode::List,
        encoding: kubesd::config::WireEncoding::Json,
        relist_interval: None,
        watch_stall_timeout: stall,
        ..EngineOptions::default()
    };
    let watcher = UrlWatcher::new(setup(&api, options, group.recipient())).start();
    HeldList {
        api,
        seen,
        hold,
        _watcher: watcher,
    }
}

#[actix_rt::test]
async fn a_group_that_does_not_answer_stops_its_watcher_reading_a_list() {
    let HeldList {
        api,
        seen,
        hold,
        _watcher,
    } = held_list(EngineOptions::default().watch_stall_timeout).await;

    // A window's worth of parts, the first the body's empty start, and no more while
    // none is answered.
    until("a window of parts", || seen.borrow().parts.len() >= WINDOW).await;
    actix_rt::time::sleep(HOLD).await;
    {
        let seen = seen.borrow();
        assert_eq!(seen.parts.len(), WINDOW, "more parts than the window");
        assert_eq!(seen.parts[0], (0, true), "the attempt starts with the body");
        assert_eq!(seen.relisted_after, None);
    }

    // The group answers: every part of both pages arrives, one marked first, and the
    // list's end only after the group has handled them all.
    let _ = hold.send(false);
    until("the end of the list", || {
        seen.borrow().relisted_after.is_some()
    })
    .await;
    let seen = seen.borrow();
    let objects: usize = seen.parts.iter().map(|(n, _)| n).sum();
    assert_eq!(objects, PAGES.iter().sum::<usize>());
    let firsts = seen.parts.iter().filter(|(_, first)| *first).count();
    assert_eq!(firsts, 1, "{:?}", seen.parts);
    assert_eq!(seen.relisted_after, Some(seen.parts.len()));
    assert!(seen.most_unanswered <= WINDOW, "{}", seen.most_unanswered);
    let lists = api.requests().iter().filter(|r| !r.is_watch()).count();
    assert_eq!(lists, 2, "one request per page, none retried");
}

/// The time a LIST's reader waits for its group is not the server's: a group that holds
/// its parts for several of the list's progress deadlines does not get the list cut as
/// stalled, and each page is asked for once.
#[actix_rt::test]
async fn a_list_held_by_its_group_past_the_progress_deadline_is_not_stalled() {
    let HeldList {
        api,
        seen,
        hold,
        _watcher,
    } = held_list(STALL).await;
    until("a window of parts", || seen.borrow().parts.len() >= WINDOW).await;
    actix_rt::time::sleep(HOLD).await;
    let _ = hold.send(false);
    until("the end of the list", || {
        seen.borrow().relisted_after.is_some()
    })
    .await;
    let objects: usize = seen.borrow().parts.iter().map(|(n, _)| n).sum();
    assert_eq!(objects, PAGES.iter().sum::<usize>());
    let lists = api.requests().iter().filter(|r| !r.is_watch()).count();
    assert_eq!(lists, 2, "one request per page, none cut and retried");
}
