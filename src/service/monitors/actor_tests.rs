//! The monitors' watch at the message level, in paused time: its URL watchers are
//! recorded, their outputs sent by hand. A change is published at once after a quiet
//! spell, then at most once per publish interval, within one interval; a Secret a
//! monitor names is watched in its namespace, and the monitor waits for that list.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::prelude::*;

use super::actor::{MonitorWatch, MonitorWatchSetup};
use super::{MonitorJobs, MonitorMetrics, MonitorState};
use crate::actors::group::{WatcherFactory, WatcherLink};
use crate::actors::messages::{StopWatcher, UrlId, WatcherOutput};
use crate::api::ResourceUrl;
use crate::config::SdConfig;
use crate::config_watchers::ConfigWatchers;
use crate::http::resolve_endpoint;
use crate::model::{Object, Role};
use crate::monitors::section::parse_section;
use crate::promconfig::LoadOptions;
use crate::wire::json::WatchEvent;

const EVERY: Duration = Duration::from_secs(1);

/// Stands in for every URL watcher.
struct Probe;

impl Actor for Probe {
    type Context = Context<Self>;
}

impl Handler<StopWatcher> for Probe {
    type Result = ();
    fn handle(&mut self, _: StopWatcher, _: &mut Context<Self>) {}
}

struct Harness {
    watch: Addr<MonitorWatch>,
    urls: Arc<Mutex<Vec<(UrlId, ResourceUrl)>>>,
    published: tokio::sync::watch::Receiver<Arc<MonitorJobs>>,
}

impl Harness {
    /// The watch of the section `section` (YAML; the API server is added).
    fn start(section: &str) -> Harness {
        let urls = Arc::new(Mutex::new(Vec::new()));
        let probe = Probe.start();
        let factory: WatcherFactory = {
            let urls = Arc::clone(&urls);
            Arc::new(move |setup: crate::actors::url_watcher::UrlWatcherSetup| {
                let mut urls = urls.lock().unwrap_or_else(|e| e.into_inner());
                urls.push((setup.id, setup.url));
                WatcherLink::to(&probe)
            })
        };
        let endpoint =
            resolve_endpoint(&SdConfig::new(Role::Pod, "http://127.0.0.1:1")).expect("endpoint");
        let mut yaml: serde_norway::Value = serde_norway::from_str(section).expect("yaml");
        yaml["api_server"] = "http://127.0.0.1:1".into();
        let section = parse_section(&yaml, std::path::Path::new("."), None).expect("section");
        let (out, published) = tokio::sync::watch::channel(Arc::default());
        let setup = MonitorWatchSetup {
            section,
            options: LoadOptions::default(),
            watchers: ConfigWatchers::with_factory(endpoint, factory),
            publish_interval: EVERY,
            out: Arc::new(out),
            metrics: Arc::new(MonitorMetrics::default()),
        };
        Harness {
            watch: MonitorWatch::new(setup).start(),
            urls,
            published,
        }
    }

    /// The watcher of `role`'s URL (the last started).
    fn url(&self, role: Role) -> UrlId {
        let urls = self.urls.lock().unwrap_or_else(|e| e.into_inner());
        (urls.iter().rev())
            .find(|(_, u)| u.role == role)
            .map(|(id, _)| *id)
            .unwrap_or_else(|| panic!("no {role} watch in {urls:?}"))
    }

    async fn send(&self, output: WatcherOutput) {
        self.watch.send(output).await.expect("the watch answers");
    }

    /// Whether something was published since the last look, and what is published.
    fn look(&mut self) -> (bool, Arc<MonitorJobs>) {
        let news = self.published.has_changed().unwrap_or(false);
        (news, Arc::clone(&self.published.borrow_and_update()))
    }
}

fn object(role: Role, json: &str) -> Object {
    Object::decode(role, json.as_bytes()).expect("decodes")
}

fn namespace() -> Object {
    object(
        Role::Namespace,
        r#"{"metadata":{"name":"shop","uid":"n1","resourceVersion":"1"}}"#,
    )
}

fn labelled_namespace(version: u32, team: &str) -> Object {
    let json = format!(
        r#"{{"metadata":{{"name":"shop","uid":"n1","resourceVersion":"{version}","labels":{{"team":"{team}"}}}}}}"#
    );
    object(Role::Namespace, &json)
}

fn pod_monitor(version: u32, path: &str, auth: bool) -> Object {
    let auth = if auth {
        r#","basicAuth":{"username":{"name":"creds","key":"user"},"password":{"name":"creds","key":"password"}}"#
    } else {
        ""
    };
    object(
        Role::PodMonitor,
        &format!(
            r#"{{"apiVersion":"monitoring.coreos.com/v1","kind":"PodMonitor","metadata":{{"name":"web","namespace":"shop","uid":"m1","resourceVersion":"{version}"}},"spec":{{"selector":{{}},"podMetricsEndpoints":[{{"port":"metrics","path":"{path}"{auth}}}]}}}}"#
        ),
    )
}

/// Lets the actors run: paused time moves on only when everything waits.
async fn settle() {
    actix_rt::time::sleep(Duration::from_millis(1)).await;
}

fn metrics_path(jobs: &MonitorJobs) -> Option<String> {
    let job = jobs.jobs.first()?;
    Some(job.scrape.metrics_path.to_string())
}

