//! The monitors' watch: an actor that starts the engine's URL watchers for the
//! monitors, Namespaces, Secrets and ConfigMaps the section needs, keeps what they
//! bring ([`ConfigCache`]), and at most once per publish interval after a change
//! selects and translates ([`Translations`]) and publishes the monitors' jobs and
//! report. Each watcher output is answered once applied, which frees the watcher's
//! window: the flow control of every other watch.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tracing::{info, warn};

use super::cache::{CacheKey, ConfigCache};
use super::report::{MonitorMetrics, MonitorReport, MonitorsReport, WatchReport};
use super::translation::{PassInputs, Translations};
use super::urls::{credential_urls, monitor_urls, names_for};
use super::{MonitorJobs, MonitorsOut};
use crate::actors::group::WatcherLink;
use crate::actors::messages::{StopWatcher, UrlId, WatcherOutput};
use crate::actors::url_watcher::{UrlProblem, UrlStatus};
use crate::api::ResourceUrl;
use crate::config_watchers::ConfigWatchers;
use crate::model::Role;
use crate::monitors::section::MonitorsSection;
use crate::promconfig::{Job, LoadOptions};

/// Everything the watch starts with.
pub struct MonitorWatchSetup {
    /// The section.
    pub section: MonitorsSection,
    /// How the loader reads the generated entries.
    pub options: LoadOptions,
    /// Starts its URL watchers.
    pub watchers: ConfigWatchers,
    /// The least time between two passes while changes keep coming.
    pub publish_interval: Duration,
    /// Where its jobs and report go.
    pub out: Arc<MonitorsOut>,
    /// `kubesd_monitors`, `kubesd_monitor_rejections_total`.
    pub metrics: Arc<MonitorMetrics>,
}

/// One URL watched.
struct Watched {
    url: ResourceUrl,
    link: WatcherLink,
    listed: bool,
    status: Option<UrlStatus>,
    /// For a Secrets' or ConfigMaps' URL: the names wanted when it started listing.
    names: BTreeSet<String>,
}

/// The monitors' watch. See the module documentation.
pub struct MonitorWatch {
    setup: MonitorWatchSetup,
    urls: BTreeMap<UrlId, Watched>,
    next_id: u32,
    cache: ConfigCache,
    translations: Translations,
    hand_written: BTreeSet<String>,
    not_started: BTreeMap<String, String>,
    /// A pass is due at this timer.
    timer: Option<SpawnHandle>,
    last_pass: Option<tokio::time::Instant>,
    last: Arc<MonitorsReport>,
}

/// Sent by `kubesd run` after each config it applies: the names of the hand-written
/// jobs, which win over a monitor's of the same name. Handled by [`MonitorWatch`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct HandWritten(pub BTreeSet<String>);

/// Sent by `kubesd run` when monitors' jobs could not start: their names and why. The
/// monitors are reported rejected, their jobs left out, until the config is applied
/// again. Handled by [`MonitorWatch`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct NotStarted(pub BTreeMap<String, String>);

/// Sent by `kubesd run` when the section is gone or changed: stop every watch and
/// stop. Handled by [`MonitorWatch`].
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopMonitorWatch;

impl MonitorWatch {
    /// A watch; it starts its URL watchers when started.
    pub fn new(setup: MonitorWatchSetup) -> MonitorWatch {
        MonitorWatch {
            setup,
            urls: BTreeMap::new(),
            next_id: 0,
            cache: ConfigCache::default(),
            translations: Translations::default(),
            hand_written: BTreeSet::new(),
            not_started: BTreeMap::new(),
            timer: None,
            last_pass: None,
            last: Arc::default(),
        }
    }

    fn start_url(&mut self, url: ResourceUrl, names: BTreeSet<String>, ctx: &mut Context<Self>) {
        let id = UrlId(self.next_id);
        self.next_id += 1;
        let link = self
            .setup
            .watchers
            .start(id, url.clone(), ctx.address().recipient());
        let watched = Watched {
            url,
            link,
            listed: false,
            status: None,
            names,
        };
        self.urls.insert(id, watched);
    }

