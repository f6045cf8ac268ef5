//! The web configuration file (`kubesd run --web.config.file`): Prometheus'
//! exporter-toolkit format (`docs/web-configuration.md` there), read and checked into
//! [`WebSettings`], the settings the listener applies.
//!
//! Unknown keys are errors, as in the toolkit (which reads the file strictly), and every
//! error names the key. Relative file names are taken from the file's directory, as the
//! toolkit does.
//!
//! What rustls cannot do is said at the key: TLS 1.0 and 1.1 (a `min_version` below
//! TLS12 is served as TLS12), the CBC and RSA-key-exchange cipher suites, the curve
//! P-521, and `client_allowed_sans`. `http2` is accepted; the listener speaks HTTP/1.1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::{HeaderName, HeaderValue};
use rustls::crypto::ring::{cipher_suite, kx_group};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, SupportedCipherSuite};
use serde::Deserialize;

use crate::service::web::tls_settings::{ClientAuth, TlsSettings, TlsVersion, client_verifier};

/// A web config file that cannot be used, naming the key and saying why.
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    /// The file could not be read.
    #[error("{path}: cannot read the web config file: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
    /// Not YAML of the expected shape (unknown key, wrong type).
    #[error("{path}: {reason}")]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message, which names the key.
        reason: String,
    },
    /// A key's value is not acceptable.
    #[error("{path}: {key}: {reason}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The key, e.g. `tls_server_config.min_version`.
        key: String,
        /// Why.
        reason: String,
    },
}

/// The file as written (exporter-toolkit's `Config`).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct WebConfigFile {
    #[serde(default)]
    tls_server_config: Option<TlsServerConfigFile>,
    #[serde(default)]
    http_server_config: Option<HttpServerConfigFile>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rate_limit: Option<RateLimitFile>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TlsServerConfigFile {
    cert: Option<String>,
    key: Option<String>,
    client_ca: Option<String>,
    cert_file: Option<String>,
    key_file: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    client_allowed_sans: Option<Vec<String>>,
    min_version: Option<String>,
    max_version: Option<String>,
    cipher_suites: Option<Vec<String>>,
    prefer_server_cipher_suites: Option<bool>,
    curve_preferences: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct HttpServerConfigFile {
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RateLimitFile {
    #[serde(default)]
    interval: Option<String>,
    #[serde(default)]
    burst: Option<u32>,
}

/// The toolkit's request rate limit: a token bucket over all requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// One token comes back per interval.
    pub interval: Duration,
    /// At most this many tokens.
    pub burst: u32,
}

/// A checked web config: what the listener does.
pub struct WebSettings {
    /// TLS, if configured.
    pub tls: Option<TlsSettings>,
    /// User name → bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
    /// Headers added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The toolkit's request rate limit, if set.
    pub rate_limit: Option<RateLimit>,
}

impl std::fmt::Debug for WebSettings {
    /// Names the users, never their hashes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSettings")
            .field("tls", &self.tls.is_some())
            .field("users", &self.users.keys().collect::<Vec<_>>())
            .field("headers", &self.headers.len())
            .field("rate_limit", &self.rate_limit)
            .finish()
    }
}

/// The headers the toolkit allows, and the values it checks.
const ALLOWED_HEADERS: [&str; 5] = [
    "Content-Security-Policy",
    "X-Frame-Options",
    "X-Content-Type-Options",
    "X-XSS-Protection",
    "Strict-Transport-Security",
];

/// Reads and checks the web config at `path`.
pub fn load_web_config(path: &Path) -> Result<WebSettings, WebConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| WebConfigError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    parse_web_config(&text, path)
}

/// Checks the web config `text`, read from `path` (relative file names are taken from
/// its directory).
pub fn parse_web_config(text: &str, path: &Path) -> Result<WebSettings, WebConfigError> {
    let file: WebConfigFile = if text.trim().is_empty() {
        WebConfigFile::default()
    } else {
        serde_norway::from_str::<Option<WebConfigFile>>(text)
            .map_err(|e| WebConfigError::Syntax {
                path: path.to_path_buf(),
                reason: e.to_string(),
            })?
            .unwrap_or_default()
    };
    let dir = path.parent().unwrap_or(Path::new("."));
    let invalid = |key: &str, reason: String| WebConfigError::Invalid {
        path: path.to_path_buf(),
        key: key.to_string(),
        reason,
    };

    let tls = match file.tls_server_config {
        Some(t) => Some(tls_settings(t, dir).map_err(|(key, reason)| invalid(&key, reason))?),
        None => None,
    };

    let users = basic_auth_users(file.basic_auth_users.unwrap_or_default())
        .map_err(|(key, reason)| invalid(&key, reason))?;
    let http = file.http_server_config.unwrap_or_default();
    let _ = http.http2; // accepted: the listener serves HTTP/1.1 either way
    let headers = response_headers(http.headers.unwrap_or_default())
        .map_err(|(key, reason)| invalid(&key, reason))?;
    let rate_limit = match file.rate_limit {
        None => None,
        Some(r) => rate_limit(r).map_err(|reason| invalid("rate_limit.interval", reason))?,
    };

    Ok(WebSettings {
        tls,
        users,
        headers,
        rate_limit,
    })
}

