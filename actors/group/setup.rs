//! What a group is started with: its key, options and TLS settings, how it starts its
//! URL watchers, and the flusher and registry it joins and leaves.

use std::sync::Arc;

use actix::prelude::*;

use super::key::GroupKey;
use crate::api::ResourceUrl;
use crate::config::EngineOptions;
use crate::messages::{FlusherMembership, StopWatcher, UrlId, WatcherOutput};
use crate::registry::Registry;
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
    /// The registry, to leave when stopping.
    pub registry: Arc<Registry>,
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
            group,
            group_id: self.id,
        })
    }
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
