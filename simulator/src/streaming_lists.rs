//! Whether and how the simulator serves streaming lists (a watch with
//! `sendInitialEvents=true`): served as a current API server serves them, or acted
//! out as each kind of server that does not, so that a client's fallback to LIST and
//! WATCH is exercised on every path.

use serde::{Deserialize, Serialize};

/// How a watch with `sendInitialEvents=true` is answered (switchable at run time with
/// [`crate::faults::Faults::set_streaming_lists`] (`Simulator::faults()`), or `POST /sim/faults` with
/// `{"fault":"streaming_lists","mode":"refused"}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum StreamingLists {
    /// Served: `ADDED` events of the current state, then a `BOOKMARK` annotated
    /// `k8s.io/initial-events-end: "true"` at the state's resourceVersion, then the
    /// changes after it, on the same stream.
    #[default]
    Served,
    /// `422 Invalid`, as an API server without the `WatchList` feature answers.
    Refused,
    /// `200`, one `ERROR` event (500 `InternalError`: "... the required storage
    /// feature RequestWatchProgress is disabled") and the end of the stream: what an
    /// API server on etcd older than 3.5.13 (or 3.4.31) does, which cannot serve watch
    /// progress requests.
    EndedAtOnce,
    /// The parameters are ignored: a plain watch (synthetic `ADDED` events when no
    /// resourceVersion is given, then changes, and bookmarks without the annotation),
    /// as an API server from before streaming lists answers.
    Ignored,
}
