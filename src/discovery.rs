//! `Discovery`: the engine's public face.
//!
//! Start one per process inside a running actix system, then `subscribe` once per scrape
//! job with its `kubernetes_sd_config` and a constructor that turns a label set into the
//! agent's own target value (relabelling belongs there; `None` drops the target). Jobs
//! with the same API server, credentials, namespaces and selectors share one group: one
//! list and one watch per resource, one cache, labels computed once per role and
//! `attach_metadata` asked for. An agent that keeps its own state per object may
//! instead subscribe an actor of its own, which handles the group's batches itself
//! (`subscribe_actor`, as `kubesd run` does).
//!
//! ```no_run
//! # async fn run() -> Result<(), kubesd::SubscribeError> {
//! use kubesd::{Discovery, EngineOptions, Role, SdConfig};
//! let discovery = Discovery::start(EngineOptions::default());
//! let config = SdConfig::new(Role::Pod, "http://127.0.0.1:8001");
//! let job = discovery
//!     .subscribe(&config, |labels| labels.get("__address__").map(str::to_string))
//!     .await?;
//! job.synced().await;
//! println!("{} targets", job.targets().await.len());
//! job.stop().await;
//! # Ok(()) }
//! ```

use std::future::Future;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use actix::prelude::*;
use futures_util::Stream;

use crate::actors::DirtyFlusher;
use crate::actors::group::{GroupKey, GroupSetup, GroupWatcher, TargetVariant, watchers_on};
use crate::actors::messages::{
    AwaitSyncOrFailure, GetUrlStatus, Subscribe, SubscriberId, SubscriberLink, TargetsPush,
    TargetsUpdated, Unsubscribe, UrlStatusChanged, WatchUrlStatus,
};
use crate::actors::registry::{GroupEntry, Registry};
pub use crate::actors::subscriber::MAILBOX_CAPACITY as SUBSCRIBER_MAILBOX_CAPACITY;
use crate::actors::subscriber::{
    Configure, Constructor, GetTargets, StopSubscriber, Subscriber, TakeChanges, TargetChanges,
    TargetValue, WaitSynced,
};
use crate::actors::url_watcher::{UrlError, UrlStatus};
use crate::api::{SERVICE_ACCOUNT_NAMESPACE_FILE, read_own_namespace};
use crate::arbiter_pool::ArbiterPool;
use crate::config::{ConfigError, EngineOptions, SdConfig};
use crate::config_watchers::ConfigWatchers;
use crate::http::{
    Credentials, ExecSource, TlsError, TokenSource, endpoint_tls_config, proxy_for,
    read_http_headers, resolve_endpoint,
};
use crate::labels::Labels;
use crate::metrics::Metrics;
use crate::model::Role;

/// Why a subscription could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SubscribeError {
    /// The config is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The TLS settings cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The engine has stopped.
    #[error("the discovery engine has stopped")]
    Stopped,
}

/// The discovery engine. Cheap to clone; every clone is the same engine.
#[derive(Clone)]
pub struct Discovery {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Arc<Registry>,
    flusher: Addr<DirtyFlusher>,
    /// Where groups run, taken in turn: the first is the arbiter that started the
    /// engine, the others one per further core.
    group_arbiters: ArbiterPool,
    watcher_arbiter: Arbiter,
    options: EngineOptions,
    /// What the engine's groups, watchers and subscribers count.
    metrics: Arc<Metrics>,
    next_id: AtomicU64,
    own_namespace_file: PathBuf,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.watcher_arbiter.stop();
    }
}

impl Discovery {
    /// Starts the engine. Must be called inside a running actix system: the flusher
    /// and the first group run on the current arbiter, further groups in turn on one
    /// arbiter per further core (so that independent groups label in parallel), URL
    /// watchers (stream reading and decoding) on an arbiter of their own, so the two
    /// halves of the pipeline use two cores.
    pub fn start(options: EngineOptions) -> Discovery {
        let flusher = DirtyFlusher::new(options.flush_interval).start();
        Discovery {
            inner: Arc::new(Inner {
                registry: Arc::new(Registry::default()),
                flusher,
                group_arbiters: ArbiterPool::per_core(true),
                watcher_arbiter: Arbiter::new(),
                options,
                metrics: Arc::default(),
                next_id: AtomicU64::new(1),
                own_namespace_file: PathBuf::from(SERVICE_ACCOUNT_NAMESPACE_FILE),
            }),
        }
    }

