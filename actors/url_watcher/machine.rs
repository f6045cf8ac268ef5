//! The URL watcher's protocol logic as a pure state machine: it is fed what the network
//! did (a LIST page, a watch chunk, a status, an end of stream) and answers with what to
//! do next (request a page, open a watch, wait, hand deltas to the group). No I/O and no
//! clock here, so every transition is unit-tested with byte chunks.
//!
//! ```text
//!            ┌──────────── 410 / bad event / ERROR event ───────────┐
//!            ▼                                                       │
//!   ┌──── Listing ──── last page ───▶ Watching ── clean end ──┐     │
//!   │        │  ▲                      │  ▲  ▲                 │     │
//!   │  error │  │ 410 on continue      │  │  └─────────────────┘     │
//!   │        ▼  │                      │  │ (rewatch from the last  │
//!   │   BackingOff{Relist}    error ──▶ BackingOff{Rewatch}  resourceVersion)
//!   └────────────────────────────────────────────────────────────────┘
//! ```

use arcstr::ArcStr;
use std::sync::Arc;
use std::time::Duration;

use backoff::ExponentialBackoff;
use backoff::backoff::Backoff;

use crate::actors::messages::Delta;
use crate::metrics::{ApiServerMetrics, RoleMetrics};
use crate::model::{Object, Role};
use crate::watch::{
    LineBuffer, ListPage, ObjectEventType, UndecodedEvent, WatchEvent, decode_event,
    object_event_type,
};

/// Where the watcher is in the list/watch protocol.
#[derive(Debug)]
pub enum State {
    /// Fetching LIST pages. `items` holds the objects of the pages received so far that
    /// the actor did not already hand to the group as `ListPart`s (it streams them, so
    /// the group labels while the list is still arriving); either way the group removes
    /// vanished objects only when the list is complete.
    Listing {
        /// The objects of the pages so far.
        items: Vec<Object>,
    },
    /// A WATCH is open, or being opened, from the watcher's resourceVersion.
    Watching,
    /// Waiting out a delay after an error, then doing `then`.
    BackingOff {
        /// What to do when the delay is over.
        then: Next,
    },
}

/// What a backoff leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// LIST from scratch: the resourceVersion is gone or was never had.
    Relist,
    /// WATCH again from the last resourceVersion: nothing was lost.
    Rewatch,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone: the resourceVersion (or continue token) is older than the server keeps.
    Gone,
    /// 404: this API version is not served (old clusters lack discovery.k8s.io/v1).
    NotFound,
    /// Any other HTTP status; `retry_after` from a `Retry-After` header (429, 503).
    Status {
        /// The HTTP status.
        code: u16,
        /// The server's requested delay.
        retry_after: Option<Duration>,
    },
    /// The connection failed or the body could not be read or decoded.
    Transport(String),
}

/// What happened, fed to [`Machine::on`].
#[derive(Debug)]
pub enum Input<'a> {
    /// The watcher starts.
    Start,
    /// A LIST page arrived and decoded.
    ListPage(ListPage),
    /// A LIST request failed.
    ListFailed(Failure),
    /// The WATCH request was answered with 200: events will follow.
    WatchOpened,
    /// The WATCH request failed before any event.
    WatchFailed(Failure),
    /// Pieces of the watch stream that arrived together, in order: their events go to
    /// the group as one batch.
    Chunks(&'a [bytes::Bytes]),
    /// The server ended the stream cleanly (its `timeoutSeconds`).
    StreamEnded,
    /// The stream broke (connection reset, truncated chunk).
    StreamBroken(String),
    /// Nothing arrived for the stall timeout: the connection is presumed dead.
    Stalled,
    /// The backoff delay is over.
    BackoffElapsed,
    /// Time for the periodic safety-net relist (see `EngineOptions::relist_interval`).
    Resync,
    /// The group could not decode an event this machine handed on undecoded
    /// ([`Delta::Undecoded`]) during LIST attempt `attempt`.
    DeferredEventFailed {
        /// The attempt the event carried.
        attempt: u64,
        /// What was wrong with it.
        why: String,
    },
}

