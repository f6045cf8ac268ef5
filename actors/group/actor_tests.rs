//! Message-level tests of the group watcher: no network, no URL watchers. A recording
//! factory stands in for the watchers, the test feeds `WatcherOutput` as they would, and
//! recording subscribers capture what the group pushes.

use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use super::*;
use crate::api::ResourceUrl;
use crate::backlog::{SlotSet, for_latest_per_slot};
use crate::group::{GroupKey, WatcherFactory, WatcherLink};
use crate::http::ApiEndpoint;
use crate::messages::{
    FlushDirty, FlusherMembership, Push, StopWatcher, Subscribe, SubscriberId, SubscriberLink,
    TargetChange, TargetsPush, Unsubscribe, UrlId, WatcherOutput,
};
use crate::model::{Object, Role};
use crate::registry::{GroupEntry, Registry};
use crate::targets::AttachMetadata;
use crate::wire::json::WatchEvent;

/// What a recording subscriber received.
#[derive(Debug, Clone)]
enum Got {
    /// Keys, synced, and `key v=<the pod label v>` of each object's first target.
    Replaced(Vec<String>, bool, Vec<String>),
    Changed(Vec<(String, usize)>, bool),
    /// Held-back batches, read as a subscriber reads them: each slot's latest change,
    /// as (key, slot, targets); synced; and how many batches came.
    CaughtUp(Vec<(String, u32, usize)>, bool, usize),
}

/// A subscriber that records every message. While `held` says so, it does not answer
/// them (a subscriber that does not keep up): the group awaits its replies.
struct Recorder {
    got: Arc<Mutex<Vec<Got>>>,
    /// `key zone=<the node label zone>` of each object's first target, in every
    /// replacement and change received.
    zones: Arc<Mutex<Vec<String>>>,
    /// Messages received and not answered yet.
    unanswered: Arc<AtomicUsize>,
    held: tokio::sync::watch::Receiver<bool>,
}

impl Recorder {
    /// Notes the node zone each change's targets carry.
    fn note_zones(&self, changes: &[crate::messages::TargetChange]) {
        let mut zones = self.zones.lock().unwrap();
        for c in changes {
            let first = c.targets.as_deref().and_then(|t| t.first());
            let zone = first.and_then(|l| l.get("__meta_kubernetes_node_label_zone"));
            zones.push(format!("{} zone={}", c.key, zone.unwrap_or("-")));
        }
    }

    /// The reply: at once, or once the test lets the subscriber go.
    fn reply(&self) -> ResponseFuture<()> {
        let mut held = self.held.clone();
        let unanswered = Arc::clone(&self.unanswered);
        unanswered.fetch_add(1, SeqCst);
        Box::pin(async move {
            let _ = held.wait_for(|held| !*held).await;
            unanswered.fetch_sub(1, SeqCst);
        })
    }
}

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<TargetsPush> for Recorder {
    type Result = ResponseFuture<()>;
    fn handle(&mut self, m: TargetsPush, _: &mut Context<Self>) -> Self::Result {
        match m.push {
            Push::Changed(changes) => self.changed(&changes, m.synced),
            Push::CaughtUp(batches) => self.caught_up(&batches, m.synced),
            Push::Replaced(targets) => self.replaced(&targets, m.synced),
        }
        self.reply()
    }
}

impl Recorder {
    fn changed(&mut self, changes: &[TargetChange], synced: bool) {
        self.note_zones(changes);
        let changes = changes
            .iter()
            .map(|c| (c.key.to_string(), c.targets.as_ref().map_or(0, |t| t.len())))
            .collect();
        self.got.lock().unwrap().push(Got::Changed(changes, synced));
    }

    fn caught_up(&mut self, batches: &[Arc<[TargetChange]>], synced: bool) {
        let mut latest = Vec::new();
        for_latest_per_slot(batches, &mut SlotSet::default(), |c| {
            latest.push((
                c.key.to_string(),
                c.slot.0,
                c.targets.as_ref().map_or(0, |t| t.len()),
            ))
        });
        latest.sort();
        self.got
            .lock()
            .unwrap()
            .push(Got::CaughtUp(latest, synced, batches.len()));
    }

    fn replaced(&mut self, targets: &[TargetChange], synced: bool) {
        self.note_zones(targets);
        let mut keys: Vec<String> = targets.iter().map(|c| c.key.to_string()).collect();
        keys.sort();
        let mut values: Vec<String> = targets
            .iter()
            .map(|c| {
                let (k, t) = (&c.key, c.targets.as_deref().unwrap_or_default());
                let v = t
                    .first()
                    .and_then(|l| l.get("__meta_kubernetes_pod_label_v"));
                format!("{k} v={}", v.unwrap_or("-"))
            })
            .collect();
        values.sort();
        self.got
            .lock()
            .unwrap()
            .push(Got::Replaced(keys, synced, values));
    }
}

