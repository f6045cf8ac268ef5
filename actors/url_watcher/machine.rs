//! The URL watcher's list/watch protocol as a pure state machine: it is fed what the
//! API server's client decoded (a list's parts and end, watch events, a failure, the
//! end of a stream) and the driver's timers (a pause over, a resync), and answers with
//! what to do next (list, watch, hand parts or deltas to the group, pause) and what to
//! report. No I/O, no bytes, no clock, no metrics: every transition is unit-tested
//! with decoded inputs, and the driver composes the retry delays around it.
//!
//! ```text
//!                   ┌──── 410 (first since healthy) ─────────────────────┐
//!                   ▼                                                    │
//!   Start ──▶ Listing(attempt) ── list end ──▶ Watching{rv, healthy} ────┤
//!               │    ▲                            │  ▲   clean end after │
//!        failed │    │ resumed                    │  └── healthy, expiry ┘
//!               ▼    │                            │
//!          Pending(Relist(reason) | Rewatch(rv)) ◀┘ any other problem
//! ```
//!
//! A list attempt is a LIST (the client follows its pages) or a streaming list (a
//! watch with `sendInitialEvents=true`, whose stream goes on as the watch from its
//! end). Which way a URL lists is the machine's [`ListWay`]: with `ListMode::Auto` it
//! is chosen from the server's version (`ReadingVersion` first). A server that shows it
//! does not serve streaming lists (it refuses one with 400, 403 or 422, or the client
//! saw [`Failure::NotServed`]) and never served one turns them off for this URL for
//! good, and the URL is listed with LIST at once ([`Report::StreamingListNotServed`]).
//! Any other failure of a streaming list, and that one where the server served a
//! streaming list before, ends the attempt like a failed LIST, and the next attempt is
//! a LIST ([`ListWay::ListForNow`]); streaming lists are tried again once a watch has
//! been healthy.
//!
//! Every failure pauses the URL ([`Action::Retry`]): the driver waits as its backoff
//! says, which starts over when the machine reports a healthy watch; so a server that
//! fails in any lasting way sees at most about two requests per backoff interval.

use arcstr::ArcStr;

use super::protocol::{Action, EventCounts, Input, Pause, Problem, Report};
use super::status::{Step, UrlPhase};
use crate::api::{ApiGroupVersion, ServerVersion};
use crate::config::ListMode;
use crate::http::{ListEnd, StreamEnd};
use crate::metrics::{RelistReason, RequestError};
use crate::model::Object;
use crate::wire::json::WatchEvent;

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
    /// LIST for good: chosen, or the server showed it never serves streaming lists.
    List,
}

/// One list attempt under way: a LIST's pages or a streaming list's initial events.
#[derive(Debug)]
pub struct ListAttempt {
    /// A streaming list (else a LIST).
    pub streaming: bool,
    /// Its first part went to the group.
    pub first_sent: bool,
}

/// Where the watcher is in the list/watch protocol; each state holds what it needs.
#[derive(Debug)]
pub enum State {
    /// Asking the API server's `/version`, to choose how to list (`ListMode::Auto`).
    ReadingVersion,
    /// A list attempt is under way; the group applies a relist only when it is
    /// complete.
    Listing(ListAttempt),
    /// A WATCH is open, or being opened, from `resource_version`, which advances with
    /// every event.
    Watching {
        /// Where a resumed watch starts: the last event's resourceVersion.
        resource_version: ArcStr,
        /// The watch has been open for `healthy_after` at an event boundary.
        healthy: bool,
    },
    /// The list is complete and no watch follows it (a one-shot sync, see
    /// [`Machine::with_watch`]): the machine does nothing more.
    Listed,
    /// A step failed: `Next` is made when the driver resumes the machine.
    Pending(Next),
}

/// What a pause leads to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    /// List from scratch: the resourceVersion is gone, was never had, or a change may
    /// have been missed.
    Relist(RelistReason),
    /// WATCH again from this resourceVersion: nothing was lost.
    Rewatch(ArcStr),
}

/// The protocol state of one URL watcher.
pub struct Machine {
    state: State,
    /// The role has an older API version not tried yet.
    can_fall_back: bool,
    /// The older version is in use, after a 404 in the current one.
    fell_back: bool,
    /// A 410 was met since the last healthy watch: another one waits for a pause.
    gone_since_healthy: bool,
    /// 401 and 403 answers in a row since the last healthy watch.
    denied_in_a_row: u32,
    /// How the next list is made.
    lists: ListWay,
    /// A streaming list was completed once: the server serves them.
    streamed_once: bool,
    /// The last resourceVersion watched from, where a streaming relist starts (empty
    /// after a 410, and before the first list).
    last_rv: ArcStr,
    /// A watch follows each list; false for a one-shot sync.
    watch_after_list: bool,
}

