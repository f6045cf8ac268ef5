//! HTTP client settings of a scrape job: auth, TLS, proxy (Prometheus' `http_config`).

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// A secret string: compared and hashed like any string (groups are keyed by it), but
/// never printed.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str("<secret>")
        }
    }
}

impl Secret {
    /// The secret's value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

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
}

/// How a job connects to the API server. Part of the group key: jobs that differ here
/// cannot share connections.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// An HTTP proxy. Not supported yet: a config that sets it is rejected at start.
    #[serde(default)]
    pub proxy_url: Option<String>,
    /// Follow redirects (default true, as Prometheus).
    #[serde(default = "default_true")]
    pub follow_redirects: bool,
}

fn default_true() -> bool {
    true
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