/// Counts the `StopWatcher`s sent to the fake watchers.
struct WatcherProbe(Arc<AtomicUsize>);

impl Actor for WatcherProbe {
    type Context = Context<Self>;
}

impl Handler<StopWatcher> for WatcherProbe {
    type Result = ();
    fn handle(&mut self, _: StopWatcher, _: &mut Context<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

struct NullFlusher;
impl Actor for NullFlusher {
    type Context = Context<Self>;
}
impl Handler<FlusherMembership> for NullFlusher {
    type Result = ();
    fn handle(&mut self, _: FlusherMembership, _: &mut Context<Self>) {}
}

struct Harness {
    group: Addr<GroupWatcher>,
    registry: Arc<Registry>,
    key: GroupKey,
    urls: Arc<Mutex<Vec<ResourceUrl>>>,
    stops: Arc<AtomicUsize>,
}

fn key() -> GroupKey {
    GroupKey {
        endpoint: ApiEndpoint {
            base_url: "http://test.invalid".into(),
            http: Default::default(),
        },
        namespaces: Vec::new(),
        selectors: Vec::new(),
        semantics: crate::targets::Semantics::default(),
    }
}

/// A group whose dirty objects wait for a `FlushDirty` the test sends (no flush soon).
fn start(subscriber_in_flight: usize) -> Harness {
    start_with(crate::config::EngineOptions {
        subscriber_in_flight,
        flush_soon_max: 0,
        ..Default::default()
    })
}

fn start_with(options: crate::config::EngineOptions) -> Harness {
    let urls = Arc::new(Mutex::new(Vec::new()));
    let stops = Arc::new(AtomicUsize::new(0));
    let probe = WatcherProbe(Arc::clone(&stops)).start();
    let factory: WatcherFactory = {
        let urls = Arc::clone(&urls);
        Arc::new(move |setup: crate::url_watcher::UrlWatcherSetup| {
            urls.lock().unwrap().push(setup.url.clone());
            WatcherLink::to(&probe)
        })
    };
    let registry = Arc::new(Registry::default());
    let setup = GroupSetup {
        id: 7,
        key: key(),
        options,
        tls: None,
        start_watcher: factory,
        flusher: NullFlusher.start().recipient(),
        registry: registry.clone(),
        metrics: Arc::default(),
    };
    let group = GroupWatcher::new(setup).start();
    registry.get_or_start(&key(), || GroupEntry {
        id: 7,
        addr: group.clone(),
    });
    Harness {
        group,
        registry,
        key: key(),
        urls,
        stops,
    }
}

struct Sub {
    got: Arc<Mutex<Vec<Got>>>,
    /// What [`Recorder`] noted of the node zones.
    zones: Arc<Mutex<Vec<String>>>,
    /// Messages it has not answered.
    unanswered: Arc<AtomicUsize>,
    /// True while it does not answer.
    held: tokio::sync::watch::Sender<bool>,
    id: SubscriberId,
}

impl Sub {
    fn take(&self) -> Vec<Got> {
        std::mem::take(&mut *self.got.lock().unwrap())
    }

    fn take_zones(&self) -> Vec<String> {
        std::mem::take(&mut *self.zones.lock().unwrap())
    }
}

async fn subscribe(h: &Harness, id: u64, role: Role, stuck: bool) -> Sub {
    subscribe_attaching(h, id, role, AttachMetadata::default(), stuck).await
}

/// A subscriber of `role` whose targets attach `attach`.
async fn subscribe_attaching(
    h: &Harness,
    id: u64,
    role: Role,
    attach: AttachMetadata,
    stuck: bool,
) -> Sub {
    let got = Arc::new(Mutex::new(Vec::new()));
    let zones = Arc::new(Mutex::new(Vec::new()));
    let unanswered = Arc::new(AtomicUsize::new(0));
    let (held, held_rx) = tokio::sync::watch::channel(stuck);
    let rec = Recorder {
        got: Arc::clone(&got),
        zones: Arc::clone(&zones),
        unanswered: Arc::clone(&unanswered),
        held: held_rx,
    }
    .start();
    let link = SubscriberLink {
        id: SubscriberId(id),
        push: rec.recipient(),
    };
    let variant = TargetVariant::new(role, attach);
    h.group.send(Subscribe { variant, link }).await.unwrap();
    Sub {
        got,
        zones,
        unanswered,
        held,
        id: SubscriberId(id),
    }
}

/// Lets every queued message (and the ones they cause) be handled: all actors here
/// share the test's thread, so yielding runs them; no wall-clock wait.
/// The stuck subscriber `sub` answers at last, as a real one does once it has handled
/// its queue; returns what the group sent it then.
async fn catch_up(sub: &Sub) -> Vec<Got> {
    let _ = sub.held.send(false);
    settle().await;
    sub.take()
}

async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn obj(role: Role, json: String) -> Object {
    Object::decode(role, json.as_bytes()).expect("object decodes")
}

fn pod(name: &str, ip: &str, label: &str) -> Object {
    obj(Role::Pod, pod_json(name, ip, label))
}

fn pod_json(name: &str, ip: &str, label: &str) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","labels":{{"v":"{label}"}}}},"spec":{{"containers":[{{"name":"c","ports":[{{"containerPort":80}},{{"containerPort":81}}]}}]}},"status":{{"podIP":"{ip}","phase":"Running"}}}}"#
    )
}

