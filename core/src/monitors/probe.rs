//! `Probe` (`monitoring.coreos.com/v1`): probe static targets or the hosts of the
//! Ingresses a selector picks through a prober (blackbox exporter); one job.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::common::{MonitorMeta, ScrapeLimits};
use super::http::{
    BasicAuth, OAuth2, ProxyConfig, RelabelConfig, SafeAuthorization, SafeTlsConfig,
};
use super::refs::{LabelSelector, NamespaceSelector, SecretKeySelector};
use crate::model::json::null_default;

/// A Probe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Probe {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its spec.
    pub spec: ProbeSpec,
}

/// `Probe.spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProbeSpec {
    /// The `job` label's value.
    #[serde(deserialize_with = "null_default")]
    pub job_name: String,
    /// The prober.
    pub prober: ProberSpec,
    /// The prober's `module` parameter.
    #[serde(deserialize_with = "null_default")]
    pub module: String,
    /// What to probe.
    pub targets: ProbeTargets,
    /// `scrape_interval`.
    #[serde(deserialize_with = "null_default")]
    pub interval: String,
    /// `scrape_timeout`.
    #[serde(deserialize_with = "null_default")]
    pub scrape_timeout: String,
    /// TLS towards the prober.
    pub tls_config: Option<SafeTlsConfig>,
    /// A bearer token from a Secret (an empty name means none).
    pub bearer_token_secret: SecretKeySelector,
    /// `basic_auth`.
    pub basic_auth: Option<BasicAuth>,
    /// `oauth2`.
    pub oauth2: Option<OAuth2>,
    /// `metric_relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub metric_relabelings: Vec<RelabelConfig>,
    /// `authorization`.
    pub authorization: Option<SafeAuthorization>,
    /// Limits, protocols, histograms and the scrape class.
    #[serde(flatten)]
    pub limits: ScrapeLimits,
    /// Parameters of the prober's URL.
    #[serde(deserialize_with = "null_default")]
    pub params: Vec<ProbeParam>,
}

/// `Probe.spec.prober`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ProberSpec {
    /// The prober's `host:port`.
    #[serde(deserialize_with = "null_default")]
    pub url: String,
    /// `http` or `https`, in any case.
    pub scheme: Option<String>,
    /// The prober's path (`metrics_path`, even when empty).
    #[serde(deserialize_with = "null_default")]
    pub path: String,
    /// The proxy towards the prober.
    #[serde(flatten)]
    pub proxy: ProxyConfig,
}

/// `Probe.spec.targets`: static targets win over an Ingress selector.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProbeTargets {
    /// Hosts listed.
    pub static_config: Option<ProbeTargetStaticConfig>,
    /// The hosts of Ingresses.
    pub ingress: Option<ProbeTargetIngress>,
}

/// `targets.staticConfig`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProbeTargetStaticConfig {
    /// The hosts.
    #[serde(rename = "static", deserialize_with = "null_default")]
    pub targets: Vec<String>,
    /// Labels every target gets.
    pub labels: Option<BTreeMap<String, String>>,
    /// Rules appended to the generated `relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub relabeling_configs: Vec<RelabelConfig>,
}

/// `targets.ingress`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ProbeTargetIngress {
    /// Which Ingresses.
    pub selector: LabelSelector,
    /// Which namespaces.
    pub namespace_selector: NamespaceSelector,
    /// Rules appended to the generated `relabel_configs`.
    #[serde(deserialize_with = "null_default")]
    pub relabeling_configs: Vec<RelabelConfig>,
}

/// One of `Probe.spec.params`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ProbeParam {
    /// The parameter.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// Its values.
    #[serde(deserialize_with = "null_default")]
    pub values: Vec<String>,
}