/// What to do, returned by [`Machine::on`], in order.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Request a LIST page (`None`: the first).
    List {
        /// The continue token of the next page.
        continue_token: Option<String>,
    },
    /// Open a WATCH from `resource_version`.
    Watch {
        /// Where to start.
        resource_version: ArcStr,
    },
    /// Close the open watch stream (the machine gave up on it).
    CloseStream,
    /// Wait `delay`, then feed [`Input::BackoffElapsed`].
    Wait {
        /// How long.
        delay: Duration,
    },
    /// Use the role's older API version from now on (after a 404).
    FallBackToBeta,
    /// Hand these deltas to the group.
    Deltas(Vec<Delta>),
    /// Hand this complete list to the group.
    Relisted(Vec<Object>),
    /// Log this problem once, with the watcher's span.
    Warn(String),
}

/// The protocol state of one URL watcher.
pub struct Machine {
    role: Role,
    /// The discovery metrics of this watcher's API server.
    metrics: Arc<ApiServerMetrics>,
    state: State,
    resource_version: Option<ArcStr>,
    lines: LineBuffer,
    backoff: ExponentialBackoff,
    /// The role has an older API version not tried yet.
    can_fall_back: bool,
    /// LIST attempts started so far; deferred events carry it (see
    /// [`Input::DeferredEventFailed`]).
    attempt: u64,
    /// Every this-many-th object event is handed on undecoded (0: none); the actor sets
    /// it from how well the group keeps up.
    defer_every: usize,
    /// Object event lines since the last one handed on undecoded.
    since_deferred: usize,
}

impl Machine {
    /// A machine for `role`; `can_fall_back` when the role has a `v1beta1` to try on 404.
    pub fn new(
        role: Role,
        metrics: Arc<ApiServerMetrics>,
        can_fall_back: bool,
        backoff_initial: Duration,
        backoff_max: Duration,
        max_event: usize,
    ) -> Machine {
        Machine {
            role,
            metrics,
            state: State::Listing { items: Vec::new() },
            resource_version: None,
            lines: LineBuffer::new(max_event),
            backoff: ExponentialBackoff {
                initial_interval: backoff_initial,
                current_interval: backoff_initial,
                max_interval: backoff_max,
                multiplier: 2.0,
                randomization_factor: 0.5,
                max_elapsed_time: None,
                ..ExponentialBackoff::default()
            },
            can_fall_back,
            attempt: 0,
            defer_every: 0,
            since_deferred: 0,
        }
    }

    /// The metrics of this watcher's role at its API server.
    fn role_metrics(&self) -> &RoleMetrics {
        self.metrics.role(self.role)
    }

    /// From now on hand every `n`-th object event to the group undecoded (0: decode
    /// every event here). The watch still resumes from the last event decoded here.
    pub fn set_defer_every(&mut self, n: usize) {
        self.defer_every = n;
    }

    /// The current LIST attempt (counted from 1 once the machine has started).
    pub fn attempt(&self) -> u64 {
        self.attempt
    }

    /// The current state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The resourceVersion a watch would resume from.
    pub fn resource_version(&self) -> Option<&ArcStr> {
        self.resource_version.as_ref()
    }

    /// Advances the machine by one input.
    pub fn on(&mut self, input: Input<'_>) -> Vec<Action> {
        let mut out = Vec::new();
        match input {
            Input::Start => self.relist(&mut out),
            Input::ListPage(page) => self.on_list_page(page, &mut out),
            Input::ListFailed(failure) => self.on_list_failed(failure, &mut out),
            Input::WatchOpened => {}
            Input::WatchFailed(Failure::Gone) => {
                self.role_metrics().gone.inc();
                self.relist(&mut out);
            }
            Input::WatchFailed(failure) => {
                out.push(Action::Warn(format!("watch request failed: {failure:?}")));
                self.back_off(Next::Rewatch, retry_after(&failure), &mut out);
            }
            Input::Chunks(chunks) => self.on_chunks(chunks, &mut out),
            Input::StreamEnded => {
                // The server's timeout: a healthy end. Resume from where we are.
                self.lines.clear();
                self.backoff.reset();
                self.role_metrics().watch_restarts.inc();
                self.watch(&mut out);
            }
            Input::StreamBroken(why) => {
                self.lines.clear();
                self.role_metrics().watch_restarts.inc();
                out.push(Action::Warn(format!("watch stream broke: {why}")));
                self.back_off(Next::Rewatch, None, &mut out);
            }
            Input::Stalled => {
                self.lines.clear();
                self.role_metrics().watch_stalls.inc();
                self.role_metrics().watch_restarts.inc();
                out.push(Action::Warn(
                    "watch stalled: nothing received within the stall timeout".into(),
                ));
                out.push(Action::CloseStream);
                self.watch(&mut out);
            }
            Input::Resync => match self.state {
                State::Watching => {
                    out.push(Action::CloseStream);
                    self.relist(&mut out);
                }
                // A relist is already on its way, or will be made instead of a rewatch.
                State::BackingOff { ref mut then } => *then = Next::Relist,
                State::Listing { .. } => {}
            },
            Input::DeferredEventFailed { attempt, why } => {
                if attempt != self.attempt {
                    // A LIST begun since then has already read the object again.
                    return out;
                }
                match self.state {
                    State::Watching => {
                        out.push(Action::Warn(format!(
                            "bad watch event (decoded by the group): {why}"
                        )));
                        out.push(Action::CloseStream);
                        self.lines.clear();
                        self.back_off(Next::Relist, None, &mut out);
                    }
                    // The stream is already given up: list instead of watching again.
                    State::BackingOff { ref mut then } => *then = Next::Relist,
                    State::Listing { .. } => {}
                }
            }
            Input::BackoffElapsed => match self.state {
                State::BackingOff { then: Next::Relist } => self.relist(&mut out),
                State::BackingOff {
                    then: Next::Rewatch,
                } => self.watch(&mut out),
                // A stale timer: the machine moved on since it was set.
                _ => {}
            },
        }
        out
    }

