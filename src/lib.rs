//! kubesd: Kubernetes service discovery for monitoring agents, on actix.
//!
//! The engine has two halves, each a crate of this workspace, re-exported here by
//! module (see `ARCHITECTURE.md`):
//! - what objects *mean*, pure and synchronous: `kubesd-core` (`core/`): [`model`] (the
//!   objects), [`targets`] (their target labels), [`wire`] (the list/watch wire format,
//!   JSON and protobuf), [`api`] (paths and selectors), [`config`], [`metrics`];
//! - how they *move*: `kubesd-actors` (`actors/`), as [`actors`], with the API server's
//!   HTTP client re-exported as [`http`].
//!
//! This crate adds the [`Discovery`] an agent starts and subscribes to, and the rest of
//! kubesd's binary: relabelling, Prometheus config, HTTP SD output.
//!
//! Features: `service` (the HTTP SD service), `simulator` (a Kubernetes API server in
//! memory, for tests, benchmarks and the demo) and `cli` (the `kubesd` binary; both of
//! the others) are on by default. An agent that embeds the engine depends on `kubesd`
//! with `default-features = false` and compiles none of actix-web, clap, rcgen or
//! tracing-subscriber.

pub use kubesd_actors as actors;
/// The API server's HTTP client, the I/O half the core leaves out: `kubesd-actors`'
/// module, under the name it has always had here.
pub use kubesd_actors::http;
pub use kubesd_core::{
    api, build_info, config, error, kubeconfig, labels, metrics, model, targets, wire,
};

mod arbiter_pool;
#[cfg(feature = "cli")]
pub mod cli;
pub mod config_watchers;
mod discovery;
pub use promconfig::monitors;
pub mod promconfig;
pub mod relabel;
pub mod sd_output;
#[cfg(feature = "service")]
pub mod service;
/// The Kubernetes API simulator: the `kubesd-simulator` crate (`simulator/`).
#[cfg(feature = "simulator")]
pub use kubesd_simulator as simulator;

pub use actors::messages::{ObjectSlot, SubscriberId, TargetsUpdated, UrlStatusChanged};
pub use actors::subscriber::{SlotTargets, TargetChanges};
pub use actors::url_watcher::{Step, UrlError, UrlPhase, UrlProblem, UrlStatus};
/// The shared string type of object fields and label names and values (a [`Label`]'s
/// fields), re-exported so that an agent can build or match labels without naming the
/// `arcstr` crate itself.
pub use arcstr::ArcStr;
pub use config::{EngineOptions, SdConfig};
pub use discovery::{
    ActorSubscription, Discovery, NotSynced, SUBSCRIBER_MAILBOX_CAPACITY, SubscribeError,
    Subscription,
};
pub use error::DecodeError;
pub use labels::{Label, Labels};
pub use model::{Object, Role};
pub use targets::{
    AttachMetadata, CacheView, Semantics, TargetContext, TargetOptions, target_labels,
};
