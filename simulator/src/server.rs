//! Starting and stopping the simulated API server: [`serve`] binds an
//! address (port 0 picks a free one), optionally with TLS and a bearer
//! token, and returns a [`RunningSimulator`] handle that reports the bound
//! address, gives access to the cluster and faults, and stops the server.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpServer, web};

use super::http::{self, HttpState};
use super::sim::Simulator;
use super::tls::SelfSigned;

/// How to run the simulator.
#[derive(Debug, Clone)]
pub struct SimulatorConfig {
    /// Address to bind; the default `127.0.0.1:0` picks a free port.
    pub bind: SocketAddr,
    /// Require `Authorization: Bearer <token>` on every request.
    pub token: Option<String>,
    /// Serve HTTPS with a freshly generated self-signed certificate.
    pub tls: bool,
    /// How many changes the watch history retains (the 410 window).
    pub history_limit: usize,
    /// Interval between bookmarks on watches that allow them.
    pub bookmark_interval: Duration,
    /// Pause between the two halves of a split event (fault injection).
    pub split_pause: Duration,
    /// How long one second of a watch's `timeoutSeconds` lasts: 1 s for
    /// real, milliseconds in tests that check the stream ends on time.
    pub timeout_second: Duration,
    /// Run the endpoints/endpointslice controllers.
    pub controllers: bool,
    /// Seed for generated uids.
    pub seed: u64,
    /// actix worker threads.
    pub workers: usize,
}

impl Default for SimulatorConfig {
    fn default() -> SimulatorConfig {
        SimulatorConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            token: None,
            tls: false,
            history_limit: 10_000,
            // The real API server sends a bookmark about once a minute.
            bookmark_interval: Duration::from_secs(60),
            split_pause: Duration::from_millis(20),
            timeout_second: Duration::from_secs(1),
            controllers: true,
            seed: 0,
            workers: 1,
        }
    }
}

impl SimulatorConfig {
    /// An empty cluster configured as this config says (without a server).
    pub fn simulator(&self) -> Simulator {
        Simulator::new(self.history_limit, self.seed, self.controllers)
    }
}

/// A running simulated API server.
pub struct RunningSimulator {
    addr: SocketAddr,
    sim: Simulator,
    tls: Option<SelfSigned>,
    handle: ServerHandle,
}

impl RunningSimulator {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, e.g. `http://127.0.0.1:43210` (`https` with TLS).
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The served cluster: write objects, inject faults, inspect state.
    pub fn sim(&self) -> &Simulator {
        &self.sim
    }

    /// With TLS: the server certificate (PEM), which is also the CA to trust.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.cert_pem.as_str())
    }

    /// With TLS: the server certificate (DER), for building a client root store.
    pub fn ca_der(&self) -> Option<&rustls::pki_types::CertificateDer<'static>> {
        self.tls.as_ref().map(|t| &t.cert_der)
    }

    /// Ends every open watch and stops the server without waiting for
    /// in-flight streams (a watch would otherwise hold shutdown open).
    pub async fn stop(self) {
        self.sim.store().end_watches();
        self.handle.stop(false).await;
    }
}

/// Starts a simulator with an empty cluster. Must be called inside an actix
/// system (e.g. `#[actix_rt::main]` or `#[actix_rt::test]`).
pub async fn serve(config: SimulatorConfig) -> io::Result<RunningSimulator> {
    let sim = config.simulator();
    serve_cluster(sim, config).await
}

/// Starts a simulator serving an existing cluster (e.g. one already filled
/// by the generator).
pub async fn serve_cluster(
    sim: Simulator,
    config: SimulatorConfig,
) -> io::Result<RunningSimulator> {
    let state = web::Data::new(HttpState {
        sim: sim.clone(),
        token: config.token.clone(),
        bookmark_interval: config.bookmark_interval,
        split_pause: config.split_pause,
        timeout_second: config.timeout_second,
    });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .configure(http::configure)
    })
    .workers(config.workers.max(1))
    .disable_signals()
    .shutdown_timeout(1);
    let tls = if config.tls {
        Some(SelfSigned::generate()?)
    } else {
        None
    };
    let server = match &tls {
        Some(tls) => server.bind_rustls_0_23(config.bind, tls.server_config()?)?,
        None => server.bind(config.bind)?,
    };
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| io::Error::other("the simulator bound no address"))?;
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    tracing::info!(%addr, tls = config.tls, "kubernetes API simulator listening");
    Ok(RunningSimulator {
        addr,
        sim,
        tls,
        handle,
    })
}
