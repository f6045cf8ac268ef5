//! A built-in Kubernetes API simulator: an in-memory fake API server that
//! kubesd's tests, benchmarks and the `kubesd demo` / `kubesd simulate`
//! commands run against, so service discovery can be exercised end to end
//! without a cluster.
//!
//! It serves the real API paths for nodes, namespaces, pods, services,
//! endpoints, endpointslices, ingresses and the Gateway API's gateways,
//! httproutes and grpcroutes (list with selectors and pagination, chunked
//! watches with bookmarks, streaming lists, writes, discovery), keeps
//! endpoints in sync like the Kubernetes controllers do, can generate a
//! realistic cluster from a seed and churn it, and injects the faults a real
//! API server and network produce. It works on `serde_json::Value` objects as
//! the API serves them (and encodes them in protobuf when asked), and depends on
//! `kubesd-core` only: for `Role`, and for the engine options and discovery
//! configs [`SimulatedCluster`] hands out with a generated cluster.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use kubesd_simulator::{serve, Resource, SimulatorConfig};
//! let running = serve(SimulatorConfig::default()).await?;
//! running.sim().apply(Resource::Namespaces, serde_json::json!({"metadata": {"name": "demo"}}))
//!     .map_err(std::io::Error::other)?;
//! println!("kubectl --server {} get ns", running.url());
//! running.stop().await;
//! # Ok(()) }
//! ```

pub mod churn;
pub mod cluster;
pub mod controller;
pub mod error;
pub mod faults;
pub mod gateway_api;
pub mod generator;
pub mod http;
mod json_pointer;
pub mod metrics;
pub mod monitors;
pub mod owners;
pub mod patch;
pub mod protobuf;
pub mod resource;
pub mod scrapers;
pub mod selector;
pub mod server;
pub mod sim;
pub mod store;
pub mod streaming_lists;
pub mod timestamp;
pub mod tls;

pub use churn::{Churn, ChurnHandle, ChurnPace, ChurnRates};
pub use cluster::{SimulatedCluster, SimulatedClusterError};
pub use error::ApiError;
pub use faults::{Failure, FaultRequest, Injection};
pub use gateway_api::GeneratedRoutes;
pub use generator::{ClusterSpec, GeneratedCluster, generate};
pub use monitors::{GeneratedMonitors, churn_monitor, start_monitor_churn};
pub use resource::Resource;
pub use scrapers::{RollStep, ScraperRoll, create_scrapers};
pub use server::{RunningSimulator, SimulatorConfig, serve, serve_cluster};
pub use sim::Simulator;
pub use store::{ChangeType, WriteMode};
pub use streaming_lists::StreamingLists;