    /// The same engine, reading `namespaces.own_namespace` from `path` instead of the
    /// service-account mount. Call before the first subscription.
    pub fn with_own_namespace_file(mut self, path: impl Into<PathBuf>) -> Discovery {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.own_namespace_file = path.into();
        }
        self
    }

    /// The engine's metrics (`Metrics::render` is their Prometheus text).
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.inner.metrics
    }

    /// Starts URL watchers for configuration on the API server `connection` names
    /// (its role aside), checked as a subscription's config is (credentials read, TLS
    /// built): the engine's watchers, reporting to an actor of the caller's.
    pub async fn config_watchers(
        &self,
        connection: &SdConfig,
    ) -> Result<ConfigWatchers, SubscribeError> {
        let (key, _, tls) = self.prepare(connection).await?;
        Ok(ConfigWatchers::on_arbiter(
            key.endpoint.clone(),
            tls,
            self.inner.options.clone(),
            self.inner.metrics.api_server(&key.endpoint.base_url),
            self.inner.watcher_arbiter.handle(),
        ))
    }

    /// How many groups are running.
    pub fn groups(&self) -> usize {
        self.inner.registry.len()
    }

    /// The group a config belongs to, and what it asks of it (its role and what it
    /// attaches); checks the config.
    pub fn group_key(
        &self,
        config: &SdConfig,
    ) -> Result<(GroupKey, TargetVariant), SubscribeError> {
        config.validate()?;
        let endpoint = resolve_endpoint(config)?;
        let mut namespaces = config.namespaces.names.clone();
        if config.namespaces.own_namespace {
            let own = read_own_namespace(&self.inner.own_namespace_file)
                .map_err(|e| ConfigError::OwnNamespace(e.to_string()))?;
            namespaces.push(own);
        }
        namespaces.sort();
        namespaces.dedup();
        let mut selectors = config.selectors.clone();
        selectors.sort();
        let key = GroupKey {
            endpoint,
            namespaces,
            selectors,
            semantics: self.inner.options.semantics,
        };
        let variant = TargetVariant::new(config.role, config.attach_metadata);
        Ok((key, variant))
    }

    /// Subscribes a scrape job; its subscriber runs on the current arbiter.
    pub async fn subscribe<T, F>(
        &self,
        config: &SdConfig,
        constructor: F,
    ) -> Result<Subscription<T>, SubscribeError>
    where
        T: TargetValue,
        F: Fn(&Labels) -> Option<T> + Send + Sync + 'static,
    {
        self.subscribe_on(&Arbiter::current(), config, constructor)
            .await
    }

    /// Subscribes a scrape job whose subscriber (and so its constructor) runs on
    /// `arbiter`: spread jobs over arbiters to use more cores.
    pub async fn subscribe_on<T, F>(
        &self,
        arbiter: &ArbiterHandle,
        config: &SdConfig,
        constructor: F,
    ) -> Result<Subscription<T>, SubscribeError>
    where
        T: TargetValue,
        F: Fn(&Labels) -> Option<T> + Send + Sync + 'static,
    {
        let (key, variant, tls) = self.prepare(config).await?;
        let id = SubscriberId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let ctor: Constructor<T> = Arc::new(constructor);
        let metrics = Arc::clone(&self.inner.metrics);
        let subscriber =
            Subscriber::start_in_arbiter(arbiter, move |_| Subscriber::new(id, ctor, metrics));
        let link = SubscriberLink {
            id,
            push: subscriber.clone().recipient(),
        };
        match self.register(&key, variant, tls, link).await {
            Ok(link) => Ok(Subscription { link, subscriber }),
            Err(e) => {
                subscriber.do_send(StopSubscriber);
                Err(e)
            }
        }
    }

    /// Subscribes an actor of the agent's own that handles the group's pushes itself
    /// ([`TargetsPush`]): for an agent
    /// that keeps its own state per object where the changes arrive, with no generic
    /// subscriber in between (`kubesd run`'s job actors are such actors). Its handlers'
    /// returns are the group's flow control: handle each message and return. It should
    /// set its mailbox capacity to [`SUBSCRIBER_MAILBOX_CAPACITY`] when it starts, so
    /// that a window of batches never waits for room. Stop with
    /// [`ActorSubscription::stop`].
    pub async fn subscribe_actor<A>(
        &self,
        config: &SdConfig,
        actor: &Addr<A>,
    ) -> Result<ActorSubscription, SubscribeError>
    where
        A: Actor<Context = Context<A>> + Handler<TargetsPush>,
    {
        let (key, variant, tls) = self.prepare(config).await?;
        let id = SubscriberId(self.inner.next_id.fetch_add(1, Ordering::Relaxed));
        let link = SubscriberLink {
            id,
            push: actor.clone().recipient(),
        };
        self.register(&key, variant, tls, link).await
    }

    /// Checks `config` and what it needs before a subscription: its group, its role,
    /// its credentials (a secret file that cannot be read, a token endpoint that
    /// refuses, a proxy that cannot be used are start errors) and its TLS settings.
    async fn prepare(
        &self,
        config: &SdConfig,
    ) -> Result<(GroupKey, TargetVariant, Option<Arc<rustls::ClientConfig>>), SubscribeError> {
        let (key, variant) = self.group_key(config)?;
        // Secret files are re-read at every request; a missing one is a config mistake
        // to report now, not a retry loop to discover in the logs. So are a token
        // endpoint that refuses, a header file that cannot be read and a proxy that
        // cannot be used.
        let http = &key.endpoint.http;
        if let Some(o) = &http.oauth2 {
            TokenSource::for_config(o)
                .ensure()
                .await
                .map_err(|e| ConfigError::Credentials(format!("oauth2: {e}")))?;
        }
        read_http_headers(&http.http_headers).map_err(ConfigError::Credentials)?;
        proxy_for(http, &key.endpoint.base_url, &|name| {
            std::env::var(name).ok()
        })
        .map_err(|e| ConfigError::Credentials(e.to_string()))?;
        match &http.exec {
            // A credential plugin's failure is the job's to report (its URLs' status)
            // and to retry with backoff, as it may pass (a network blip, a login
            // refreshed meanwhile); it is run now so that the first requests carry its
            // credential.
            Some(exec) => {
                let timeout = self.inner.options.credential_plugin_timeout;
                if let Err(e) = ExecSource::for_config(exec).ensure(timeout).await {
                    tracing::warn!("{e}");
                }
            }
            None => {
                Credentials::from_config(http, std::time::Duration::ZERO)
                    .header()
                    .map_err(|e| ConfigError::Credentials(e.to_string()))?;
            }
        }
        let tls = if key.endpoint.base_url.starts_with("https://") {
            Some(endpoint_tls_config(http)?)
        } else {
            None
        };
        Ok((key, variant, tls))
    }

    /// Registers `link` with the group of `key` (started if none runs), for `variant`.
    async fn register(
        &self,
        key: &GroupKey,
        variant: TargetVariant,
        tls: Option<Arc<rustls::ClientConfig>>,
        link: SubscriberLink,
    ) -> Result<ActorSubscription, SubscribeError> {
        let id = link.id;
        // A group that is stopping (its last subscriber just left) refuses the message;
        // then a new group is started for the key.
        for _ in 0..3 {
            let entry = self.group_for(key, tls.clone());
            let subscribe = Subscribe {
                variant,
                link: link.clone(),
            };
            match entry.addr.send(subscribe).await {
                Ok(()) => {
                    return Ok(ActorSubscription {
                        id,
                        variant,
                        group: entry.addr,
                    });
                }
                Err(_) => self.inner.registry.remove(key, entry.id),
            }
        }
        Err(SubscribeError::Stopped)
    }

    fn group_for(&self, key: &GroupKey, tls: Option<Arc<rustls::ClientConfig>>) -> GroupEntry {
        let inner = &self.inner;
        inner.registry.get_or_start(key, || {
            let id = inner.next_id.fetch_add(1, Ordering::Relaxed);
            let setup = GroupSetup {
                id,
                key: key.clone(),
                options: inner.options.clone(),
                tls,
                start_watcher: watchers_on(inner.watcher_arbiter.handle()),
                flusher: inner.flusher.clone().recipient(),
                registry: inner.registry.clone(),
                metrics: Arc::clone(&inner.metrics),
            };
            let arbiter = inner.group_arbiters.next();
            let addr = GroupWatcher::start_in_arbiter(&arbiter, move |_| GroupWatcher::new(setup));
            GroupEntry { id, addr }
        })
    }
}

