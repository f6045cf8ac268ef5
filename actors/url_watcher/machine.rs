//! The URL watcher's protocol logic as a pure state machine: it is fed what the network
//! did (a LIST page or part of one, a watch chunk, a failure, an end of stream, a
//! deadline) and answers with what to do next (request a page, open a watch, wait, hand
//! a list's parts or deltas to the group) and what to report (a problem, a relist, a
//! recovery). No I/O, no clock and no metrics here, so every transition is unit-tested
//! with byte chunks; the actor counts and logs the [`Report`]s.
//!
//! ```text
//!                       ┌──── 410 (first since healthy) ─────────────────────┐
//!                       ▼                                                    │
//!   Start ──▶ Listing{reason} ── last page ──▶ Watching{rv, healthy} ────────┤
//!               │    ▲                            │  ▲   clean end after     │
//!        failed │    │ elapsed                    │  └── healthy, or expiry ─┘
//!               ▼    │                            │
//!          BackingOff{then: Relist(reason) | Rewatch(rv)} ◀── any other problem
//! ```
//!
//! With streaming lists ([`ListWay::Stream`]), `Listing` is replaced by
//! `StreamingList`: a watch with `sendInitialEvents=true` whose `ADDED` events are the
//! list, up to the bookmark annotated `k8s.io/initial-events-end`; from there the same
//! stream is `Watching`. Which way a URL lists is the machine's [`ListWay`]: with
//! `ListMode::Auto` it is chosen from the server's version (`ReadingVersion` first).
//! A server that shows it does not serve streaming lists (it refuses one with 400, 403
//! or 422, ignores `sendInitialEvents`, ends the stream at once, or answers an old
//! etcd's 500 as its first event) turns them off for this URL for good, and the URL is
//! listed with LIST at once ([`Report::StreamingListNotServed`]). Any other failure of
//! a streaming list (an `ERROR` event, a 4xx or 5xx, a cut, a stall, undecodable or
//! mostly rejected events, a bound reached) ends the attempt like a failed LIST, and
//! the next attempt is a LIST ([`ListWay::ListForNow`]); streaming lists are tried
//! again once a watch has been healthy. Making progress matters more than the way.
//!
//! One backoff paces every retry, relists included, and starts over only once a watch
//! has been healthy ([`Input::Healthy`]); so a server that fails in any lasting way
//! sees at most about two requests per backoff interval.

use arcstr::ArcStr;
use std::time::Duration;

use crate::api::{ApiGroupVersion, ServerVersion};
use crate::config::ListMode;
use crate::error::DecodeError;
use crate::metrics::{RejectReason, RelistReason, RequestError, StallReason};
use crate::model::{Object, Role};
use crate::wire::json::{EventType, ListPage, WatchEvent};
use crate::wire::{Encoding, EventFraming, Status, decode_event_in};

use super::backoff::RetryBackoff;
use super::initial_events::{InitialEvents, InitialOutcome, MAX_UNDECODABLE_IN_A_ROW, Tally};
use super::status::UrlPhase;

/// How many objects of a streaming list's initial events go to the group in one
/// [`Action::ListPart`]: as a LIST's parts, enough to amortise a message, few enough
/// that the group labels while the stream still arrives.
const STREAM_PART_OBJECTS: usize = 256;

/// How the machine makes its next list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListWay {
    /// Not chosen yet: `ListMode::Auto` waits for the server's version.
    Undecided,
    /// Streaming lists.
    Stream,
    /// LIST, because the last streaming list failed; streaming lists again once a
    /// watch has been healthy.
    ListForNow,
    /// LIST for good: chosen, or the server showed it does not serve streaming lists.
    List,
}

/// The bounds of one list attempt, a LIST's or a streaming list's.
#[derive(Clone, Copy, Debug)]
pub struct ListCaps {
    /// The most bytes a streaming list's initial events may take (`max_list_body`).
    pub bytes: usize,
    /// The most objects (`max_list_objects`).
    pub objects: usize,
}

/// Where the watcher is in the list/watch protocol; each state holds what it needs.
#[derive(Debug)]
pub enum State {
    /// Asking the API server's `/version`, to choose how to list (`ListMode::Auto`).
    ReadingVersion,
    /// Fetching LIST pages. A page's objects reach the group in parts as they are
    /// decoded ([`Input::ListPartDecoded`]); `items` holds those of the pages so far
    /// that did not. Either way the group applies a relist only when it is complete.
    Listing {
        /// Why this LIST was started.
        reason: RelistReason,
        /// The objects of the pages so far not handed on as parts.
        items: Vec<Object>,
        /// The attempt's first part went to the group.
        first_sent: bool,
        /// The continue tokens this attempt asked with so far: a page that comes
        /// round again ends the attempt at once. (The actor bounds the number of
        /// requests, `EngineOptions::max_list_pages`.)
        tokens: Vec<String>,
    },
    /// A streaming list is open, or being opened: its initial events are the list.
    /// `items` holds those not yet handed to the group as parts ([`Action::ListPart`]);
    /// as for a LIST, the group applies a relist only when it is complete.
    StreamingList {
        /// Why this list was started.
        reason: RelistReason,
        /// The objects of the initial events so far, not yet sent as a part.
        items: Vec<Object>,
        /// The attempt's first part went to the group.
        first_sent: bool,
        /// What the attempt has brought so far, against its bounds.
        tally: Tally,
    },
    /// A WATCH is open, or being opened, from `resource_version`, which advances with
    /// every event accepted.
    Watching {
        /// Where a resumed watch starts: the last accepted event's resourceVersion.
        resource_version: ArcStr,
        /// The watch has been open for `healthy_after` at a line boundary.
        healthy: bool,
    },
    /// The list is complete and no watch follows it (a one-shot sync, see
    /// [`Machine::with_watch`]): the machine does nothing more.
    Listed,
    /// Waiting out a delay after a problem, then doing `then`.
    BackingOff {
        /// What to do when the delay is over.
        then: Next,
    },
}

/// What a backoff leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// LIST from scratch: the resourceVersion is gone, was never had, or a change may
    /// have been missed.
    Relist(RelistReason),
    /// WATCH again from this resourceVersion: nothing was lost.
    Rewatch(ArcStr),
}