    fn relist(&mut self, out: &mut Vec<Action>) {
        self.attempt += 1;
        self.lines.clear();
        self.state = State::Listing { items: Vec::new() };
        out.push(Action::List {
            continue_token: None,
        });
    }

    fn watch(&mut self, out: &mut Vec<Action>) {
        match self.resource_version.clone() {
            Some(resource_version) => {
                self.state = State::Watching;
                out.push(Action::Watch { resource_version });
            }
            None => self.relist(out),
        }
    }

    fn back_off(&mut self, then: Next, at_least: Option<Duration>, out: &mut Vec<Action>) {
        let delay = self
            .backoff
            .next_backoff()
            .unwrap_or(self.backoff.max_interval);
        let delay = at_least.map_or(delay, |min| delay.max(min));
        self.state = State::BackingOff { then };
        out.push(Action::Wait { delay });
    }

    fn on_list_page(&mut self, page: ListPage, out: &mut Vec<Action>) {
        let State::Listing { items } = &mut self.state else {
            return;
        };
        items.extend(page.items);
        if let Some(token) = page.continue_token {
            out.push(Action::List {
                continue_token: Some(token),
            });
            return;
        }
        let items = std::mem::take(items);
        self.role_metrics().relists.inc();
        self.backoff.reset();
        self.resource_version = Some(page.resource_version).filter(|rv| !rv.is_empty());
        out.push(Action::Relisted(items));
        self.watch(out);
    }

    fn on_list_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        match failure {
            // An expired continue token: the pages so far are from a compacted snapshot.
            Failure::Gone => {
                self.role_metrics().gone.inc();
                out.push(Action::Warn(
                    "list continue token expired (410): listing again".into(),
                ));
                self.relist(out);
            }
            Failure::NotFound if self.can_fall_back => {
                self.can_fall_back = false;
                out.push(Action::Warn(
                    "API version not served (404): falling back to v1beta1".into(),
                ));
                out.push(Action::FallBackToBeta);
                self.relist(out);
            }
            failure => {
                self.role_metrics().request_errors.inc();
                out.push(Action::Warn(format!("list failed: {failure:?}")));
                let after = retry_after(&failure);
                self.back_off(Next::Relist, after, out);
            }
        }
    }

    /// The events of `chunks` (consecutive pieces of the stream) as one batch.
    fn on_chunks(&mut self, chunks: &[bytes::Bytes], out: &mut Vec<Action>) {
        if !matches!(self.state, State::Watching) {
            return;
        }
        let role = self.role;
        let mut batch = WatchBatch {
            role,
            metrics: self.metrics.role(role),
            defer_every: self.defer_every,
            attempt: self.attempt,
            since_deferred: self.since_deferred,
            rv: self.resource_version.clone(),
            deltas: Vec::new(),
            problem: None,
        };
        let mut pushed = Ok(());
        for bytes in chunks {
            if batch.problem.is_some() || pushed.is_err() {
                break;
            }
            pushed = self.lines.push(bytes, |line| batch.line(line));
        }
        let WatchBatch {
            since_deferred,
            rv,
            deltas,
            mut problem,
            ..
        } = batch;
        self.resource_version = rv.filter(|v| !v.is_empty());
        self.since_deferred = since_deferred;
        if !deltas.is_empty() {
            out.push(Action::Deltas(deltas));
        }
        if let Err(too_long) = pushed {
            self.role_metrics().decode_errors.inc();
            problem.get_or_insert((Next::Relist, format!("bad watch stream: {too_long}")));
        }
        match problem {
            None => {}
            Some((Next::Relist, why)) if why.starts_with("watch ERROR") => {
                // 410 as an ERROR event: the usual way a long-disconnected watch learns it
                // fell behind. Relist at once; this is not a failure.
                out.push(Action::Warn(format!("{why}: listing again")));
                out.push(Action::CloseStream);
                self.relist(out);
            }
            Some((next, why)) => {
                out.push(Action::Warn(why));
                out.push(Action::CloseStream);
                self.lines.clear();
                self.back_off(next, None, out);
            }
        }
    }
}