/// A field at fault (its key in the file) and what is wrong with it.
type KeyProblem = (String, String);

/// `basic_auth_users`, each hash checked now so that a typo is found at start, not at
/// the first request.
fn basic_auth_users(
    users: BTreeMap<String, String>,
) -> Result<BTreeMap<String, String>, KeyProblem> {
    for (user, hash) in &users {
        if hash.parse::<bcrypt::HashParts>().is_err() {
            return Err((
                format!("basic_auth_users.{user}"),
                "not a bcrypt hash (expected e.g. $2y$10$ and 53 more characters)".into(),
            ));
        }
    }
    Ok(users)
}

/// `http_server_config.headers`: only the headers exporter-toolkit allows, with the
/// values it allows; a blank value unsets the header.
fn response_headers(
    headers: BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, KeyProblem> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let key = format!("http_server_config.headers.{name}");
        let Some(canonical) = ALLOWED_HEADERS
            .iter()
            .find(|h| h.eq_ignore_ascii_case(&name))
        else {
            let allowed = ALLOWED_HEADERS.join(", ");
            return Err((
                key,
                format!("not a header that can be set (allowed: {allowed})"),
            ));
        };
        if value.is_empty() {
            continue; // "Unset if blank."
        }
        match *canonical {
            "X-Frame-Options"
                if !["deny", "sameorigin"].contains(&value.to_ascii_lowercase().as_str()) =>
            {
                return Err((key, "must be deny or sameorigin".into()));
            }
            "X-Content-Type-Options" if !value.eq_ignore_ascii_case("nosniff") => {
                return Err((key, "must be nosniff".into()));
            }
            _ => {}
        }
        let Ok(value) = HeaderValue::from_str(&value) else {
            return Err((key, "not a valid header value".into()));
        };
        out.push((HeaderName::from_static(header_static(canonical)), value));
    }
    Ok(out)
}

/// `rate_limit`: off when its interval is absent or zero; a burst of at least one.
fn rate_limit(r: RateLimitFile) -> Result<Option<RateLimit>, String> {
    let interval = match r.interval.as_deref() {
        None | Some("0" | "0s") => Duration::ZERO,
        Some(text) => {
            humantime::parse_duration(text).map_err(|e| format!("not a duration ({e})"))?
        }
    };
    Ok((!interval.is_zero()).then_some(RateLimit {
        interval,
        burst: r.burst.unwrap_or(0).max(1),
    }))
}

/// `HeaderName::from_static` needs lower case.
fn header_static(canonical: &str) -> &'static str {
    match canonical {
        "Content-Security-Policy" => "content-security-policy",
        "X-Frame-Options" => "x-frame-options",
        "X-Content-Type-Options" => "x-content-type-options",
        "X-XSS-Protection" => "x-xss-protection",
        _ => "strict-transport-security",
    }
}

/// A key and what is wrong with its value.
type KeyError = (String, String);

fn key_err(key: &str, reason: impl Into<String>) -> KeyError {
    (format!("tls_server_config.{key}"), reason.into())
}