/// Why a request failed, as the actor saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone: the resourceVersion (or continue token) is older than the server keeps.
    Gone {
        /// The server's message.
        message: String,
    },
    /// Any other non-2xx answer.
    Status {
        /// The HTTP status.
        code: u16,
        /// The server's requested delay (`Retry-After`).
        retry_after: Option<Duration>,
        /// The server's `Status` message, or the start of its body, in words.
        message: String,
    },
    /// The connection failed or timed out, or the body broke off.
    Transport(String),
    /// No credential to send (a kubeconfig credential plugin failed, or has not
    /// answered yet); no request was made.
    Credentials(String),
    /// A LIST body that made no progress for the progress deadline.
    Stalled,
    /// A LIST body that is not a whole list of the role: another kind, truncated,
    /// undecodable, or over the size ceiling.
    BadBody(String),
    /// A LIST attempt that would not end: over its request budget, or redirected back
    /// to a URL it had already asked for. In words.
    Endless(String),
}

/// What happened, fed to [`Machine::on`].
#[derive(Debug)]
pub enum Input<'a> {
    /// The watcher starts.
    Start,
    /// The API server's version was read (`None`: it could not be).
    ServerVersion(Option<ServerVersion>),
    /// Objects of the LIST page being read, decoded as its body arrives (the actor
    /// hands on an empty part as each page's body starts: an attempt's first part
    /// starts it at the group even when the list is empty). Handed to the group as a
    /// part of the LIST attempt under way; a part from no attempt is dropped.
    ListPartDecoded(Vec<Object>),
    /// A LIST page arrived whole and decoded: its resourceVersion, its continue token,
    /// and the objects not already handed on as parts.
    ListPage(ListPage),
    /// A LIST request failed.
    ListFailed(Failure),
    /// The WATCH request failed before any event.
    WatchFailed(Failure),
    /// Pieces of the watch stream that arrived together, in order: their events go to
    /// the group as one batch.
    Chunks(&'a [bytes::Bytes]),
    /// The server ended the stream cleanly.
    StreamEnded,
    /// The stream broke (connection reset, truncated chunk).
    StreamBroken(String),
    /// The watch has been open for `healthy_after` and is at a line boundary.
    Healthy,
    /// A watch line stayed incomplete past the progress deadline.
    Stalled,
    /// The watch reached its own deadline (its `timeoutSeconds` and a margin) without
    /// the server ending it; nothing is wrong, it is reopened from where it is.
    WatchExpired,
    /// The backoff delay is over.
    BackoffElapsed,
    /// A streaming list has no initial-events-end bookmark: nothing more arrived for
    /// `watch_stall_timeout` (`quiet`: the server ignored `sendInitialEvents`, a plain
    /// watch of nothing, or of objects without changes), or events still come after
    /// `list_body_timeout` (a failure of the attempt).
    InitialEventsOverdue {
        /// Nothing arrived for `watch_stall_timeout`.
        quiet: bool,
    },
    /// Time for the periodic safety-net relist (see `EngineOptions::relist_interval`).
    Resync,
}

/// What to do, returned by [`Machine::on`], in order.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Ask the API server's `/version`; feed [`Input::ServerVersion`].
    ReadServerVersion,
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
    /// Open a streaming list: a WATCH with `sendInitialEvents=true` and
    /// `resourceVersionMatch=NotOlderThan` from `resource_version` (empty: the
    /// current state).
    StreamList {
        /// The last resourceVersion known, or empty.
        resource_version: ArcStr,
    },
    /// Hand these objects of a list attempt to the group as a part: decoded from a
    /// LIST page, or a streaming list's initial events.
    ListPart {
        /// The objects, in list (or stream) order.
        objects: Vec<Object>,
        /// The first part of a new list attempt.
        first: bool,
    },
    /// The streaming list's stream goes on as the watch (its list is complete).
    WatchOnStream,
    /// Close the open watch stream (the machine gave up on it).
    CloseStream,
    /// Tell the group to drop what it holds of the LIST attempt that failed.
    AbandonList,
    /// Wait `delay`, then feed [`Input::BackoffElapsed`].
    Wait {
        /// How long.
        delay: Duration,
    },
    /// Use the role's older API version from now on (after a 404).
    FallBackToBeta,
    /// Use the role's current API version again (after a 404 in both): the next check
    /// tries both in turn, so a resource installed or upgraded meanwhile is found.
    BackToCurrent,
    /// Hand these deltas to the group.
    Deltas {
        /// The object events, in order.
        deltas: Vec<WatchEvent>,
        /// What they were, for the event metrics.
        counts: EventCounts,
    },
    /// Hand this complete list to the group.
    Relisted(Vec<Object>),
    /// Count and log this.
    Report(Report),
}

/// Something the actor counts in metrics and logs (the machine does neither).
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A LIST (or streaming list) starts.
    Relisting(RelistReason),
    /// The server does not serve streaming lists for this URL: it is listed with LIST
    /// from now on. Reported once per watcher.
    StreamingListNotServed {
        /// How it showed, in words.
        why: String,
    },
    /// The way of listing was chosen from the server's version (`ListMode::Auto`).
    ListWayChosen {
        /// The version read, if it could be.
        version: Option<ServerVersion>,
        /// Streaming lists (else LIST).
        streaming: bool,
    },
    /// Initial events of a streaming list that could not be decoded: skipped, as a
    /// LIST skips its bad items. Reported once per attempt, when it ends.
    SkippedInitialEvents {
        /// How many, by why.
        counts: Vec<(RejectReason, u64)>,
        /// How many in all.
        total: usize,
        /// The first one's error, in words.
        first: String,
    },
    /// A 410 Gone was met (as status or `ERROR` event).
    Gone {
        /// The step it answered.
        step: Step,
        /// The server's message.
        message: String,
        /// The relist waits for the backoff: the 410 repeated right after a relist.
        repeated: bool,
    },
    /// A request failed, or a stream ended or broke too early.
    RequestFailed {
        /// The step that failed.
        step: Step,
        /// Its class, for the metric.
        reason: RequestError,
        /// What happened, in words (the server's message when it sent one).
        message: String,
        /// The failure will not go away by retrying (a 400, a repeated 401 or 403, a
        /// 404 with no fallback): retried at the longest backoff.
        configuration: bool,
        /// The wait before the next attempt.
        retry_in: Duration,
    },
    /// An object of the watch stream was rejected; the URL is relisted after the
    /// backoff.
    Rejected {
        /// Why.
        reason: RejectReason,
        /// What was wrong, in words.
        message: String,
        /// The wait before the relist.
        retry_in: Duration,
    },
    /// A stream stalled mid-object and was cut.
    Stalled {
        /// A watch or a LIST.
        reason: StallReason,
        /// The wait before the retry.
        retry_in: Duration,
    },
    /// A LIST without a resourceVersion: accepted, but no watch can start from it, so
    /// it is listed again after the backoff.
    NoResourceVersion {
        /// The wait before the relist.
        retry_in: Duration,
    },
    /// The watch is healthy: whatever was wrong before is over.
    Healthy,
    /// The watch ended as planned (the server's timeout, or its own deadline) and is
    /// reopened from the same resourceVersion.
    Rewatching,
}

