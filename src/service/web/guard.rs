//! Who may use the listener: the web config's basic auth users, its request rate limit
//! and its headers, re-read when the file changes; and the TLS side's certificate and
//! client-certificate policy, which follow the same file (see [`crate::service::web::tls`]).
//!
//! Like the exporter-toolkit, the file is looked at on every request and every TLS
//! handshake; kubesd re-reads it only when its modification time, size or inode
//! changed (a Kubernetes Secret update swaps a symlink: a new inode). A file that no
//! longer loads is logged and the settings before it kept.
//!
//! Authentication failures are answered after a bcrypt check whether or not the user
//! exists (against a fixed hash when not), so that the time taken does not tell which
//! users exist; they are counted per client address, and a client with too many
//! recent failures gets `429` without a check. The offered user name and password are
//! never logged.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use actix_web::http::header::{HeaderName, HeaderValue};
use base64::Engine;
use sha2::{Digest, Sha256};
use tracing::{error, info, warn};

use crate::service::metrics::ServiceMetrics;
use crate::service::web::config::{WebConfigError, WebSettings, load_web_config};

/// A bcrypt hash (cost 10) of a random string, checked when the offered user does not
/// exist, so that an unknown user takes as long as a wrong password.
const UNKNOWN_USER_HASH: &str = "$2b$10$Q4VbDTgZCHAeQIWzE8xs1ugYbkGFFNviJ33Kk6o9FkEghb9RpP2QW";

/// Failed authentications a client may have in a burst...
const FAILURE_BURST: f64 = 10.0;
/// ...and then one more per this interval.
const FAILURE_REFILL: Duration = Duration::from_secs(6);
/// Clients remembered at most (the oldest-refilled are forgotten first).
const FAILURE_CLIENTS: usize = 10_000;
/// Credentials remembered as verified at most, per loaded file.
const VERIFIED_CACHE: usize = 256;

/// Identifies a version of the file on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    inode: u64,
}

impl FileStamp {
    fn of(path: &Path) -> Option<FileStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(FileStamp {
            modified: m.modified().ok(),
            len: m.len(),
            inode: m.ino(),
        })
    }
}

/// One loaded version of the file, with what is remembered only as long as it holds.
pub struct Loaded {
    /// Its settings.
    pub settings: WebSettings,
    /// SHA-256 of (user, password, hash) triples that verified: bcrypt is run once per
    /// credential, not per request.
    verified: Mutex<HashSet<[u8; 32]>>,
    /// The toolkit's `rate_limit` bucket: tokens left and when last refilled.
    requests: Mutex<(f64, Instant)>,
}

impl Loaded {
    fn new(settings: WebSettings) -> Loaded {
        let burst = settings.rate_limit.map_or(0.0, |r| f64::from(r.burst));
        Loaded {
            settings,
            verified: Mutex::new(HashSet::new()),
            requests: Mutex::new((burst, Instant::now())),
        }
    }

    /// Takes a token of the toolkit's request rate limit; false if none is left.
    fn take_request_token(&self, now: Instant) -> bool {
        let Some(limit) = self.settings.rate_limit else {
            return true;
        };
        let mut bucket = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        let (tokens, last) = *bucket;
        let refilled = (tokens
            + now.saturating_duration_since(last).as_secs_f64() / limit.interval.as_secs_f64())
        .min(f64::from(limit.burst));
        if refilled < 1.0 {
            *bucket = (refilled, now);
            return false;
        }
        *bucket = (refilled - 1.0, now);
        true
    }
}

/// What to do with a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Serve it.
    Allow,
    /// `401`: no credentials, or wrong ones.
    Unauthorized,
    /// `429`: this client failed too often lately, or the toolkit's rate limit is hit.
    TooManyRequests,
}

/// Failed authentications per client address: a token bucket each.
struct FailureLimiter {
    clients: HashMap<IpAddr, (f64, Instant)>,
}

impl FailureLimiter {
    fn refilled((tokens, last): (f64, Instant), now: Instant) -> f64 {
        (tokens + now.saturating_duration_since(last).as_secs_f64() / FAILURE_REFILL.as_secs_f64())
            .min(FAILURE_BURST)
    }

    /// True if `client` may try (has failures left).
    fn may_try(&self, client: IpAddr, now: Instant) -> bool {
        self.clients
            .get(&client)
            .is_none_or(|b| Self::refilled(*b, now) >= 1.0)
    }

