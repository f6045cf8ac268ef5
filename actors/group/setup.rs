//! What a group is started with: its key, options and TLS settings, how it starts its
//! URL watchers, and the flusher and registry it joins and leaves.

use std::sync::Arc;

use actix::prelude::*;

use super::key::GroupKey;
use crate::api::ResourceUrl;
use crate::config::EngineOptions;
use crate::messages::{FlusherMembership, StopWatcher, UrlId, WatcherOutput};
use crate::metrics::Metrics;
use crate::url_watcher::{UrlWatcher, UrlWatcherSetup};

/// Everything a group needs to start.
pub struct GroupSetup {
    /// Unique id of this group.
    pub id: u64,
    /// Its key.
    pub key: GroupKey,
    /// Engine timings and limits.
    pub options: EngineOptions,
    /// TLS settings for its watchers.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Starts a URL watcher and returns how to stop it.
    pub start_watcher: WatcherFactory,
    /// The dirty flusher, to join and leave.
    pub flusher: Recipient<FlusherMembership>,
    /// Where the group takes itself off when it stops (the engine's registry).
    pub registry: Arc<dyn GroupDirectory>,
    /// The engine's metrics, which the group and its watchers count in.
    pub metrics: Arc<Metrics>,
}

impl GroupSetup {
    /// Starts the watcher of `url`, numbered `id`, which reports to `group`.
    pub fn start_url_watcher(
        &self,
        id: UrlId,
        url: &ResourceUrl,
        group: Recipient<WatcherOutput>,
    ) -> WatcherLink {
        (self.start_watcher)(UrlWatcherSetup {
            id,
            url: url.clone(),
            endpoint: self.key.endpoint.clone(),
            tls: self.tls.clone(),
            options: self.options.clone(),
            metrics: self.metrics.api_server(&self.key.endpoint.base_url),
            group,
            group_id: self.id,
        })
    }
}

/// Where running groups are found by key: a stopping group takes itself off, so that
/// the next subscriber of its key starts a new one. (The engine's `Registry`; the group
/// knows it only by this, so that the registry may name the group's actor.)
pub trait GroupDirectory: Send + Sync {
    /// Forgets group `id` of `key`, unless another group has taken the key since.
    fn remove(&self, key: &GroupKey, id: u64);
}

/// Starts URL watchers: on the engine's watcher arbiter in production
/// ([`watchers_on`]); a recorder in message-level tests.
pub type WatcherFactory = Arc<dyn Fn(UrlWatcherSetup) -> WatcherLink + Send + Sync>;

/// How a group reaches one of its URL watchers.
#[derive(Clone, Debug)]
pub struct WatcherLink {
    /// Stops it (the group is stopping).
    pub stop: Recipient<StopWatcher>,
}

impl WatcherLink {
    /// The link to a running actor that handles [`StopWatcher`].
    pub fn to<A>(addr: &Addr<A>) -> WatcherLink
    where
        A: Actor<Context = Context<A>> + Handler<StopWatcher>,
    {
        WatcherLink {
            stop: addr.clone().recipient(),
        }
    }
}

/// The factory that starts real [`UrlWatcher`]s on `arbiter`.
pub fn watchers_on(arbiter: ArbiterHandle) -> WatcherFactory {
    Arc::new(move |setup| {
        WatcherLink::to(&UrlWatcher::start_in_arbiter(&arbiter, move |_| {
            UrlWatcher::new(setup)
        }))
    })
}
