//! The credential of one kubeconfig credential plugin, shared by every job and watcher
//! that uses the same kubeconfig user: one [`ExecSource`] per distinct `exec` setting
//! (a process-wide map, as [`super::TokenSource`] for OAuth 2.0), so the plugin runs
//! once for all of them.
//!
//! When it runs:
//! - when a job subscribes and there is no credential yet (awaited, so that the first
//!   requests have one; a failure is not a start error: the job's watchers report it);
//! - in the background, shortly before `expirationTimestamp` (a minute before, or half
//!   the credential's life when that is shorter), while requests keep using the
//!   credential they have;
//! - without an expiry, the credential is kept until the API server answers 401 to
//!   it: the first 401 of the credential starts one run, and the other 401s of the
//!   same credential (a wave of them, from every watcher) start nothing more.
//!
//! One run at a time (an async lock): a caller that finds a run completed since it
//! looked takes that run's result instead of running again. A failed run is retried no
//! sooner than after a backoff (1 s, doubling to 2 min), however many watchers ask.
//! Requests never wait for a run: they use the credential while it is valid and fail
//! (the watcher retries after its own backoff) while there is none.
//!
//! The plugin's client certificate reaches TLS through [`ExecClientCert`], a rustls
//! client-certificate resolver installed in the endpoint's TLS config: rustls asks it
//! at every handshake, so the TLS config stays the same when the certificate changes;
//! only the connections opened with the old one must go, which the URL watcher does by
//! building a new awc client when [`ExecSource::client_cert_generation`] changes.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use actix_rt::time::Instant;
use rustls::SignatureScheme;
use rustls::client::ResolvesClientCert;
use rustls::sign::CertifiedKey;

use super::exec_plugin::{PluginCredential, PluginError, PluginProblem, run_plugin};
use crate::config::{ExecConfig, Secret};

/// How long before its expiry a credential is renewed, at most.
const RENEW_BEFORE: Duration = Duration::from_secs(60);
/// The wait before running a plugin again after its first failure; it doubles with
/// every further failure, up to [`RETRY_MAX`].
const RETRY_INITIAL: Duration = Duration::from_secs(1);
/// The longest wait between failed runs.
const RETRY_MAX: Duration = Duration::from_secs(120);

/// The credential of one `exec` setting.
pub struct ExecSource {
    config: ExecConfig,
    state: Mutex<State>,
    /// Held for the length of a run: one at a time.
    run_lock: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for ExecSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecSource")
            .field("user", &self.config.user)
            .field("command", &self.config.command)
            .finish()
    }
}

/// The credential in use, and when it must be renewed.
struct Current {
    token: Option<Secret>,
    client_cert: Option<Arc<CertifiedKey>>,
    /// Past it, the credential is not used; `None`: until a 401.
    expires: Option<Instant>,
    /// From it on, a new run is started in the background.
    renew_at: Option<Instant>,
    /// The run that gave it (its number in [`State::runs`]).
    generation: u64,
}

#[derive(Default)]
struct State {
    current: Option<Current>,
    /// Runs finished, successful or not.
    runs: u64,
    /// The API server refused the current credential: renew it.
    refused: bool,
    /// A background run is spawned and not finished.
    spawned: bool,
    /// The last run's error, while no run has succeeded since.
    last_error: Option<PluginError>,
    /// Failed runs in a row, and when the next may start.
    failures: u32,
    retry_at: Option<Instant>,
}

impl State {
    /// A new run is wanted (nothing yet, renewal time, a 401) and allowed (no
    /// failure backoff under way).
    fn wants_run(&self, now: Instant) -> bool {
        let due = match &self.current {
            None => true,
            Some(c) => self.refused || c.renew_at.is_some_and(|r| now >= r),
        };
        due && self.retry_at.is_none_or(|r| now >= r)
    }
}

/// Every plugin source, by setting.
static SOURCES: LazyLock<Mutex<HashMap<ExecConfig, Arc<ExecSource>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The `Authorization` value of a request and the credential it came from.
pub struct ExecHeader {
    /// `Bearer <token>`, when the plugin gave a token (not with a certificate only).
    pub value: Option<String>,
    /// The credential's generation, to hand back with a 401.
    pub generation: u64,
}

