//! What the handlers share.

use std::time::Duration;

use crate::sim::Simulator;

/// What every request handler needs; shared through `web::Data`.
pub struct HttpState {
    /// The cluster served.
    pub sim: Simulator,
    /// If set, every request must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// How often watches with `allowWatchBookmarks=true` get a bookmark.
    pub bookmark_interval: Duration,
    /// The pause between the two halves of a split event, long enough for
    /// the server to flush the first half as its own write.
    pub split_pause: Duration,
    /// How long one second of a watch's `timeoutSeconds` lasts (1 s unless a
    /// test compresses time).
    pub timeout_second: Duration,
}