fn tls_settings(t: TlsServerConfigFile, dir: &Path) -> Result<TlsSettings, KeyError> {
    let resolve = |file: &str| -> PathBuf {
        let p = Path::new(file);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    };
    let certified_key = certified_key(&t, &resolve)?;
    let client_auth = client_auth_type(t.client_auth_type.as_deref())?;
    let client_roots = client_roots(&t, client_auth, &resolve)?;
    if t.client_allowed_sans
        .as_ref()
        .is_some_and(|s| !s.is_empty())
    {
        return Err(key_err(
            "client_allowed_sans",
            "not supported by kubesd: restrict clients by the client CA instead",
        ));
    }
    let versions = tls_versions(t.min_version.as_deref(), t.max_version.as_deref())?;
    let tls12_suites = tls12_suites(t.cipher_suites.unwrap_or_default())?;
    let curves = curves(t.curve_preferences.unwrap_or_default())?;
    let client_verifier =
        client_verifier(client_auth, client_roots).map_err(|e| key_err("client_ca_file", e))?;
    Ok(TlsSettings {
        certified_key: Arc::new(certified_key),
        client_auth,
        client_verifier,
        versions,
        tls12_suites,
        prefer_server_cipher_suites: t.prefer_server_cipher_suites.unwrap_or(true),
        curves,
    })
}

/// The certificate and key: inline or from files, exactly one of each, and the key
/// fitting the certificate.
fn certified_key(
    t: &TlsServerConfigFile,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<CertifiedKey, KeyError> {
    let certs: Vec<CertificateDer<'static>> = match (&t.cert, &t.cert_file) {
        (Some(_), Some(_)) => return Err(key_err("cert", "give cert or cert_file, not both")),
        (Some(pem), None) => pem_certs(pem.as_bytes()).map_err(|e| key_err("cert", e))?,
        (None, Some(f)) if !f.is_empty() => {
            let path = resolve(f);
            let bytes = std::fs::read(&path).map_err(|e| {
                key_err("cert_file", format!("cannot read {}: {e}", path.display()))
            })?;
            pem_certs(&bytes)
                .map_err(|e| key_err("cert_file", format!("{}: {e}", path.display())))?
        }
        _ => return Err(key_err("cert_file", "missing one of cert or cert_file")),
    };
    let key: PrivateKeyDer<'static> = match (&t.key, &t.key_file) {
        (Some(_), Some(_)) => return Err(key_err("key", "give key or key_file, not both")),
        // The key's own parse error could quote it: say only that it is not a key.
        (Some(pem), None) => PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .map_err(|_| key_err("key", "not a PEM private key"))?,
        (None, Some(f)) if !f.is_empty() => {
            let path = resolve(f);
            let bytes = std::fs::read(&path)
                .map_err(|e| key_err("key_file", format!("cannot read {}: {e}", path.display())))?;
            PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| {
                key_err(
                    "key_file",
                    format!("{}: not a PEM private key", path.display()),
                )
            })?
        }
        _ => return Err(key_err("key_file", "missing one of key or key_file")),
    };
    let provider = rustls::crypto::ring::default_provider();
    CertifiedKey::from_der(certs, key, &provider).map_err(|e| {
        key_err(
            "key_file",
            format!("the key does not fit the certificate: {e}"),
        )
    })
}

/// `client_auth_type`, by the names Go's `tls.ClientAuthType` has.
fn client_auth_type(name: Option<&str>) -> Result<ClientAuth, KeyError> {
    Ok(match name.unwrap_or("NoClientCert") {
        "" | "NoClientCert" => ClientAuth::NoClientCert,
        "RequestClientCert" => ClientAuth::RequestClientCert,
        // "RequireClientCert": the toolkit's older name, still read.
        "RequireAnyClientCert" | "RequireClientCert" => ClientAuth::RequireAnyClientCert,
        "VerifyClientCertIfGiven" => ClientAuth::VerifyClientCertIfGiven,
        "RequireAndVerifyClientCert" => ClientAuth::RequireAndVerifyClientCert,
        other => {
            return Err(key_err(
                "client_auth_type",
                format!(
                    "invalid ClientAuth: {other} (one of NoClientCert, RequestClientCert, \
                     RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert)"
                ),
            ));
        }
    })
}