fn endpoints(name: &str, pod: &str, ip: &str) -> Object {
    obj(
        Role::Endpoints,
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"subsets":[{{"addresses":[{{"ip":"{ip}","targetRef":{{"kind":"Pod","name":"{pod}","namespace":"ns"}}}}],"ports":[{{"port":80}}]}}]}}"#
        ),
    )
}

/// Sends `output` as a watcher would, and waits until the group has handled it.
async fn feed(h: &Harness, output: WatcherOutput) {
    h.group.send(output).await.unwrap()
}

fn relisted(url: u32, objects: Vec<Object>) -> WatcherOutput {
    WatcherOutput::Relisted {
        url: UrlId(url),
        objects,
    }
}

fn deltas(url: u32, deltas: Vec<WatchEvent>) -> WatcherOutput {
    WatcherOutput::Deltas {
        url: UrlId(url),
        deltas,
    }
}

/// The `i`-th change of pod "a" (at 10.0.0.1), as one batch of the first watcher.
fn change_of_a(i: usize) -> WatcherOutput {
    deltas(
        0,
        vec![WatchEvent::Modified(pod("a", "10.0.0.1", &i.to_string()))],
    )
}

#[actix_rt::test]
async fn deltas_become_batches_and_equal_updates_push_nothing() {
    let h = start(64);
    let sub = subscribe(&h, 1, Role::Pod, false).await;
    settle().await;
    assert_eq!(h.urls.lock().unwrap().len(), 1, "role pod watches one URL");
    feed(
        &h,
        relisted(
            0,
            vec![pod("a", "10.0.0.1", "x"), pod("b", "10.0.0.2", "x")],
        ),
    )
    .await;
    settle().await;
    let got = sub.take();
    assert!(
        matches!(&got[0], Got::Replaced(keys, false, _) if keys.is_empty()),
        "{got:?}"
    );
    match &got[1] {
        Got::Changed(changes, true) => {
            let mut changes = changes.clone();
            changes.sort();
            assert_eq!(changes, [("ns/a".to_string(), 2), ("ns/b".to_string(), 2)]);
        }
        other => panic!("{other:?}"),
    }

    // The same object again (a new resourceVersion would not matter either): nothing.
    feed(
        &h,
        deltas(0, vec![WatchEvent::Modified(pod("a", "10.0.0.1", "x"))]),
    )
    .await;
    settle().await;
    assert!(sub.take().is_empty());

    // A real change and a delete in one batch: one message, in order.
    feed(
        &h,
        deltas(
            0,
            vec![
                WatchEvent::Modified(pod("a", "10.0.0.1", "y")),
                WatchEvent::Deleted(pod("b", "10.0.0.2", "x")),
            ],
        ),
    )
    .await;
    settle().await;
    let got = sub.take();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        matches!(&got[0], Got::Changed(c, true) if *c == [("ns/a".to_string(), 2), ("ns/b".to_string(), 0)]),
        "{got:?}"
    );

    // A relist that drops "a" and keeps nothing else: only the removal is pushed.
    feed(&h, relisted(0, vec![])).await;
    settle().await;
    let got = sub.take();
    assert!(
        matches!(&got[..], [Got::Changed(c, true)] if *c == [("ns/a".to_string(), 0)]),
        "{got:?}"
    );
}

fn part(url: u32, objects: Vec<Object>, first: bool) -> WatcherOutput {
    WatcherOutput::ListPart {
        url: UrlId(url),
        objects,
        first,
    }
}

fn changed_keys(got: &[Got]) -> Vec<(String, usize)> {
    let mut all: Vec<(String, usize)> = got
        .iter()
        .flat_map(|g| match g {
            Got::Changed(c, _) => c.clone(),
            Got::CaughtUp(c, ..) => c.iter().map(|(k, _, n)| (k.clone(), *n)).collect(),
            Got::Replaced(..) => Vec::new(),
        })
        .collect();
    all.sort();
    all
}

