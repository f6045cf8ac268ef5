//! What an embedding agent can know of one watched URL: where its list/watch is, how
//! it lists and in which encoding, the last problem (typed, with the API server's
//! message, the step it met and its time), when it last listed, and how often. The URL
//! watcher keeps it, sends it to its group when it changes, and the group hands it to
//! the subscriptions whose role needs the URL.

use std::time::SystemTime;

use crate::metrics::{ListMethod, RejectReason, RequestError, ResponseEncoding, StallReason};

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

/// Where one URL's list/watch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlPhase {
    /// A LIST is in progress.
    Listing,
    /// A WATCH is open or being opened.
    Watching,
    /// Waiting out the backoff after a problem.
    BackingOff,
}

/// What the last problem of a URL was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UrlProblem {
    /// A request failed (a status, a connection, a broken body, a short watch).
    Request(RequestError),
    /// 410 Gone repeated right after a relist.
    Gone,
    /// A watch event was rejected.
    Rejected(RejectReason),
    /// A stream stalled mid-object.
    Stalled(StallReason),
    /// A LIST had no resourceVersion to watch from.
    NoResourceVersion,
    /// The resource is not served at all (404 in every API version tried) and is a
    /// custom resource (the Gateway API's, prometheus-operator's): the cluster does not
    /// have its CRDs. Checked again at the longest backoff, so installing them later is
    /// picked up.
    NotInstalled,
}

/// The last problem of a URL, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlError {
    /// LIST or WATCH.
    pub step: Step,
    /// What kind of problem.
    pub problem: UrlProblem,
    /// What happened, with the API server's message when it sent one
    /// ("403 Forbidden: pods is forbidden: User … cannot list …").
    pub message: String,
    /// It will not pass by retrying (a 400, a repeated 401 or 403, a 404 with no
    /// older API version): the job's credentials, RBAC or selectors need a change.
    pub configuration: bool,
    /// When it happened.
    pub at: SystemTime,
}

impl std::fmt::Display for UrlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.step, self.message)?;
        if self.configuration {
            f.write_str(" (a configuration problem)")?;
        }
        Ok(())
    }
}

/// The state of one watched URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlStatus {
    /// The URL (API server and path).
    pub url: String,
    /// Where its list/watch is.
    pub phase: UrlPhase,
    /// How it is listed now: streaming lists or LIST.
    pub list_mode: ListMethod,
    /// The encoding of the last LIST or WATCH response read (`None` before the first).
    pub encoding: Option<ResponseEncoding>,
    /// The last problem, until a watch is healthy again.
    pub last_error: Option<UrlError>,
    /// When its last LIST completed.
    pub last_sync: Option<SystemTime>,
    /// LISTs started, the first included.
    pub relists: u64,
    /// 410 Gone answers met.
    pub gone: u64,
}