impl ExecSource {
    /// The source for `config`, shared with every other user of the same setting.
    pub fn for_config(config: &ExecConfig) -> Arc<ExecSource> {
        let mut sources = SOURCES.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(sources.entry(config.clone()).or_insert_with(|| {
            Arc::new(ExecSource {
                config: config.clone(),
                state: Mutex::new(State::default()),
                run_lock: tokio::sync::Mutex::new(()),
            })
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many runs have finished (for tests and logs).
    pub fn runs(&self) -> u64 {
        self.state().runs
    }

    /// The credential for the next request. Starts a background run on the current
    /// actix arbiter when one is wanted; fails when there is no valid credential.
    pub fn header(self: &Arc<Self>, timeout: Duration) -> Result<ExecHeader, PluginError> {
        let now = Instant::now();
        let mut state = self.state();
        if state.wants_run(now) && !state.spawned {
            state.spawned = true;
            self.spawn_run(state.runs, timeout);
        }
        match &state.current {
            Some(c) if c.expires.is_none_or(|e| now < e) => Ok(ExecHeader {
                value: c.token.as_ref().map(|t| format!("Bearer {}", t.expose())),
                generation: c.generation,
            }),
            _ => Err(state
                .last_error
                .clone()
                .unwrap_or_else(|| PluginError::new(&self.config, PluginProblem::Pending, b""))),
        }
    }

    /// The API server answered 401 to a request made with credential `generation`:
    /// the first such answer starts a run; the rest of the wave, and answers to older
    /// credentials, change nothing.
    pub fn refused(self: &Arc<Self>, generation: u64, timeout: Duration) {
        let mut state = self.state();
        let current = state.current.as_ref().map(|c| c.generation);
        if current != Some(generation) || state.refused {
            return;
        }
        tracing::info!(
            user = %self.config.user,
            "the API server refused the credential of the kubeconfig user's plugin (401); running it again"
        );
        state.refused = true;
        if state.wants_run(Instant::now()) && !state.spawned {
            state.spawned = true;
            self.spawn_run(state.runs, timeout);
        }
    }

    /// Runs the plugin in the background (after the runs already counted in `seen`).
    fn spawn_run(self: &Arc<Self>, seen: u64, timeout: Duration) {
        let me = Arc::clone(self);
        actix_rt::spawn(async move {
            let result = me.run_after(seen, timeout).await;
            me.state().spawned = false;
            if let Err(e) = result {
                tracing::warn!("{e}");
            }
        });
    }

    /// Makes sure a credential that is not yet due is at hand: runs the plugin (or
    /// waits for the run under way) if not. Within a failure backoff, the last error.
    pub async fn ensure(&self, timeout: Duration) -> Result<(), PluginError> {
        let seen = {
            let state = self.state();
            let now = Instant::now();
            if !state.wants_run(now) {
                return match (&state.current, &state.last_error) {
                    (Some(_), _) => Ok(()),
                    (None, Some(e)) => Err(e.clone()),
                    (None, None) => Ok(()),
                };
            }
            state.runs
        };
        self.run_after(seen, timeout).await
    }

    /// Runs the plugin unless a run finished since the caller saw `seen` runs, in
    /// which case that run's outcome is the answer.
    async fn run_after(&self, seen: u64, timeout: Duration) -> Result<(), PluginError> {
        let _one_at_a_time = self.run_lock.lock().await;
        {
            let state = self.state();
            if state.runs > seen {
                return match &state.last_error {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                };
            }
        }
        let result = run_plugin(&self.config, timeout).await;
        self.keep(result)
    }

    /// Takes a run's outcome.
    fn keep(&self, result: Result<PluginCredential, PluginError>) -> Result<(), PluginError> {
        let now = Instant::now();
        let mut state = self.state();
        state.runs += 1;
        match result {
            Ok(credential) => {
                let (expires, renew_at) = match credential.expires {
                    None => (None, None),
                    Some(at) => {
                        let life = at
                            .duration_since(SystemTime::now())
                            .unwrap_or(Duration::ZERO);
                        let early = RENEW_BEFORE.min(life / 2);
                        (Some(now + life), Some(now + life - early))
                    }
                };
                tracing::debug!(user = %self.config.user, expires_in = ?expires.map(|e| e - now), "credential plugin answered");
                state.current = Some(Current {
                    token: credential.token,
                    client_cert: credential.client_cert,
                    expires,
                    renew_at,
                    generation: state.runs,
                });
                state.refused = false;
                state.last_error = None;
                state.failures = 0;
                state.retry_at = None;
                Ok(())
            }
            Err(e) => {
                state.failures += 1;
                let wait = RETRY_INITIAL
                    .saturating_mul(1 << (state.failures - 1).min(16))
                    .min(RETRY_MAX);
                state.retry_at = Some(now + wait);
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// The generation of the client certificate in use (`None`: none): when it
    /// changes, connections opened with the old one should be replaced.
    pub fn client_cert_generation(&self) -> Option<u64> {
        let state = self.state();
        let current = state.current.as_ref()?;
        current.client_cert.as_ref().map(|_| current.generation)
    }
}

/// The client certificate of a credential plugin, handed to rustls at each handshake
/// (installed by [`super::endpoint_tls_config`]).
#[derive(Debug)]
pub struct ExecClientCert(pub Arc<ExecSource>);

impl ResolvesClientCert for ExecClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        let state = self.0.state();
        let current = state.current.as_ref()?;
        // An expired certificate is not offered: the server would refuse it anyway.
        if current.expires.is_some_and(|e| Instant::now() >= e) {
            return None;
        }
        current.client_cert.clone()
    }

    fn has_certs(&self) -> bool {
        true
    }
}
