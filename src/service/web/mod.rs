//! kubesd's listener: the HTTP endpoints (`/sd`, views, `/metrics`, health, reload and
//! the APIs of `service::api` and `service::fleet`), the exporter-toolkit web config
//! (TLS, basic auth, headers, rate limits) and the process metrics.

pub mod config;
pub mod go_query;
pub mod guard;
pub(crate) mod http;
pub(crate) mod process_metrics;
pub mod tls;
pub mod tls_settings;
