//! The URL watcher actor: runs the [`Machine`]'s actions over HTTP with awc.
//!
//! It lives on the engine's watcher arbiter, so reading and decoding streams runs on a
//! different thread than the groups' label work. Its outputs go to the group through a
//! [`Window`] of `watcher_in_flight` permits: a batch of the watch stream waits for a
//! permit before it is decoded, a decoded part of a LIST page before it is handed to
//! the machine; the permit goes with the output the machine makes of it and comes back
//! when the group has handled that. When the group falls behind, the watcher stops
//! reading its stream (TCP back-pressure reaches the API server) instead of queueing
//! without bound; up to the window, the watcher decodes the next batch while the group
//! handles the last.
//!
//! The watcher decodes everything it reads; the group gets objects.

use arcstr::ArcStr;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use actix_rt::time::Instant;
use awc::error::PayloadError;
use awc::http::StatusCode;
use awc::http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, RETRY_AFTER, USER_AGENT};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tracing::{debug, info, warn};

use super::backoff::JitteredExponential;
use super::list_requests::{ListAttempt, ListRequests, Sent, origin};
use super::machine::{Action, EventCounts, Failure, Input, ListCaps, Machine, Report, State, Step};
use super::status::{UrlError, UrlProblem, UrlStatus};
use crate::api::{ApiGroupVersion, ListQuery, ResourceUrl, ServerVersion, WatchQuery};
use crate::config::EngineOptions;
use crate::error::DecodeError;
use crate::http::{ApiEndpoint, Credentials, build_endpoint_client, user_agent};
use crate::messages::{StopWatcher, UrlId, WatcherOutput};
use crate::metrics::{
    ApiServerMetrics, ListMethod, METRICS, RejectReason, RequestError, ResponseEncoding,
    RoleMetrics, StallReason,
};
use crate::model::{Object, Role};
use crate::window::{Permit, Window};
use crate::wire::json::{ListLimits, WatchEvent};
use crate::wire::{Encoding, ListDecoder, Status};

/// Everything a URL watcher needs to start.
pub struct UrlWatcherSetup {
    /// Its id within the group.
    pub id: UrlId,
    /// The collection it watches.
    pub url: ResourceUrl,
    /// The API server and credentials.
    pub endpoint: ApiEndpoint,
    /// TLS settings, for `https` servers.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Engine timings.
    pub options: EngineOptions,
    /// Where its output goes.
    pub group: Recipient<WatcherOutput>,
    /// The group's id, for logs.
    pub group_id: u64,
}

/// Lists and watches one API URL. The protocol's state is the machine's; the actor
/// holds what it takes to carry out its actions (I/O) and to tell the URL's state.
pub struct UrlWatcher {
    setup: UrlWatcherSetup,
    machine: Machine,
    /// Clients and credentials.
    http: HttpSide,
    /// The open watch stream.
    stream: OpenStream,
    /// The URL's status, metrics and logs.
    told: Telling,
    /// The outputs in flight to the group, at most `watcher_in_flight`.
    window: Window,
}

/// How a URL watcher reaches its API server.
struct HttpSide {
    client: Option<awc::Client>,
    /// The credential plugin's client certificate the client was built with (see
    /// [`Credentials::client_cert_generation`]).
    client_cert: Option<u64>,
    /// The client of LIST requests, which follow redirects by hand ([`ListRequests`]).
    list_client: Option<awc::Client>,
    /// What the current LIST attempt has asked for.
    list_attempt: ListAttempt,
    credentials: Credentials,
}

/// The watch stream open now, if one is.
#[derive(Default)]
struct OpenStream {
    handle: Option<SpawnHandle>,
    /// Items of older streams than this generation are ignored.
    generation: u64,
    /// Its timings, from its `200`.
    open: Option<OpenWatch>,
}

/// What a URL watcher tells of its URL: the status the group and the agent read, the
/// metrics, and log lines, each change of state once.
struct Telling {
    /// The discovery metrics of this watcher's API server.
    metrics: Arc<ApiServerMetrics>,
    /// The URL's state, for the group and the agent.
    status: UrlStatus,
    /// The status last sent to the group.
    status_sent: Option<UrlStatus>,
    /// The problem last logged as a warning, so that a URL's state change is logged
    /// once and not at every retry; cleared when the watch is healthy again.
    logged: Option<(Step, UrlProblem)>,
    /// A watch was opened since the last LIST: the next one is a restart.
    watched_since_list: bool,
    span: tracing::Span,
}

impl UrlWatcher {
    /// A watcher; it starts listing when started.
    pub fn new(setup: UrlWatcherSetup) -> UrlWatcher {
        let role = setup.url.role;
        let can_fall_back = ApiGroupVersion::Current.fallback(role).is_some();
        let o = &setup.options;
        let machine = Machine::new(
            role,
            can_fall_back,
            Box::new(JitteredExponential::new(o.backoff_initial, o.backoff_max)),
            o.max_event_size,
        )
        .with_list_mode(o.list_mode)
        .with_list_caps(ListCaps {
            bytes: o.max_list_body,
            objects: o.max_list_objects,
        })
        .with_watch(o.watch_after_list);
        let http = HttpSide {
            client: None,
            client_cert: None,
            list_client: None,
            list_attempt: ListAttempt::default(),
            credentials: Credentials::from_config(
                &setup.endpoint.http,
                o.credential_plugin_timeout,
            ),
        };
        let told = Telling {
            metrics: METRICS.api_server(&setup.endpoint.base_url),
            status: UrlStatus {
                url: format!("{}{}", setup.endpoint.base_url, setup.url),
                phase: machine.phase(),
                list_mode: list_method(&machine),
                encoding: None,
                last_error: None,
                last_sync: None,
                relists: 0,
                gone: 0,
            },
            status_sent: None,
            logged: None,
            watched_since_list: false,
            span: tracing::info_span!("url_watcher", group = setup.group_id, role = %role, url = %setup.url),
        };
        UrlWatcher {
            window: Window::new(o.watcher_in_flight),
            setup,
            machine,
            http,
            stream: OpenStream::default(),
            told,
        }
    }

