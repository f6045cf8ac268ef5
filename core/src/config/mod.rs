//! Configuration: a scrape job's `kubernetes_sd_config` (as Prometheus writes it), its
//! HTTP client settings, and the engine's own tuning knobs.

mod engine;
mod http;
mod sd;

pub use engine::{EngineOptions, WireEncoding};
pub use http::{
    Authorization, BasicAuth, HttpClientConfig, HttpHeader, OAuth2, Secret, TlsConfig, TlsVersion,
};
pub use sd::{ConfigError, NamespaceDiscovery, SdConfig, watched_roles};