/// A pod subscriber of `h` whose URL has listed pods `a` and `b`, the messages that
/// brought them already taken.
async fn pods_a_and_b_listed(h: &Harness) -> Sub {
    let sub = subscribe(h, 1, Role::Pod, false).await;
    settle().await;
    feed(
        h,
        relisted(
            0,
            vec![pod("a", "10.0.0.1", "x"), pod("b", "10.0.0.2", "x")],
        ),
    )
    .await;
    settle().await;
    sub.take();
    sub
}

#[actix_rt::test]
async fn a_first_list_in_parts_is_labelled_as_it_arrives_and_a_failed_one_leaves_nothing() {
    let h = start(64);
    let sub = subscribe(&h, 1, Role::Pod, false).await;
    settle().await;
    sub.take();
    feed(&h, part(0, vec![pod("a", "10.0.0.1", "x")], true)).await;
    settle().await;
    let got = sub.take();
    assert_eq!(
        changed_keys(&got),
        [("ns/a".to_string(), 2)],
        "labelled before the end"
    );
    assert!(
        got.iter().all(|g| matches!(g, Got::Changed(_, false))),
        "not synced before the end: {got:?}"
    );
    // The body turns out not to be a whole list: what it brought goes.
    feed(&h, WatcherOutput::ListAbandoned { url: UrlId(0) }).await;
    settle().await;
    assert_eq!(changed_keys(&sub.take()), [("ns/a".to_string(), 0)]);

    // The next attempt's parts alone say what exists.
    feed(&h, part(0, vec![pod("b", "10.0.0.2", "x")], true)).await;
    feed(&h, part(0, vec![pod("c", "10.0.0.3", "x")], false)).await;
    feed(&h, relisted(0, vec![])).await;
    settle().await;
    let got = sub.take();
    assert_eq!(
        changed_keys(&got),
        [("ns/b".to_string(), 2), ("ns/c".to_string(), 2)]
    );
    assert!(matches!(got.last(), Some(Got::Changed(_, true))), "{got:?}");
}

#[actix_rt::test]
async fn a_relist_is_applied_whole_at_its_end_or_not_at_all() {
    let h = start(64);
    let sub = pods_a_and_b_listed(&h).await;

    // A relist in parts: "a" changed, "c" is new, "b" is gone; nothing moves before
    // the end.
    feed(&h, part(0, vec![pod("a", "10.0.0.1", "y")], true)).await;
    feed(&h, part(0, vec![pod("c", "10.0.0.3", "x")], false)).await;
    settle().await;
    assert_eq!(changed_keys(&sub.take()), [], "held until the end");
    feed(&h, relisted(0, vec![])).await;
    settle().await;
    let mut got = changed_keys(&sub.take());
    got.sort();
    assert_eq!(
        got,
        [
            ("ns/a".to_string(), 2),
            ("ns/b".to_string(), 0),
            ("ns/c".to_string(), 2)
        ],
        "applied whole at the end"
    );

    // A relist that fails after a part changes nothing, and the next attempt's parts
    // alone say what exists.
    feed(&h, part(0, vec![pod("a", "10.0.0.1", "z")], true)).await;
    feed(&h, WatcherOutput::ListAbandoned { url: UrlId(0) }).await;
    settle().await;
    assert_eq!(
        changed_keys(&sub.take()),
        [],
        "the failed relist is dropped"
    );
    feed(&h, part(0, vec![pod("a", "10.0.0.1", "y")], true)).await;
    feed(&h, part(0, vec![pod("c", "10.0.0.3", "x")], true)).await;
    feed(&h, relisted(0, vec![])).await;
    settle().await;
    assert_eq!(changed_keys(&sub.take()), [("ns/a".to_string(), 0)]);
}

#[actix_rt::test]
async fn a_role_that_lost_its_subscribers_serves_fresh_targets_to_the_next_one() {
    let h = start(64);
    // Endpoints keep the group (and its pod watcher) alive while role pod has nobody.
    let _endpoints = subscribe(&h, 1, Role::Endpoints, false).await;
    let pods = subscribe(&h, 2, Role::Pod, false).await;
    settle().await;
    let pod_url = h
        .urls
        .lock()
        .unwrap()
        .iter()
        .position(|u| u.role == Role::Pod)
        .expect("a pod URL") as u32;
    feed(&h, relisted(pod_url, vec![pod("a", "10.0.0.1", "old")])).await;
    settle().await;
    h.group.send(Unsubscribe(pods.id)).await.unwrap();
    feed(
        &h,
        deltas(
            pod_url,
            vec![WatchEvent::Modified(pod("a", "10.0.0.1", "new"))],
        ),
    )
    .await;
    settle().await;
    let again = subscribe(&h, 3, Role::Pod, false).await;
    settle().await;
    let got = again.take();
    assert!(
        matches!(&got[..], [Got::Replaced(_, _, values), ..] if *values == ["ns/a v=new"]),
        "the snapshot is of the pod as it is now: {got:?}"
    );
}

