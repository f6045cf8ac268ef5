//! The URL watcher: one per watched API URL. It lists, then watches, the URL and hands
//! decoded objects and deltas to its group; it keeps no cache. Its [`actor`] drives the
//! API server's client (`crate::http::ApiClient`), the pure [`machine`] (the list/watch
//! protocol, fed what the client decoded; its vocabulary in `protocol`) and the
//! `retry` delays composed around it; `reporter` tells its status, metrics and logs.

pub mod actor;
mod machine;
#[cfg(test)]
mod machine_tests;
mod protocol;
mod reporter;
mod retry;
pub mod status;

pub use actor::{UrlWatcher, UrlWatcherSetup};
pub use status::{Step, UrlError, UrlPhase, UrlProblem, UrlStatus};
