//! The URL watcher actor: runs the [`Machine`]'s actions over HTTP with awc.
//!
//! It lives on the engine's watcher arbiter, so reading and decoding streams runs on a
//! different thread than the groups' label work. Deltas go to the group with `send`, and
//! at most `watcher_in_flight` may be unhandled: when the group falls behind, the
//! watcher stops reading its stream (TCP back-pressure reaches the API server) instead
//! of queueing without bound.

use arcstr::ArcStr;
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix::dev::RecipientRequest;
use actix::prelude::*;
use actix_rt::time::Instant;
use awc::error::PayloadError;
use awc::http::StatusCode;
use awc::http::header::{ACCEPT, AUTHORIZATION, RETRY_AFTER};
use bytes::Bytes;
use futures_util::{FutureExt, StreamExt};
use tracing::{debug, warn};

use super::machine::{Action, Failure, Input, Machine};
use crate::actors::messages::{DeferredEventFailed, StopWatcher, UrlId, WatcherOutput};
use crate::api::{ApiGroupVersion, ListQuery, ResourceUrl, WatchQuery};
use crate::config::EngineOptions;
use crate::http::{ApiEndpoint, Credentials, build_client};
use crate::metrics::{ApiServerMetrics, METRICS};
use crate::model::Object;
use crate::watch::{ListStream, Status, UndecodedItem};

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
    /// Set by the group: false while one of its subscribers is behind, which means the
    /// group's thread (or a subscriber's) has no time to spare for decoding; the watcher
    /// then hands it no undecoded events.
    pub group_keeps_up: Arc<std::sync::atomic::AtomicBool>,
    /// The group's id, for logs.
    pub group_id: u64,
}

/// Lists and watches one API URL.
pub struct UrlWatcher {
    setup: UrlWatcherSetup,
    version: ApiGroupVersion,
    machine: Machine,
    /// The discovery metrics of this watcher's API server (the machine's too).
    metrics: Arc<ApiServerMetrics>,
    client: Option<awc::Client>,
    credentials: Credentials,
    /// The open watch stream, and its generation (items of older streams are ignored).
    stream: Option<SpawnHandle>,
    stream_generation: u64,
    last_activity: Instant,
    /// Sends to the group not yet handled, oldest first (boxed: the request futures are
    /// not `Unpin`).
    in_flight: VecDeque<Pin<Box<RecipientRequest<WatcherOutput>>>>,
    span: tracing::Span,
}

impl UrlWatcher {
    /// A watcher; it starts listing when started.
    pub fn new(setup: UrlWatcherSetup) -> UrlWatcher {
        let role = setup.url.role;
        let can_fall_back = ApiGroupVersion::Current.fallback(role).is_some();
        let o = &setup.options;
        let metrics = METRICS.api_server(&setup.endpoint.base_url);
        let machine = Machine::new(
            role,
            Arc::clone(&metrics),
            can_fall_back,
            o.backoff_initial,
            o.backoff_max,
            o.max_event_size,
        );
        let credentials = Credentials::from_config(&setup.endpoint.http);
        let span = tracing::info_span!("url_watcher", group = setup.group_id, role = %role, url = %setup.url);
        UrlWatcher {
            setup,
            version: ApiGroupVersion::Current,
            machine,
            metrics,
            client: None,
            credentials,
            stream: None,
            stream_generation: 0,
            last_activity: Instant::now(),
            in_flight: VecDeque::new(),
            span,
        }
    }

    fn feed(&mut self, input: Input<'_>, ctx: &mut Context<Self>) {
        let actions = self.machine.on(input);
        for action in actions {
            self.execute(action, ctx);
        }
    }

