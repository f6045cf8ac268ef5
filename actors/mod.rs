//! How objects move: the actors of `ARCHITECTURE.md` and their messages.
//!
//! ```text
//! UrlWatcher ──WatcherOutput──▶ GroupWatcher ──TargetsChanged/Replaced/CaughtUp──▶ Subscriber ──▶ agent
//!  (per URL)                    (per group key)  ◀──FlushDirty── DirtyFlusher
//! ```

pub mod backlog;
pub mod flusher;
pub mod group;
pub mod messages;
pub mod registry;
pub mod subscriber;
pub mod url_watcher;

pub use flusher::DirtyFlusher;
pub use group::{GroupKey, GroupSetup, GroupWatcher, WatcherFactory, WatcherLink, watchers_on};
pub use registry::Registry;
pub use subscriber::Subscriber;
pub use url_watcher::UrlWatcher;
