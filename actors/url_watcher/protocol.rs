//! What the URL watcher's machine is fed and what it answers: its inputs (decoded by
//! the API server's client, or the driver's timers), its actions, and the pauses,
//! problems and reports among them that the driver carries out, counts and words.

use arcstr::ArcStr;
use std::time::Duration;

use super::status::Step;
use crate::api::ServerVersion;
use crate::http::{Failure, ListEnd, StreamEnd};
use crate::metrics::{RejectReason, RelistReason, RequestError, StallReason};
use crate::model::Object;
use crate::wire::json::{EventType, WatchEvent};

/// What happened, fed to `Machine::on`.
#[derive(Debug)]
pub enum Input {
    /// The watcher starts.
    Start,
    /// The API server's version was read (`None`: it could not be).
    ServerVersion(Option<ServerVersion>),
    /// Objects of the list under way (a LIST attempt's first is empty, as its body
    /// starts); a part from no list attempt is dropped.
    Part(Vec<Object>),
    /// The list under way is complete: its last objects, and where a watch continues
    /// from.
    ListEnd(ListEnd),
    /// Watch events read together, in order.
    Events(Vec<WatchEvent>),
    /// The watch has been open for `healthy_after`, at an event boundary.
    Healthy,
    /// The open stream ended without a failure.
    Ended(StreamEnd),
    /// The request or the stream under way failed.
    Failed(Failure),
    /// The pause after a failure is over.
    Resume,
    /// Time for the periodic safety-net relist (`EngineOptions::relist_interval`).
    Resync,
}

/// What to do, returned by `Machine::on`, in order.
#[derive(Debug, PartialEq)]
pub enum Action {
    /// Ask the API server's `/version`; feed [`Input::ServerVersion`].
    ReadServerVersion,
    /// Start a LIST attempt.
    List,
    /// Open a WATCH from `resource_version`.
    Watch {
        /// Where to start.
        resource_version: ArcStr,
    },
    /// Open a streaming list from `resource_version` (empty: the current state).
    StreamList {
        /// The last resourceVersion known, or empty.
        resource_version: ArcStr,
    },
    /// Hand these objects of the list attempt to the group as a part.
    ListPart {
        /// The objects, in list order.
        objects: Vec<Object>,
        /// The first part of a new list attempt.
        first: bool,
    },
    /// Hand the group the list attempt's last objects: it is complete.
    Relisted(Vec<Object>),
    /// The streaming list's stream goes on as the watch (its list is complete).
    WatchOnStream,
    /// Close the open stream.
    CloseStream,
    /// Tell the group to drop what it holds of the list attempt that failed.
    AbandonList,
    /// Hand these deltas to the group.
    Deltas {
        /// The object events, in order.
        deltas: Vec<WatchEvent>,
        /// What the batch held, for the event metrics.
        counts: EventCounts,
    },
    /// Use the role's older API version from now on (after a 404).
    FallBackToBeta,
    /// Use the role's current API version again (after a 404 in both): the next check
    /// tries both in turn, so a resource installed or upgraded meanwhile is found.
    BackToCurrent,
    /// Pause, as `pause` says, then feed [`Input::Resume`]; `problem` is why.
    Retry {
        /// How long, as the driver's backoff measures it.
        pause: Pause,
        /// What went wrong.
        problem: Problem,
    },
    /// Count and log this.
    Report(Report),
}

/// How long a failure pauses the URL, in the driver's backoff.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// The backoff's next delay.
    Backoff,
    /// The backoff's next delay, and at least this (the server's `Retry-After`), up
    /// to the longest.
    AtLeast(Duration),
    /// The longest delay: retrying will not cure it soon.
    Longest,
}

/// Why the URL pauses.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// A 410 Gone repeated right after a relist.
    Gone {
        /// The step it answered.
        step: Step,
        /// The server's message.
        message: String,
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
        /// 404 with no fallback): retried at the longest delay.
        configuration: bool,
    },
    /// A watch event was rejected; the URL is listed again.
    Rejected {
        /// Why.
        reason: RejectReason,
        /// What was wrong, in words.
        message: String,
    },
    /// A stream stalled mid-object and was cut.
    Stalled(StallReason),
    /// A list without a resourceVersion: accepted, but no watch can start from it.
    NoResourceVersion,
}

/// Something the driver counts and logs that is no problem of the URL's.
#[derive(Clone, Debug, PartialEq)]
pub enum Report {
    /// A list attempt starts.
    Relisting(RelistReason),
    /// The server does not serve streaming lists for this URL and never did: it is
    /// listed with LIST from now on. Reported once per watcher.
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
    /// A first 410 Gone since the watch was healthy: listed again at once.
    Gone {
        /// The step it answered.
        step: Step,
        /// The server's message.
        message: String,
    },
    /// The watch is healthy: whatever was wrong before is over, and the backoff
    /// starts over.
    Healthy,
    /// The watch ended as planned and is reopened from the same resourceVersion.
    Rewatching,
}

/// The events of one watch batch, by type, for the event metrics.
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
    /// Counts one event of type `kind` (an `ERROR` ends the stream as a failure
    /// instead).
    pub fn count(&mut self, kind: EventType) {
        match kind {
            EventType::Added => self.added += 1,
            EventType::Modified => self.modified += 1,
            EventType::Deleted => self.deleted += 1,
            EventType::Bookmark => self.bookmarks += 1,
            EventType::Error => {}
        }
    }
}
