//! kubesd's core: what Kubernetes objects *mean* to discovery, without I/O runtimes: no
//! HTTP client, no actix, no tokio, so that its tests need no runtime.
//!
//! - [`model`]: the objects discovery reads, decoded into slim structs;
//! - [`targets`]: their `__meta_kubernetes_*` target labels, per role and semantics;
//! - [`wire`]: the list/watch wire format, JSON ([`wire::json`]) and protobuf
//!   ([`wire::proto`]) side by side, and what picks one per response;
//! - [`api`]: API paths, selectors and namespaces;
//! - [`monitors`]: prometheus-operator's ServiceMonitor, PodMonitor, Probe and
//!   ScrapeConfig, and the Secrets and ConfigMaps they name, as translation reads them;
//! - [`config`]: what a discovery asks for, and the engine's options, checked (proxy
//!   URLs, `no_proxy`, `http_headers` included);
//! - [`labels`], [`error`], [`kubeconfig`], [`metrics`], [`build_info`].
//!
//! The actors that move objects, and the HTTP client that fetches them (TLS, credentials,
//! proxy tunnels, OAuth 2.0, credential plugins), are in `kubesd-actors`; an agent uses
//! both through the `kubesd` crate, which re-exports them.

// The public surface is what the other crates and an agent use: an item no one outside
// can reach says `pub(crate)`, and every type a public item exposes can be named.
#![warn(unreachable_pub, unnameable_types)]

pub mod api;
pub mod build_info;
pub mod config;
pub mod error;
pub mod kubeconfig;
pub mod labels;
pub mod metrics;
pub mod model;
pub mod monitors;
pub mod targets;
pub mod wire;