#[actix_rt::test]
async fn dependents_of_a_syncing_role_are_recomputed_once_when_it_syncs() {
    let h = start(64);
    let sub = subscribe(&h, 1, Role::Endpoints, false).await;
    settle().await;
    let urls: Vec<Role> = h.urls.lock().unwrap().iter().map(|u| u.role).collect();
    assert_eq!(urls, [Role::Endpoints, Role::Pod, Role::Service]);
    feed(&h, relisted(0, vec![endpoints("ea", "a", "10.0.0.1")])).await;
    // The pods arrive in parts: each makes "ea" dirty (it looked pod "a" up and missed).
    feed(&h, part(1, vec![pod("a", "10.0.0.1", "x")], true)).await;
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(report.recomputed, 0, "services are not listed yet: wait");
    feed(&h, relisted(1, vec![pod("b", "10.0.0.2", "x")])).await;
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(report.recomputed, 0, "still waiting for the services");
    settle().await;
    sub.take();
    // The last list completes the sync: "ea" is recomputed then, with its pod's labels.
    feed(&h, relisted(2, vec![])).await;
    settle().await;
    let got = sub.take();
    assert!(
        matches!(&got[..], [.., Got::Changed(_, true)]),
        "synced: {got:?}"
    );
    assert_eq!(
        changed_keys(&got),
        [("ns/ea".to_string(), 2)],
        "recomputed once, at the sync, with its pod (whose port 81 adds a target)"
    );
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(report.recomputed, 0, "nothing left dirty");
}

/// An endpoints object that waits for the pods' list is labelled once they are listed,
/// for the subscriber that came before it arrived and for one that registered while it
/// waited alike.
#[actix_rt::test]
async fn an_object_waiting_for_its_dependencies_reaches_every_subscriber_when_they_are_listed() {
    let h = start(64);
    let early = subscribe(&h, 1, Role::Endpoints, false).await;
    settle().await;
    feed(&h, relisted(0, vec![endpoints("ea", "a", "10.0.0.1")])).await;
    feed(&h, relisted(2, vec![])).await;
    settle().await;
    let late = subscribe(&h, 2, Role::Endpoints, false).await;
    settle().await;
    assert!(
        changed_keys(&early.take()).is_empty(),
        "nothing labelled before the pods are listed"
    );
    assert!(
        matches!(&late.take()[..], [Got::Replaced(keys, false, _)] if keys.is_empty()),
        "the waiting object is not in the late subscriber's snapshot"
    );
    feed(&h, relisted(1, vec![pod("a", "10.0.0.1", "x")])).await;
    settle().await;
    for sub in [&early, &late] {
        assert_eq!(changed_keys(&sub.take()), [("ns/ea".to_string(), 2)]);
    }
}

#[actix_rt::test]
async fn a_pod_change_refreshes_exactly_the_endpoints_that_use_it_at_the_next_flush() {
    let h = start(64);
    let sub = subscribe(&h, 1, Role::Endpoints, false).await;
    settle().await;
    let urls: Vec<Role> = h.urls.lock().unwrap().iter().map(|u| u.role).collect();
    assert_eq!(urls, [Role::Endpoints, Role::Pod, Role::Service]);
    feed(
        &h,
        relisted(
            0,
            vec![
                endpoints("ea", "a", "10.0.0.1"),
                endpoints("eb", "b", "10.0.0.2"),
            ],
        ),
    )
    .await;
    feed(
        &h,
        relisted(
            1,
            vec![pod("a", "10.0.0.1", "x"), pod("b", "10.0.0.2", "x")],
        ),
    )
    .await;
    feed(&h, relisted(2, vec![])).await;
    settle().await;
    let got = sub.take();
    assert!(
        got.iter().any(|g| matches!(g, Got::Changed(_, true))),
        "synced after the last list: {got:?}"
    );

    feed(
        &h,
        deltas(
            1,
            vec![WatchEvent::Modified(pod("a", "10.0.0.1", "changed"))],
        ),
    )
    .await;
    settle().await;
    assert!(
        sub.take().is_empty(),
        "pods are not this job's role: nothing until the flush"
    );
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(report.recomputed, 1, "only the endpoints that read pod a");
    settle().await;
    let got = sub.take();
    // ea has one endpoint target (port 80) plus one extra for the uncovered port 81.
    assert!(
        matches!(&got[..], [Got::Changed(c, true)] if *c == [("ns/ea".to_string(), 2)]),
        "{got:?}"
    );
    assert_eq!(h.group.send(FlushDirty).await.unwrap().recomputed, 0);
}