/// The events of one watch batch, by type, for the metrics the actor keeps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventCounts {
    /// `ADDED` events.
    pub added: u64,
    /// `MODIFIED` events.
    pub modified: u64,
    /// `DELETED` events.
    pub deleted: u64,
    /// `BOOKMARK` events.
    pub bookmarks: u64,
}

impl EventCounts {
    /// Counts one event of type `kind` (an `ERROR` ends the stream and is reported as
    /// a problem instead).
    fn count(&mut self, kind: EventType) {
        match kind {
            EventType::Added => self.added += 1,
            EventType::Modified => self.modified += 1,
            EventType::Deleted => self.deleted += 1,
            EventType::Bookmark => self.bookmarks += 1,
            EventType::Error => {}
        }
    }
}

/// The step of the protocol a problem happened in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A LIST request or its body.
    List,
    /// A WATCH request or its stream.
    Watch,
    /// A streaming list: a WATCH request with `sendInitialEvents`, up to its
    /// initial-events-end bookmark.
    StreamingList,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::List => "LIST",
            Step::Watch => "WATCH",
            Step::StreamingList => "streaming LIST",
        })
    }
}

/// The protocol state of one URL watcher.
pub struct Machine {
    role: Role,
    state: State,
    /// The current watch response's framing (JSON lines or protobuf frames).
    lines: EventFraming,
    /// The largest event a watch may send.
    max_event: usize,
    /// How long each retry waits.
    delays: Box<dyn RetryBackoff>,
    /// The role has an older API version not tried yet.
    can_fall_back: bool,
    /// The older version is in use, after a 404 in the current one.
    fell_back: bool,
    /// A 410 was met since the last healthy watch: another one waits for the backoff.
    gone_since_healthy: bool,
    /// 401 and 403 answers in a row since the last healthy watch.
    denied_in_a_row: u32,
    /// How the next list is made.
    lists: ListWay,
    /// The bounds of a list attempt.
    caps: ListCaps,
    /// The last resourceVersion watched from, where a streaming relist starts (empty
    /// after a 410, and before the first list).
    last_rv: ArcStr,
    /// A watch follows each list; false for a one-shot sync.
    watch_after_list: bool,
}

impl Machine {
    /// A machine for `role`; `can_fall_back` when the role has a `v1beta1` to try on 404.
    /// Every retry waits on `delays`; `max_event` bounds a watch line.
    pub fn new(
        role: Role,
        can_fall_back: bool,
        delays: Box<dyn RetryBackoff>,
        max_event: usize,
    ) -> Machine {
        Machine {
            role,
            state: State::Listing {
                reason: RelistReason::Initial,
                items: Vec::new(),
                first_sent: false,
                tokens: Vec::new(),
            },
            lines: EventFraming::new(Encoding::Json, max_event),
            max_event,
            delays,
            can_fall_back,
            fell_back: false,
            gone_since_healthy: false,
            denied_in_a_row: 0,
            lists: ListWay::List,
            caps: ListCaps {
                bytes: usize::MAX,
                objects: usize::MAX,
            },
            last_rv: ArcStr::default(),
            watch_after_list: true,
        }
    }

    /// Lists with streaming lists (`true`) until the server shows it does not serve
    /// them, or with LIST only.
    pub fn with_streaming_lists(mut self, on: bool) -> Machine {
        self.lists = if on { ListWay::Stream } else { ListWay::List };
        self
    }

    /// Lists as `mode` says: `Auto` reads the server's version first.
    pub fn with_list_mode(mut self, mode: ListMode) -> Machine {
        self.lists = match mode {
            ListMode::Auto => ListWay::Undecided,
            ListMode::List => ListWay::List,
            ListMode::Stream => ListWay::Stream,
        };
        self
    }

    /// Holds every list attempt to `caps`.
    pub fn with_list_caps(mut self, caps: ListCaps) -> Machine {
        self.caps = caps;
        self
    }

    /// Whether a watch follows each list (the default); without, the machine stops
    /// once the first list is complete, and a streaming list's stream is closed at its
    /// initial-events-end bookmark (`kubesd once`).
    pub fn with_watch(mut self, on: bool) -> Machine {
        self.watch_after_list = on;
        self
    }

    /// Whether lists are streamed now.
    pub fn streaming_lists(&self) -> bool {
        self.lists == ListWay::Stream
    }

    /// How the next list is made.
    pub fn list_way(&self) -> ListWay {
        self.lists
    }

    /// The API version the URL is read in: the older one after a 404 in the current.
    pub fn api_version(&self) -> ApiGroupVersion {
        if self.fell_back {
            ApiGroupVersion::Beta
        } else {
            ApiGroupVersion::Current
        }
    }

    /// Where the URL is, as its status tells it.
    pub fn phase(&self) -> UrlPhase {
        match self.state {
            State::Watching { .. } => UrlPhase::Watching,
            State::BackingOff { .. } => UrlPhase::BackingOff,
            State::ReadingVersion
            | State::Listing { .. }
            | State::StreamingList { .. }
            | State::Listed => UrlPhase::Listing,
        }
    }

