//! `oauth2`: access tokens from an OAuth 2.0 token endpoint (the client credentials
//! grant, RFC 6749 §4.4), as Prometheus' `http_config` gets them, sent as
//! `Authorization: Bearer <token>`.
//!
//! One [`TokenSource`] per distinct `oauth2` setting, shared by every watcher that uses
//! it (a process-wide map), so a group's watchers ask the endpoint once, not each.
//! A token is asked for when a job subscribes (a refusal is a start error, naming the
//! endpoint) and again in the background once it is due: 10 s before it expires, as
//! Go's `oauth2` package does. Requests never wait for the token endpoint: until a new
//! token arrives they use the old one while it is valid, and fail (and are retried,
//! with the watcher's backoff) once it is not.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use awc::http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

use crate::config::OAuth2;

/// How long before its expiry a token is renewed (Go's `oauth2` expiry delta).
const RENEW_BEFORE: Duration = Duration::from_secs(10);
/// The longest wait for the token endpoint.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest token response read.
const MAX_TOKEN_RESPONSE: usize = 1 << 20;

/// Tokens for one `oauth2` setting.
pub struct TokenSource {
    config: OAuth2,
    state: Mutex<State>,
}

impl std::fmt::Debug for TokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSource")
            .field("token_url", &self.config.token_url)
            .finish()
    }
}

#[derive(Default)]
struct State {
    /// The `Authorization` value and when the token expires (`None`: never).
    token: Option<(String, Option<Instant>)>,
    /// A background refresh is under way.
    refreshing: bool,
    /// Why the last request for a token failed, for the requests that then fail.
    last_error: Option<String>,
}

/// Every token source, by setting.
static SOURCES: LazyLock<Mutex<HashMap<OAuth2, Arc<TokenSource>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

impl TokenSource {
    /// The source for `config`, shared with every other user of the same setting.
    pub fn for_config(config: &OAuth2) -> Arc<TokenSource> {
        let mut sources = SOURCES.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(sources.entry(config.clone()).or_insert_with(|| {
            Arc::new(TokenSource {
                config: config.clone(),
                state: Mutex::new(State::default()),
            })
        }))
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The `Authorization` value for the next request. Starts a refresh on the current
    /// actix arbiter when the token is due; fails when there is no valid token.
    pub fn header(self: &Arc<Self>) -> Result<String, String> {
        let now = Instant::now();
        let mut state = self.state();
        let (value, due, valid) = match &state.token {
            Some((value, expiry)) => (
                Some(value.clone()),
                expiry.is_some_and(|e| now + RENEW_BEFORE >= e),
                expiry.is_none_or(|e| now < e),
            ),
            None => (None, true, false),
        };
        if due && !state.refreshing {
            state.refreshing = true;
            let me = Arc::clone(self);
            actix_rt::spawn(async move {
                let result = me.fetch().await;
                let mut state = me.state();
                state.refreshing = false;
                if let Err(e) = result {
                    tracing::warn!(token_url = %me.config.token_url, "oauth2: {e}");
                }
            });
        }
        match (value, valid) {
            (Some(value), true) => Ok(value),
            _ => Err(format!(
                "oauth2: no valid token from {}{}",
                self.config.token_url,
                state
                    .last_error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default()
            )),
        }
    }

    /// Makes sure a token that is not yet due is at hand: asks for one if not.
    pub async fn ensure(&self) -> Result<(), String> {
        let fresh =
            self.state().token.as_ref().is_some_and(|(_, expiry)| {
                expiry.is_none_or(|e| Instant::now() + RENEW_BEFORE < e)
            });
        if fresh { Ok(()) } else { self.fetch().await }
    }

    /// Asks the token endpoint for a token now, and keeps it.
    pub async fn fetch(&self) -> Result<(), String> {
        let result = self.request().await;
        let mut state = self.state();
        match result {
            Ok(token) => {
                state.token = Some(token);
                state.last_error = None;
                Ok(())
            }
            Err(e) => {
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    /// One token request: `grant_type=client_credentials`, the scopes and
    /// `endpoint_params` in the form, the client's id and secret as basic auth (each
    /// URL-encoded first, as RFC 6749 §2.3.1 says).
    async fn request(&self) -> Result<(String, Option<Instant>), String> {
        let c = &self.config;
        let url = &c.token_url;
        let basic = basic_credentials(&c.client_id, &client_secret(c)?);
        let body = token_form(c);
        let tls = if url.starts_with("https://") {
            Some(super::build_tls_config(&c.tls_config, false).map_err(|e| format!("oauth2.{e}"))?)
        } else {
            None
        };
        let client = super::build_client(tls, true, TOKEN_TIMEOUT);
        let started = Instant::now();
        let mut response = client
            .post(url)
            .insert_header((CONTENT_TYPE, "application/x-www-form-urlencoded"))
            .insert_header((ACCEPT, "application/json"))
            .insert_header((AUTHORIZATION, format!("Basic {basic}")))
            .send_body(body)
            .await
            .map_err(|e| format!("token request to {url} failed: {e}"))?;
        let bytes = response
            .body()
            .limit(MAX_TOKEN_RESPONSE)
            .await
            .map_err(|e| format!("token response from {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!(
                "token endpoint {url} answered {}: {}",
                response.status(),
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ));
        }
        read_token(url, &bytes, started)
    }
}

/// The client secret, from `client_secret_file` (read at every request, so a rotated
/// file is used) or inline.
fn client_secret(c: &OAuth2) -> Result<String, String> {
    match &c.client_secret_file {
        Some(path) => std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| {
                format!(
                    "oauth2.client_secret_file: cannot read {}: {e}",
                    path.display()
                )
            }),
        None => Ok(c.client_secret.expose().to_string()),
    }
}

/// The request's form: `grant_type=client_credentials`, the scopes, `endpoint_params`.
fn token_form(c: &OAuth2) -> String {
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "client_credentials");
    if !c.scopes.is_empty() {
        form.append_pair("scope", &c.scopes.join(" "));
    }
    for (k, v) in &c.endpoint_params {
        form.append_pair(k, v);
    }
    form.finish()
}

/// Basic auth of the client's id and secret, each URL-encoded first (RFC 6749 §2.3.1).
fn basic_credentials(id: &str, secret: &str) -> String {
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        format!("{}:{}", encode(id), encode(secret)),
    )
}

/// The `Authorization` value and expiry a token response from `url` gives, its
/// lifetime counted from `started`.
fn read_token(
    url: &str,
    bytes: &[u8],
    started: Instant,
) -> Result<(String, Option<Instant>), String> {
    let json: serde_json::Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("token response from {url} is not JSON: {e}"))?;
    let token = json
        .get("access_token")
        .and_then(|t| t.as_str())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("token response from {url} has no access_token"))?;
    // `bearer` in any case means Bearer (Go's `Token.Type`); other types as sent.
    let kind = match json.get("token_type").and_then(|t| t.as_str()) {
        None | Some("") => "Bearer",
        Some(t) if t.eq_ignore_ascii_case("bearer") => "Bearer",
        Some(t) => t,
    };
    // Some endpoints send `expires_in` as a string.
    let expires_in = match json.get("expires_in") {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.parse().ok(),
        _ => None,
    };
    let expiry = expires_in
        .filter(|s| *s > 0)
        .map(|s| started + Duration::from_secs(s));
    Ok((format!("{kind} {token}"), expiry))
}