    fn feed(&mut self, input: Input<'_>, ctx: &mut Context<Self>) {
        self.feed_holding(input, None, ctx);
    }

    /// Feeds `input`, read from a watch batch or a LIST page's part that holds `permit`
    /// (a place in the window): the first output its actions make carries the permit
    /// until the group answers it; an input that makes none frees its place on return.
    fn feed_holding(&mut self, input: Input<'_>, permit: Option<Permit>, ctx: &mut Context<Self>) {
        let mut permit = permit;
        if let Input::ListFailed(Failure::Status { code: 401, .. })
        | Input::WatchFailed(Failure::Status { code: 401, .. }) = &input
        {
            // A credential plugin's credential runs out with a 401 when it has no
            // expiry: it runs again (once for every watcher the 401 reaches).
            self.http.credentials.refused();
        }
        let actions = self.machine.on(input);
        for action in actions {
            self.execute(action, &mut permit, ctx);
        }
        let method = list_method(&self.machine);
        if method != self.told.status.list_mode {
            self.set_list_method(method);
        }
        self.told.status.phase = self.machine.phase();
        self.send_status(ctx);
    }

    /// Carries out one action of the machine's; an output it makes takes `permit`.
    fn execute(&mut self, action: Action, permit: &mut Option<Permit>, ctx: &mut Context<Self>) {
        match action {
            Action::ReadServerVersion => self.read_server_version(ctx),
            Action::List { continue_token } => {
                self.told.watched_since_list = false;
                self.list(continue_token, ctx);
            }
            Action::Watch { resource_version } => self.start_watch(resource_version, ctx),
            Action::StreamList { resource_version } => {
                self.told.watched_since_list = false;
                self.watch(resource_version, true, ctx);
            }
            Action::ListPart { objects, first } => self.emit(
                WatcherOutput::ListPart {
                    url: self.setup.id,
                    objects,
                    first,
                },
                permit.take(),
                ctx,
            ),
            Action::WatchOnStream => {
                self.told.watched_since_list = true;
            }
            Action::CloseStream => self.close_stream(ctx),
            Action::AbandonList => {
                let abandoned = WatcherOutput::ListAbandoned { url: self.setup.id };
                self.emit(abandoned, permit.take(), ctx)
            }
            Action::Wait { delay } => self.wait(delay, ctx),
            Action::FallBackToBeta => self.fall_back_to_beta(),
            Action::BackToCurrent => {
                debug!(parent: &self.told.span, "v1beta1 is not served either; the next check starts from the current version");
            }
            Action::Deltas { deltas, counts } => self.emit_deltas(deltas, counts, permit, ctx),
            Action::Relisted(objects) => self.emit_relisted(objects, permit.take(), ctx),
            Action::Report(report) => self.report(report),
        }
    }

    /// Opens a watch, counting it as a restart when the URL has watched since its
    /// last list.
    fn start_watch(&mut self, resource_version: ArcStr, ctx: &mut Context<Self>) {
        if self.told.watched_since_list {
            self.metrics().watch_restarts.inc();
        }
        self.told.watched_since_list = true;
        self.watch(resource_version, false, ctx);
    }

    /// Backs off: the machine hears [`Input::BackoffElapsed`] after `delay`.
    fn wait(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        debug!(parent: &self.told.span, ?delay, "backing off");
        ctx.run_later(delay, |act, ctx| act.feed(Input::BackoffElapsed, ctx));
    }

    /// Counts a watch's events and hands its changes, if any, to the group.
    fn emit_deltas(
        &mut self,
        deltas: Vec<WatchEvent>,
        counts: EventCounts,
        permit: &mut Option<Permit>,
        ctx: &mut Context<Self>,
    ) {
        count_events(self.metrics(), counts);
        if !deltas.is_empty() {
            let url = self.setup.id;
            self.emit(WatcherOutput::Deltas { url, deltas }, permit.take(), ctx);
        }
    }

    /// Hands a complete relist to the group, noting when the URL last synced.
    fn emit_relisted(
        &mut self,
        objects: Vec<Object>,
        permit: Option<Permit>,
        ctx: &mut Context<Self>,
    ) {
        self.told.status.last_sync = Some(std::time::SystemTime::now());
        let url = self.setup.id;
        self.emit(WatcherOutput::Relisted { url, objects }, permit, ctx);
    }

    /// Says, once per run of problems, that the URL is listed from `v1beta1` now (the
    /// machine's choice): a check repeated at the backoff cap (a resource served in
    /// neither version) stays quiet.
    fn fall_back_to_beta(&mut self) {
        let url = format!("{}{}", self.setup.endpoint.base_url, self.setup.url);
        if self.told.logged.is_none() {
            info!(parent: &self.told.span, "{url}: the API version is not served (404); trying v1beta1");
        } else {
            debug!(parent: &self.told.span, "{url}: the API version is not served (404); trying v1beta1");
        }
    }

    fn metrics(&self) -> &RoleMetrics {
        self.told.metrics.role(self.setup.url.role)
    }

    /// Moves this watcher's count in `kubesd_list_mode_watchers` to `method`.
    fn set_list_method(&mut self, method: ListMethod) {
        let gauge = &self.metrics().list_mode;
        gauge.add(self.told.status.list_mode, -1);
        gauge.add(method, 1);
        self.told.status.list_mode = method;
    }

    /// Counts what the machine reports, and logs each change of this URL's state once:
    /// the first of a run of like problems as a warning, its repeats at debug, and
    /// the recovery once the watch is healthy again.
    fn report(&mut self, report: Report) {
        let Some((error, text)) = self.note(report).and_then(|r| self.problem(r)) else {
            return;
        };
        // A run of like problems is one change of state: logged once.
        let kind = (error.step, error.problem.clone());
        if self.told.logged.as_ref() == Some(&kind) {
            debug!(parent: &self.told.span, "{text}");
        } else {
            warn!(parent: &self.told.span, "{text}");
            self.told.logged = Some(kind);
        }
        self.told.status.last_error = Some(error);
    }