    /// The encoding of the watch response about to stream, from its `Content-Type`:
    /// its events are split and decoded in it.
    pub fn set_watch_encoding(&mut self, encoding: Encoding) {
        if self.lines.encoding() != encoding {
            self.lines = EventFraming::new(encoding, self.max_event);
        }
    }

    /// The current state.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The resourceVersion a watch would resume from.
    pub fn resource_version(&self) -> Option<&ArcStr> {
        match &self.state {
            State::Watching {
                resource_version, ..
            }
            | State::BackingOff {
                then: Next::Rewatch(resource_version),
            } => Some(resource_version),
            _ => None,
        }
    }

    /// The number of lines of the stream completed so far: whether a stream makes
    /// progress.
    pub fn lines_completed(&self) -> u64 {
        self.lines.completed()
    }

    /// While watching: the number of lines completed so far, if an incomplete one is
    /// pending (the actor times how long the same one stays incomplete).
    pub fn partial_line(&self) -> Option<u64> {
        (!self.lines.pending().is_empty()).then(|| self.lines.completed())
    }

    /// Advances the machine by one input.
    pub fn on(&mut self, input: Input<'_>) -> Vec<Action> {
        let mut out = Vec::new();
        match input {
            Input::Start => self.on_start(&mut out),
            Input::ServerVersion(version) => self.on_server_version(version, &mut out),
            Input::ListPartDecoded(objects) => self.on_list_part(objects, &mut out),
            Input::ListPage(page) => self.on_list_page(page, &mut out),
            Input::ListFailed(failure) => self.on_list_failed(failure, &mut out),
            Input::WatchFailed(failure) => self.on_watch_failed(failure, &mut out),
            Input::Chunks(chunks) => self.on_chunks(chunks, &mut out),
            Input::StreamEnded => self.on_stream_ended(&mut out),
            Input::StreamBroken(why) => self.on_stream_broken(why, &mut out),
            Input::Healthy => self.on_healthy(&mut out),
            Input::Stalled => self.on_stalled(&mut out),
            Input::InitialEventsOverdue { quiet } => {
                self.on_initial_events_overdue(quiet, &mut out)
            }
            Input::WatchExpired => self.on_watch_expired(&mut out),
            Input::Resync => self.on_resync(&mut out),
            Input::BackoffElapsed => self.on_backoff_elapsed(&mut out),
        }
        out
    }

    /// The watcher starts: it lists, once it knows how.
    fn on_start(&mut self, out: &mut Vec<Action>) {
        if self.lists == ListWay::Undecided {
            self.enter(State::ReadingVersion, out);
            out.push(Action::ReadServerVersion);
        } else {
            self.relist(RelistReason::Initial, out);
        }
    }

    /// The server's version is known (or cannot be): `ListMode::Auto` chooses how to
    /// list from it, and the first list starts.
    fn on_server_version(&mut self, version: Option<ServerVersion>, out: &mut Vec<Action>) {
        if !matches!(self.state, State::ReadingVersion) {
            return;
        }
        let streaming = ListMode::Auto.streams_on(version);
        self.lists = if streaming {
            ListWay::Stream
        } else {
            ListWay::List
        };
        out.push(Action::Report(Report::ListWayChosen { version, streaming }));
        self.relist(RelistReason::Initial, out);
    }

    /// Enters `state`. Leaving a streaming list reports the events it skipped, once
    /// for the attempt.
    fn enter(&mut self, state: State, out: &mut Vec<Action>) {
        let left = std::mem::replace(&mut self.state, state);
        if let State::StreamingList { tally, .. } = left
            && let Some(first) = tally.first_skip
        {
            out.push(Action::Report(Report::SkippedInitialEvents {
                counts: tally.skipped,
                total: tally.skipped_total,
                first,
            }));
        }
    }

    /// A streaming list failed in a way that says nothing of whether the server serves
    /// them: what it sent is dropped, and the next attempt, after the backoff, is a
    /// LIST. (The stream is closed by whoever saw the failure.)
    fn streaming_list_failed(&mut self, reason: RequestError, why: String, out: &mut Vec<Action>) {
        out.push(Action::AbandonList);
        self.list_for_now();
        let then = Next::Relist(RelistReason::Retry);
        self.fail(Step::StreamingList, reason, why, then, out);
    }

    /// The next list is a LIST, if lists are streamed now.
    fn list_for_now(&mut self) {
        if self.lists == ListWay::Stream {
            self.lists = ListWay::ListForNow;
        }
    }

    /// The open stream broke: a streaming list's attempt failed, a watch is resumed
    /// from its resourceVersion.
    fn on_stream_broken(&mut self, why: String, out: &mut Vec<Action>) {
        if self.is_streaming_list() {
            let why = format!("the stream broke before its initial-events-end bookmark: {why}");
            self.streaming_list_failed(RequestError::Connection, why, out);
        } else if let Some(rv) = self.watching_from() {
            self.fail(
                Step::Watch,
                RequestError::Connection,
                format!("the watch stream broke: {why}"),
                Next::Rewatch(rv),
                out,
            );
        }
    }

    /// The watch proved healthy: retry delays and failure counts start over.
    fn on_healthy(&mut self, out: &mut Vec<Action>) {
        if let State::Watching { healthy, .. } = &mut self.state
            && !*healthy
        {
            *healthy = true;
            self.delays.reset();
            if self.lists == ListWay::ListForNow {
                // A sync cycle went well: the next list may stream again.
                self.lists = ListWay::Stream;
            }
            self.gone_since_healthy = false;
            self.denied_in_a_row = 0;
            out.push(Action::Report(Report::Healthy));
        }
    }

