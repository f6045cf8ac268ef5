//! The URL watcher: one per watched API URL. It lists, then watches, the URL and hands
//! decoded deltas to its group; it keeps no cache. The protocol logic is the pure
//! [`machine`] (with `initial_events`, the start of a streaming list); [`actor`]
//! performs its actions with awc.

pub mod actor;
pub mod backoff;
mod initial_events;
mod list_requests;
pub mod machine;
#[cfg(test)]
mod machine_tests;
pub mod status;

pub use actor::{UrlWatcher, UrlWatcherSetup};
pub use status::{UrlError, UrlPhase, UrlProblem, UrlStatus};