impl Machine {
    /// A machine that lists with LIST; `can_fall_back` when the role has a `v1beta1`
    /// to try on 404.
    pub fn new(can_fall_back: bool) -> Machine {
        Machine {
            state: State::Listing(ListAttempt {
                streaming: false,
                first_sent: false,
            }),
            can_fall_back,
            fell_back: false,
            gone_since_healthy: false,
            denied_in_a_row: 0,
            lists: ListWay::List,
            streamed_once: false,
            last_rv: ArcStr::default(),
            watch_after_list: true,
        }
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

    /// Whether a watch follows each list (the default); without, the machine stops
    /// once the first list is complete (`kubesd once`).
    pub fn with_watch(mut self, on: bool) -> Machine {
        self.watch_after_list = on;
        self
    }

    /// Whether lists are streamed now.
    pub fn streaming_lists(&self) -> bool {
        self.lists == ListWay::Stream
    }

    /// How the next list is made.
    #[cfg(test)]
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
            State::Pending(_) => UrlPhase::BackingOff,
            State::ReadingVersion | State::Listing(_) | State::Listed => UrlPhase::Listing,
        }
    }

    /// The current state.
    #[cfg(test)]
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The step under way, for what the client reports of it.
    pub fn step(&self) -> Step {
        match &self.state {
            State::Listing(ListAttempt {
                streaming: true, ..
            }) => Step::StreamingList,
            State::Listing(_) => Step::List,
            _ => Step::Watch,
        }
    }

    /// The resourceVersion a watch would resume from.
    #[cfg(test)]
    pub fn resource_version(&self) -> Option<&ArcStr> {
        match &self.state {
            State::Watching {
                resource_version, ..
            }
            | State::Pending(Next::Rewatch(resource_version)) => Some(resource_version),
            _ => None,
        }
    }

    /// Advances the machine by one input.
    pub fn on(&mut self, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        match input {
            Input::Start => self.on_start(&mut out),
            Input::ServerVersion(version) => self.on_server_version(version, &mut out),
            Input::Part(objects) => self.on_part(objects, &mut out),
            Input::ListEnd(end) => self.on_list_end(end, &mut out),
            Input::Events(events) => self.on_events(events, &mut out),
            Input::Healthy => self.on_healthy(&mut out),
            Input::Ended(end) => self.on_ended(end, &mut out),
            Input::Failed(failure) => self.on_failed(failure, &mut out),
            Input::Resume => self.on_resume(&mut out),
            Input::Resync => self.on_resync(&mut out),
        }
        out
    }

    /// The watcher starts: it lists, once it knows how.
    fn on_start(&mut self, out: &mut Vec<Action>) {
        if self.lists == ListWay::Undecided {
            self.state = State::ReadingVersion;
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

    /// Objects of the list attempt: a part, the first one marked (even empty: it
    /// starts the attempt at the group); a later empty part says nothing.
    fn on_part(&mut self, objects: Vec<Object>, out: &mut Vec<Action>) {
        let State::Listing(attempt) = &mut self.state else {
            return;
        };
        if objects.is_empty() && attempt.first_sent {
            return;
        }
        let first = !std::mem::replace(&mut attempt.first_sent, true);
        out.push(Action::ListPart { objects, first });
    }

    /// The list is complete at `rv`: the group applies it, and the watch starts from
    /// there (a streaming list's on its own stream).
    fn on_list_end(&mut self, end: ListEnd, out: &mut Vec<Action>) {
        let State::Listing(attempt) = &self.state else {
            return;
        };
        let streaming = attempt.streaming;
        if !attempt.first_sent {
            let objects = Vec::new();
            out.push(Action::ListPart {
                objects,
                first: true,
            });
        }
        out.push(Action::Relisted(end.rest));
        let rv = end.resource_version;
        self.streamed_once |= streaming;
        if rv.is_empty() || !self.watch_after_list {
            if streaming {
                out.push(Action::CloseStream);
            }
            if rv.is_empty() {
                // Nothing to watch from: list again, paced, rather than at once forever.
                let then = Next::Relist(RelistReason::NoResourceVersion);
                return self.retry(then, Pause::Backoff, Problem::NoResourceVersion, out);
            }
            self.state = State::Listed;
            return;
        }
        if streaming {
            self.last_rv = rv.clone();
            self.state = State::Watching {
                resource_version: rv,
                healthy: false,
            };
            out.push(Action::WatchOnStream);
        } else {
            self.watch(rv, out);
        }
    }

    /// Watch events: their objects go to the group as one batch, and the
    /// resourceVersion moves to the last one's.
    fn on_events(&mut self, mut events: Vec<WatchEvent>, out: &mut Vec<Action>) {
        let State::Watching {
            resource_version, ..
        } = &mut self.state
        else {
            return;
        };
        let mut counts = EventCounts::default();
        let last = events
            .iter()
            .rev()
            .find_map(|e| e.resource_version().filter(|rv| !rv.is_empty()));
        if let Some(rv) = last {
            *resource_version = ArcStr::clone(rv);
        }
        events.retain(|event| {
            counts.count(event.event_type());
            !matches!(event, WatchEvent::Bookmark { .. } | WatchEvent::Error(_))
        });
        if !events.is_empty() || counts.bookmarks > 0 {
            out.push(Action::Deltas {
                deltas: events,
                counts,
            });
        }
    }

    /// The watch proved healthy: failure counts start over, and so does the driver's
    /// backoff.
    fn on_healthy(&mut self, out: &mut Vec<Action>) {
        let State::Watching { healthy, .. } = &mut self.state else {
            return;
        };
        if *healthy {
            return;
        }
        *healthy = true;
        if self.lists == ListWay::ListForNow {
            // A sync cycle went well: the next list may stream again.
            self.lists = ListWay::Stream;
        }
        self.gone_since_healthy = false;
        self.denied_in_a_row = 0;
        out.push(Action::Report(Report::Healthy));
    }

    /// The stream ended without a failure: a healthy watch (or one at its own
    /// deadline) is reopened at once; a watch ended soon after opening is retried
    /// after a pause, so that it does not become a loop of requests.
    fn on_ended(&mut self, end: StreamEnd, out: &mut Vec<Action>) {
        let State::Watching {
            resource_version,
            healthy,
        } = &self.state
        else {
            return;
        };
        let rv = resource_version.clone();
        if *healthy || end == StreamEnd::Expired {
            out.push(Action::Report(Report::Rewatching));
            return self.watch(rv, out);
        }
        let why = "the server ended the watch soon after opening it".to_string();
        self.fail(
            Step::Watch,
            RequestError::ShortWatch,
            why,
            Next::Rewatch(rv),
            out,
        );
    }

    /// The pause is over: the step it delayed is made.
    fn on_resume(&mut self, out: &mut Vec<Action>) {
        if let State::Pending(next) = &self.state {
            match next.clone() {
                Next::Relist(reason) => self.relist(reason, out),
                Next::Rewatch(rv) => self.watch(rv, out),
            }
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
            State::Pending(next) => {
                if let Next::Rewatch(_) = next {
                    *next = Next::Relist(RelistReason::Resync);
                }
            }
            State::ReadingVersion | State::Listing(_) | State::Listed => {}
        }
    }

    /// Keeps the open watch's resourceVersion, where a streaming relist starts.
    fn remember_rv(&mut self) {
        if let State::Watching {
            resource_version, ..
        } = &self.state
        {
            self.last_rv = resource_version.clone();
        }
    }

    fn relist(&mut self, reason: RelistReason, out: &mut Vec<Action>) {
        self.remember_rv();
        out.push(Action::Report(Report::Relisting(reason)));
        let streaming = self.lists == ListWay::Stream;
        self.state = State::Listing(ListAttempt {
            streaming,
            first_sent: false,
        });
        out.push(if streaming {
            Action::StreamList {
                resource_version: self.last_rv.clone(),
            }
        } else {
            Action::List
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
        self.state = State::Watching {
            resource_version: resource_version.clone(),
            healthy: false,
        };
        out.push(Action::Watch { resource_version });
    }

    /// Pauses as `pause` says, for `problem`, then `then`.
    fn retry(&mut self, then: Next, pause: Pause, problem: Problem, out: &mut Vec<Action>) {
        self.remember_rv();
        self.state = State::Pending(then);
        out.push(Action::Retry { pause, problem });
    }
}

mod failures;