    /// Nothing came on the stream for too long: it is closed and retried after a
    /// back-off, as a relist (a LIST) for a streaming list, as a rewatch for a watch.
    fn on_stalled(&mut self, out: &mut Vec<Action>) {
        if self.is_streaming_list() {
            out.push(Action::CloseStream);
            out.push(Action::AbandonList);
            self.list_for_now();
            let report = |retry_in| {
                Some(Report::Stalled {
                    reason: StallReason::List,
                    retry_in,
                })
            };
            self.back_off(Next::Relist(RelistReason::Retry), None, report, out);
        } else if let Some(rv) = self.watching_from() {
            out.push(Action::CloseStream);
            let report = |retry_in| {
                Some(Report::Stalled {
                    reason: StallReason::Watch,
                    retry_in,
                })
            };
            self.back_off(Next::Rewatch(rv), None, report, out);
        }
    }

    /// A streaming list's initial-events-end bookmark did not come in time. Silence
    /// means the server ignored `sendInitialEvents`: LIST for good. Events still coming
    /// past `list_body_timeout` are a failed attempt: the next one is a LIST.
    fn on_initial_events_overdue(&mut self, quiet: bool, out: &mut Vec<Action>) {
        if !self.is_streaming_list() {
            return;
        }
        out.push(Action::CloseStream);
        if quiet {
            let why = "no initial-events-end bookmark came: nothing for watch_stall_timeout";
            self.fall_back_to_list(why.into(), out);
        } else {
            let why = "no initial-events-end bookmark came within list_body_timeout".into();
            self.streaming_list_failed(RequestError::BadBody, why, out);
        }
    }

    /// The watch reached its timeout: it is reopened from its resourceVersion.
    fn on_watch_expired(&mut self, out: &mut Vec<Action>) {
        if let Some(rv) = self.watching_from() {
            out.push(Action::CloseStream);
            out.push(Action::Report(Report::Rewatching));
            self.watch(rv, out);
        }
    }

    /// A periodic resync: a watch is replaced by a relist.
    fn on_resync(&mut self, out: &mut Vec<Action>) {
        match &mut self.state {
            State::Watching { .. } => {
                out.push(Action::CloseStream);
                self.relist(RelistReason::Resync, out);
            }
            // A relist is already on its way, or will be made instead of a rewatch.
            State::BackingOff { then } => {
                if let Next::Rewatch(_) = then {
                    *then = Next::Relist(RelistReason::Resync);
                }
            }
            State::ReadingVersion
            | State::Listing { .. }
            | State::StreamingList { .. }
            | State::Listed => {}
        }
    }

    /// The back-off is over: the step it delayed is made.
    fn on_backoff_elapsed(&mut self, out: &mut Vec<Action>) {
        if let State::BackingOff { then } = &self.state {
            match then.clone() {
                Next::Relist(reason) => self.relist(reason, out),
                Next::Rewatch(rv) => self.watch(rv, out),
            }
        }
    }

    /// The resourceVersion of the open watch, if one is open.
    fn watching_from(&self) -> Option<ArcStr> {
        match &self.state {
            State::Watching {
                resource_version, ..
            } => Some(resource_version.clone()),
            _ => None,
        }
    }

    fn is_streaming_list(&self) -> bool {
        matches!(self.state, State::StreamingList { .. })
    }

    /// Keeps the open watch's resourceVersion, where a streaming relist starts.
    fn remember_rv(&mut self) {
        if let Some(rv) = self.watching_from() {
            self.last_rv = rv;
        }
    }

    fn relist(&mut self, reason: RelistReason, out: &mut Vec<Action>) {
        self.remember_rv();
        self.lines.clear();
        out.push(Action::Report(Report::Relisting(reason)));
        if self.lists == ListWay::Stream {
            let state = State::StreamingList {
                reason,
                items: Vec::new(),
                first_sent: false,
                tally: Tally::default(),
            };
            self.enter(state, out);
            out.push(Action::StreamList {
                resource_version: self.last_rv.clone(),
            });
            return;
        }
        let state = State::Listing {
            reason,
            items: Vec::new(),
            first_sent: false,
            tokens: Vec::new(),
        };
        self.enter(state, out);
        out.push(Action::List {
            continue_token: None,
        });
    }

    /// The server does not serve streaming lists: LIST from now on, at once.
    fn fall_back_to_list(&mut self, why: String, out: &mut Vec<Action>) {
        self.lists = ListWay::List;
        out.push(Action::AbandonList);
        out.push(Action::Report(Report::StreamingListNotServed { why }));
        self.relist(RelistReason::FallBack, out);
    }

    fn watch(&mut self, resource_version: ArcStr, out: &mut Vec<Action>) {
        self.lines.clear();
        let state = State::Watching {
            resource_version: resource_version.clone(),
            healthy: false,
        };
        self.enter(state, out);
        out.push(Action::Watch { resource_version });
    }

    /// Reports `report` (given the delay) and waits before `then`: the next backoff
    /// delay, at least the server's `Retry-After` up to the cap.
    fn back_off(
        &mut self,
        then: Next,
        retry_after: Option<Duration>,
        report: impl FnOnce(Duration) -> Option<Report>,
        out: &mut Vec<Action>,
    ) {
        let delay = self.delays.next_delay();
        let delay = retry_after.map_or(delay, |asked| delay.max(asked.min(self.delays.cap())));
        self.remember_rv();
        self.lines.clear();
        self.enter(State::BackingOff { then }, out);
        if let Some(report) = report(delay) {
            out.push(Action::Report(report));
        }
        out.push(Action::Wait { delay });
    }

    /// Reports a failed request and backs off; a configuration problem waits the
    /// longest delay.
    fn fail(
        &mut self,
        step: Step,
        reason: RequestError,
        message: String,
        then: Next,
        out: &mut Vec<Action>,
    ) {
        self.fail_after(step, reason, message, then, None, out);
    }

    fn fail_after(
        &mut self,
        step: Step,
        reason: RequestError,
        message: String,
        then: Next,
        retry_after: Option<Duration>,
        out: &mut Vec<Action>,
    ) {
        if matches!(reason, RequestError::Unauthorized | RequestError::Forbidden) {
            self.denied_in_a_row += 1;
        }
        let configuration = match reason {
            RequestError::BadRequest | RequestError::NotFound => true,
            RequestError::Unauthorized | RequestError::Forbidden => self.denied_in_a_row >= 2,
            _ => false,
        };
        let retry_after = if configuration {
            Some(self.delays.cap())
        } else {
            retry_after
        };
        let report = |retry_in| {
            Some(Report::RequestFailed {
                step,
                reason,
                message,
                configuration,
                retry_in,
            })
        };
        self.back_off(then, retry_after, report, out);
    }

