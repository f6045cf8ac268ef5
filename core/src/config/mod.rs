//! Configuration: a scrape job's `kubernetes_sd_config` (as Prometheus writes it), its
//! HTTP client settings, and the engine's own tuning knobs.

mod engine;
mod exec;
mod headers;
mod http;
mod list_mode;
mod proxy;
mod sd;
mod secret;

pub use engine::{EngineOptions, WireEncoding};
pub use exec::{ExecApiVersion, ExecCluster, ExecConfig, ExecEnv, InteractiveMode};
pub use headers::check_http_headers;
pub use http::{
    Authorization, BasicAuth, HttpClientConfig, HttpHeader, OAuth2, TlsConfig, TlsVersion,
};
pub use list_mode::{ListMode, UnknownListMode};
pub use proxy::{ProxyError, ProxyRoute, bypasses, check_proxy_url, proxy_for};
pub use sd::{ConfigError, NamespaceDiscovery, SdConfig, watched_roles};
pub use secret::Secret;
