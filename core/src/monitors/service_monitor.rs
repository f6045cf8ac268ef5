//! `ServiceMonitor` (`monitoring.coreos.com/v1`): scrape the endpoints of the Services
//! a selector picks, one job per entry of `endpoints`.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::common::{MonitorMeta, ScrapeLimits};
use super::http::{
    AttachMetadata, BasicAuth, OAuth2, ProxyConfig, RelabelConfig, SafeAuthorization, TlsConfig,
};
use super::refs::{IntOrString, LabelSelector, NamespaceSelector, SecretKeySelector};
use crate::model::json::null_default;

/// A ServiceMonitor.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ServiceMonitor {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its spec.
    pub spec: ServiceMonitorSpec,
}

/// `ServiceMonitor.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ServiceMonitorSpec {
    /// The Service label whose value becomes `job`.
    #[serde(deserialize_with = "null_default")]
    pub job_label: String,
    /// Service labels copied onto the targets.
    #[serde(deserialize_with = "null_default")]
    pub target_labels: Vec<String>,
    /// Pod labels copied onto the targets.
    #[serde(deserialize_with = "null_default")]
    pub pod_target_labels: Vec<String>,
    /// The endpoints to scrape, one job each.
    #[serde(deserialize_with = "null_default")]
    pub endpoints: Vec<Endpoint>,
    /// Which Services.
    pub selector: LabelSelector,
    /// `RelabelConfig` (the default: keep rules) or `RoleSelector` (the API server
    /// filters).
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
    /// `Endpoints` or `EndpointSlice`, over the section's default.
    pub service_discovery_role: Option<String>,
}

/// One entry of `ServiceMonitor.spec.endpoints`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Endpoint {
    /// The Service port's name.
    #[serde(deserialize_with = "null_default")]
    pub port: String,
    /// The pod's container port, by number or name.
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
    /// TLS towards the target.
    pub tls_config: Option<TlsConfig>,
    /// A bearer token file in the scraper's container.
    #[serde(deserialize_with = "null_default")]
    pub bearer_token_file: String,
    /// A bearer token from a Secret.
    pub bearer_token_secret: Option<SecretKeySelector>,
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// `honor_labels`.
    pub honor_labels: bool,
    /// `honor_timestamps`.
    pub honor_timestamps: Option<bool>,
    /// `track_timestamps_staleness`.
    pub track_timestamps_staleness: Option<bool>,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// `metric_relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub metric_relabelings: Vec<RelabelConfig>,
    /// Rules appended to the generated `relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub relabelings: Vec<RelabelConfig>,
    /// The proxy towards the target.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
    /// `follow_redirects`.
    pub follow_redirects: Option<bool>,
    /// `enable_http2`.
    #[serde(rename = "enableHttp2")]
    pub enable_http2: Option<bool>,
    /// Drop the targets of pods that have finished (default true).
    pub filter_running: Option<bool>,
}
