//! URL watchers for configuration (the `monitors:` section's monitors, Namespaces,
//! Secrets and ConfigMaps): the engine's own watchers, on its watcher arbiter, with its
//! options, flow control and metrics, reporting to an actor of the caller's instead of
//! a group (configuration is not targets).

use std::sync::Arc;

use actix::prelude::*;

use crate::actors::group::WatcherLink;
use crate::actors::messages::{UrlId, WatcherOutput};
use crate::actors::url_watcher::{UrlWatcher, UrlWatcherSetup};
use crate::api::ResourceUrl;
use crate::config::EngineOptions;
use crate::http::ApiEndpoint;
use crate::metrics::ApiServerMetrics;

/// Starts URL watchers on one API server for configuration; made by
/// [`crate::Discovery::config_watchers`].
#[derive(Clone)]
pub struct ConfigWatchers {
    pub(crate) endpoint: ApiEndpoint,
    pub(crate) tls: Option<Arc<rustls::ClientConfig>>,
    pub(crate) options: EngineOptions,
    pub(crate) metrics: Arc<ApiServerMetrics>,
    pub(crate) arbiter: ArbiterHandle,
}

impl ConfigWatchers {
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
        WatcherLink::to(&UrlWatcher::start_in_arbiter(&self.arbiter, move |_| {
            UrlWatcher::new(setup)
        }))
    }

    /// The API server's base URL, for logs.
    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }
}