    /// The whole URL, for log lines: the span that names it is not shown at every level.
    fn full_url(&self) -> String {
        format!("{}{}", self.setup.endpoint.base_url, self.setup.url)
    }

    /// Counts and logs a report that is not a problem of the URL's, and returns `None`;
    /// hands a problem back.
    fn note(&mut self, report: Report) -> Option<Report> {
        let m = self.metrics();
        let url = &self.full_url();
        match report {
            Report::Relisting(reason) => {
                m.relists.inc(reason);
                self.told.status.relists += 1;
                debug!(parent: &self.told.span, %reason, "listing {url}");
            }
            Report::Gone {
                step,
                message,
                repeated: false,
            } => {
                m.gone.inc();
                self.told.status.gone += 1;
                info!(parent: &self.told.span, "{step} {url}: 410 Gone ({message}); listing again");
            }
            Report::Healthy => {
                if let Some(was) = self.told.status.last_error.take()
                    && self.told.logged.take().is_some()
                {
                    info!(parent: &self.told.span, "WATCH {url}: healthy again (last problem: {was})");
                }
            }
            Report::Rewatching => {
                debug!(parent: &self.told.span, "WATCH {url}: ended as planned; watching again from the same resourceVersion");
            }
            Report::StreamingListNotServed { why } => {
                info!(parent: &self.told.span, "{url}: the API server does not serve streaming lists ({why}); listing with LIST and WATCH from now on");
            }
            Report::ListWayChosen { version, streaming } => {
                let way = if streaming {
                    "streaming lists"
                } else {
                    "LIST and WATCH"
                };
                match version {
                    Some(v) => {
                        debug!(parent: &self.told.span, "{url}: API server {v}: listing with {way}")
                    }
                    None => {
                        debug!(parent: &self.told.span, "{url}: the API server's version could not be read: listing with {way}")
                    }
                }
            }
            Report::SkippedInitialEvents {
                counts,
                total,
                first,
            } => {
                for (reason, n) in counts {
                    m.rejected.add(reason, n);
                }
                warn!(parent: &self.told.span, "streaming LIST {url}: skipped {total} objects that could not be read (the first: {first})");
            }
            problem => return Some(problem),
        }
        None
    }

    /// Counts a problem of the URL's, and says what it is and how to log it (`None` for
    /// a report that is no problem, which [`Self::note`] takes).
    fn problem(&mut self, report: Report) -> Option<(UrlError, String)> {
        let m = self.metrics();
        let url = &self.full_url();
        let found = match report {
            Report::Gone { step, message, .. } => {
                m.gone.inc();
                self.told.status.gone += 1;
                let text = format!(
                    "{step} {url}: 410 Gone again right after listing ({message}); listing again after the backoff"
                );
                (url_error(step, UrlProblem::Gone, &message, false), text)
            }
            Report::RequestFailed {
                step,
                reason,
                message,
                configuration,
                retry_in,
            } => {
                m.request_errors.inc(reason);
                let failure = RequestFailure {
                    step,
                    reason,
                    message: &message,
                    configuration,
                    retry_in,
                };
                let (problem, text) = self.request_failure(url, &failure);
                (url_error(step, problem, &message, configuration), text)
            }
            Report::Rejected {
                reason,
                message,
                retry_in,
            } => {
                m.rejected.inc(reason);
                rejected_problem(url, reason, &message, retry_in)
            }
            Report::Stalled { reason, retry_in } => {
                m.stalls.inc(reason);
                self.stalled_problem(url, reason, retry_in)
            }
            Report::NoResourceVersion { retry_in } => no_resource_version_problem(url, retry_in),
            // Taken by `note`.
            Report::Relisting(_)
            | Report::Healthy
            | Report::Rewatching
            | Report::StreamingListNotServed { .. }
            | Report::ListWayChosen { .. }
            | Report::SkippedInitialEvents { .. } => return None,
        };
        Some(found)
    }

    /// The problem and the log line of a stream cut for stalling: a watch's line that
    /// stayed incomplete, or a streaming list's next item that did not come.
    fn stalled_problem(
        &self,
        url: &str,
        reason: StallReason,
        retry_in: Duration,
    ) -> (UrlError, String) {
        let (step, what) = match reason {
            StallReason::Watch => (Step::Watch, "a line stayed incomplete"),
            StallReason::List => (Step::List, "no next item arrived"),
        };
        let limit = seconds(self.setup.options.watch_stall_timeout);
        let message = format!("{what} for {limit}");
        let text = format!(
            "{step} {url}: {message}; cut, retrying in {}",
            seconds(retry_in)
        );
        let problem = UrlProblem::Stalled(reason);
        (url_error(step, problem, &message, false), text)
    }

    /// The problem and the log line of a failed request. A 404 for a Gateway API
    /// resource (in every version tried) means the cluster has no such CRDs: a state of
    /// its own, said so plainly, re-checked at the longest backoff.
    fn request_failure(&self, url: &str, f: &RequestFailure<'_>) -> (UrlProblem, String) {
        let (step, message, wait) = (f.step, f.message, seconds(f.retry_in));
        if f.reason == RequestError::NotFound && self.setup.url.role.is_gateway_api() {
            let text = format!(
                "{step} {url}: the Gateway API is not installed in this cluster ({message}); no {} objects until its CRDs (gateway.networking.k8s.io) are; re-checking every {wait}",
                self.setup.url.role
            );
            return (UrlProblem::NotInstalled, text);
        }
        let text = if f.configuration {
            format!(
                "{step} {url} failed: {message}. This will not pass by retrying: check the job's credentials, RBAC rules, selectors and API server; retrying every {wait}"
            )
        } else {
            format!("{step} {url} failed: {message}; retrying in {wait}")
        };
        (UrlProblem::Request(f.reason), text)
    }