    /// A 410 from `step`: relist at once the first time since the watch was last
    /// healthy; a 410 that repeats right after a relist waits for the backoff.
    fn gone(&mut self, step: Step, message: String, out: &mut Vec<Action>) {
        // Nothing is kept of the expired resourceVersion: a streaming relist starts
        // from the current state.
        let state = State::BackingOff {
            then: Next::Relist(RelistReason::Gone),
        };
        self.enter(state, out);
        self.last_rv = ArcStr::default();
        let repeated = self.gone_since_healthy;
        self.gone_since_healthy = true;
        out.push(Action::Report(Report::Gone {
            step,
            message,
            repeated,
        }));
        if repeated {
            self.back_off(Next::Relist(RelistReason::Gone), None, |_| None, out);
        } else {
            self.relist(RelistReason::Gone, out);
        }
    }

    /// Objects decoded from a LIST page: a part of the attempt, the first one marked
    /// (even empty: it starts the attempt at the group); a later empty part says
    /// nothing, and a part outside a LIST attempt (a page still read after its attempt
    /// ended) belongs to no list.
    fn on_list_part(&mut self, objects: Vec<Object>, out: &mut Vec<Action>) {
        let State::Listing { first_sent, .. } = &mut self.state else {
            return;
        };
        if objects.is_empty() && *first_sent {
            return;
        }
        let first = !std::mem::replace(first_sent, true);
        out.push(Action::ListPart { objects, first });
    }

    fn on_list_page(&mut self, page: ListPage, out: &mut Vec<Action>) {
        let State::Listing { items, tokens, .. } = &mut self.state else {
            return;
        };
        items.extend(page.items);
        if let Some(token) = page.continue_token {
            if tokens.contains(&token) {
                out.push(Action::AbandonList);
                let why = "its pages came round again: a continue token repeated".into();
                let then = Next::Relist(RelistReason::Retry);
                return self.fail(Step::List, RequestError::EndlessList, why, then, out);
            }
            tokens.push(token.clone());
            out.push(Action::List {
                continue_token: Some(token),
            });
            return;
        }
        let items = std::mem::take(items);
        out.push(Action::Relisted(items));
        if page.resource_version.is_empty() {
            // Nothing to watch from: list again, paced, rather than at once forever.
            let then = Next::Relist(RelistReason::NoResourceVersion);
            let report = |retry_in| Some(Report::NoResourceVersion { retry_in });
            self.back_off(then, None, report, out);
            return;
        }
        if !self.watch_after_list {
            self.enter(State::Listed, out);
            return;
        }
        self.watch(page.resource_version, out);
    }

    /// After a 404: falls back to the older version and lists again at once (true), or,
    /// when the older version was the one refused, returns to the current version for
    /// the next check, which the caller schedules as a failure (false).
    fn other_version(&mut self, out: &mut Vec<Action>) -> bool {
        if self.can_fall_back {
            self.can_fall_back = false;
            self.fell_back = true;
            out.push(Action::FallBackToBeta);
            self.relist(RelistReason::FallBack, out);
            return true;
        }
        if self.fell_back {
            self.fell_back = false;
            self.can_fall_back = true;
            out.push(Action::BackToCurrent);
        }
        false
    }