    /// Counts a failure of `client`.
    fn failed(&mut self, client: IpAddr, now: Instant) {
        if self.clients.len() >= FAILURE_CLIENTS && !self.clients.contains_key(&client) {
            // Forget clients whose buckets are full again; if none, the stalest.
            self.clients
                .retain(|_, b| Self::refilled(*b, now) < FAILURE_BURST);
            if self.clients.len() >= FAILURE_CLIENTS
                && let Some(stalest) = self
                    .clients
                    .iter()
                    .min_by_key(|(_, b)| b.1)
                    .map(|(ip, _)| *ip)
            {
                self.clients.remove(&stalest);
            }
        }
        let bucket = self.clients.entry(client).or_insert((FAILURE_BURST, now));
        *bucket = ((Self::refilled(*bucket, now) - 1.0).max(0.0), now);
    }
}

/// The listener's guard: the current web config and the failure counts.
pub struct WebGuard {
    path: PathBuf,
    /// `/healthz` and `/ready` need no credentials (`--web.open-health-endpoints`).
    open_health: bool,
    current: RwLock<(Arc<Loaded>, Option<FileStamp>)>,
    failures: Mutex<FailureLimiter>,
    /// Where its reloads and refusals are counted.
    metrics: Arc<ServiceMetrics>,
}

impl std::fmt::Debug for WebGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebGuard")
            .field("path", &self.path)
            .finish()
    }
}

impl WebGuard {
    /// Loads the web config at `path`; an error names the key and stops kubesd. Its
    /// reloads and refusals are counted in `metrics`.
    pub fn load(
        path: &Path,
        open_health: bool,
        metrics: Arc<ServiceMetrics>,
    ) -> Result<Arc<WebGuard>, WebConfigError> {
        let stamp = FileStamp::of(path);
        let settings = load_web_config(path)?;
        metrics.web_config_last_reload_successful.set(1);
        Ok(Arc::new(WebGuard {
            path: path.to_path_buf(),
            open_health,
            current: RwLock::new((Arc::new(Loaded::new(settings)), stamp)),
            failures: Mutex::new(FailureLimiter {
                clients: HashMap::new(),
            }),
            metrics,
        }))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings in force, after re-reading the file if it changed on disk.
    pub fn current(&self) -> Arc<Loaded> {
        let stamp = FileStamp::of(&self.path);
        {
            let current = self.current.read().unwrap_or_else(|e| e.into_inner());
            if current.1 == stamp {
                return Arc::clone(&current.0);
            }
        }
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        if current.1 == stamp {
            return Arc::clone(&current.0);
        }
        // Whatever the outcome, this version of the file is dealt with: a broken file
        // is reported once, not at every request.
        current.1 = stamp;
        match load_web_config(&self.path) {
            Ok(settings) => {
                warn_about_fixed_tls_changes(&current.0.settings, &settings, &self.path);
                current.0 = Arc::new(Loaded::new(settings));
                self.metrics.web_config_last_reload_successful.set(1);
                info!(web_config = %self.path.display(), "web config reloaded");
            }
            Err(e) => {
                self.metrics.web_config_last_reload_successful.set(0);
                error!("web config reload failed, keeping the previous settings: {e}");
            }
        }
        Arc::clone(&current.0)
    }

    /// Decides whether the request for `path` from `client` with these `Authorization`
    /// header bytes may be served. Runs bcrypt off the async thread when it must.
    pub async fn check(
        self: &Arc<Self>,
        path: &str,
        client: Option<IpAddr>,
        authorization: Option<&[u8]>,
    ) -> Decision {
        let loaded = self.current();
        let now = Instant::now();
        if !loaded.take_request_token(now) {
            self.metrics.http_rate_limited.inc();
            return Decision::TooManyRequests;
        }
        if loaded.settings.users.is_empty() || (self.open_health && is_health(path)) {
            return Decision::Allow;
        }
        let client = client.unwrap_or(IpAddr::from([0, 0, 0, 0]));
        if !self.lock_failures().may_try(client, now) {
            self.metrics.http_rate_limited.inc();
            warn!(%client, path, "authentication refused: too many failures from this client lately");
            return Decision::TooManyRequests;
        }
        let Some((user, password)) = authorization.and_then(basic_credentials) else {
            self.metrics.http_unauthorized.inc();
            info!(%client, path, "request without basic auth credentials refused");
            return Decision::Unauthorized;
        };
        let known_hash = loaded.settings.users.get(&user).cloned();
        let hash = known_hash
            .clone()
            .unwrap_or_else(|| UNKNOWN_USER_HASH.to_string());
        let key = credential_key(&user, &password, &hash);
        let cached = known_hash.is_some()
            && loaded
                .verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&key);
        let verified = cached || {
            // bcrypt takes tens of milliseconds: not on the listener's thread.
            let matched =
                actix_web::web::block(move || bcrypt::verify(password, &hash).unwrap_or(false))
                    .await
                    .unwrap_or(false);
            matched && known_hash.is_some()
        };
        if verified {
            if !cached {
                let mut set = loaded.verified.lock().unwrap_or_else(|e| e.into_inner());
                if set.len() >= VERIFIED_CACHE {
                    set.clear();
                }
                set.insert(key);
            }
            return Decision::Allow;
        }
        self.lock_failures().failed(client, Instant::now());
        self.metrics.http_unauthorized.inc();
        warn!(%client, path, "authentication failed: wrong user name or password");
        Decision::Unauthorized
    }

