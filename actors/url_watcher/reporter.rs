//! What a URL watcher tells of its URL: the status the group and the agent read, the
//! metrics, and the log lines, each change of the URL's state once: the first of a run
//! of like problems as a warning, its repeats at debug, and the recovery once the watch
//! is healthy again. The wording of every problem is here.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tracing::{debug, info, warn};

use super::protocol::{EventCounts, Problem, Report};
use super::status::{Step, UrlError, UrlPhase, UrlProblem, UrlStatus};
use crate::http::Skipped;
use crate::metrics::{
    ApiServerMetrics, ListMethod, RequestError, ResponseEncoding, RoleMetrics, StallReason,
};
use crate::model::Role;

/// The telling side of one URL watcher.
pub struct Reporter {
    /// The discovery metrics of the watcher's API server.
    metrics: Arc<ApiServerMetrics>,
    role: Role,
    /// The whole URL, for log lines: the span that names it is not shown at every level.
    url: String,
    /// How long a stream may make no progress (`watch_stall_timeout`), for the words
    /// of a stall.
    stall: Duration,
    /// The URL's state, for the group and the agent.
    status: UrlStatus,
    /// The status last sent to the group.
    status_sent: Option<UrlStatus>,
    /// The problem last logged as a warning, so that a URL's state change is logged
    /// once and not at every retry; cleared when the watch is healthy again.
    logged: Option<(Step, UrlProblem)>,
    /// A watch was opened since the last list: the next one is a restart.
    watched_since_list: bool,
    span: tracing::Span,
}

impl Reporter {
    /// The reporter of `url` (whole, for logs), a URL of `role`, listed by `method` now.
    pub fn new(
        metrics: Arc<ApiServerMetrics>,
        role: Role,
        url: String,
        stall: Duration,
        method: ListMethod,
        span: tracing::Span,
    ) -> Reporter {
        Reporter {
            metrics,
            role,
            status: UrlStatus {
                url: url.clone(),
                phase: UrlPhase::Listing,
                list_mode: method,
                encoding: None,
                last_error: None,
                last_sync: None,
                relists: 0,
                gone: 0,
            },
            url,
            stall,
            status_sent: None,
            logged: None,
            watched_since_list: false,
            span,
        }
    }

    /// Where the watcher's log lines go.
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    fn metrics(&self) -> &RoleMetrics {
        self.metrics.role(self.role)
    }

    /// The watcher started (`true`) or stopped: its count in
    /// `kubesd_list_mode_watchers`.
    pub fn running(&self, on: bool) {
        let n = if on { 1 } else { -1 };
        self.metrics().list_mode.add(self.status.list_mode, n);
    }

    /// The URL is listed by `method` now.
    pub fn list_method(&mut self, method: ListMethod) {
        if method != self.status.list_mode {
            let gauge = &self.metrics().list_mode;
            gauge.add(self.status.list_mode, -1);
            gauge.add(method, 1);
            self.status.list_mode = method;
        }
    }

    /// The URL's phase now.
    pub fn phase(&mut self, phase: UrlPhase) {
        self.status.phase = phase;
    }

    /// The status, when it changed since it was last sent.
    pub fn status_to_send(&mut self) -> Option<UrlStatus> {
        if self.status_sent.as_ref() == Some(&self.status) {
            return None;
        }
        self.status_sent = Some(self.status.clone());
        Some(self.status.clone())
    }

    /// A response's body starts, in `encoding`.
    pub fn opened(&mut self, encoding: ResponseEncoding) {
        self.metrics().responses.inc(encoding);
        self.status.encoding = Some(encoding);
    }

    /// A list attempt skipped these items.
    pub fn skipped(&self, step: Step, skipped: &Skipped) {
        for (reason, n) in &skipped.counts {
            self.metrics().rejected.add(*reason, *n);
        }
        let (url, total) = (&self.url, skipped.total);
        let first = skipped.first.as_deref().unwrap_or("");
        warn!(parent: &self.span, "{step} {url}: skipped {total} objects that could not be read (the first: {first})");
    }