    /// Sends the URL's status to the group when it changed.
    fn send_status(&mut self, ctx: &mut Context<Self>) {
        if self.told.status_sent.as_ref() == Some(&self.told.status) {
            return;
        }
        self.told.status_sent = Some(self.told.status.clone());
        self.emit(
            WatcherOutput::Status {
                url: self.setup.id,
                status: self.told.status.clone(),
            },
            None,
            ctx,
        );
    }

    /// Sends output to the group; the reply, awaited by this actor, gives `permit`
    /// (the watch batch's, see [`UrlWatcher::feed_holding`]) back.
    fn emit(&mut self, output: WatcherOutput, permit: Option<Permit>, ctx: &mut Context<Self>) {
        let reply = self.setup.group.send(output);
        ctx.spawn(reply.into_actor(self).map(move |reply, act, ctx| {
            drop(permit);
            if reply.is_err() {
                // The group is gone: nothing left to watch for.
                debug!(parent: &act.told.span, "group stopped; watcher stops");
                ctx.stop();
            }
        }));
    }

    /// How this attempt's LIST requests are sent: the redirect-less client, the
    /// credentials now, the budget.
    fn list_requests(&mut self) -> Result<ListRequests, Failure> {
        let authorization = self
            .http
            .credentials
            .header()
            .map_err(|e| Failure::Credentials(e.to_string()))?;
        self.refresh_clients();
        let client = self
            .http
            .list_client
            .clone()
            .ok_or_else(|| Failure::Transport("client not started".into()))?;
        let endpoint = &self.setup.endpoint;
        Ok(ListRequests {
            client,
            authorization,
            accept: self.setup.options.encoding.accept(),
            origin: origin(&endpoint.base_url).to_string(),
            follow_redirects: endpoint.http.follow_redirects,
            max_requests: self.setup.options.max_list_pages,
            timeout: self.setup.options.request_timeout,
        })
    }

    /// A GET request for `path_and_query`, with auth.
    fn request(&mut self, path_and_query: &str) -> Result<awc::ClientRequest, Failure> {
        let header = self
            .http
            .credentials
            .header()
            .map_err(|e| Failure::Credentials(e.to_string()))?;
        self.refresh_clients();
        let client = self
            .http
            .client
            .as_ref()
            .ok_or_else(|| Failure::Transport("client not started".into()))?;
        let mut req = client
            .get(format!(
                "{}{}",
                self.setup.endpoint.base_url, path_and_query
            ))
            .insert_header((ACCEPT, self.setup.options.encoding.accept()))
            .insert_header((USER_AGENT, user_agent()))
            .timeout(self.setup.options.request_timeout);
        if let Some(value) = header {
            req = req.insert_header((AUTHORIZATION, value));
        }
        Ok(req)
    }

    /// Rebuilds the clients when a credential plugin gave a new client certificate:
    /// the pooled connections were made with the old one, so new clients (and
    /// connection pools) make new ones.
    fn refresh_clients(&mut self) {
        let cert = self.http.credentials.client_cert_generation();
        if cert != self.http.client_cert {
            self.http.client_cert = cert;
            self.http.client = self.build_client(true);
            self.http.list_client = self.build_client(false);
        }
    }

    /// An awc client, as the endpoint's settings say (without `redirects`, one that
    /// never follows them: LIST requests follow them by hand); `None` (requests then
    /// fail and are retried) only if a header file vanished since the job subscribed,
    /// where it was checked.
    fn build_client(&self, redirects: bool) -> Option<awc::Client> {
        let mut endpoint = self.setup.endpoint.clone();
        endpoint.http.follow_redirects &= redirects;
        match build_endpoint_client(
            &endpoint,
            self.setup.tls.clone(),
            self.setup.options.request_timeout,
        ) {
            Ok(client) => Some(client),
            Err(e) => {
                warn!(parent: &self.told.span, "cannot build the HTTP client: {e}");
                None
            }
        }
    }

    fn list(&mut self, continue_token: Option<String>, ctx: &mut Context<Self>) {
        let o = self.setup.options.clone();
        // Watch-cache reads ignore `limit` and return everything at once; consistent
        // reads are paged.
        let continue_token_was_none = continue_token.is_none();
        let query = if o.list_from_watch_cache && continue_token.is_none() {
            ListQuery {
                resource_version: Some("0".into()),
                limit: None,
                continue_token: None,
            }
        } else {
            ListQuery {
                resource_version: None,
                limit: Some(o.list_page_size),
                continue_token,
            }
        };
        let path = self.setup.url.list_path(self.machine.api_version(), &query);
        debug!(parent: &self.told.span, %path, "list");
        let requests = match self.list_requests() {
            Ok(requests) => requests,
            Err(failure) => return self.feed(Input::ListFailed(failure), ctx),
        };
        let url = format!("{}{path}", self.setup.endpoint.base_url);
        if continue_token_was_none {
            self.http.list_attempt = ListAttempt::default();
        }
        let mut attempt = std::mem::take(&mut self.http.list_attempt);
        let page = PageReading {
            parts: DecodedParts {
                watcher: ctx.address(),
                window: self.window.clone(),
            },
            metrics: Arc::clone(&self.told.metrics),
            role: self.setup.url.role,
            limits: ListLimits {
                max_object: o.max_event_size,
                max_depth: o.max_json_depth,
            },
            max_body: o.max_list_body,
            max_objects: o.max_list_objects,
            body_timeout: o.list_body_timeout,
            progress_deadline: o.watch_stall_timeout,
        };
        let fut = async move {
            let sent = requests.send(url, &mut attempt).await;
            (page.read(sent, &mut attempt.objects).await, attempt)
        };
        ctx.spawn(fut.into_actor(self).map(|(result, attempt), act, ctx| {
            act.http.list_attempt = attempt;
            act.on_list_result(result, ctx);
        }));
    }

