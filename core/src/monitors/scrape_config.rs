//! `ScrapeConfig` (`monitoring.coreos.com/v1alpha1`): a scrape job written nearly as
//! Prometheus writes one. kubesd reads its static, file, HTTP and Kubernetes discovery;
//! the other discovery mechanisms are kept as written so that a resource using them
//! can be named and refused.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::common::{MonitorMeta, ScrapeLimits};
use super::http::{
    AttachMetadata, BasicAuth, OAuth2, ProxyConfig, RelabelConfig, SafeAuthorization, SafeTlsConfig,
};
use crate::model::json::null_default;

/// A ScrapeConfig.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ScrapeConfig {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its spec.
    pub spec: ScrapeConfigSpec,
}

/// `ScrapeConfig.spec`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScrapeConfigSpec {
    /// The `job` label's value.
    pub job_name: Option<String>,
    /// `static_configs`.
    #[serde(rename = "staticConfigs", deserialize_with = "null_default")]
    pub static_configs: Vec<StaticConfig>,
    /// `file_sd_configs`.
    #[serde(rename = "fileSDConfigs", deserialize_with = "null_default")]
    pub file_sd_configs: Vec<FileSdConfig>,
    /// `http_sd_configs`.
    #[serde(rename = "httpSDConfigs", deserialize_with = "null_default")]
    pub http_sd_configs: Vec<HttpSdConfig>,
    /// `kubernetes_sd_configs`.
    #[serde(rename = "kubernetesSDConfigs", deserialize_with = "null_default")]
    pub kubernetes_sd_configs: Vec<KubernetesSdConfig>,
    /// `relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub relabelings: Vec<RelabelConfig>,
    /// `metrics_path`.
    pub metrics_path: Option<String>,
    /// `scrape_interval`.
    pub scrape_interval: Option<String>,
    /// `scrape_timeout`.
    pub scrape_timeout: Option<String>,
    /// `honor_timestamps`.
    pub honor_timestamps: Option<bool>,
    /// `track_timestamps_staleness`.
    pub track_timestamps_staleness: Option<bool>,
    /// `honor_labels`.
    pub honor_labels: Option<bool>,
    /// URL parameters.
    #[serde(deserialize_with = "null_default")]
    pub params: BTreeMap<String, Vec<String>>,
    /// `http` or `https`, in any case.
    pub scheme: Option<String>,
    /// `enable_compression`.
    pub enable_compression: Option<bool>,
    /// `enable_http2`.
    #[serde(rename = "enableHTTP2")]
    pub enable_http2: Option<bool>,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// TLS towards the targets.
    pub tls_config: Option<SafeTlsConfig>,
    /// `metric_relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub metric_relabelings: Vec<RelabelConfig>,
    /// `metric_name_validation_scheme`.
    pub name_validation_scheme: Option<String>,
    /// `metric_name_escaping_scheme`.
    pub name_escaping_scheme: Option<String>,
    /// Limits, protocols, histograms and the scrape class.
    #[serde(flatten)]
    pub limits: ScrapeLimits,
    /// The proxy towards the targets.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
    /// Every other field as written: the other discovery mechanisms
    /// (`consulSDConfigs`, `ec2SDConfigs`, ...) and fields newer than this model.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl ScrapeConfigSpec {
    /// The discovery mechanisms it uses that kubesd does not read: the fields of
    /// [`ScrapeConfigSpec::other`] named `…SDConfigs` that list something.
    pub fn unsupported_discovery(&self) -> Vec<&str> {
        self.other
            .iter()
            .filter(|(key, value)| {
                key.ends_with("SDConfigs") && value.as_array().is_some_and(|a| !a.is_empty())
            })
            .map(|(key, _)| key.as_str())
            .collect()
    }
}

/// One of `staticConfigs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct StaticConfig {
    /// `host:port` targets.
    #[serde(deserialize_with = "null_default")]
    pub targets: Vec<String>,
    /// Labels every target gets.
    pub labels: Option<BTreeMap<String, String>>,
}

/// One of `fileSDConfigs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct FileSdConfig {
    /// The files, in the scraper's container.
    #[serde(deserialize_with = "null_default")]
    pub files: Vec<String>,
    /// How often to read them.
    pub refresh_interval: Option<String>,
}

/// One of `httpSDConfigs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpSdConfig {
    /// The URL that lists the targets.
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    /// How often to read it.
    pub refresh_interval: Option<String>,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// The proxy.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
    /// TLS.
    pub tls_config: Option<SafeTlsConfig>,
    /// `follow_redirects`.
    pub follow_redirects: Option<bool>,
    /// `enable_http2`.
    #[serde(rename = "enableHTTP2")]
    pub enable_http2: Option<bool>,
}

/// One of `kubernetesSDConfigs`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct KubernetesSdConfig {
    /// The API server (default: the cluster the scraper runs in).
    pub api_server: Option<String>,
    /// `Pod`, `Service`, `Endpoints`, `EndpointSlice`, `Node` or `Ingress`.
    #[serde(deserialize_with = "null_default")]
    pub role: String,
    /// Which namespaces.
    pub namespaces: Option<NamespaceDiscovery>,
    /// `attach_metadata`.
    pub attach_metadata: Option<AttachMetadata>,
    /// Label and field selectors per role.
    #[serde(deserialize_with = "null_default")]
    pub selectors: Vec<K8sSelectorConfig>,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// The proxy.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
    /// `follow_redirects`.
    pub follow_redirects: Option<bool>,
    /// `enable_http2`.
    #[serde(rename = "enableHTTP2")]
    pub enable_http2: Option<bool>,
    /// TLS.
    pub tls_config: Option<SafeTlsConfig>,
}

/// `kubernetesSDConfigs[].namespaces`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NamespaceDiscovery {
    /// Include the scraper's own namespace.
    #[serde(rename = "ownNamespace")]
    pub own_namespace: Option<bool>,
    /// These namespaces.
    #[serde(deserialize_with = "null_default")]
    pub names: Vec<String>,
}

/// One of `kubernetesSDConfigs[].selectors`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct K8sSelectorConfig {
    /// The role it restricts.
    #[serde(deserialize_with = "null_default")]
    pub role: String,
    /// A label selector.
    pub label: Option<String>,
    /// A field selector.
    pub field: Option<String>,
}