#[actix_rt::test]
async fn a_change_is_published_at_most_once_per_interval_and_within_one() {
    tokio::time::pause();
    let mut h = Harness::start("{pod_monitor_selector: {}}");
    settle().await;
    let (monitors, namespaces) = (h.url(Role::PodMonitor), h.url(Role::Namespace));
    h.send(WatcherOutput::Relisted {
        url: namespaces,
        objects: vec![namespace()],
    })
    .await;
    settle().await;
    assert!(
        !h.look().0,
        "nothing published before every watch has listed"
    );
    h.send(WatcherOutput::Relisted {
        url: monitors,
        objects: vec![pod_monitor(1, "/metrics", false)],
    })
    .await;
    settle().await;
    let (news, jobs) = h.look();
    assert!(news, "the first publish comes at once");
    assert_eq!(jobs.report.monitors[0].state, MonitorState::Active);
    assert_eq!(jobs.report.monitors[0].jobs, ["podMonitor/shop/web/0"]);
    assert_eq!(metrics_path(&jobs).as_deref(), Some("/metrics"));

    // Two edits within the interval: one publish, at its end, with the last.
    for (version, path) in [(2, "/a"), (3, "/b")] {
        let edit = WatchEvent::Modified(pod_monitor(version, path, false));
        h.send(WatcherOutput::Deltas {
            url: monitors,
            deltas: vec![edit],
        })
        .await;
    }
    actix_rt::time::sleep(EVERY / 2).await;
    assert!(!h.look().0, "not before the interval has passed");
    actix_rt::time::sleep(EVERY / 2 + Duration::from_millis(10)).await;
    let (news, jobs) = h.look();
    assert!(news, "published within one interval");
    assert_eq!(metrics_path(&jobs).as_deref(), Some("/b"));

    let gone = WatchEvent::Deleted(pod_monitor(4, "/b", false));
    h.send(WatcherOutput::Deltas {
        url: monitors,
        deltas: vec![gone],
    })
    .await;
    actix_rt::time::sleep(EVERY + Duration::from_millis(10)).await;
    let (news, jobs) = h.look();
    assert!(news && jobs.jobs.is_empty() && jobs.report.monitors.is_empty());
}

#[actix_rt::test]
async fn a_named_secret_is_watched_in_its_namespace_before_the_monitor_is_published() {
    tokio::time::pause();
    let mut h = Harness::start("{pod_monitor_selector: {}}");
    settle().await;
    let (monitors, namespaces) = (h.url(Role::PodMonitor), h.url(Role::Namespace));
    h.send(WatcherOutput::Relisted {
        url: namespaces,
        objects: vec![namespace()],
    })
    .await;
    h.send(WatcherOutput::Relisted {
        url: monitors,
        objects: vec![pod_monitor(1, "/metrics", true)],
    })
    .await;
    settle().await;
    assert!(!h.look().0, "the monitor waits for its namespace's Secrets");
    let secrets = h.url(Role::Secret);
    let secret_url = {
        let urls = h.urls.lock().unwrap_or_else(|e| e.into_inner());
        urls.iter()
            .find(|(id, _)| *id == secrets)
            .map(|(_, u)| u.clone())
    };
    assert_eq!(
        secret_url.map(|u| u.to_string()),
        Some("/api/v1/namespaces/shop/secrets".to_string())
    );
    let creds = object(
        Role::Secret,
        r#"{"metadata":{"name":"creds","namespace":"shop","uid":"s1","resourceVersion":"5"},"data":{"user":"YQ==","password":"Yg=="}}"#,
    );
    let other = object(
        Role::Secret,
        r#"{"metadata":{"name":"unrelated","namespace":"shop","uid":"s2","resourceVersion":"6"},"data":{"k":"dg=="}}"#,
    );
    h.send(WatcherOutput::Relisted {
        url: secrets,
        objects: vec![creds, other],
    })
    .await;
    actix_rt::time::sleep(EVERY + Duration::from_millis(10)).await;
    let (news, jobs) = h.look();
    assert!(news);
    assert_eq!(
        jobs.report.monitors[0].state,
        MonitorState::Active,
        "{:?}",
        jobs.report
    );
}

#[actix_rt::test]
async fn a_namespace_label_change_selects_anew() {
    tokio::time::pause();
    let section =
        "{pod_monitor_selector: {}, pod_monitor_namespace_selector: {matchLabels: {team: shop}}}";
    let mut h = Harness::start(section);
    settle().await;
    let (monitors, namespaces) = (h.url(Role::PodMonitor), h.url(Role::Namespace));
    h.send(WatcherOutput::Relisted {
        url: namespaces,
        objects: vec![labelled_namespace(1, "other")],
    })
    .await;
    h.send(WatcherOutput::Relisted {
        url: monitors,
        objects: vec![pod_monitor(1, "/metrics", false)],
    })
    .await;
    settle().await;
    let (news, jobs) = h.look();
    assert!(
        news && jobs.report.monitors.is_empty(),
        "its namespace is not selected"
    );
    let relabelled = WatchEvent::Modified(labelled_namespace(2, "shop"));
    h.send(WatcherOutput::Deltas {
        url: namespaces,
        deltas: vec![relabelled],
    })
    .await;
    actix_rt::time::sleep(EVERY + Duration::from_millis(10)).await;
    let (news, jobs) = h.look();
    assert!(news);
    assert_eq!(
        jobs.report.monitors.len(),
        1,
        "selected once its namespace is labelled"
    );
    assert_eq!(jobs.jobs.len(), 1);
}
