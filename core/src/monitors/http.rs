//! The scrape's HTTP client as monitors write it: TLS, basic auth, authorization,
//! OAuth 2.0 and proxy settings, each credential a reference to a Secret or ConfigMap.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::refs::{SecretKeySelector, SecretOrConfigMap};
use crate::model::json::null_default;

/// TLS settings read from Secrets and ConfigMaps only (`SafeTLSConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SafeTlsConfig {
    /// The CA that verifies the target.
    pub ca: SecretOrConfigMap,
    /// The client certificate.
    pub cert: SecretOrConfigMap,
    /// The client key.
    pub key_secret: Option<SecretKeySelector>,
    /// The name the target's certificate must carry.
    pub server_name: Option<String>,
    /// Skip verifying the target's certificate.
    pub insecure_skip_verify: Option<bool>,
    /// `TLS10` to `TLS13`.
    pub min_version: Option<String>,
    /// `TLS10` to `TLS13`.
    pub max_version: Option<String>,
}

impl SafeTlsConfig {
    /// Every field unset (Go's `reflect.ValueOf(..).IsZero()`).
    pub fn is_zero(&self) -> bool {
        self == &SafeTlsConfig::default()
    }
}

/// TLS settings that may also name files in the scraper's container (`TLSConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct TlsConfig {
    /// The settings read from Secrets and ConfigMaps.
    #[serde(flatten)]
    pub safe: SafeTlsConfig,
    /// A CA file.
    #[serde(deserialize_with = "null_default")]
    pub ca_file: String,
    /// A client certificate file.
    #[serde(deserialize_with = "null_default")]
    pub cert_file: String,
    /// A client key file.
    #[serde(deserialize_with = "null_default")]
    pub key_file: String,
}

/// `basicAuth`: user name and password, each from a Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct BasicAuth {
    /// The user name's Secret key.
    pub username: SecretKeySelector,
    /// The password's Secret key.
    pub password: SecretKeySelector,
}

/// `authorization` with its credentials from a Secret (`SafeAuthorization`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SafeAuthorization {
    /// The scheme (default `Bearer`).
    #[serde(rename = "type", deserialize_with = "null_default")]
    pub kind: String,
    /// The credentials' Secret key.
    pub credentials: Option<SecretKeySelector>,
}

/// `authorization` that may also name a file (`Authorization`, scrape classes only).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Authorization {
    /// The scheme and the Secret's credentials.
    #[serde(flatten)]
    pub safe: SafeAuthorization,
    /// A file holding the credentials.
    #[serde(deserialize_with = "null_default")]
    pub credentials_file: String,
}

/// `oauth2`: the client credentials grant.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct OAuth2 {
    /// The client id, from a Secret or ConfigMap.
    pub client_id: SecretOrConfigMap,
    /// The client secret's Secret key.
    pub client_secret: SecretKeySelector,
    /// Where tokens come from.
    #[serde(deserialize_with = "null_default")]
    pub token_url: String,
    /// The scopes asked for.
    #[serde(deserialize_with = "null_default")]
    pub scopes: Vec<String>,
    /// Extra parameters of the token request.
    #[serde(deserialize_with = "null_default")]
    pub endpoint_params: BTreeMap<String, String>,
    /// TLS towards the token URL.
    pub tls_config: Option<SafeTlsConfig>,
    /// The proxy towards the token URL.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
}

/// Proxy settings (`ProxyConfig`, inlined in the structures that carry one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProxyConfig {
    /// The proxy's URL.
    pub proxy_url: Option<String>,
    /// Hosts reached without the proxy.
    pub no_proxy: Option<String>,
    /// Take the proxy from the environment.
    pub proxy_from_environment: Option<bool>,
    /// Headers sent to the proxy, their values from Secrets.
    pub proxy_connect_header: Option<BTreeMap<String, Vec<SecretKeySelector>>>,
}

impl ProxyConfig {
    /// Every field unset.
    pub fn is_zero(&self) -> bool {
        self == &ProxyConfig::default()
    }
}

/// A relabelling rule as monitors write it (`sourceLabels`, `targetLabel`, ...).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct RelabelConfig {
    /// The labels whose values are joined.
    #[serde(deserialize_with = "null_default")]
    pub source_labels: Vec<String>,
    /// What joins them.
    pub separator: Option<String>,
    /// The label written.
    #[serde(deserialize_with = "null_default")]
    pub target_label: String,
    /// The regular expression.
    #[serde(deserialize_with = "null_default")]
    pub regex: String,
    /// For `hashmod`.
    #[serde(deserialize_with = "null_default")]
    pub modulus: u64,
    /// What `replace` writes.
    pub replacement: Option<String>,
    /// The action, in any case (`Replace` or `replace`).
    #[serde(deserialize_with = "null_default")]
    pub action: String,
}

/// `attachMetadata`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct AttachMetadata {
    /// Attach the node's labels to pod targets.
    pub node: Option<bool>,
}