#[actix_rt::test]
async fn subscribers_that_arrive_together_share_one_snapshot() {
    let h = start(64);
    let first = subscribe(&h, 1, Role::Pod, false).await;
    feed(&h, relisted(0, vec![pod("a", "10.0.0.1", "x")])).await;
    settle().await;
    first.take();
    // Three jobs at once: the Subscribe messages queue before the registration runs.
    let (s2, s3, s4) = futures_util::join!(
        subscribe(&h, 2, Role::Pod, false),
        subscribe(&h, 3, Role::Pod, false),
        subscribe(&h, 4, Role::Pod, false)
    );
    settle().await;
    for s in [&s2, &s3, &s4] {
        let got = s.take();
        assert!(
            matches!(&got[..], [Got::Replaced(keys, true, _)] if *keys == ["ns/a"]),
            "{got:?}"
        );
    }
    assert!(first.take().is_empty());
    assert_eq!(
        h.urls.lock().unwrap().len(),
        1,
        "no new watchers for the same role"
    );
}

#[actix_rt::test]
async fn the_last_unsubscribe_stops_the_group_and_its_watchers() {
    let h = start(64);
    let a = subscribe(&h, 1, Role::Endpoints, false).await;
    let b = subscribe(&h, 2, Role::Pod, false).await;
    settle().await;
    h.group.send(Unsubscribe(a.id)).await.unwrap();
    settle().await;
    assert!(h.group.connected(), "one subscriber left");
    assert_eq!(h.registry.len(), 1);
    h.group.send(Unsubscribe(b.id)).await.unwrap();
    settle().await;
    assert!(!h.group.connected());
    assert_eq!(
        h.registry.len(),
        0,
        "the group left the registry ({:?})",
        h.key.endpoint.base_url
    );
    assert_eq!(
        h.stops.load(SeqCst),
        3,
        "each of its three watchers was told to stop"
    );
}

#[actix_rt::test]
async fn a_stuck_subscribers_batches_are_held_back_not_queued_and_others_are_not_held_up() {
    let h = start(2);
    let slow = subscribe(&h, 1, Role::Pod, true).await;
    let fast = subscribe(&h, 2, Role::Pod, false).await;
    feed(&h, relisted(0, vec![pod("a", "10.0.0.1", "0")])).await;
    settle().await;
    for i in 1..=50 {
        feed(&h, change_of_a(i)).await;
    }
    settle().await;
    let fast_got = fast.take();
    assert_eq!(fast_got.len(), 52, "replacement, initial list, 50 changes");
    let slow_got = slow.take();
    assert_eq!(
        slow_got.len(),
        2,
        "the slow one got only what its window allows: {slow_got:?}"
    );
    assert_eq!(slow.unanswered.load(SeqCst), 2);

    // It catches up: once it has answered both, it gets the 50 batches held back in
    // one message, read as the latest state of the one object.
    let got = catch_up(&slow).await;
    assert!(
        matches!(&got[..], [Got::CaughtUp(c, true, 50)] if *c == [("ns/a".to_string(), 0, 2)]),
        "one message, not 50: {got:?}"
    );
    assert_eq!(slow.unanswered.load(SeqCst), 0);
}

#[actix_rt::test]
async fn a_backlog_past_its_bound_is_compacted_to_the_latest_change_per_object() {
    // A subscriber stuck for good must not cost memory per event: past twice the
    // role's objects (at least 2048 changes), the group keeps only the latest change of
    // each slot. Here the list's batch and 2100 changes of one pod: the 2049th change
    // held compacts them to one, and the last 52 are held after it.
    let h = start(1);
    let slow = subscribe(&h, 1, Role::Pod, true).await;
    feed(&h, relisted(0, vec![pod("a", "10.0.0.1", "0")])).await;
    settle().await;
    assert_eq!(slow.take().len(), 1, "the replacement fills its window");
    for i in 1..=2100 {
        feed(&h, change_of_a(i)).await;
    }
    settle().await;
    assert!(slow.take().is_empty(), "every change was held back");
    let got = catch_up(&slow).await;
    assert!(
        matches!(&got[..], [Got::CaughtUp(c, true, 53)] if *c == [("ns/a".to_string(), 0, 2)]),
        "one compacted batch and the 52 after it: {got:?}"
    );
}