/// The CAs client certificates are verified against: `client_ca` or `client_ca_file`,
/// or, as Go, the public CAs when the policy verifies and none is given.
fn client_roots(
    t: &TlsServerConfigFile,
    client_auth: ClientAuth,
    resolve: &dyn Fn(&str) -> PathBuf,
) -> Result<Option<Arc<RootCertStore>>, KeyError> {
    let ca_pem: Option<(Vec<u8>, &str)> = match (&t.client_ca, &t.client_ca_file) {
        (Some(_), Some(_)) => {
            return Err(key_err(
                "client_ca",
                "give client_ca or client_ca_file, not both",
            ));
        }
        (Some(pem), None) => Some((pem.as_bytes().to_vec(), "client_ca")),
        (None, Some(f)) if !f.is_empty() => {
            let path = resolve(f);
            let bytes = std::fs::read(&path).map_err(|e| {
                key_err(
                    "client_ca_file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            Some((bytes, "client_ca_file"))
        }
        _ => None,
    };
    let verifying = matches!(
        client_auth,
        ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert
    );
    Ok(match ca_pem {
        Some(_) if client_auth == ClientAuth::NoClientCert => {
            return Err(key_err(
                "client_ca_file",
                "client CA's have been configured without a Client Auth Policy \
                 (set client_auth_type, e.g. to RequireAndVerifyClientCert)",
            ));
        }
        Some((pem, key)) => {
            let mut roots = RootCertStore::empty();
            for cert in pem_certs(&pem).map_err(|e| key_err(key, e))? {
                roots
                    .add(cert)
                    .map_err(|e| key_err(key, format!("not a usable CA certificate: {e}")))?;
            }
            Some(Arc::new(roots))
        }
        // As Go, which verifies against the system's roots when no client CA is given:
        // the public CAs (webpki-roots).
        None if verifying => Some(Arc::new(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })),
        None => None,
    })
}

/// `min_version` and `max_version`: rustls serves TLS 1.2 and 1.3, so a lower minimum
/// means 1.2 and a lower maximum is refused.
fn tls_versions(
    min: Option<&str>,
    max: Option<&str>,
) -> Result<(TlsVersion, TlsVersion), KeyError> {
    let version = |key: &str, v: &str| -> Result<Option<TlsVersion>, KeyError> {
        match v {
            "TLS13" => Ok(Some(TlsVersion::Tls13)),
            "TLS12" => Ok(Some(TlsVersion::Tls12)),
            // rustls serves no version below 1.2.
            "TLS11" | "TLS10" => Ok(None),
            other => Err(key_err(key, format!("unknown TLS version: {other}"))),
        }
    };
    let min = match min {
        None | Some("") => TlsVersion::Tls12,
        Some(v) => version("min_version", v)?.unwrap_or(TlsVersion::Tls12),
    };
    let max = match max {
        None | Some("") => TlsVersion::Tls13,
        Some(v) => version("max_version", v)?.ok_or_else(|| {
            key_err(
                "max_version",
                format!("{v}: rustls serves TLS12 and TLS13 only"),
            )
        })?,
    };
    if min > max {
        return Err(key_err("min_version", "is above max_version"));
    }
    Ok((min, max))
}

/// `cipher_suites`, by Go's names, each one rustls has.
fn tls12_suites(names: Vec<String>) -> Result<Vec<SupportedCipherSuite>, KeyError> {
    names
        .into_iter()
        .map(|name| {
            tls12_suite(&name).ok_or_else(|| {
                key_err(
                    "cipher_suites",
                    format!(
                        "{name}: unknown or not supported by rustls (supported: the ECDHE \
                         AES-GCM and ChaCha20-Poly1305 suites)"
                    ),
                )
            })
        })
        .collect()
}

/// `curve_preferences`, by Go's names, each one rustls has.
fn curves(
    names: Vec<String>,
) -> Result<Vec<&'static dyn rustls::crypto::SupportedKxGroup>, KeyError> {
    let mut curves = Vec::new();
    for name in names {
        let group: &'static dyn rustls::crypto::SupportedKxGroup = match name.as_str() {
            "X25519" => kx_group::X25519,
            "CurveP256" => kx_group::SECP256R1,
            "CurveP384" => kx_group::SECP384R1,
            "CurveP521" => {
                return Err(key_err(
                    "curve_preferences",
                    "CurveP521 is not supported by rustls (X25519, CurveP256 and CurveP384 are)",
                ));
            }
            other => {
                return Err(key_err(
                    "curve_preferences",
                    format!("unknown curve: {other}"),
                ));
            }
        };
        curves.push(group);
    }
    Ok(curves)
}

/// The TLS 1.2 suite Go calls `name`, if rustls has it.
fn tls12_suite(name: &str) -> Option<SupportedCipherSuite> {
    Some(match name {
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => {
            cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        }
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => {
            cipher_suite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        }
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cipher_suite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => {
            cipher_suite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => {
            cipher_suite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
        }
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" => {
            cipher_suite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        _ => return None,
    })
}

/// The certificates of a PEM text; at least one.
fn pem_certs(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM certificates: {e}"))?;
    if certs.is_empty() {
        return Err("no PEM certificate found".into());
    }
    Ok(certs)
}