/// What the lines of one watch batch produce, gathered line by line
/// ([`Machine::on_chunks`]).
struct WatchBatch<'a> {
    role: Role,
    metrics: &'a RoleMetrics,
    defer_every: usize,
    attempt: u64,
    /// Lines since the last one left undecoded for the group.
    since_deferred: usize,
    /// The resourceVersion to resume from: the last event decoded here.
    rv: Option<ArcStr>,
    deltas: Vec<Delta>,
    /// The first problem ends the stream; later lines are not decoded.
    problem: Option<(Next, String)>,
}

impl WatchBatch<'_> {
    fn line(&mut self, line: &[u8]) {
        if self.problem.is_some() {
            return;
        }
        let metrics = self.metrics;
        if self.deferred(line, metrics) {
            return;
        }
        match decode_event(self.role, line) {
            Ok(WatchEvent::Added(o)) => {
                metrics.events_added.inc();
                self.rv = Some(ArcStr::clone(o.resource_version()));
                self.deltas.push(Delta::Upsert(o));
            }
            Ok(WatchEvent::Modified(o)) => {
                metrics.events_modified.inc();
                self.rv = Some(ArcStr::clone(o.resource_version()));
                self.deltas.push(Delta::Upsert(o));
            }
            Ok(WatchEvent::Deleted(o)) => {
                metrics.events_deleted.inc();
                self.rv = Some(ArcStr::clone(o.resource_version()));
                self.deltas.push(Delta::Delete(o));
            }
            Ok(WatchEvent::Bookmark { resource_version }) => {
                metrics.bookmarks.inc();
                if !resource_version.is_empty() {
                    self.rv = Some(resource_version);
                }
            }
            Ok(WatchEvent::Error(status)) if status.is_gone() => {
                metrics.gone.inc();
                self.problem = Some((Next::Relist, format!("watch ERROR event: {status}")));
            }
            Ok(WatchEvent::Error(status)) => {
                metrics.request_errors.inc();
                self.problem = Some((Next::Rewatch, format!("watch ERROR event: {status}")));
            }
            Err(e) => {
                metrics.decode_errors.inc();
                // An event we cannot read may be a change we would otherwise miss: list
                // again (after a backoff, in case the server keeps sending it).
                self.problem = Some((Next::Relist, format!("bad watch event: {e}")));
            }
        }
    }

    /// Leaves `line` undecoded for the group if deferring is on and it is an object
    /// event whose turn it is; true if it did.
    fn deferred(&mut self, line: &[u8], metrics: &RoleMetrics) -> bool {
        if self.defer_every == 0 {
            return false;
        }
        self.since_deferred += 1;
        if self.since_deferred < self.defer_every {
            return false;
        }
        let Some(kind) = object_event_type(line) else {
            return false;
        };
        // `rv` stays at the last event decoded here: a watch resumed from it replays
        // this one instead of skipping it.
        self.since_deferred = 0;
        metrics.events_deferred.inc();
        match kind {
            ObjectEventType::Added => &metrics.events_added,
            ObjectEventType::Modified => &metrics.events_modified,
            ObjectEventType::Deleted => &metrics.events_deleted,
        }
        .inc();
        self.deltas.push(Delta::Undecoded {
            event: UndecodedEvent {
                role: self.role,
                json: line.into(),
            },
            attempt: self.attempt,
        });
        true
    }
}

fn retry_after(failure: &Failure) -> Option<Duration> {
    match failure {
        Failure::Status { retry_after, .. } => *retry_after,
        _ => None,
    }
}