    /// A watch batch's events, for the event metrics.
    pub fn events(&self, counts: EventCounts) {
        let m = self.metrics();
        for (counter, n) in [
            (&m.events_added, counts.added),
            (&m.events_modified, counts.modified),
            (&m.events_deleted, counts.deleted),
            (&m.bookmarks, counts.bookmarks),
        ] {
            if n > 0 {
                counter.add(n);
            }
        }
    }

    /// A list completed.
    pub fn relisted(&mut self) {
        self.status.last_sync = Some(SystemTime::now());
    }

    /// A list attempt starts: the next watch is no restart.
    pub fn listing(&mut self) {
        self.watched_since_list = false;
    }

    /// A watch opens (on its own request, or on a streaming list's stream).
    pub fn watching(&mut self, own_request: bool) {
        if own_request && self.watched_since_list {
            self.metrics().watch_restarts.inc();
        }
        self.watched_since_list = true;
    }

    /// The URL is listed from `v1beta1` now (the machine's choice), said once per run
    /// of problems: a check repeated at the backoff cap stays quiet.
    pub fn fell_back_to_beta(&self) {
        let url = &self.url;
        if self.logged.is_none() {
            info!(parent: &self.span, "{url}: the API version is not served (404); trying v1beta1");
        } else {
            debug!(parent: &self.span, "{url}: the API version is not served (404); trying v1beta1");
        }
    }

    /// Neither API version is served: the next check starts from the current one.
    pub fn back_to_current(&self) {
        debug!(parent: &self.span, "v1beta1 is not served either; the next check starts from the current version");
    }

    /// Counts and logs a report that is no problem of the URL's.
    pub fn report(&mut self, report: Report) {
        let url = &self.url;
        match report {
            Report::Relisting(reason) => {
                self.metrics().relists.inc(reason);
                self.status.relists += 1;
                debug!(parent: &self.span, %reason, "listing {url}");
            }
            Report::Gone { step, message } => {
                self.metrics().gone.inc();
                self.status.gone += 1;
                info!(parent: &self.span, "{step} {url}: 410 Gone ({message}); listing again");
            }
            Report::Healthy => {
                if let Some(was) = self.status.last_error.take()
                    && self.logged.take().is_some()
                {
                    info!(parent: &self.span, "WATCH {url}: healthy again (last problem: {was})");
                }
            }
            Report::Rewatching => {
                debug!(parent: &self.span, "WATCH {url}: ended as planned; watching again from the same resourceVersion");
            }
            Report::StreamingListNotServed { why } => {
                info!(parent: &self.span, "{url}: the API server does not serve streaming lists ({why}); listing with LIST and WATCH from now on");
            }
            Report::ListWayChosen { version, streaming } => {
                let way = if streaming {
                    "streaming lists"
                } else {
                    "LIST and WATCH"
                };
                match version {
                    Some(v) => {
                        debug!(parent: &self.span, "{url}: API server {v}: listing with {way}")
                    }
                    None => {
                        debug!(parent: &self.span, "{url}: the API server's version could not be read: listing with {way}")
                    }
                }
            }
        }
    }

    /// Counts a problem of the URL's, which pauses it for `retry_in`, and logs it: the
    /// first of a run of like problems as a warning, its repeats at debug.
    pub fn problem(&mut self, problem: Problem, retry_in: Duration) {
        let (error, text) = self.words(problem, &seconds(retry_in));
        let kind = (error.step, error.problem.clone());
        if self.logged.as_ref() == Some(&kind) {
            debug!(parent: &self.span, "{text}");
        } else {
            warn!(parent: &self.span, "{text}");
            self.logged = Some(kind);
        }
        self.status.last_error = Some(error);
    }

