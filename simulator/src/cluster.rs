//! A simulated cluster for the engine: a running simulator filled by the generator,
//! with the engine options and job configs that discover it. The one way the tests,
//! the benchmarks, the examples and `kubesd demo` start a cluster to discover.
//!
//! The only part of the simulator that knows the engine: the rest works on JSON
//! objects alone.

use std::io;
use std::time::Duration;

use super::{
    ApiError, ClusterSpec, GeneratedCluster, RunningSimulator, Simulator, SimulatorConfig,
    generate, serve,
};
use kubesd_core::config::{EngineOptions, SdConfig};
use kubesd_core::model::Role;

/// A running simulator with a generated cluster in it.
pub struct SimulatedCluster {
    /// The simulated API server.
    pub server: RunningSimulator,
    /// What the generator created.
    pub made: GeneratedCluster,
}

/// Why a simulated cluster did not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulatedClusterError {
    /// The simulator could not serve (its address is taken, its certificate failed).
    #[error("cannot start the simulator: {0}")]
    Serve(#[from] io::Error),
    /// The generator's writes were refused.
    #[error("cannot generate the cluster: {0}")]
    Generate(#[from] ApiError),
}

impl SimulatedCluster {
    /// Serves a simulator per `config` and fills it per `spec`. Must be called inside
    /// an actix system.
    pub async fn start(
        config: SimulatorConfig,
        spec: &ClusterSpec,
    ) -> Result<SimulatedCluster, SimulatedClusterError> {
        let server = serve(config).await?;
        match generate(server.sim(), spec) {
            Ok(made) => Ok(SimulatedCluster { server, made }),
            Err(e) => {
                server.stop().await;
                Err(e.into())
            }
        }
    }

    /// [`SimulatedCluster::start`] with one `seed` for the simulator and the generator
    /// (replacing `spec`'s), the simulator's defaults otherwise, and a bookmark every
    /// 100 ms, so that a watch sees bookmarks within a test's time.
    pub async fn seeded(
        seed: u64,
        spec: ClusterSpec,
    ) -> Result<SimulatedCluster, SimulatedClusterError> {
        let config = SimulatorConfig {
            seed,
            bookmark_interval: Duration::from_millis(100),
            ..SimulatorConfig::default()
        };
        SimulatedCluster::start(config, &ClusterSpec { seed, ..spec }).await
    }

    /// The engine's options for a simulator on this machine: every timing short, since
    /// nothing waits on a real cluster's scale or a real network's latency.
    pub fn engine_options() -> EngineOptions {
        EngineOptions {
            flush_interval: Duration::from_millis(50),
            backoff_initial: Duration::from_millis(10),
            backoff_max: Duration::from_millis(200),
            watch_stall_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(5),
            ..EngineOptions::default()
        }
    }

    /// A discovery of `role` against this cluster, every other setting the default.
    pub fn sd_config(&self, role: Role) -> SdConfig {
        SdConfig::new(role, self.url())
    }

    /// The simulated cluster: write objects, inject faults, inspect state.
    pub fn sim(&self) -> &Simulator {
        self.server.sim()
    }

    /// The API server's URL.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// Stops the simulator (see [`RunningSimulator::stop`]).
    pub async fn stop(self) {
        self.server.stop().await;
    }
}
