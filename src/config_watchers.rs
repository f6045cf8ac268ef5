//! URL watchers for configuration (the `monitors:` section's monitors, Namespaces,
//! Secrets and ConfigMaps): the engine's own watchers, on its watcher arbiter, with its
//! options, flow control and metrics, reporting to an actor of the caller's instead of
//! a group (configuration is not targets).

use std::sync::Arc;

use actix::prelude::*;

use crate::actors::group::{WatcherFactory, WatcherLink, watchers_on};
use crate::actors::messages::{UrlId, WatcherOutput};
use crate::actors::url_watcher::UrlWatcherSetup;
use crate::api::ResourceUrl;
use crate::config::EngineOptions;
use crate::http::ApiEndpoint;
use crate::metrics::ApiServerMetrics;

/// Starts URL watchers on one API server for configuration; made by
/// [`crate::Discovery::config_watchers`].
#[derive(Clone)]
pub struct ConfigWatchers {
    endpoint: ApiEndpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    options: EngineOptions,
    metrics: Arc<ApiServerMetrics>,
    start_watcher: WatcherFactory,
}

impl ConfigWatchers {
    /// Watchers of `endpoint` started on `arbiter` (the engine's watcher arbiter).
    pub(crate) fn on_arbiter(
        endpoint: ApiEndpoint,
        tls: Option<Arc<rustls::ClientConfig>>,
        options: EngineOptions,
        metrics: Arc<ApiServerMetrics>,
        arbiter: ArbiterHandle,
    ) -> ConfigWatchers {
        ConfigWatchers {
            endpoint,
            tls,
            options,
            metrics,
            start_watcher: watchers_on(arbiter),
        }
    }

    /// Watchers that `start_watcher` starts (a recorder in message-level tests), for
    /// `endpoint` with default options.
    pub fn with_factory(endpoint: ApiEndpoint, start_watcher: WatcherFactory) -> ConfigWatchers {
        ConfigWatchers {
            endpoint,
            tls: None,
            options: EngineOptions::default(),
            metrics: Arc::default(),
            start_watcher,
        }
    }

    /// Starts the watcher of `url`, numbered `id`, whose output goes to `to` (which
    /// must answer each [`WatcherOutput`]: the answer frees the watcher's window).
    pub fn start(&self, id: UrlId, url: ResourceUrl, to: Recipient<WatcherOutput>) -> WatcherLink {
        let setup = UrlWatcherSetup {
            id,
            url,
            endpoint: self.endpoint.clone(),
            tls: self.tls.clone(),
            options: self.options.clone(),
            metrics: Arc::clone(&self.metrics),
            group: to,
            group_id: 0,
        };
        (self.start_watcher)(setup)
    }

    /// The discovery metrics of the API server, which the watchers count in.
    pub fn metrics(&self) -> &ApiServerMetrics {
        &self.metrics
    }

    /// The API server's base URL, for logs.
    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }
}