/// Why [`Subscription::synced_within`] did not see the job synced.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotSynced {
    /// A URL has a problem that retrying will not cure (credentials, RBAC, a selector
    /// or resource the server refuses).
    #[error("{0}")]
    Failing(UrlError),
    /// The time was up; the state of every URL the job needs.
    #[error("not synced in time: {}", describe(.0))]
    TimedOut(Vec<UrlStatus>),
}

/// The URLs' last problems, in words.
fn describe(urls: &[UrlStatus]) -> String {
    let problems: Vec<String> = urls
        .iter()
        .filter_map(|u| Some(format!("{}: {}", u.url, u.last_error.as_ref()?)))
        .collect();
    if problems.is_empty() {
        "no URL reported a problem".to_string()
    } else {
        problems.join("; ")
    }
}

/// The registration of a subscriber with its group: its id, role and group, for its
/// URLs' state and to leave. A [`Subscription`] holds one; an agent's own actor
/// subscribed with [`Discovery::subscribe_actor`] gets one.
pub struct ActorSubscription {
    id: SubscriberId,
    /// Its role and what its targets attach.
    variant: TargetVariant,
    group: Addr<GroupWatcher>,
}

impl ActorSubscription {
    /// This subscription's id (as in the [`SubscriberLink`] the group reaches it by).
    pub fn id(&self) -> SubscriberId {
        self.id
    }