    /// Counts a problem, and says what it is and its log line.
    fn words(&mut self, problem: Problem, wait: &str) -> (UrlError, String) {
        let m = self.metrics();
        let url = &self.url;
        match problem {
            Problem::Gone { step, message } => {
                m.gone.inc();
                self.status.gone += 1;
                let text = format!(
                    "{step} {url}: 410 Gone again right after listing ({message}); listing again in {wait}"
                );
                (url_error(step, UrlProblem::Gone, message, false), text)
            }
            Problem::RequestFailed {
                step,
                reason,
                message,
                configuration,
            } => {
                m.request_errors.inc(reason);
                let (problem, text) =
                    self.request_failed(step, reason, &message, configuration, wait);
                (url_error(step, problem, message, configuration), text)
            }
            Problem::Rejected { reason, message } => {
                m.rejected.inc(reason);
                let text =
                    format!("WATCH {url}: rejected an event ({message}); listing again in {wait}");
                let problem = UrlProblem::Rejected(reason);
                (url_error(Step::Watch, problem, message, false), text)
            }
            Problem::Stalled(reason) => {
                m.stalls.inc(reason);
                self.stalled(reason, wait)
            }
            Problem::NoResourceVersion => {
                let message = "the list has no resourceVersion to watch from";
                let text = format!("LIST {url}: {message}; listing again in {wait}");
                let problem = UrlProblem::NoResourceVersion;
                (url_error(Step::List, problem, message.into(), false), text)
            }
        }
    }

    /// The problem and the log line of a stream cut for stalling: a watch's line that
    /// stayed incomplete, or a list's next item that did not come.
    fn stalled(&self, reason: StallReason, wait: &str) -> (UrlError, String) {
        let (step, what) = match reason {
            StallReason::Watch => (Step::Watch, "a line stayed incomplete"),
            StallReason::List => (Step::List, "no next item arrived"),
        };
        let message = format!("{what} for {}", seconds(self.stall));
        let text = format!("{step} {}: {message}; cut, retrying in {wait}", self.url);
        (
            url_error(step, UrlProblem::Stalled(reason), message, false),
            text,
        )
    }

    /// The problem and the log line of a failed request. A 404 for a custom resource
    /// (the Gateway API's or prometheus-operator's; in every version tried) means the
    /// cluster has no such CRDs: a state of
    /// its own, said so plainly, re-checked at the longest backoff.
    fn request_failed(
        &self,
        step: Step,
        reason: RequestError,
        message: &str,
        configuration: bool,
        wait: &str,
    ) -> (UrlProblem, String) {
        let url = &self.url;
        if reason == RequestError::NotFound
            && let Some(group) = self.role.crd_group()
        {
            let api = if self.role.is_gateway_api() {
                "the Gateway API"
            } else {
                "prometheus-operator's API"
            };
            let text = format!(
                "{step} {url}: {api} is not installed in this cluster ({message}); no {} objects until its CRDs ({group}) are; re-checking every {wait}",
                self.role
            );
            return (UrlProblem::NotInstalled, text);
        }
        let text = if configuration {
            format!(
                "{step} {url} failed: {message}. This will not pass by retrying: check the job's credentials, RBAC rules, selectors and API server; retrying every {wait}"
            )
        } else {
            format!("{step} {url} failed: {message}; retrying in {wait}")
        };
        (UrlProblem::Request(reason), text)
    }
}

/// A problem of the URL's as its status shows it.
fn url_error(step: Step, problem: UrlProblem, message: String, configuration: bool) -> UrlError {
    UrlError {
        step,
        problem,
        message,
        configuration,
        at: SystemTime::now(),
    }
}

/// "30 s", "1.5 s", "250 ms".
fn seconds(d: Duration) -> String {
    if d >= Duration::from_secs(10) {
        format!("{} s", d.as_secs())
    } else if d >= Duration::from_secs(1) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{} ms", d.as_millis())
    }
}