#[actix_rt::test]
async fn a_lagging_subscriber_gets_each_slots_latest_state_when_slots_are_reused() {
    // Subscribers keep values by slot, and a deleted object's slot goes to the next new
    // object: a backlog must be read as the latest change per slot (the slot's state).
    // Kept per name, this sequence left the old "a" in slot 0 and could apply b's
    // removal over the new "a" in slot 1.
    let h = start(1);
    let slow = subscribe(&h, 1, Role::Pod, true).await;
    feed(
        &h,
        relisted(
            0,
            vec![pod("a", "10.0.0.1", "0"), pod("b", "10.0.0.2", "0")],
        ),
    )
    .await;
    settle().await;
    assert_eq!(slow.take().len(), 1, "the replacement fills its window");
    // "a" (slot 0) and "b" (slot 1) leave; "a" comes back and gets slot 1.
    feed(
        &h,
        deltas(0, vec![WatchEvent::Deleted(pod("a", "10.0.0.1", "0"))]),
    )
    .await;
    feed(
        &h,
        deltas(0, vec![WatchEvent::Deleted(pod("b", "10.0.0.2", "0"))]),
    )
    .await;
    feed(
        &h,
        deltas(0, vec![WatchEvent::Modified(pod("a", "10.0.0.3", "1"))]),
    )
    .await;
    settle().await;
    assert!(slow.take().is_empty(), "all three were held back");
    let got = catch_up(&slow).await;
    let [Got::CaughtUp(changes, ..)] = &got[..] else {
        panic!("one message with the held-back batches: {got:?}");
    };
    assert_eq!(
        *changes,
        [("ns/a".to_string(), 0, 0), ("ns/a".to_string(), 1, 2)],
        "slot 0 emptied (the old a), slot 1 holds the new a"
    );
}

/// A group that flushes at most two dirty objects itself, `SOON` after the change, on
/// paused time; with endpoints "e<x>" over pod "<x>" for each of `pods`, synced. (`SOON`
/// is long so that a flush slowed by a busy machine stays under half of it, which
/// would count as load.)
const SOON: std::time::Duration = std::time::Duration::from_secs(10);

async fn synced_endpoints_flushing_soon(pods: &[&str]) -> (Harness, Sub) {
    tokio::time::pause();
    let h = start_with(crate::config::EngineOptions {
        flush_soon_delay: SOON,
        flush_soon_max: 2,
        ..Default::default()
    });
    let sub = subscribe(&h, 1, Role::Endpoints, false).await;
    settle().await;
    let ip = |i: usize| format!("10.0.0.{}", i + 1);
    let eps = pods.iter().enumerate();
    let eps = eps
        .map(|(i, p)| endpoints(&format!("e{p}"), p, &ip(i)))
        .collect();
    feed(&h, relisted(0, eps)).await;
    let listed = pods.iter().enumerate().map(|(i, p)| pod(p, &ip(i), "x"));
    feed(&h, relisted(1, listed.collect())).await;
    feed(&h, relisted(2, vec![])).await;
    settle().await;
    sub.take();
    (h, sub)
}

fn relabelled(pods: &[(&str, usize)]) -> WatcherOutput {
    let changed = pods
        .iter()
        .map(|(p, i)| WatchEvent::Modified(pod(p, &format!("10.0.0.{}", i + 1), "changed")));
    deltas(1, changed.collect())
}

#[actix_rt::test]
async fn at_rest_a_dependent_change_is_flushed_after_the_short_delay_without_a_tick() {
    let (h, sub) = synced_endpoints_flushing_soon(&["a", "b"]).await;
    feed(&h, relabelled(&[("a", 0)])).await;
    settle().await;
    tokio::time::sleep(SOON - std::time::Duration::from_millis(10)).await;
    settle().await;
    assert!(
        sub.take().is_empty(),
        "within the delay: events of the same change may follow"
    );
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    settle().await;
    let got = sub.take();
    assert_eq!(changed_keys(&got), [("ns/ea".to_string(), 2)], "{got:?}");
    assert_eq!(
        h.group.send(FlushDirty).await.unwrap().recomputed,
        0,
        "the tick finds nothing left"
    );
}

#[actix_rt::test]
async fn under_load_dirty_objects_wait_for_the_tick_until_a_tick_recomputes_few() {
    let (h, sub) = synced_endpoints_flushing_soon(&["a", "b", "c"]).await;
    let second = SOON * 10;
    // A burst: three dirty, more than the two flushed soon.
    feed(&h, relabelled(&[("a", 0), ("b", 1), ("c", 2)])).await;
    tokio::time::sleep(second).await;
    settle().await;
    assert!(sub.take().is_empty(), "a burst waits for the tick");
    assert_eq!(h.group.send(FlushDirty).await.unwrap().recomputed, 3);
    settle().await;
    assert_eq!(changed_keys(&sub.take()).len(), 3);
    // That tick was heavy: the next change, however small, waits for the next tick.
    feed(
        &h,
        deltas(1, vec![WatchEvent::Modified(pod("a", "10.0.0.1", "again"))]),
    )
    .await;
    tokio::time::sleep(second).await;
    settle().await;
    assert!(sub.take().is_empty(), "still under load");
    assert_eq!(h.group.send(FlushDirty).await.unwrap().recomputed, 1);
    settle().await;
    sub.take();
    // A light tick: at rest again.
    feed(
        &h,
        deltas(1, vec![WatchEvent::Modified(pod("b", "10.0.0.2", "later"))]),
    )
    .await;
    tokio::time::sleep(SOON + std::time::Duration::from_millis(10)).await;
    settle().await;
    assert_eq!(changed_keys(&sub.take()), [("ns/eb".to_string(), 2)]);
}