    /// The role it discovers.
    pub fn role(&self) -> Role {
        self.variant.role
    }

    /// The state of every API URL the role needs (see [`Subscription::status`]).
    pub fn status(&self) -> impl Future<Output = Vec<UrlStatus>> + 'static {
        let request = self.group.send(GetUrlStatus {
            variant: self.variant,
        });
        async move { request.await.unwrap_or_default() }
    }

    /// Sends a [`UrlStatusChanged`] notice to `recipient` now and whenever the state of
    /// a URL the role needs changes (see [`Subscription::on_status`]).
    pub fn on_status(&self, recipient: Recipient<UrlStatusChanged>) {
        self.group.do_send(WatchUrlStatus {
            subscriber: self.id,
            variant: self.variant,
            recipient,
        });
    }

    /// Leaves the group: the last subscriber to leave stops it and its connections.
    pub async fn stop(self) {
        let _ = self.group.send(Unsubscribe(self.id)).await;
    }
}

/// One scrape job's subscription.
pub struct Subscription<T: TargetValue> {
    link: ActorSubscription,
    subscriber: Addr<Subscriber<T>>,
}

impl<T: TargetValue> Subscription<T> {
    /// This subscription's id (as in [`TargetsUpdated`] notices).
    pub fn id(&self) -> SubscriberId {
        self.link.id
    }

    /// The role it discovers.
    pub fn role(&self) -> Role {
        self.link.variant.role
    }

