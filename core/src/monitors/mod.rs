//! prometheus-operator's resources (`monitoring.coreos.com`) as far as translating them
//! into scrape jobs reads them: ServiceMonitor, PodMonitor and Probe (`v1`), ScrapeConfig
//! (`v1alpha1`), and the Secrets, ConfigMaps and Namespaces they refer to. Decoded from
//! the API server's JSON or from YAML; unknown fields are tolerated (the CRDs grow) and
//! `null` reads as empty, as Go reads them.
//!
//! What a monitor *means* (its scrape jobs) is the `kubesd` crate's `monitors` module;
//! this is only its shape, and [`LabelSelector`]'s semantics, which selection shares.

mod common;
mod http;
mod objects;
mod pod_monitor;
mod probe;
mod refs;
mod scrape_class;
mod scrape_config;
mod selector;
mod service_monitor;

pub use common::{MonitorMeta, NativeHistogramConfig, Quantity, ScrapeLimits};
pub use http::{
    AttachMetadata, Authorization, BasicAuth, OAuth2, ProxyConfig, RelabelConfig,
    SafeAuthorization, SafeTlsConfig, TlsConfig,
};
pub use objects::{ConfigMapObject, NamespaceObject, SecretKeyError, SecretObject};
pub use pod_monitor::{HttpConfig, PodMetricsEndpoint, PodMonitor, PodMonitorSpec};
pub use probe::{
    Probe, ProbeParam, ProbeSpec, ProbeTargetIngress, ProbeTargetStaticConfig, ProbeTargets,
    ProberSpec,
};
pub use refs::{
    ConfigMapKeySelector, IntOrString, LabelSelector, LabelSelectorRequirement, NamespaceSelector,
    SecretKeySelector, SecretOrConfigMap,
};
pub use scrape_class::{SCRAPE_CLASS_KEYS, ScrapeClass};
pub use scrape_config::{
    FileSdConfig, HttpSdConfig, K8sSelectorConfig, KubernetesSdConfig, NamespaceDiscovery,
    ScrapeConfig, ScrapeConfigSpec, StaticConfig,
};
pub use selector::SelectorError;
pub use service_monitor::{Endpoint, ServiceMonitor, ServiceMonitorSpec};
