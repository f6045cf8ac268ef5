//! kubesd's listener: the HTTP server that serves `service::api`'s endpoints, and the
//! exporter-toolkit web config it applies (TLS, basic auth, headers, rate limits).

mod client_certificate;
pub mod config;
pub mod guard;
pub(crate) mod http;
pub mod tls;
pub mod tls_settings;