    fn execute(&mut self, action: Action, ctx: &mut Context<Self>) {
        match action {
            Action::List { continue_token } => self.list(continue_token, ctx),
            Action::Watch { resource_version } => self.watch(resource_version, ctx),
            Action::CloseStream => self.close_stream(ctx),
            Action::Wait { delay } => {
                debug!(parent: &self.span, ?delay, "backing off");
                ctx.run_later(delay, |act, ctx| act.feed(Input::BackoffElapsed, ctx));
            }
            Action::FallBackToBeta => self.version = ApiGroupVersion::Beta,
            Action::Deltas(deltas) => self.emit(
                WatcherOutput::Deltas {
                    url: self.setup.id,
                    deltas,
                },
                ctx,
            ),
            Action::Relisted(objects) => self.emit(
                WatcherOutput::Relisted {
                    url: self.setup.id,
                    objects,
                },
                ctx,
            ),
            Action::Warn(message) => warn!(parent: &self.span, "{message}"),
        }
    }

    /// Sends output to the group; waits for the oldest when too many are unhandled.
    fn emit(&mut self, output: WatcherOutput, ctx: &mut Context<Self>) {
        self.in_flight
            .push_back(Box::pin(self.setup.group.send(output)));
        if self.in_flight.len() > self.setup.options.watcher_in_flight
            && let Some(oldest) = self.in_flight.pop_front()
        {
            // `wait` holds back every other event of this actor, the stream's chunks
            // included, until the group has handled the oldest batch.
            ctx.wait(oldest.into_actor(self).map(|res, act, ctx| {
                if res.is_err() {
                    // The group is gone: nothing left to watch for.
                    debug!(parent: &act.span, "group stopped; watcher stops");
                    ctx.stop();
                }
            }));
        }
    }

    /// A GET request for `path_and_query`, with auth.
    fn request(&mut self, path_and_query: &str) -> Result<awc::ClientRequest, Failure> {
        let client = self
            .client
            .as_ref()
            .ok_or_else(|| Failure::Transport("client not started".into()))?;
        let mut req = client
            .get(format!(
                "{}{}",
                self.setup.endpoint.base_url, path_and_query
            ))
            .insert_header((ACCEPT, "application/json"))
            .timeout(self.setup.options.request_timeout);
        if let Some(value) = self
            .credentials
            .header()
            .map_err(|e| Failure::Transport(e.to_string()))?
        {
            req = req.insert_header((AUTHORIZATION, value));
        }
        Ok(req)
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
        let path = self.setup.url.list_path(self.version, &query);
        debug!(parent: &self.span, %path, "list");
        let req = match self.request(&path) {
            Ok(req) => req,
            Err(failure) => return self.feed(Input::ListFailed(failure), ctx),
        };
        let role = self.setup.url.role;
        let (max_body, body_timeout) = (o.max_list_body, o.list_body_timeout);
        let first_page = continue_token_was_none;
        let parts = ListParts {
            group: self.setup.group.clone(),
            url: self.setup.id,
            first: first_page,
            window: o.watcher_in_flight.max(1),
            pending: VecDeque::new(),
        };
        let fut = async move {
            let mut parts = parts;
            let resp = req
                .send()
                .await
                .map_err(|e| Failure::Transport(e.to_string()))?;
            let mut resp = resp.timeout(body_timeout);
            let status = resp.status();
            if !status.is_success() {
                let body = resp.body().limit(64 * 1024).await.ok();
                return Err(classify(status, retry_after_header(&resp), body.as_deref()));
            }
            // Decoded as it arrives: the body (hundreds of MB for a big cluster) is
            // never held whole, and decoding overlaps the transfer. Decoded objects go
            // to the group in parts as they come, so that its labelling overlaps our
            // decoding (two cores busy, not one after the other).
            if parts.first {
                // Even an empty list starts a new attempt at the group.
                parts.send(Vec::new(), Vec::new()).await?;
            }
            let mut list = ListStream::new(role);
            let mut received = 0usize;
            while let Some(chunk) = resp.next().await {
                // While the group keeps up (at most one part unhandled), it decodes some
                // items too; when it falls behind, we decode everything ourselves.
                list.defer_every(if parts.keeping_up() {
                    LIST_DEFER_EVERY
                } else {
                    0
                });
                let chunk = chunk.map_err(|e| Failure::Transport(e.to_string()))?;
                received += chunk.len();
                if received > max_body {
                    return Err(Failure::Transport(format!(
                        "list body exceeds {max_body} bytes"
                    )));
                }
                list.push(&chunk)
                    .map_err(|e| Failure::Transport(e.to_string()))?;
                if list.len() >= LIST_PART_OBJECTS {
                    parts.send(list.take_items(), list.take_undecoded()).await?;
                }
            }
            parts.send(list.take_items(), list.take_undecoded()).await?;
            parts.drain().await?;
            list.finish().map_err(|e| Failure::Transport(e.to_string()))
        };
        ctx.spawn(fut.into_actor(self).map(|result, act, ctx| match result {
            Ok((page, errors)) => {
                for e in &errors {
                    act.metrics.role(act.setup.url.role).decode_errors.inc();
                    warn!(parent: &act.span, "skipping an object of the list: {e}");
                }
                act.feed(Input::ListPage(page), ctx);
            }
            Err(failure) => act.feed(Input::ListFailed(failure), ctx),
        }));
    }

