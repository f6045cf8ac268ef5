//! kubesd's actors: how objects move, as `ARCHITECTURE.md` describes, and their messages.
//!
//! ```text
//! UrlWatcher ──WatcherOutput──▶ GroupWatcher ──TargetsPush──▶ Subscriber ──▶ agent
//!  (per URL)                    (per group key)  ◀──FlushDirty── DirtyFlusher
//! ```

// The core's modules under their own names, so that `crate::model` reads the same here
// as in the core.
use kubesd_core::{api, config, error, labels, metrics, model, targets, wire};

pub mod backlog;
pub mod flusher;
pub mod group;
pub mod http;
pub mod messages;
pub mod registry;
pub mod subscriber;
pub mod url_watcher;
pub mod window;

pub use flusher::DirtyFlusher;
pub use group::{
    GroupKey, GroupSetup, GroupWatcher, TargetVariant, WatcherFactory, WatcherLink, watchers_on,
};
pub use registry::Registry;
pub use subscriber::Subscriber;
pub use url_watcher::UrlWatcher;