    /// Feeds the outcome of one LIST request to the machine, counting and logging the
    /// objects it skipped.
    fn on_list_result(&mut self, result: Result<PageRead, Failure>, ctx: &mut Context<Self>) {
        match result {
            Ok(PageRead {
                page,
                skipped: errors,
                encoding,
            }) => {
                self.told.status.encoding = Some(encoding);
                if let Some(first) = errors.first() {
                    for e in &errors {
                        self.metrics().rejected.inc(e.reason());
                    }
                    warn!(parent: &self.told.span, "LIST {}{}: skipped {} of its objects, the first: {first}", self.setup.endpoint.base_url, self.setup.url, errors.len());
                }
                self.feed(Input::ListPage(page), ctx);
            }
            Err(failure) => self.feed(Input::ListFailed(failure), ctx),
        }
    }

    /// Asks the API server's `/version` (how `ListMode::Auto` chooses the way of
    /// listing); whatever goes wrong, the machine hears `None` and lists with LIST.
    fn read_server_version(&mut self, ctx: &mut Context<Self>) {
        let req = match self.request("/version") {
            Ok(req) => req.insert_header((ACCEPT, "application/json")),
            Err(_) => return self.feed(Input::ServerVersion(None), ctx),
        };
        let timeout = self.setup.options.request_timeout.min(VERSION_TIMEOUT);
        let read = async move {
            let mut resp = req.timeout(timeout).send().await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            let body = resp.body().limit(64 * 1024).await.ok()?;
            ServerVersion::parse(&body)
        };
        ctx.spawn(read.into_actor(self).map(|version, act, ctx| {
            act.feed(Input::ServerVersion(version), ctx);
        }));
    }

    /// Opens a watch from `resource_version`; with `initial_events`, a streaming list.
    fn watch(&mut self, resource_version: ArcStr, initial_events: bool, ctx: &mut Context<Self>) {
        self.close_stream(ctx);
        let (lo, hi) = self.setup.options.watch_timeout;
        // Spread reconnections so that many watchers do not reconnect in step.
        let span = hi.saturating_sub(lo).as_secs().max(1);
        let timeout_seconds =
            u32::try_from(lo.as_secs() + fastrand::u64(0..span)).unwrap_or(u32::MAX);
        let query = WatchQuery {
            resource_version: resource_version.to_string(),
            timeout_seconds,
            send_initial_events: initial_events,
        };
        // An idle watch is healthy; if the server does not end it at its
        // `timeoutSeconds`, it is reopened a little after.
        let lasts = Duration::from_secs(u64::from(timeout_seconds))
            + self.setup.options.watch_stall_timeout;
        let path = self
            .setup
            .url
            .watch_path(self.machine.api_version(), &query);
        debug!(parent: &self.told.span, %path, "watch");
        let req = match self.request(&path) {
            Ok(req) => req,
            Err(failure) => return self.feed(Input::WatchFailed(failure), ctx),
        };
        self.stream.generation += 1;
        let generation = self.stream.generation;
        let fut = async move { req.send().await };
        let handle = ctx.spawn(fut.into_actor(self).map(move |result, act, ctx| {
            if generation != act.stream.generation {
                return;
            }
            match result {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    // Each response says its encoding: protobuf frames or JSON lines.
                    match response_encoding(&resp) {
                        Ok(encoding) => {
                            act.metrics().responses.inc(encoding_metric(encoding));
                            act.told.status.encoding = Some(encoding_metric(encoding));
                            act.machine.set_watch_encoding(encoding);
                        }
                        Err(failure) => return act.feed(Input::WatchFailed(failure), ctx),
                    }
                    act.watch_opened(resp, generation, lasts, initial_events, ctx);
                }
                Ok(mut resp) => {
                    let status = resp.status();
                    let retry_after = retry_after_header(&resp);
                    let body = async move { resp.body().limit(64 * 1024).await.ok() };
                    ctx.spawn(body.into_actor(act).map(move |body, act, ctx| {
                        if generation == act.stream.generation {
                            act.feed(
                                Input::WatchFailed(classify(status, retry_after, body.as_deref())),
                                ctx,
                            );
                        }
                    }));
                }
                Err(e) => act.feed(Input::WatchFailed(Failure::Transport(e.to_string())), ctx),
            }
        }));
        self.stream.handle = Some(handle);
    }

    /// A watch answered 200: its clocks start and its body is read as the stream of
    /// `generation`, each batch through the window.
    fn watch_opened<S>(
        &mut self,
        body: S,
        generation: u64,
        lasts: Duration,
        initial_events: bool,
        ctx: &mut Context<Self>,
    ) where
        S: Stream<Item = Result<Bytes, PayloadError>> + 'static,
    {
        debug!(parent: &self.told.span, "watch open");
        let now = Instant::now();
        self.stream.open = Some(OpenWatch {
            opened: now,
            expires: now + lasts,
            initial_events: initial_events.then(|| InitialEventsClock {
                due: now + self.setup.options.list_body_timeout,
                progress: (0, now),
            }),
            partial: None,
        });
        let stream = windowed(body, self.window.clone(), generation);
        self.stream.handle = Some(ctx.add_stream(stream));
    }

    fn close_stream(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.stream.handle.take() {
            ctx.cancel_future(handle);
        }
        self.stream.open = None;
        // Anything still arriving from the old stream is ignored.
        self.stream.generation += 1;
    }

    /// The open watch's deadlines, checked on a tick: healthy once it has been open
    /// `healthy_after` at a line boundary; stalled when the same line stays incomplete
    /// past `watch_stall_timeout`; expired (quietly reopened) at its own deadline.
    fn check_watch(&mut self, ctx: &mut Context<Self>) {
        let (listing, healthy) = match self.machine.state() {
            State::Watching { healthy, .. } => (false, *healthy),
            State::StreamingList { .. } => (true, false),
            _ => return,
        };
        let lines_done = self.machine.lines_completed();
        let partial = self.machine.partial_line();
        let o = &self.setup.options;
        let Some(open) = self.stream.open.as_mut() else {
            return;
        };
        let now = Instant::now();
        if self.window.is_full() {
            // We stopped reading, not the server: the stream is not stalled.
            open.partial = None;
            if let Some(clock) = open.initial_events.as_mut() {
                clock.progress.1 = now;
            }
            return;
        }
        let input = match (partial, open.partial) {
            (Some(line), Some((same, since))) if line == same => {
                (now.duration_since(since) > o.watch_stall_timeout).then_some(Input::Stalled)
            }
            (Some(line), _) => {
                open.partial = Some((line, now));
                None
            }
            (None, _) => {
                open.partial = None;
                None
            }
        };
        let input = input.or_else(|| {
            if listing {
                // The rest waits for the watch the stream becomes.
                let clock = open.initial_events.as_mut()?;
                if clock.progress.0 != lines_done {
                    clock.progress = (lines_done, now);
                }
                let quiet = now.duration_since(clock.progress.1) >= o.watch_stall_timeout;
                return (quiet || now >= clock.due)
                    .then_some(Input::InitialEventsOverdue { quiet });
            }
            if now >= open.expires {
                Some(Input::WatchExpired)
            } else if !healthy
                && open.partial.is_none()
                && now.duration_since(open.opened) >= o.healthy_after
            {
                Some(Input::Healthy)
            } else {
                None
            }
        });
        if let Some(input) = input {
            self.feed(input, ctx);
        }
    }
}

