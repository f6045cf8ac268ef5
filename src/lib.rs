//! kubesd: Kubernetes service discovery for monitoring agents, on actix.
//!
//! The crate has two halves (see `ARCHITECTURE.md`):
//! - what objects *mean*, pure and synchronous: [`model`] (the objects), [`targets`]
//!   (their target labels), [`watch`] (the list/watch wire format), [`api`] (paths and
//!   selectors);
//! - how they *move*: the actors in `actors/`.
//!
//! Features: `service` (the HTTP SD service), `simulator` (a Kubernetes API server in
//! memory, for tests, benchmarks and the demo) and `cli` (the `kubesd` binary; both of
//! the others) are on by default. An agent that embeds the engine depends on `kubesd`
//! with `default-features = false` and compiles none of actix-web, clap, rcgen or
//! tracing-subscriber.

#[path = "../actors/mod.rs"]
pub mod actors;
pub mod api;
pub mod build_info;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config;
mod discovery;
pub mod error;
pub mod http;
pub mod kubeconfig;
pub mod labels;
pub mod metrics;
pub mod model;
pub mod promconfig;
pub mod relabel;
pub mod sd_output;
#[cfg(feature = "service")]
pub mod service;
#[cfg(feature = "simulator")]
pub mod simulator;
pub mod targets;
pub mod watch;

pub use actors::messages::{ObjectSlot, SubscriberId, TargetsUpdated, UrlStatusChanged};
pub use actors::subscriber::{SlotTargets, TargetChanges};
pub use actors::url_watcher::machine::Step;
pub use actors::url_watcher::{UrlError, UrlPhase, UrlProblem, UrlStatus};
/// The shared string type of object fields and label names and values (a [`Label`]'s
/// fields), re-exported so that an agent can build or match labels without naming the
/// `arcstr` crate itself.
pub use arcstr::ArcStr;
pub use config::{EngineOptions, SdConfig};
pub use discovery::{Discovery, NotSynced, SubscribeError, Subscription};
pub use error::DecodeError;
pub use labels::{Label, Labels};
pub use model::{Object, Role};
pub use targets::{
    AttachMetadata, CacheView, Semantics, TargetContext, TargetOptions, target_labels,
};