    fn on_list_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        if !matches!(self.state, State::Listing { .. }) {
            return;
        }
        out.push(Action::AbandonList);
        if matches!(failure, Failure::Status { code: 404, .. }) && self.other_version(out) {
            return;
        }
        let then = Next::Relist(RelistReason::Retry);
        match failure {
            // An expired continue token: the pages so far are from a compacted snapshot.
            Failure::Gone { message } => self.gone(Step::List, message, out),
            Failure::Status {
                code,
                retry_after,
                message,
            } => self.fail_after(
                Step::List,
                status_reason(code),
                status_words(code, &message),
                then,
                retry_after,
                out,
            ),
            Failure::Transport(why) => {
                self.fail(Step::List, RequestError::Connection, why, then, out)
            }
            Failure::Credentials(why) => {
                self.fail(Step::List, RequestError::Credentials, why, then, out)
            }
            Failure::BadBody(why) => self.fail(Step::List, RequestError::BadBody, why, then, out),
            Failure::Endless(why) => {
                self.fail(Step::List, RequestError::EndlessList, why, then, out)
            }
            Failure::Stalled => {
                let report = |retry_in| {
                    Some(Report::Stalled {
                        reason: StallReason::List,
                        retry_in,
                    })
                };
                self.back_off(then, None, report, out);
            }
        }
    }

    /// A streaming list's request failed: a refusal (400, 403, 422) means the server
    /// does not serve streaming lists; after anything else the next attempt is a LIST,
    /// at once after a first 410 as after any 410, else after the backoff.
    fn on_streaming_list_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        if let Failure::Status {
            code: code @ (400 | 403 | 422),
            message,
            ..
        } = &failure
        {
            return self.fall_back_to_list(status_words(*code, message), out);
        }
        out.push(Action::AbandonList);
        if matches!(failure, Failure::Status { code: 404, .. }) && self.other_version(out) {
            return;
        }
        self.list_for_now();
        let then = Next::Relist(RelistReason::Retry);
        self.stream_failed(Step::StreamingList, failure, then, out);
    }

    fn on_watch_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        if self.is_streaming_list() {
            return self.on_streaming_list_failed(failure, out);
        }
        let Some(rv) = self.watching_from() else {
            return;
        };
        self.stream_failed(Step::Watch, failure, Next::Rewatch(rv), out);
    }

    /// A watch's (or streaming list's) request failed: a 410 relists, anything else
    /// waits for the backoff, then `then`.
    fn stream_failed(&mut self, step: Step, failure: Failure, then: Next, out: &mut Vec<Action>) {
        match failure {
            Failure::Gone { message } => self.gone(step, message, out),
            Failure::Status {
                code,
                retry_after,
                message,
            } => self.fail_after(
                step,
                status_reason(code),
                status_words(code, &message),
                then,
                retry_after,
                out,
            ),
            Failure::Transport(why) | Failure::BadBody(why) | Failure::Endless(why) => {
                self.fail(step, RequestError::Connection, why, then, out)
            }
            Failure::Credentials(why) => self.fail(step, RequestError::Credentials, why, then, out),
            Failure::Stalled => {
                let why = "no answer".to_string();
                self.fail(step, RequestError::Connection, why, then, out)
            }
        }
    }

    fn on_stream_ended(&mut self, out: &mut Vec<Action>) {
        if let State::StreamingList { tally, .. } = &self.state {
            if tally.bytes == 0 {
                // Ended at once, with nothing: a server that does not serve them.
                let why = "the server ended the stream at once, with no event";
                return self.fall_back_to_list(why.into(), out);
            }
            // Ended part way: as a cut, a passing failure.
            let why = "the server ended the stream before the initial-events-end bookmark";
            return self.streaming_list_failed(RequestError::Connection, why.into(), out);
        }
        let State::Watching {
            resource_version,
            healthy,
        } = &self.state
        else {
            return;
        };
        let rv = resource_version.clone();
        if *healthy {
            // The server's timeout: a healthy end. Resume from where we are.
            out.push(Action::Report(Report::Rewatching));
            self.watch(rv, out);
        } else {
            // A watch the server ends soon after opening it, again and again, must
            // not become a loop of requests.
            self.fail(
                Step::Watch,
                RequestError::ShortWatch,
                "the server ended the watch soon after opening it".into(),
                Next::Rewatch(rv),
                out,
            );
        }
    }

    /// The initial events of a streaming list in `chunks`: objects kept (and handed on
    /// in parts), up to the initial-events-end bookmark, after which the stream is a
    /// watch.
    fn on_initial_chunks(&mut self, chunks: &[bytes::Bytes], out: &mut Vec<Action>) {
        let role = self.role;
        let encoding = self.lines.encoding();
        let caps = self.caps;
        let State::StreamingList {
            items,
            first_sent,
            tally,
            ..
        } = &mut self.state
        else {
            return;
        };
        tally.bytes = chunks.iter().fold(tally.bytes, |sum, c| sum + c.len());
        if tally.bytes > caps.bytes {
            let why = format!(
                "its initial events passed {} bytes (max_list_body)",
                caps.bytes
            );
            return self.initial_events_refused(RequestError::BadBody, why, out);
        }
        let held = items.len();
        let mut initial = InitialEvents::new(
            role,
            encoding,
            std::mem::take(items),
            *first_sent,
            tally.in_a_row,
        );
        let mut pushed = Ok(());
        for bytes in chunks {
            pushed = self.lines.push(bytes, |line| initial.line(line));
            if pushed.is_err() || initial.ended_early() {
                break;
            }
        }
        tally.in_a_row = initial.in_a_row;
        tally.accepted += initial.items.len() - held;
        for e in initial.skipped.drain(..) {
            tally.skip(&e);
        }
        let events = tally.events();
        if let Err(too_long) = pushed {
            out.push(Action::CloseStream);
            out.push(Action::AbandonList);
            self.list_for_now();
            let e = DecodeError::TooLarge {
                role,
                limit: too_long.limit,
            };
            return self.relist_after_bad_event(&e, out);
        }
        if events > caps.objects {
            let why = format!(
                "its initial events passed {} objects (max_list_objects)",
                caps.objects
            );
            return self.initial_events_refused(RequestError::BadBody, why, out);
        }
        self.settle_initial(initial, out);
    }

    /// What the initial events of a batch came to: kept so far, the list complete, or
    /// the attempt over.
    fn settle_initial(&mut self, initial: InitialEvents, out: &mut Vec<Action>) {
        match initial.outcome {
            None => self.keep_initial(initial.items, out),
            Some(InitialOutcome::Ended(rv)) => {
                self.initial_events_ended(rv, initial.items, initial.after, out)
            }
            Some(InitialOutcome::NotServed(why)) => {
                out.push(Action::CloseStream);
                self.fall_back_to_list(why, out);
            }
            Some(InitialOutcome::Undecodable) => {
                let why = format!(
                    "{} initial events in a row could not be decoded",
                    MAX_UNDECODABLE_IN_A_ROW
                );
                self.initial_events_refused(RequestError::BadBody, why, out);
            }
            Some(InitialOutcome::Error(status)) if status.is_gone() => {
                out.push(Action::CloseStream);
                out.push(Action::AbandonList);
                self.list_for_now();
                self.gone(Step::StreamingList, status.message, out);
            }
            Some(InitialOutcome::Error(status)) => {
                let why = format!(
                    "the server ended the stream with an error: {}",
                    status_text(&status)
                );
                self.initial_events_refused(RequestError::ErrorEvent, why, out);
            }
        }
    }

    /// Ends a streaming list whose stream is still open as a failed attempt.
    fn initial_events_refused(&mut self, reason: RequestError, why: String, out: &mut Vec<Action>) {
        out.push(Action::CloseStream);
        self.streaming_list_failed(reason, why, out);
    }

    /// Keeps the initial events so far, handing a part to the group when there are
    /// enough.
    fn keep_initial(&mut self, objects: Vec<Object>, out: &mut Vec<Action>) {
        let State::StreamingList {
            items, first_sent, ..
        } = &mut self.state
        else {
            return;
        };
        if objects.len() >= STREAM_PART_OBJECTS {
            let first = !std::mem::replace(first_sent, true);
            out.push(Action::ListPart { objects, first });
        } else {
            *items = objects;
        }
    }

    /// The initial-events-end bookmark at `rv`: the list is complete, and the stream
    /// goes on as a watch from `rv`, starting with the lines `after` the bookmark.
    fn initial_events_ended(
        &mut self,
        rv: ArcStr,
        objects: Vec<Object>,
        mut after: Vec<u8>,
        out: &mut Vec<Action>,
    ) {
        let State::StreamingList {
            first_sent, tally, ..
        } = &self.state
        else {
            return;
        };
        if tally.mostly_rejected() {
            // As a LIST whose items are mostly rejected: not a list of the role.
            let why = format!(
                "{} of its {} initial events could not be decoded",
                tally.skipped_total,
                tally.events()
            );
            return self.initial_events_refused(RequestError::BadBody, why, out);
        }
        if !*first_sent {
            out.push(Action::ListPart {
                objects: Vec::new(),
                first: true,
            });
        }
        out.push(Action::Relisted(objects));
        if rv.is_empty() {
            // Nothing to watch from: list again, paced, as after such a LIST.
            out.push(Action::CloseStream);
            let then = Next::Relist(RelistReason::NoResourceVersion);
            let report = |retry_in| Some(Report::NoResourceVersion { retry_in });
            self.back_off(then, None, report, out);
            return;
        }
        if !self.watch_after_list {
            out.push(Action::CloseStream);
            self.enter(State::Listed, out);
            return;
        }
        self.last_rv = rv.clone();
        let state = State::Watching {
            resource_version: rv,
            healthy: false,
        };
        self.enter(state, out);
        out.push(Action::WatchOnStream);
        if !after.is_empty() {
            // The watch events that came with the bookmark, then the line still
            // incomplete, as one piece of the stream.
            after.extend_from_slice(self.lines.pending());
            self.lines.clear();
            self.on_chunks(&[bytes::Bytes::from(after)], out);
        }
    }

    /// The events of `chunks` (consecutive pieces of the stream) as one batch.
    fn on_chunks(&mut self, chunks: &[bytes::Bytes], out: &mut Vec<Action>) {
        if self.is_streaming_list() {
            return self.on_initial_chunks(chunks, out);
        }
        let State::Watching {
            resource_version, ..
        } = &mut self.state
        else {
            return;
        };
        let mut batch = WatchBatch {
            role: self.role,
            encoding: self.lines.encoding(),
            rv: resource_version.clone(),
            deltas: Vec::new(),
            counts: EventCounts::default(),
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
            rv,
            deltas,
            counts,
            mut problem,
            ..
        } = batch;
        // Only events accepted before any problem moved `rv`.
        *resource_version = rv.clone();
        if !deltas.is_empty() || counts.bookmarks > 0 {
            out.push(Action::Deltas { deltas, counts });
        }
        if let Err(too_long) = pushed {
            problem.get_or_insert(StreamProblem::Rejected(DecodeError::TooLarge {
                role: self.role,
                limit: too_long.limit,
            }));
        }
        let Some(problem) = problem else {
            return;
        };
        out.push(Action::CloseStream);
        self.lines.clear();
        match problem {
            StreamProblem::Gone(status) => self.gone(Step::Watch, status.message, out),
            StreamProblem::Error(status) => self.fail(
                Step::Watch,
                RequestError::ErrorEvent,
                format!(
                    "the server ended the watch with an error: {}",
                    status_text(&status)
                ),
                Next::Rewatch(rv),
                out,
            ),
            StreamProblem::Rejected(e) => self.relist_after_bad_event(&e, out),
        }
    }

    /// An event we cannot read may be a change we would otherwise miss: list again,
    /// after the backoff in case the server keeps sending it.
    fn relist_after_bad_event(&mut self, e: &DecodeError, out: &mut Vec<Action>) {
        let report = |retry_in| {
            Some(Report::Rejected {
                reason: e.reason(),
                message: e.to_string(),
                retry_in,
            })
        };
        self.back_off(Next::Relist(RelistReason::BadEvent), None, report, out);
    }
}

