//! The group watcher: one per [`GroupKey`], shared by every scrape job with that key. It
//! owns the authoritative cache, starts the URL watchers its subscribers' roles need,
//! computes each changed object's targets once per [`TargetVariant`] asked for, and
//! pushes them to subscribers.

mod actor;
mod fanout;
mod key;
pub mod labeller;
mod list_assembly;
mod setup;
pub mod store;
mod subscribers;
mod urls;
mod variant;
mod waiting;

pub use actor::GroupWatcher;
pub use key::GroupKey;
pub use setup::{GroupSetup, WatcherFactory, WatcherLink, watchers_on};
pub use variant::{TargetVariant, VariantId};