fn pod_on(name: &str, node: &str) -> Object {
    obj(
        Role::Pod,
        format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","ports":[{{"containerPort":80}}]}}]}},"status":{{"podIP":"10.0.0.1","phase":"Running"}}}}"#
        ),
    )
}

fn node(name: &str, zone: &str) -> Object {
    obj(
        Role::Node,
        format!(
            r#"{{"metadata":{{"name":"{name}","labels":{{"zone":"{zone}"}}}},"status":{{"addresses":[{{"type":"InternalIP","address":"10.1.0.1"}}]}}}}"#
        ),
    )
}

fn attaching_node() -> AttachMetadata {
    AttachMetadata {
        node: true,
        ..AttachMetadata::default()
    }
}

#[actix_rt::test]
async fn jobs_that_differ_in_what_they_attach_share_the_watches_and_get_their_own_labels() {
    let h = start(64);
    let plain = subscribe(&h, 1, Role::Pod, false).await;
    let with_node = subscribe_attaching(&h, 2, Role::Pod, attaching_node(), false).await;
    settle().await;
    let urls: Vec<Role> = h.urls.lock().unwrap().iter().map(|u| u.role).collect();
    assert_eq!(urls, [Role::Pod, Role::Node], "one pod URL for both jobs");
    feed(&h, relisted(0, vec![pod_on("a", "n1")])).await;
    feed(&h, relisted(1, vec![node("n1", "east")])).await;
    settle().await;
    assert_eq!(plain.take_zones(), ["ns/a zone=-"]);
    // A pod that attaches its node waits for the nodes' list: it is labelled once, then,
    // with its node's labels (not first without them, as the pods arrive).
    assert_eq!(with_node.take_zones(), ["ns/a zone=east"]);

    // A node change re-labels the variant that attached it, and it alone.
    feed(
        &h,
        deltas(1, vec![WatchEvent::Modified(node("n1", "west"))]),
    )
    .await;
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(
        report.recomputed, 1,
        "only the pod's node-attaching targets"
    );
    settle().await;
    assert!(plain.take_zones().is_empty());
    assert_eq!(with_node.take_zones(), ["ns/a zone=west"]);

    // A pod change reaches both, each with its own labels.
    let moved = pod_on("a", "n2");
    feed(&h, deltas(0, vec![WatchEvent::Modified(moved)])).await;
    settle().await;
    assert_eq!(plain.take_zones(), ["ns/a zone=-"]);
    assert_eq!(
        with_node.take_zones(),
        ["ns/a zone=-"],
        "node n2 is not cached"
    );
}

#[actix_rt::test]
async fn a_variant_that_needs_an_unlisted_role_waits_for_its_list_and_goes_with_its_last_job() {
    let h = start(64);
    let plain = subscribe(&h, 1, Role::Pod, false).await;
    feed(&h, relisted(0, vec![pod_on("a", "n1")])).await;
    settle().await;
    assert!(
        matches!(
            &plain.take()[..],
            [Got::Replaced(_, false, _), Got::Changed(_, true)]
        ),
        "the plain job needs pods alone"
    );
    let with_node = subscribe_attaching(&h, 2, Role::Pod, attaching_node(), false).await;
    settle().await;
    assert_eq!(h.urls.lock().unwrap().len(), 2, "its node URL started");
    let got = with_node.take();
    assert!(
        matches!(&got[..], [Got::Replaced(keys, false, _)] if keys.is_empty()),
        "not synced before the nodes are listed, and the pod waits for its node: {got:?}"
    );
    feed(&h, relisted(1, vec![node("n1", "east")])).await;
    settle().await;
    assert!(
        plain.take().is_empty(),
        "the nodes change nothing for the plain job"
    );
    let got = with_node.take();
    assert!(
        matches!(&got[..], [.., Got::Changed(_, true)]),
        "synced: {got:?}"
    );
    assert_eq!(with_node.take_zones(), ["ns/a zone=east"]);

    // Its last job leaves: the variant's targets and dependencies go with it.
    h.group.send(Unsubscribe(with_node.id)).await.unwrap();
    feed(
        &h,
        deltas(1, vec![WatchEvent::Modified(node("n1", "west"))]),
    )
    .await;
    let report = h.group.send(FlushDirty).await.unwrap();
    assert_eq!(report.recomputed, 0, "nobody reads the node any more");
    settle().await;
    assert!(plain.take().is_empty());
}
