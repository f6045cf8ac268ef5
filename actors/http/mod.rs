//! Talking to the API server: where it is (explicit or in-cluster), how to authenticate
//! (tokens re-read when their file changes, basic auth, OAuth 2.0, client
//! certificates, kubeconfig credential plugins), TLS, `http_headers`, proxies (HTTP
//! CONNECT tunnels), and the client the URL watchers use: [`ApiClient`], which answers
//! each LIST attempt and watch with a stream of decoded items.
//!
//! This is the I/O half of talking to the API server, kept out of `kubesd-core` as
//! kube-rs keeps `kube-client` out of `kube-core`: what can be decided from the config
//! alone (which proxy, `no_proxy`, whether headers are valid) is the core's
//! ([`crate::config`]), and re-exported here under the names it has always had.

mod api_client;
mod credentials;
mod endpoint;
mod exec_plugin;
mod exec_source;
mod failure;
mod headers;
mod initial_events;
mod list_reader;
mod list_requests;
mod oauth2;
mod proxy;
mod received;
mod tls;
mod user_agent;
mod watch_reader;

pub use api_client::{ApiClient, ClientSetup};
pub use credentials::{Credentials, CredentialsError};
pub use endpoint::{
    ApiEndpoint, IN_CLUSTER_CA_FILE, IN_CLUSTER_TOKEN_FILE, resolve_endpoint, resolve_endpoint_with,
};
pub use exec_plugin::{PluginCredential, PluginError, PluginProblem, run_plugin};
pub use exec_source::{ExecClientCert, ExecHeader, ExecSource};
pub use failure::{Failure, status_text, status_words};
pub use headers::read_http_headers;
pub use kubesd_core::config::{
    ProxyError, ProxyRoute, bypasses, check_http_headers, check_proxy_url, proxy_for,
};
pub use oauth2::TokenSource;
pub use proxy::{TunnelConnector, open_tunnel};
pub use received::{Item, ListEnd, Received, Skipped, StreamEnd};
pub use tls::{TlsError, build_tls_config};
pub use user_agent::user_agent;

use std::sync::Arc;
use std::time::Duration;

/// The TLS config of an API server reached with `http`: its `tls_config` (see
/// [`build_tls_config`]), and, for a kubeconfig credential plugin, the plugin's client
/// certificate, asked for at each handshake ([`ExecClientCert`]) unless the
/// kubeconfig user has a client certificate of its own.
pub fn endpoint_tls_config(
    http: &crate::config::HttpClientConfig,
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let config = build_tls_config(&http.tls_config, http.enable_http2)?;
    let own_cert = http.tls_config.cert_file.is_some() || http.tls_config.cert.is_some();
    match &http.exec {
        Some(exec) if !own_cert => {
            let mut with_plugin = (*config).clone();
            with_plugin.client_auth_cert_resolver =
                Arc::new(ExecClientCert(ExecSource::for_config(exec)));
            Ok(Arc::new(with_plugin))
        }
        _ => Ok(config),
    }
}

/// Builds the awc client for `endpoint`, as its settings say: TLS (`tls`, for https
/// servers), redirects, `http_headers` on every request, and a proxy tunnel when
/// `proxy_url` or `proxy_from_environment` applies. Call on the arbiter that will use
/// it: awc clients are not `Send`. Errors name the setting (a header file that cannot
/// be read, a proxy URL that cannot be used).
pub fn build_endpoint_client(
    endpoint: &ApiEndpoint,
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
) -> Result<awc::Client, String> {
    let http = &endpoint.http;
    let proxy = proxy_for(http, &endpoint.base_url, &|name| std::env::var(name).ok())
        .map_err(|e| e.to_string())?;
    let headers = read_http_headers(&http.http_headers)?;
    let mut connector = awc::Connector::new().timeout(timeout);
    if let Some(tls) = tls {
        connector = connector.rustls_0_23(tls);
    }
    // The builder's type depends on the connector's, so the rest is written once for
    // both.
    macro_rules! finish {
        ($builder:expr) => {{
            let mut builder = $builder.timeout(timeout);
            for (name, value) in headers {
                builder = builder.add_default_header((name, value));
            }
            if !http.follow_redirects {
                builder = builder.disable_redirects();
            }
            builder.finish()
        }};
    }
    Ok(match proxy {
        Some(route) => finish!(
            awc::Client::builder().connector(connector.connector(TunnelConnector::new(route)))
        ),
        None => finish!(awc::Client::builder().connector(connector)),
    })
}

/// Builds a plain awc client (tools and tests). Call on the arbiter that will use it:
/// awc clients are not `Send`.
pub fn build_client(
    tls: Option<Arc<rustls::ClientConfig>>,
    follow_redirects: bool,
    timeout: Duration,
) -> awc::Client {
    let mut connector = awc::Connector::new().timeout(timeout);
    if let Some(tls) = tls {
        connector = connector.rustls_0_23(tls);
    }
    let mut builder = awc::Client::builder().connector(connector).timeout(timeout);
    if !follow_redirects {
        builder = builder.disable_redirects();
    }
    builder.finish()
}
