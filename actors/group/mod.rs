//! The group watcher: one per [`GroupKey`], shared by every scrape job with that key. It
//! owns the authoritative cache, starts the URL watchers its subscribers' roles need,
//! computes each changed object's targets once per [`TargetVariant`] asked for, and
//! pushes them to subscribers.
//!
//! The actor (`actor.rs`) composes plain, synchronous parts, each tested on its own:
//! `urls.rs` (the URLs, their state, and who waits on them, with `waiting.rs`),
//! `list_assembly.rs` (a LIST's parts: applied as they come, or held until complete),
//! [`store`] (objects, targets per variant, the dependency index), [`labeller`]
//! (variants, target computation, dirty marks), and `subscribers.rs` with `fanout.rs`
//! (who gets which batch, and each subscriber's window and backlog).

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
pub use setup::{GroupDirectory, GroupSetup, WatcherFactory, WatcherLink, watchers_on};
pub use variant::{TargetVariant, VariantId};