    fn watch(&mut self, resource_version: ArcStr, ctx: &mut Context<Self>) {
        self.close_stream(ctx);
        let (lo, hi) = self.setup.options.watch_timeout;
        // Spread reconnections so that many watchers do not reconnect in step.
        let span = hi.saturating_sub(lo).as_secs().max(1);
        let timeout_seconds =
            u32::try_from(lo.as_secs() + fastrand::u64(0..span)).unwrap_or(u32::MAX);
        let query = WatchQuery {
            resource_version: resource_version.to_string(),
            timeout_seconds,
        };
        let path = self.setup.url.watch_path(self.version, &query);
        debug!(parent: &self.span, %path, "watch");
        let req = match self.request(&path) {
            Ok(req) => req,
            Err(failure) => return self.feed(Input::WatchFailed(failure), ctx),
        };
        self.stream_generation += 1;
        let generation = self.stream_generation;
        let fut = async move { req.send().await };
        let handle = ctx.spawn(fut.into_actor(self).map(move |result, act, ctx| {
            if generation != act.stream_generation {
                return;
            }
            match result {
                Ok(resp) if resp.status() == StatusCode::OK => {
                    debug!(parent: &act.span, "watch open");
                    act.last_activity = Instant::now();
                    act.feed(Input::WatchOpened, ctx);
                    let stream = resp
                        .ready_chunks(READY_PIECES_PER_BATCH)
                        .map(move |items| StreamItem { generation, items });
                    act.stream = Some(ctx.add_stream(stream));
                }
                Ok(mut resp) => {
                    let status = resp.status();
                    let retry_after = retry_after_header(&resp);
                    let body = async move { resp.body().limit(64 * 1024).await.ok() };
                    ctx.spawn(body.into_actor(act).map(move |body, act, ctx| {
                        if generation == act.stream_generation {
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
        self.stream = Some(handle);
    }

    fn close_stream(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.stream.take() {
            ctx.cancel_future(handle);
        }
        // Anything still arriving from the old stream is ignored.
        self.stream_generation += 1;
    }

    fn check_stall(&mut self, ctx: &mut Context<Self>) {
        let stalled = self.stream.is_some()
            && self.last_activity.elapsed() > self.setup.options.watch_stall_timeout;
        if stalled && matches!(self.machine.state(), super::machine::State::Watching) {
            self.feed(Input::Stalled, ctx);
        }
    }
}

/// The pieces of a watch stream that were ready together (the last may be the error
/// that broke it), tagged with the stream they came from.
pub struct StreamItem {
    generation: u64,
    items: Vec<Result<Bytes, PayloadError>>,
}

/// At most this many pieces of a watch stream that are ready at once make one batch for
/// the group (`ready_chunks`: no timer, a piece is never held back waiting for more).
///
/// awc hands a busy stream over in pieces of ~20 KB (its read buffer), ~4 pod events
/// each; one batch per piece meant one message, and often one wake-up of the group's
/// thread, per four events. In the flood bench (100k pods, 200k events) four
/// interleaved pairs: 94–103k → 111–116k events/s, 16.5–17.9 → 15.8–16.4 µs CPU per
/// event; 8 and 16 measured within noise of 4, with the p50 latency up by ~1 ms.
const READY_PIECES_PER_BATCH: usize = 4;

impl Actor for UrlWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        let o = &self.setup.options;
        self.client = Some(build_client(
            self.setup.tls.clone(),
            self.setup.endpoint.http.follow_redirects,
            o.request_timeout,
        ));
        let tick = (o.watch_stall_timeout / 4).max(Duration::from_millis(10));
        ctx.run_interval(tick, |act, ctx| act.check_stall(ctx));
        if let Some(every) = o.relist_interval {
            // Started at a random offset so that the watchers of a big config do not
            // all relist at once.
            let offset = every.mul_f64(fastrand::f64());
            ctx.run_later(offset, move |_, ctx| {
                ctx.run_interval(every, |act, ctx| act.feed(Input::Resync, ctx));
            });
        }
        debug!(parent: &self.span, "started");
        self.feed(Input::Start, ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        debug!(parent: &self.span, "stopped");
    }
}

impl StreamHandler<StreamItem> for UrlWatcher {
    fn handle(&mut self, item: StreamItem, ctx: &mut Context<Self>) {
        if item.generation != self.stream_generation {
            return;
        }
        self.last_activity = Instant::now();
        let generation = item.generation;
        let mut chunks = Vec::with_capacity(item.items.len());
        let mut broken = None;
        for piece in item.items {
            match piece {
                Ok(chunk) => chunks.push(chunk),
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if !chunks.is_empty() {
            // While the group keeps up, it decodes some events too; when it falls
            // behind, we decode everything.
            let defer_every = if self
                .setup
                .group_keeps_up
                .load(std::sync::atomic::Ordering::Relaxed)
                && handled_dropped(&mut self.in_flight) <= WATCH_KEEPING_UP_UNHANDLED
            {
                self.setup.options.watch_defer_every
            } else {
                0
            };
            self.machine.set_defer_every(defer_every);
            self.feed(Input::Chunks(&chunks), ctx);
        }
        // Unless the pieces before it already ended this stream.
        if let Some(e) = broken
            && generation == self.stream_generation
        {
            self.close_stream(ctx);
            self.feed(Input::StreamBroken(e.to_string()), ctx);
        }
    }

    fn finished(&mut self, ctx: &mut Context<Self>) {
        // Called for every stream that ends, including ones already replaced: only the
        // current one's end means anything. (The default would stop the actor.)
        if self.stream.is_some() {
            debug!(parent: &self.span, "watch ended by the server");
            self.stream = None;
            self.feed(Input::StreamEnded, ctx);
        }
    }
}

impl Handler<DeferredEventFailed> for UrlWatcher {
    type Result = ();
    fn handle(&mut self, msg: DeferredEventFailed, ctx: &mut Context<Self>) {
        self.feed(
            Input::DeferredEventFailed {
                attempt: msg.attempt,
                why: msg.why,
            },
            ctx,
        );
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

/// While the group keeps up with a LIST, every this-many-th item goes to it undecoded.
///
/// During a sync this thread scans and decodes the body and the group's labels the
/// objects; decoding is the larger half (flood bench, 100k pods: 1.97 CPU-s here, 1.18
/// at the group, 2.08 s wall), so the group, idle a third of the time, decodes a
/// share. With one in four, same-run thread CPU moved to ~2.0 here and ~1.8 at the
/// group (BENCHMARKS.md; one in three measured no better through this VM's noise); the
/// group keeps less than half because it also serves subscribers, and when it falls
/// behind (endpoints with attach_metadata label far more per object) the watcher stops
/// deferring.
const LIST_DEFER_EVERY: usize = 4;

/// The group counts as keeping up with a watch stream, and is handed every
/// `watch_defer_every`-th object event undecoded
/// ([`crate::actors::messages::Delta::Undecoded`]), while at most this many of the
/// watcher's batches are unhandled (of `watcher_in_flight`, 4 by default).
///
/// In a flood of pod events this thread (HTTP, framing, decoding: 12.8–16 µs per event,
/// three quarters of it decoding) was the bottleneck while the group's (labels, cache,
/// subscribers: 7.6–9.2 µs) waited. Deferring one event in two brought the threads
/// even (flood bench, 100k pods: ~2.0 CPU-s each; one in three left this thread ahead,
/// 2.1 against 1.7; BENCHMARKS.md, fifth round); this test holds it back whenever the
/// group lags, so a quarter of the events or so end up deferred. A threshold of one
/// unhandled batch, as for a LIST, turned deferring off too often: a watch batch (the
/// pieces ready together, ~4–16 events) is smaller than a LIST's parts.
const WATCH_KEEPING_UP_UNHANDLED: usize = 2;

/// Drops the sends at the front of `pending` that the group has handled (or that failed:
/// the next send finds out) and returns how many are left unhandled. Sends are awaited
/// only when the window is full, so without this the queue would always look full.
fn handled_dropped(pending: &mut VecDeque<Pin<Box<RecipientRequest<WatcherOutput>>>>) -> usize {
    while let Some(oldest) = pending.front_mut() {
        match oldest.as_mut().now_or_never() {
            Some(_) => {
                pending.pop_front();
            }
            None => break,
        }
    }
    pending.len()
}

/// The parts of one LIST page on their way to the group, at most `window` unhandled.
struct ListParts {
    group: Recipient<WatcherOutput>,
    url: UrlId,
    /// The next part is the first of a new LIST attempt.
    first: bool,
    window: usize,
    /// Parts sent and not yet known to be handled, oldest first (pinned so that they
    /// can be polled in place by `keeping_up`).
    pending: VecDeque<Pin<Box<RecipientRequest<WatcherOutput>>>>,
}

impl ListParts {
    /// True while the group has at most one part unhandled.
    fn keeping_up(&mut self) -> bool {
        handled_dropped(&mut self.pending) <= 1
    }

    /// Sends a part; waits for the oldest when `window` are unhandled.
    async fn send(
        &mut self,
        objects: Vec<Object>,
        undecoded: Vec<UndecodedItem>,
    ) -> Result<(), Failure> {
        if objects.is_empty() && undecoded.is_empty() && !self.first {
            return Ok(());
        }
        let part = WatcherOutput::ListPart {
            url: self.url,
            objects,
            undecoded,
            first: std::mem::take(&mut self.first),
        };
        self.pending.push_back(Box::pin(self.group.send(part)));
        if self.pending.len() > self.window
            && let Some(oldest) = self.pending.pop_front()
        {
            oldest.await.map_err(|_| group_gone())?;
        }
        Ok(())
    }

    /// Waits until the group has handled every part, so the page's end reaches it after
    /// them.
    async fn drain(&mut self) -> Result<(), Failure> {
        while let Some(oldest) = self.pending.pop_front() {
            oldest.await.map_err(|_| group_gone())?;
        }
        Ok(())
    }
}

fn group_gone() -> Failure {
    Failure::Transport("the group stopped".into())
}

fn retry_after_header<S>(resp: &awc::ClientResponse<S>) -> Option<Duration> {
    resp.headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// Turns a non-2xx answer into a [`Failure`], reading a `Status` body when there is one.
fn classify(status: StatusCode, retry_after: Option<Duration>, body: Option<&[u8]>) -> Failure {
    let parsed = body.and_then(Status::from_body);
    if status == StatusCode::GONE || parsed.as_ref().is_some_and(|s| s.code == 410) {
        return Failure::Gone;
    }
    if status == StatusCode::NOT_FOUND {
        return Failure::NotFound;
    }
    Failure::Status {
        code: status.as_u16(),
        retry_after,
    }
}
