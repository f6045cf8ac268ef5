//! Fault injection: the ways a real API server (or the network in front of
//! it) misbehaves, switchable at run time so kubesd's tests can prove it
//! copes with each.
//!
//! Request-level faults (error statuses, `410` on a watch request) are armed
//! counters that requests consume. Stream-level faults (drop, injected lines,
//! stalls) are messages pushed to every open watch through the store. The
//! same faults can be set over HTTP with `POST /sim/faults` and a JSON body
//! matching [`FaultRequest`].

use std::sync::{Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

use super::streaming_lists::StreamingLists;

/// An injected error status for whole requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Failure {
    /// `500 InternalError`.
    ServerError,
    /// `429 TooManyRequests` with `Retry-After: 1`.
    TooManyRequests,
    /// `403 Forbidden`.
    Forbidden,
}

/// A line injected into open watch streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Injection {
    /// A line that is not valid JSON.
    MalformedLine,
    /// A well-formed event with type `WEIRD`.
    UnknownType,
    /// An `ADDED` event whose object is of another kind than the watched resource.
    WrongKind,
}

/// A fault acted out by every open watch stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFault {
    /// Close the connection abruptly, without the terminating chunk; with
    /// `mid_event`, after writing only the first half of an event line.
    Drop {
        /// Cut inside an event rather than between events.
        mid_event: bool,
    },
    /// Write the given bad line.
    Inject(Injection),
    /// Stop (`true`) or resume (`false`) sending anything, bookmarks included.
    Stall(bool),
}

#[derive(Debug, Default)]
struct State {
    failure: Option<Failure>,
    failures_left: u32,
    gone_watches_left: u32,
    split_events_left: u32,
    stalled: bool,
    streaming_lists: StreamingLists,
    streaming_list_requests: u64,
}

/// The armed request-level faults. Shared by all request handlers.
#[derive(Debug, Default)]
pub struct Faults {
    state: Mutex<State>,
}

impl Faults {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes the next `count` requests (of any kind) fail with `failure`.
    pub fn fail_next(&self, failure: Failure, count: u32) {
        let mut s = self.lock();
        s.failure = Some(failure);
        s.failures_left = count;
    }

    /// Consumes one armed failure, if any.
    pub fn take_failure(&self) -> Option<Failure> {
        let mut s = self.lock();
        if s.failures_left == 0 {
            return None;
        }
        s.failures_left -= 1;
        s.failure
    }

    /// Makes the next `count` watch requests get a plain HTTP `410 Gone`.
    pub fn gone_next_watches(&self, count: u32) {
        self.lock().gone_watches_left = count;
    }

    /// Consumes one armed `410` for a watch request.
    pub fn take_gone_watch(&self) -> bool {
        let mut s = self.lock();
        let armed = s.gone_watches_left > 0;
        s.gone_watches_left = s.gone_watches_left.saturating_sub(1);
        armed
    }

    /// Splits each of the next `count` watch events (across all watches) into
    /// two HTTP chunks with a flush in between.
    pub fn split_next_events(&self, count: u32) {
        self.lock().split_events_left = count;
    }

    /// Consumes one armed split.
    pub fn take_split(&self) -> bool {
        let mut s = self.lock();
        let armed = s.split_events_left > 0;
        s.split_events_left = s.split_events_left.saturating_sub(1);
        armed
    }

    /// Records whether watches are stalled, so watches opened meanwhile start stalled.
    pub fn set_stalled(&self, stalled: bool) {
        self.lock().stalled = stalled;
    }

    /// Whether watches are currently stalled.
    pub fn stalled(&self) -> bool {
        self.lock().stalled
    }

    /// Sets how watches with `sendInitialEvents=true` are answered from now on.
    pub fn set_streaming_lists(&self, mode: StreamingLists) {
        self.lock().streaming_lists = mode;
    }

    /// Counts one watch with `sendInitialEvents=true` and returns how to answer it.
    pub fn take_streaming_list(&self) -> StreamingLists {
        let mut s = self.lock();
        s.streaming_list_requests += 1;
        s.streaming_lists
    }

    /// How many watches with `sendInitialEvents=true` were asked for so far (whether
    /// served or not): tests check that a client that fell back asks no more.
    pub fn streaming_list_requests(&self) -> u64 {
        self.lock().streaming_list_requests
    }
}

/// The JSON body of `POST /sim/faults`, e.g. `{"fault":"fail","failure":"server_error","count":3}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum FaultRequest {
    /// The next `count` requests fail with `failure`.
    Fail {
        /// Which error status.
        failure: Failure,
        /// How many requests.
        count: u32,
    },
    /// The next `count` watch requests get HTTP 410.
    GoneNextWatch {
        /// How many watch requests.
        count: u32,
    },
    /// The next `count` watch events are split across two chunks.
    SplitEvents {
        /// How many events.
        count: u32,
    },
    /// Every open watch is dropped abruptly.
    DropWatches {
        /// Cut in the middle of an event line.
        #[serde(default)]
        mid_event: bool,
    },
    /// Every open watch gets a bad line.
    Inject {
        /// Which bad line.
        line: Injection,
    },
    /// Stall (or un-stall) watches.
    Stall {
        /// `true` to stall, `false` to resume.
        on: bool,
    },
    /// Restart the API server with reset resourceVersions.
    Restart,
    /// Serve streaming lists, or act out a server that does not.
    StreamingLists {
        /// How.
        mode: StreamingLists,
    },
    /// Drop all retained watch history.
    Compact,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_consumed() {
        let f = Faults::default();
        f.fail_next(Failure::TooManyRequests, 2);
        assert_eq!(f.take_failure(), Some(Failure::TooManyRequests));
        assert_eq!(f.take_failure(), Some(Failure::TooManyRequests));
        assert_eq!(f.take_failure(), None);
        f.gone_next_watches(1);
        assert!(f.take_gone_watch());
        assert!(!f.take_gone_watch());
    }

    #[test]
    fn fault_request_json_shape() {
        let req: Result<FaultRequest, _> =
            serde_json::from_str(r#"{"fault":"fail","failure":"forbidden","count":2}"#);
        assert_eq!(
            req.ok(),
            Some(FaultRequest::Fail {
                failure: Failure::Forbidden,
                count: 2
            })
        );
        let req: Result<FaultRequest, _> = serde_json::from_str(r#"{"fault":"drop_watches"}"#);
        assert_eq!(
            req.ok(),
            Some(FaultRequest::DropWatches { mid_event: false })
        );
    }
}