    /// The job's current targets. Cheap: a shared snapshot, rebuilt only after a change.
    /// Empty once the subscription has stopped. The future does not borrow the
    /// subscription, so an actor can hold the subscription and await this.
    pub fn targets(&self) -> impl Future<Output = Arc<Vec<T>>> + 'static {
        let request = self.subscriber.send(GetTargets(PhantomData));
        async move { request.await.unwrap_or_default() }
    }

    /// The objects whose targets changed since the last call, each with its targets
    /// now; the first call hands out every object (`reset`). For an agent that keeps
    /// its own state per object: a change to k objects costs O(k), where `targets()`
    /// hands out all of them. Re-arms `on_change` notices, as `targets()` does. Does
    /// not borrow the subscription.
    pub fn take_changes(&self) -> impl Future<Output = TargetChanges<T>> + 'static {
        let request = self.subscriber.send(TakeChanges(PhantomData));
        async move {
            request.await.unwrap_or(TargetChanges {
                reset: true,
                objects: Vec::new(),
                oldest: None,
            })
        }
    }

    /// Sends a [`TargetsUpdated`] notice to `recipient` when the targets change. Notices
    /// are coalesced: after one, the next comes only once `targets()` or
    /// `take_changes()` has been called.
    pub fn on_change(&self, recipient: Recipient<TargetsUpdated>) {
        self.subscriber.do_send(Configure::OnChange(recipient));
    }

    /// The job's targets as a stream, for an agent whose core is not an actor: the
    /// targets now, then again after each change. Coalesced: a reader slower than the
    /// changes gets the latest set, never a queue of old ones. The stream ends when the
    /// subscription stops. Independent of `on_change`.
    pub fn updates(&self) -> impl Stream<Item = Arc<Vec<T>>> + Unpin + 'static {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        self.subscriber.do_send(Configure::Updates(tx));
        let subscriber = self.subscriber.clone();
        Box::pin(futures_util::stream::unfold(rx, move |mut rx| {
            let subscriber = subscriber.clone();
            async move {
                rx.recv().await?;
                let targets = subscriber.send(GetTargets(PhantomData)).await.ok()?;
                Some((targets, rx))
            }
        }))
    }

    /// Waits until every URL the role needs has been listed once. Does not borrow the
    /// subscription.
    pub fn synced(&self) -> impl Future<Output = ()> + 'static {
        let request = self.subscriber.send(WaitSynced);
        async move {
            let _ = request.await;
        }
    }

    /// The state of every API URL this subscription's role needs: listing, watching or
    /// backing off, the last problem (typed, with the API server's message), when it
    /// last listed, and how many LISTs it made. Does not borrow the subscription.
    pub fn status(&self) -> impl Future<Output = Vec<UrlStatus>> + 'static {
        self.link.status()
    }

    /// Sends a [`UrlStatusChanged`] notice to `recipient` now and whenever the state of
    /// a URL this subscription needs changes (a problem begins or ends, a LIST
    /// completes, a backoff starts).
    pub fn on_status(&self, recipient: Recipient<UrlStatusChanged>) {
        self.link.on_status(recipient);
    }

    /// Waits, at most `within`, until every URL the role needs has been listed once.
    /// Returns why not when it cannot succeed by waiting (a URL with a configuration
    /// problem: a 400, a repeated 401 or 403, a 404 with no older API version), or
    /// when the time is up, with every URL's state. Does not borrow the subscription.
    pub fn synced_within(
        &self,
        within: std::time::Duration,
    ) -> impl Future<Output = Result<(), NotSynced>> + 'static {
        let waiting = self.link.group.send(AwaitSyncOrFailure {
            variant: self.link.variant,
        });
        let synced = self.synced();
        let status = self.link.group.clone();
        let variant = self.link.variant;
        async move {
            let outcome = actix_rt::time::timeout(within, async move {
                match waiting.await {
                    Ok(Ok(())) => {
                        // The group has synced; the subscriber has its targets once
                        // it has handled what the group sent before.
                        synced.await;
                        Ok(())
                    }
                    Ok(Err(problem)) => Err(problem),
                    Err(_) => std::future::pending().await,
                }
            })
            .await;
            match outcome {
                Ok(Ok(())) => Ok(()),
                Ok(Err(problem)) => Err(NotSynced::Failing(problem)),
                Err(_) => Err(NotSynced::TimedOut(
                    status
                        .send(GetUrlStatus { variant })
                        .await
                        .unwrap_or_default(),
                )),
            }
        }
    }

    /// Leaves the group (the last one to leave stops it and its connections) and stops
    /// the subscriber.
    pub async fn stop(self) {
        self.link.stop().await;
        let _ = self.subscriber.send(StopSubscriber).await;
    }
}
