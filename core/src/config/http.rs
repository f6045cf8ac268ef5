//! HTTP client settings of a discovery config: auth, TLS, proxy, headers (Prometheus'
//! `http_config`).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secret::Secret;

/// `basic_auth`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user name.
    #[serde(default)]
    pub username: String,
    /// The password.
    #[serde(default)]
    pub password: Secret,
    /// A file holding the password, read at each connection.
    #[serde(default)]
    pub password_file: Option<PathBuf>,
}

/// `authorization`: a header `Authorization: <type> <credentials>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authorization {
    /// The scheme; `Bearer` when empty.
    #[serde(default, rename = "type")]
    pub kind: String,
    /// The credentials.
    #[serde(default)]
    pub credentials: Secret,
    /// A file holding the credentials, re-read when it changes.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
}

/// `tls_config`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file of the CA(s) that sign the API server's certificate.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate, for client-certificate auth.
    #[serde(default)]
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the client certificate.
    #[serde(default)]
    pub key_file: Option<PathBuf>,
    /// The name to verify the server's certificate against, instead of the URL's host.
    #[serde(default)]
    pub server_name: Option<String>,
    /// Skip verification of the server's certificate. Logged as a warning when on.
    #[serde(default)]
    pub insecure_skip_verify: bool,
    /// The CA(s), inline PEM (instead of `ca_file`).
    #[serde(default)]
    pub ca: Option<String>,
    /// The client certificate, inline PEM (instead of `cert_file`).
    #[serde(default)]
    pub cert: Option<String>,
    /// The client certificate's private key, inline PEM (instead of `key_file`).
    #[serde(default)]
    pub key: Secret,
    /// The oldest TLS version to accept (`TLS10` ... `TLS13`).
    #[serde(default)]
    pub min_version: Option<TlsVersion>,
    /// The newest TLS version to offer.
    #[serde(default)]
    pub max_version: Option<TlsVersion>,
}

/// A TLS version, as Prometheus spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TlsVersion {
    /// TLS 1.0.
    #[serde(rename = "TLS10")]
    Tls10,
    /// TLS 1.1.
    #[serde(rename = "TLS11")]
    Tls11,
    /// TLS 1.2.
    #[serde(rename = "TLS12")]
    Tls12,
    /// TLS 1.3.
    #[serde(rename = "TLS13")]
    Tls13,
}

impl TlsVersion {
    /// The version's name as configs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsVersion::Tls10 => "TLS10",
            TlsVersion::Tls11 => "TLS11",
            TlsVersion::Tls12 => "TLS12",
            TlsVersion::Tls13 => "TLS13",
        }
    }
}

/// `oauth2`: an access token from an OAuth 2.0 token endpoint (client credentials
/// grant), sent as `Authorization: Bearer`, fetched again before it expires.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuth2 {
    /// The client's id.
    #[serde(default)]
    pub client_id: String,
    /// The client's secret.
    #[serde(default)]
    pub client_secret: Secret,
    /// A file holding the client's secret, read at each token request.
    #[serde(default)]
    pub client_secret_file: Option<PathBuf>,
    /// Scopes to ask for.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The token endpoint.
    #[serde(default)]
    pub token_url: String,
    /// Further form parameters of the token request.
    #[serde(default)]
    pub endpoint_params: std::collections::BTreeMap<String, String>,
    /// TLS settings for the token endpoint.
    #[serde(default)]
    pub tls_config: TlsConfig,
    /// A proxy for the token endpoint (refused: see [`crate::config::SdConfig::validate`]).
    #[serde(default)]
    pub proxy_url: Option<String>,
    /// Hosts reached without the proxy.
    #[serde(default)]
    pub no_proxy: Option<String>,
    /// Take the token endpoint's proxy from the environment.
    #[serde(default)]
    pub proxy_from_environment: bool,
    /// Headers for the proxy's CONNECT request.
    #[serde(default)]
    pub proxy_connect_header: std::collections::BTreeMap<String, Vec<Secret>>,
}

/// One `http_headers` entry: values sent as they are, secret values, and files whose
/// content is a value (read at each request).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpHeader {
    /// Values.
    #[serde(default)]
    pub values: Vec<String>,
    /// Values that are never printed.
    #[serde(default)]
    pub secrets: Vec<Secret>,
    /// Files holding values.
    #[serde(default)]
    pub files: Vec<PathBuf>,
}

/// How a job connects to the API server. Part of the group key: jobs that differ here
/// cannot share connections.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HttpClientConfig {
    /// A bearer token.
    #[serde(default)]
    pub bearer_token: Secret,
    /// A file holding a bearer token, re-read when it changes (service-account tokens
    /// are rotated).
    #[serde(default)]
    pub bearer_token_file: Option<PathBuf>,
    /// Basic auth.
    #[serde(default)]
    pub basic_auth: Option<BasicAuth>,
    /// A generic `Authorization` header.
    #[serde(default)]
    pub authorization: Option<Authorization>,
    /// TLS settings.
    #[serde(default)]
    pub tls_config: TlsConfig,
    /// OAuth 2.0 client credentials.
    #[serde(default)]
    pub oauth2: Option<OAuth2>,
    /// An HTTP proxy (`http://[user:password@]host:port`), reached with `CONNECT`.
    #[serde(default)]
    pub proxy_url: Option<String>,
    /// Hosts, domains (`.example.com`), IPs and CIDRs reached without the proxy,
    /// comma-separated.
    #[serde(default)]
    pub no_proxy: Option<String>,
    /// Take the proxy from `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` (and lower-case).
    #[serde(default)]
    pub proxy_from_environment: bool,
    /// Headers sent with the proxy's `CONNECT` request.
    #[serde(default)]
    pub proxy_connect_header: std::collections::BTreeMap<String, Vec<Secret>>,
    /// Headers sent with every request.
    #[serde(default)]
    pub http_headers: std::collections::BTreeMap<String, HttpHeader>,
    /// Allow HTTP/2 (default true, as Prometheus).
    #[serde(default = "default_true")]
    pub enable_http2: bool,
    /// Follow redirects (default true, as Prometheus).
    #[serde(default = "default_true")]
    pub follow_redirects: bool,
    /// A kubeconfig user's credential plugin: its token goes in `Authorization`, its
    /// client certificate into TLS. Set only from a kubeconfig, never by a config file.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub exec: Option<super::ExecConfig>,
}

fn default_true() -> bool {
    true
}

impl Default for HttpClientConfig {
    /// Prometheus' defaults: nothing set, HTTP/2 allowed, redirects followed.
    fn default() -> HttpClientConfig {
        HttpClientConfig {
            bearer_token: Secret::default(),
            bearer_token_file: None,
            basic_auth: None,
            authorization: None,
            tls_config: TlsConfig::default(),
            oauth2: None,
            proxy_url: None,
            no_proxy: None,
            proxy_from_environment: false,
            proxy_connect_header: Default::default(),
            http_headers: Default::default(),
            enable_http2: true,
            follow_redirects: true,
            exec: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let c = HttpClientConfig {
            bearer_token: Secret("s3cr3t-token".into()),
            basic_auth: Some(BasicAuth {
                username: "u".into(),
                password: Secret("hunter2".into()),
                password_file: None,
            }),
            ..HttpClientConfig::default()
        };
        let text = format!("{c:?}");
        assert!(
            !text.contains("s3cr3t") && !text.contains("hunter2"),
            "{text}"
        );
        assert!(text.contains("<secret>"));
    }
}