    /// Headers every response carries.
    pub fn headers(&self) -> Vec<(HeaderName, HeaderValue)> {
        self.current().settings.headers.clone()
    }

    fn lock_failures(&self) -> std::sync::MutexGuard<'_, FailureLimiter> {
        self.failures.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `/healthz` and `/ready`.
fn is_health(path: &str) -> bool {
    matches!(path, "/healthz" | "/ready")
}

/// The user and password of a `Basic` authorization header.
fn basic_credentials(header: &[u8]) -> Option<(String, String)> {
    let text = std::str::from_utf8(header).ok()?;
    let (scheme, encoded) = text.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// What the verified-credentials cache keeps: a digest, not the password.
fn credential_key(user: &str, password: &str, hash: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [user, password, hash] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// Logs the TLS changes a running listener cannot apply (they need a restart).
fn warn_about_fixed_tls_changes(old: &WebSettings, new: &WebSettings, path: &Path) {
    match (&old.tls, &new.tls) {
        (None, Some(_)) | (Some(_), None) => warn!(
            web_config = %path.display(),
            "tls_server_config was added or removed: the listener changes between HTTP and HTTPS only at restart"
        ),
        (Some(a), Some(b)) if a.fixed_part() != b.fixed_part() => warn!(
            web_config = %path.display(),
            "tls_server_config min_version, max_version, cipher_suites, prefer_server_cipher_suites or curve_preferences changed: they take effect at restart"
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unknown_user_hash_is_a_bcrypt_hash() {
        assert!(UNKNOWN_USER_HASH.parse::<bcrypt::HashParts>().is_ok());
    }

    #[test]
    fn reads_basic_credentials() {
        let header = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:pa:ss")
        );
        assert_eq!(
            basic_credentials(header.as_bytes()),
            Some(("alice".into(), "pa:ss".into()))
        );
        assert_eq!(basic_credentials(b"Bearer abc"), None);
        assert_eq!(basic_credentials(b"Basic !!!"), None);
    }

    #[test]
    fn a_client_that_fails_too_often_must_wait() {
        let mut limiter = FailureLimiter {
            clients: HashMap::new(),
        };
        let ip = IpAddr::from([10, 1, 2, 3]);
        let other = IpAddr::from([10, 1, 2, 4]);
        let t0 = Instant::now();
        for _ in 0..FAILURE_BURST as usize {
            assert!(limiter.may_try(ip, t0));
            limiter.failed(ip, t0);
        }
        assert!(!limiter.may_try(ip, t0), "the burst is spent");
        assert!(limiter.may_try(other, t0), "other clients are not held up");
        assert!(
            limiter.may_try(ip, t0 + FAILURE_REFILL),
            "one more try per refill"
        );
    }

    #[test]
    fn the_toolkits_rate_limit_is_a_token_bucket() {
        let settings = WebSettings {
            tls: None,
            users: Default::default(),
            headers: Vec::new(),
            rate_limit: Some(crate::service::web::config::RateLimit {
                interval: Duration::from_secs(1),
                burst: 2,
            }),
        };
        let loaded = Loaded::new(settings);
        let t0 = Instant::now();
        assert!(loaded.take_request_token(t0));
        assert!(loaded.take_request_token(t0));
        assert!(!loaded.take_request_token(t0));
        assert!(loaded.take_request_token(t0 + Duration::from_secs(1)));
    }
}