/// The timings of an open watch.
struct OpenWatch {
    /// When its `200` arrived.
    opened: Instant,
    /// When it is reopened if the server has not ended it.
    expires: Instant,
    /// A streaming list's, until its initial events end.
    initial_events: Option<InitialEventsClock>,
    /// The incomplete line seen pending (by the count of lines before it), and since
    /// when.
    partial: Option<(u64, Instant)>,
}

/// When a streaming list's initial-events-end bookmark is overdue: at `due`
/// (`list_body_timeout` after the stream opened), or once no line has completed for
/// `watch_stall_timeout` (a server that ignored `sendInitialEvents` and has nothing,
/// or nothing more, to send).
struct InitialEventsClock {
    due: Instant,
    /// Lines completed when last counted, and when that count last changed.
    progress: (u64, Instant),
}

/// How long the `/version` read may take: the server's version only chooses between
/// two ways that both work, so a slow answer is not waited for long.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// How a machine lists now, as `kubesd_list_mode_watchers` counts it.
fn list_method(machine: &Machine) -> ListMethod {
    if machine.streaming_lists() {
        ListMethod::Streaming
    } else {
        ListMethod::List
    }
}

/// Adds a watch batch's events to the role's counters.
fn count_events(m: &RoleMetrics, counts: EventCounts) {
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

/// A problem of the URL's as its status shows it.
fn url_error(step: Step, problem: UrlProblem, message: &str, configuration: bool) -> UrlError {
    UrlError {
        step,
        problem,
        message: message.to_string(),
        configuration,
        at: std::time::SystemTime::now(),
    }
}

/// The problem and the log line of an event the watch rejected.
fn rejected_problem(
    url: &str,
    reason: RejectReason,
    message: &str,
    retry_in: Duration,
) -> (UrlError, String) {
    let text = format!(
        "WATCH {url}: rejected an event ({message}); listing again in {}",
        seconds(retry_in)
    );
    let problem = UrlProblem::Rejected(reason);
    (url_error(Step::Watch, problem, message, false), text)
}

/// The problem and the log line of a list that came without a resourceVersion.
fn no_resource_version_problem(url: &str, retry_in: Duration) -> (UrlError, String) {
    let message = "the list has no resourceVersion to watch from";
    let text = format!(
        "LIST {url}: {message}; listing again in {}",
        seconds(retry_in)
    );
    let problem = UrlProblem::NoResourceVersion;
    (url_error(Step::List, problem, message, false), text)
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

/// A watch body as the watcher reads it: a batch waits for room in the window before
/// it is handled, and while it waits the stream is not read further. The stream's end
/// comes as its last item, tagged like the rest (it needs no room).
fn windowed<S>(body: S, window: Window, generation: u64) -> impl Stream<Item = StreamItem>
where
    S: Stream<Item = Result<Bytes, PayloadError>>,
{
    let end = StreamItem {
        generation,
        items: None,
        permit: None,
    };
    body.ready_chunks(READY_PIECES_PER_BATCH)
        .then(move |items| {
            let window = window.clone();
            async move {
                let permit = window.permit().await;
                StreamItem {
                    generation,
                    items: Some(items),
                    permit,
                }
            }
        })
        .chain(futures_util::stream::once(std::future::ready(end)))
}

/// The pieces of a watch stream that were ready together (the last may be the error
/// that broke it), or its end, tagged with the stream they came from.
pub struct StreamItem {
    generation: u64,
    /// `None`: the server ended the stream.
    items: Option<Vec<Result<Bytes, PayloadError>>>,
    /// Its place in the window, held by the output it makes until the group handled it.
    permit: Option<Permit>,
}

/// At most this many pieces of a watch stream that are ready at once make one batch for
/// the group (`ready_chunks`: no timer, a piece is never held back waiting for more).
///
/// awc hands a busy stream over in pieces the size of its read buffer, a few pod events
/// each; one batch per piece would mean one message, and often one wake-up of the
/// group's thread, per few events. A few pieces per batch amortise that; more would
/// only delay the first of them.
const READY_PIECES_PER_BATCH: usize = 4;

impl Actor for UrlWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.http.client = self.build_client(true);
        self.http.list_client = self.build_client(false);
        self.http.client_cert = self.http.credentials.client_cert_generation();
        let o = &self.setup.options;
        let tick = (o.watch_stall_timeout.min(o.healthy_after) / 4).max(Duration::from_millis(10));
        ctx.run_interval(tick, |act, ctx| act.check_watch(ctx));
        if let Some(every) = o.relist_interval {
            // Started at a random offset so that the watchers of a big config do not
            // all relist at once.
            let offset = every.mul_f64(fastrand::f64());
            ctx.run_later(offset, move |_, ctx| {
                ctx.run_interval(every, |act, ctx| act.feed(Input::Resync, ctx));
            });
        }
        self.metrics().list_mode.add(self.told.status.list_mode, 1);
        debug!(parent: &self.told.span, "started");
        self.feed(Input::Start, ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.metrics().list_mode.add(self.told.status.list_mode, -1);
        debug!(parent: &self.told.span, "stopped");
    }
}

impl StreamHandler<StreamItem> for UrlWatcher {
    fn handle(&mut self, item: StreamItem, ctx: &mut Context<Self>) {
        if item.generation != self.stream.generation {
            return;
        }
        let generation = item.generation;
        let Some(items) = item.items else {
            debug!(parent: &self.told.span, "watch ended by the server");
            self.stream.handle = None;
            self.feed(Input::StreamEnded, ctx);
            return;
        };
        let mut chunks = Vec::with_capacity(items.len());
        let mut broken = None;
        for piece in items {
            match piece {
                Ok(chunk) => chunks.push(chunk),
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if !chunks.is_empty() {
            // A batch that makes no output (a bookmark, half a line) frees its place.
            self.feed_holding(Input::Chunks(&chunks), item.permit, ctx);
        }
        // Unless the pieces before it already ended this stream.
        if let Some(e) = broken
            && generation == self.stream.generation
        {
            self.close_stream(ctx);
            self.feed(Input::StreamBroken(e.to_string()), ctx);
        }
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // Nothing: a stream's end is its last item, tagged with its generation (see
        // `handle`). actix calls this even for a stream whose item just replaced it
        // (a 410 event and the end of the stream read together): taken for the end of
        // the new stream, that made a streaming relist fall back to LIST for good. (The
        // default would stop the actor.)
    }
}

impl Handler<StopWatcher> for UrlWatcher {
    type Result = ();
    fn handle(&mut self, _: StopWatcher, ctx: &mut Context<Self>) {
        self.close_stream(ctx);
        ctx.stop();
    }
}

/// How many decoded objects of a LIST go to the group in one [`WatcherOutput::ListPart`]:
/// enough to amortise a message, few enough that the group starts labelling early.
const LIST_PART_OBJECTS: usize = 256;

/// What reading one LIST page needs, moved into the future that reads it.
struct PageReading {
    parts: DecodedParts,
    metrics: Arc<ApiServerMetrics>,
    role: Role,
    limits: ListLimits,
    max_body: usize,
    /// The most items the attempt's pages may bring (`max_list_objects`).
    max_objects: usize,
    body_timeout: Duration,
    progress_deadline: Duration,
}

impl PageReading {
    /// Reads the page `sent` answered: its objects go to the watcher's machine in parts
    /// as they are decoded (and on to the group as the machine says); the page's
    /// resourceVersion, continue token and skipped items are the result.
    /// `objects` counts the attempt's items, this page's added.
    async fn read(
        self,
        sent: Result<Sent, Failure>,
        objects: &mut usize,
    ) -> Result<PageRead, Failure> {
        let PageReading {
            parts,
            metrics,
            role,
            limits,
            max_body,
            max_objects,
            body_timeout,
            progress_deadline,
        } = self;
        let resp = sent?.map_err(|e| Failure::Transport(e.to_string()))?;
        let mut resp = resp.timeout(body_timeout);
        let status = resp.status();
        if !status.is_success() {
            let body = resp.body().limit(64 * 1024).await.ok();
            return Err(classify(status, retry_after_header(&resp), body.as_deref()));
        }
        if let Some(length) = content_length(&resp)
            && length > max_body
        {
            return Err(Failure::BadBody(format!(
                "the body is {length} bytes, over the limit of {max_body} (max_list_body)"
            )));
        }
        // Decoded as it arrives: the body (hundreds of MB for a big cluster) is
        // never held whole, and decoding overlaps the transfer. Decoded objects go
        // to the group in parts as they come, so that its labelling overlaps our
        // decoding (two cores busy, not one after the other). The body's start is
        // an empty part: the machine makes it the first of a new attempt (which
        // starts it at the group even for an empty list) or drops it.
        parts.hand_on(Vec::new()).await?;
        let encoding = response_encoding(&resp)?;
        metrics.role(role).responses.inc(encoding_metric(encoding));
        let mut list = ListDecoder::new(encoding, role, limits);
        let caps = ListCaps {
            bytes: max_body,
            objects: max_objects.saturating_sub(*objects),
        };
        decode_body(&mut resp, &mut list, &parts, caps, progress_deadline).await?;
        *objects += list.items_seen();
        let rest = list.take_items();
        if !rest.is_empty() {
            parts.hand_on(rest).await?;
        }
        // The page's end reaches the machine when this future returns.
        parts.all_handled().await;
        let (page, skipped) = finish_page(list)?;
        Ok(PageRead {
            page,
            skipped,
            encoding: encoding_metric(encoding),
        })
    }
}

/// What one LIST page brought.
struct PageRead {
    page: crate::wire::json::ListPage,
    /// The items it skipped, each with why.
    skipped: Vec<DecodeError>,
    /// The encoding it came in.
    encoding: ResponseEncoding,
}

/// The page a LIST body made, with the items it skipped; a body whose items were
/// mostly rejected (more of them than were accepted) is not a list of the role.
fn finish_page(
    list: ListDecoder,
) -> Result<(crate::wire::json::ListPage, Vec<DecodeError>), Failure> {
    let seen = list.items_seen();
    let (page, errors) = list.finish().map_err(bad_body)?;
    if let Some(first) = errors.first()
        && errors.len() * 2 > seen
    {
        return Err(Failure::BadBody(format!(
            "{} of its {seen} items were rejected, the first: {first}",
            errors.len()
        )));
    }
    Ok((page, errors))
}

/// Feeds a LIST body to `list` as it arrives, handing the decoded objects on in parts.
/// A body must find its next item within `progress_deadline`: one that sends part of an
/// item and stops, or drips it, is cut; one over `caps` is refused.
async fn decode_body<S>(
    body: &mut S,
    list: &mut ListDecoder,
    parts: &DecodedParts,
    caps: ListCaps,
    progress_deadline: Duration,
) -> Result<(), Failure>
where
    S: Stream<Item = Result<Bytes, PayloadError>> + Unpin,
{
    let mut received = 0usize;
    let mut progress = (0usize, Instant::now());
    loop {
        let wait = progress_deadline.saturating_sub(progress.1.elapsed());
        let chunk = match actix_rt::time::timeout(wait, body.next()).await {
            Err(_) => return Err(Failure::Stalled),
            Ok(None) => return Ok(()),
            Ok(Some(chunk)) => chunk,
        };
        let chunk = chunk.map_err(|e| Failure::Transport(format!("reading the body: {e}")))?;
        received += chunk.len();
        if received > caps.bytes {
            return Err(Failure::BadBody(format!(
                "the body exceeds the limit of {} bytes (max_list_body)",
                caps.bytes
            )));
        }
        list.push(&chunk).map_err(bad_body)?;
        if list.items_seen() > caps.objects {
            return Err(Failure::BadBody(format!(
                "its items passed max_list_objects ({} more were allowed in this page)",
                caps.objects
            )));
        }
        if list.items_seen() != progress.0 {
            progress = (list.items_seen(), Instant::now());
        }
        if list.len() >= LIST_PART_OBJECTS {
            parts.hand_on(list.take_items()).await?;
            // The wait for the group's room was ours, not the server's: the next item
            // has the whole deadline again.
            progress.1 = Instant::now();
        }
    }
}

/// Where the page reader hands the objects it decodes: to its watcher, whose machine
/// makes them parts of the LIST attempt under way, each holding a permit of the
/// watcher's [`Window`] until the group has handled it.
struct DecodedParts {
    watcher: Addr<UrlWatcher>,
    window: Window,
}

impl DecodedParts {
    /// Hands `objects` to the watcher once the window has room, and returns once the
    /// watcher has handled them: one part at a time, so reading waits while the group
    /// is behind, and nothing queues beyond the window.
    async fn hand_on(&self, objects: Vec<Object>) -> Result<(), Failure> {
        let permit = self.window.permit().await;
        self.watcher
            .send(DecodedPart { objects, permit })
            .await
            .map_err(|_| Failure::Transport("the watcher stopped".into()))
    }

    /// Waits until the group has handled every part handed on, so that the page's end,
    /// fed to the machine after this, reaches the group after them. Each part's
    /// output was sent before [`Self::hand_on`] returned, and its permit comes back
    /// only with the group's reply: once every permit is back, the group has handled
    /// them all. The order of the group's mailbox alone would not do: a send to a full
    /// mailbox waits until its request is polled, which can let a later one ahead.
    async fn all_handled(&self) {
        self.window.drained().await;
    }
}

/// Objects decoded from a LIST page, with the place in the window they hold. Sent by
/// the future that reads the page ([`PageReading::read`]) to its own watcher, which
/// feeds them to the machine ([`Input::ListPartDecoded`]) and answers once it has: the
/// part the machine makes carries the permit to the group.
#[derive(Message)]
#[rtype(result = "()")]
struct DecodedPart {
    objects: Vec<Object>,
    permit: Option<Permit>,
}

impl Handler<DecodedPart> for UrlWatcher {
    type Result = ();

    fn handle(&mut self, part: DecodedPart, ctx: &mut Context<Self>) {
        let input = Input::ListPartDecoded(part.objects);
        self.feed_holding(input, part.permit, ctx);
    }
}

fn retry_after_header<S>(resp: &awc::ClientResponse<S>) -> Option<Duration> {
    resp.headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

fn content_length<S>(resp: &awc::ClientResponse<S>) -> Option<usize> {
    resp.headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// The encoding a response's `Content-Type` names; another type is a bad body.
fn response_encoding<S>(resp: &awc::ClientResponse<S>) -> Result<Encoding, Failure> {
    let content_type = resp
        .headers()
        .get(awc::http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("(not text)"));
    Encoding::of_content_type(content_type).map_err(|e| Failure::BadBody(e.to_string()))
}

/// The metric label of an encoding.
fn encoding_metric(encoding: Encoding) -> ResponseEncoding {
    match encoding {
        Encoding::Json => ResponseEncoding::Json,
        Encoding::Protobuf => ResponseEncoding::Protobuf,
    }
}

/// A LIST body that could not be read as a list of the role.
fn bad_body(e: DecodeError) -> Failure {
    Failure::BadBody(e.to_string())
}

/// Turns a non-2xx answer into a [`Failure`], with the server's `Status` message (or
/// the start of a plain-text body) in words.
fn classify(status: StatusCode, retry_after: Option<Duration>, body: Option<&[u8]>) -> Failure {
    let parsed = body.and_then(Status::from_body);
    let message = match (&parsed, body) {
        (Some(s), _) if !s.message.is_empty() => s.message.clone(),
        (Some(s), _) => s.reason.clone(),
        (None, Some(body)) => plain_text(body),
        (None, None) => String::new(),
    };
    if status == StatusCode::GONE || parsed.as_ref().is_some_and(|s| s.code == 410) {
        return Failure::Gone { message };
    }
    Failure::Status {
        code: status.as_u16(),
        retry_after,
        message,
    }
}

/// The start of a body as one line of printable text (a proxy's HTML error page, or
/// whatever else a server sent instead of a `Status`).
fn plain_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out.truncate(out.trim_end().len());
    out
}

/// What [`UrlWatcher::request_failure`] words: one `Report::RequestFailed`.
struct RequestFailure<'a> {
    step: Step,
    reason: RequestError,
    message: &'a str,
    configuration: bool,
    retry_in: Duration,
}