    fn stop_url(&mut self, id: UrlId) {
        if let Some(w) = self.urls.remove(&id) {
            w.link.stop.do_send(StopWatcher);
        }
        self.cache.forget_url(id);
    }

    /// Asks for a pass: now if the last is a publish interval old, else at its end.
    fn changed(&mut self, ctx: &mut Context<Self>) {
        if self.timer.is_some() {
            return;
        }
        let every = self.setup.publish_interval;
        let delay = self
            .last_pass
            .map(|at| (at + every).saturating_duration_since(tokio::time::Instant::now()))
            .unwrap_or_default();
        self.timer = Some(ctx.run_later(delay, |act, ctx| {
            act.timer = None;
            act.pass(ctx);
        }));
    }

    /// Whether every watch of monitors and Namespaces has listed, or failed.
    fn monitors_settled(&self) -> bool {
        (self.urls.values())
            .filter(|w| !w.url.role.is_config() || w.url.role.is_monitoring_crd())
            .all(|w| w.listed || w.status.as_ref().is_some_and(|s| s.last_error.is_some()))
    }

    /// Selects, translates, watches what the selected monitors name, and publishes
    /// once that is listed.
    fn pass(&mut self, ctx: &mut Context<Self>) {
        if !self.monitors_settled() {
            return;
        }
        self.last_pass = Some(tokio::time::Instant::now());
        let inputs = PassInputs {
            section: &self.setup.section,
            options: &self.setup.options,
            hand_written: &self.hand_written,
            not_started: &self.not_started,
        };
        let pass = self.translations.pass(&self.cache, &inputs);
        self.cache.set_wanted(pass.wanted.clone());
        if !self.watch_credentials(&pass.wanted, ctx) {
            // The lists it started (or restarted) will ask for the next pass.
            return;
        }
        self.publish(pass.jobs, pass.monitors);
    }

