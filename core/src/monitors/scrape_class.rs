//! A scrape class (`ScrapeClass`, the Prometheus resource's `scrapeClasses` and the
//! target allocator's `scrape_classes`): defaults a monitor takes by naming it in
//! `scrapeClass`, or that every monitor takes when it is the default.

use serde::Deserialize;

use super::http::{AttachMetadata, Authorization, RelabelConfig, TlsConfig};
use crate::model::json::null_default;

/// The keys of a scrape class, as the CRD writes them.
pub const SCRAPE_CLASS_KEYS: [&str; 8] = [
    "name",
    "default",
    "fallbackScrapeProtocol",
    "tlsConfig",
    "authorization",
    "relabelings",
    "metricRelabelings",
    "attachMetadata",
];

/// One scrape class.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScrapeClass {
    /// Its name, which monitors give in `scrapeClass`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// Whether monitors that name no class take this one.
    pub default: Option<bool>,
    /// `fallback_scrape_protocol` for monitors that set none.
    pub fallback_scrape_protocol: Option<String>,
    /// TLS settings merged into the monitor's.
    pub tls_config: Option<TlsConfig>,
    /// `authorization` merged into the monitor's.
    pub authorization: Option<Authorization>,
    /// Rules placed before the monitor's own `relabelings`.
    #[serde(deserialize_with = "null_default")]
    pub relabelings: Vec<RelabelConfig>,
    /// Rules placed before the monitor's own `metricRelabelings`.
    #[serde(deserialize_with = "null_default")]
    pub metric_relabelings: Vec<RelabelConfig>,
    /// `attachMetadata` for monitors that set none.
    pub attach_metadata: Option<AttachMetadata>,
}