/// The metric class of an HTTP status other than 410.
fn status_reason(code: u16) -> RequestError {
    match code {
        400 => RequestError::BadRequest,
        401 => RequestError::Unauthorized,
        403 => RequestError::Forbidden,
        404 => RequestError::NotFound,
        429 => RequestError::Throttled,
        500..=599 => RequestError::ServerError,
        _ => RequestError::OtherStatus,
    }
}

/// "403 Forbidden: <the server's message>".
fn status_words(code: u16, message: &str) -> String {
    let name = awc::http::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    match (name.is_empty(), message.is_empty()) {
        (_, false) => format!("{code} {name}: {message}"),
        (false, true) => format!("{code} {name}"),
        (true, true) => format!("status {code}"),
    }
}

/// A `Status` in words: its message, or its code and reason.
fn status_text(status: &Status) -> String {
    if status.message.is_empty() {
        format!("{} {}", status.code, status.reason)
    } else {
        format!("{} {}", status.code, status.message)
    }
}

/// What ended a watch batch early.
enum StreamProblem {
    /// An `ERROR` event with 410.
    Gone(Status),
    /// Another `ERROR` event.
    Error(Status),
    /// An event that could not be accepted.
    Rejected(DecodeError),
}

/// What the lines of one watch batch produce, gathered line by line
/// ([`Machine::on_chunks`]).
struct WatchBatch {
    role: Role,
    /// The encoding of the stream's events.
    encoding: Encoding,
    /// The resourceVersion to resume from: the last event accepted here.
    rv: ArcStr,
    deltas: Vec<WatchEvent>,
    counts: EventCounts,
    /// The first problem ends the stream; later lines are not decoded.
    problem: Option<StreamProblem>,
}

impl WatchBatch {
    fn line(&mut self, line: &[u8]) {
        if self.problem.is_some() {
            return;
        }
        let event = match decode_event_in(self.encoding, self.role, line) {
            Ok(event) => event,
            Err(e) => {
                self.problem = Some(StreamProblem::Rejected(e));
                return;
            }
        };
        self.counts.count(event.event_type());
        match event {
            WatchEvent::Added(ref o) | WatchEvent::Modified(ref o) | WatchEvent::Deleted(ref o) => {
                self.advance(o.resource_version());
                self.deltas.push(event);
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => self.advance(&resource_version),
            WatchEvent::Error(status) if status.is_gone() => {
                self.problem = Some(StreamProblem::Gone(status));
            }
            WatchEvent::Error(status) => self.problem = Some(StreamProblem::Error(status)),
        }
    }

    fn advance(&mut self, rv: &ArcStr) {
        if !rv.is_empty() {
            self.rv = ArcStr::clone(rv);
        }
    }
}