    /// Watches the Secrets and ConfigMaps `wanted` names, one URL per kind and
    /// namespace; restarts one whose list did not keep a name now wanted. True when
    /// every one has listed (or failed).
    fn watch_credentials(&mut self, wanted: &BTreeSet<CacheKey>, ctx: &mut Context<Self>) -> bool {
        let needed = credential_urls(wanted);
        let credential = |w: &Watched| matches!(w.url.role, Role::Secret | Role::ConfigMap);
        let stale: Vec<UrlId> = (self.urls.iter())
            .filter(|(_, w)| credential(w))
            .filter(|(_, w)| {
                !needed.contains(&w.url) || !names_for(&w.url, wanted).is_subset(&w.names)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in stale {
            self.stop_url(id);
        }
        let running: BTreeSet<ResourceUrl> = self.urls.values().map(|w| w.url.clone()).collect();
        for url in needed.into_iter().filter(|u| !running.contains(u)) {
            let names = names_for(&url, wanted);
            self.start_url(url, names, ctx);
        }
        (self.urls.values())
            .filter(|w| credential(w))
            .all(|w| w.listed || w.status.as_ref().is_some_and(|s| s.last_error.is_some()))
    }

    /// Logs and counts what changed since the last publish, and publishes.
    fn publish(&mut self, jobs: Vec<Job>, monitors: Vec<MonitorReport>) {
        let previous: BTreeMap<(String, String, String), &MonitorReport> = (self.last.monitors)
            .iter()
            .map(|m| ((m.kind.to_string(), m.namespace.clone(), m.name.clone()), m))
            .collect();
        for m in &monitors {
            let before = previous.get(&(m.kind.to_string(), m.namespace.clone(), m.name.clone()));
            let (rejection, warnings) = (&m.rejection, &m.warnings);
            if before.is_none_or(|b| &b.rejection != rejection)
                && let Some(r) = rejection
            {
                warn!(kind = %m.kind, namespace = %m.namespace, name = %m.name, reason = r.reason, "monitor rejected, skipped: {}", r.message);
                self.setup.metrics.rejected(m.kind, r.reason);
            }
            if before.is_none_or(|b| &b.warnings != warnings) {
                for w in warnings {
                    warn!(kind = %m.kind, namespace = %m.namespace, name = %m.name, "monitor: {w}");
                }
            }
        }
        let report = Arc::new(MonitorsReport {
            synced: true,
            monitors,
            watches: self.watch_reports(),
        });
        if self.last.monitors.len() != report.monitors.len() || !self.last.synced {
            info!(
                monitors = report.monitors.len(),
                jobs = jobs.len(),
                "monitors selected"
            );
        }
        self.setup.metrics.set_report(Some(Arc::clone(&report)));
        self.count_objects(false);
        self.last = Arc::clone(&report);
        self.setup
            .out
            .send_replace(Arc::new(MonitorJobs { jobs, report }));
    }

    /// `kubesd_objects` of the configuration kinds: what the cache keeps (none once
    /// `stopped`). The Namespaces' gauge is the groups' own, left alone.
    fn count_objects(&self, stopped: bool) {
        let metrics = self.setup.watchers.metrics();
        for role in Role::CONFIG {
            let kept = if stopped { 0 } else { self.cache.count(role) };
            metrics
                .role(role)
                .objects
                .set(i64::try_from(kept).unwrap_or(i64::MAX));
        }
    }

    fn watch_reports(&self) -> Vec<WatchReport> {
        let base = self.setup.watchers.base_url();
        self.urls
            .values()
            .map(|w| {
                let error = w.status.as_ref().and_then(|s| s.last_error.as_ref());
                WatchReport {
                    url: format!("{base}{}", w.url),
                    listed: w.listed,
                    not_installed: error.is_some_and(|e| e.problem == UrlProblem::NotInstalled),
                    problem: error.map(|e| e.to_string()),
                }
            })
            .collect()
    }
}

impl Actor for MonitorWatch {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        for url in monitor_urls(&self.setup.section) {
            self.start_url(url, BTreeSet::new(), ctx);
        }
        // With nothing to watch, the (empty) report is published at once.
        self.changed(ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.count_objects(true);
        for w in std::mem::take(&mut self.urls).into_values() {
            w.link.stop.do_send(StopWatcher);
        }
    }
}

impl Handler<WatcherOutput> for MonitorWatch {
    type Result = ();

    fn handle(&mut self, output: WatcherOutput, ctx: &mut Context<Self>) {
        let id = url_of(&output);
        let Some(watched) = self.urls.get_mut(&id) else {
            // A watcher stopped since: what it brings is no longer wanted.
            return;
        };
        let news = match &output {
            WatcherOutput::Status { status, .. } => {
                let had_problem = watched.status.as_ref().map(|s| s.last_error.is_some());
                let has_problem = Some(status.last_error.is_some());
                watched.status = Some(status.clone());
                had_problem != has_problem
            }
            WatcherOutput::Relisted { .. } => !std::mem::replace(&mut watched.listed, true),
            _ => false,
        };
        if self.cache.apply(id, output) || news {
            self.changed(ctx);
        }
    }
}

fn url_of(output: &WatcherOutput) -> UrlId {
    match output {
        WatcherOutput::Deltas { url, .. }
        | WatcherOutput::ListPart { url, .. }
        | WatcherOutput::ListAbandoned { url }
        | WatcherOutput::Status { url, .. }
        | WatcherOutput::Relisted { url, .. } => *url,
    }
}

impl Handler<HandWritten> for MonitorWatch {
    type Result = ();

    fn handle(&mut self, HandWritten(names): HandWritten, ctx: &mut Context<Self>) {
        // A config applied again tries the jobs that could not start again.
        if !self.not_started.is_empty() {
            self.not_started.clear();
            self.changed(ctx);
        }
        if names != self.hand_written {
            self.hand_written = names;
            self.changed(ctx);
        }
    }
}

impl Handler<NotStarted> for MonitorWatch {
    type Result = ();

    fn handle(&mut self, NotStarted(jobs): NotStarted, ctx: &mut Context<Self>) {
        if !jobs.is_empty() {
            self.not_started.extend(jobs);
            self.changed(ctx);
        }
    }
}

impl Handler<StopMonitorWatch> for MonitorWatch {
    type Result = ();

    fn handle(&mut self, _: StopMonitorWatch, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}
