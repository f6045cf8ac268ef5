//! `PodMonitor` (`monitoring.coreos.com/v1`): scrape the pods a selector picks, one job
//! per entry of `podMetricsEndpoints`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::common::{MonitorMeta, ScrapeLimits};
use super::http::{
    AttachMetadata, BasicAuth, OAuth2, ProxyConfig, RelabelConfig, SafeAuthorization, SafeTlsConfig,
};
use super::refs::{IntOrString, LabelSelector, NamespaceSelector, SecretKeySelector};
use crate::model::json::null_default;

/// A PodMonitor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct PodMonitor {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its spec.
    pub spec: PodMonitorSpec,
}

/// `PodMonitor.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodMonitorSpec {
    /// The pod label whose value becomes `job`.
    #[serde(deserialize_with = "null_default")]
    pub job_label: String,
    /// Pod labels copied onto the targets.
    #[serde(deserialize_with = "null_default")]
    pub pod_target_labels: Vec<String>,
    /// The endpoints to scrape, one job each.
    #[serde(deserialize_with = "null_default")]
    pub pod_metrics_endpoints: Vec<PodMetricsEndpoint>,
    /// Which pods.
    pub selector: LabelSelector,
    /// `RelabelConfig` (the default) or `RoleSelector`.
    pub selector_mechanism: Option<String>,
    /// Which namespaces.
    pub namespace_selector: NamespaceSelector,
    /// Limits, protocols, histograms and the scrape class.
    #[serde(flatten)]
    pub limits: ScrapeLimits,
    /// `attachMetadata`.
    pub attach_metadata: Option<AttachMetadata>,
    /// `bodySizeLimit`.
    pub body_size_limit: Option<String>,
}

/// One entry of `PodMonitor.spec.podMetricsEndpoints`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct PodMetricsEndpoint {
    /// The container port's name.
    pub port: Option<String>,
    /// The container port's number.
    pub port_number: Option<i32>,
    /// The container port, by number or name (deprecated).
    pub target_port: Option<IntOrString>,
    /// `metrics_path`.
    #[serde(deserialize_with = "null_default")]
    pub path: String,
    /// `http` or `https`, in any case.
    pub scheme: Option<String>,
    /// URL parameters.
    pub params: Option<BTreeMap<String, Vec<String>>>,
    /// `scrape_interval`.
    #[serde(deserialize_with = "null_default")]
    pub interval: String,
    /// `scrape_timeout`.
    #[serde(deserialize_with = "null_default")]
    pub scrape_timeout: String,
    /// `honor_labels`.
    pub honor_labels: bool,
    /// `honor_timestamps`.
    pub honor_timestamps: Option<bool>,
    /// `track_timestamps_staleness`.
    pub track_timestamps_staleness: Option<bool>,
    /// `metric_relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub metric_relabelings: Vec<RelabelConfig>,
    /// Rules appended to the generated `relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub relabelings: Vec<RelabelConfig>,
    /// Drop the targets of pods that have finished (default true).
    pub filter_running: Option<bool>,
    /// The scrape's HTTP client (`HTTPConfig`, inlined).
    #[serde(flatten)]
    pub http: HttpConfig,
}

/// A PodMonitor endpoint's HTTP client (`HTTPConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HttpConfig {
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// A bearer token from a Secret.
    pub bearer_token_secret: Option<SecretKeySelector>,
    /// TLS towards the target.
    pub tls_config: Option<SafeTlsConfig>,
    /// The proxy towards the target.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
    /// `follow_redirects`.
    pub follow_redirects: Option<bool>,
    /// `enable_http2`.
    #[serde(rename = "enableHttp2")]
    pub enable_http2: Option<bool>,
}
