//! Talking to the API server: where it is (explicit or in-cluster), how to authenticate
//! (tokens re-read when their file changes, basic auth, client certificates), TLS, and
//! the awc client the URL watchers use.

mod credentials;
mod endpoint;
mod tls;
mod user_agent;

pub use credentials::{Credentials, CredentialsError};
pub use endpoint::{
    ApiEndpoint, IN_CLUSTER_CA_FILE, IN_CLUSTER_TOKEN_FILE, resolve_endpoint, resolve_endpoint_with,
};
pub use tls::{TlsError, build_tls_config};
pub use user_agent::user_agent;

use std::sync::Arc;
use std::time::Duration;

/// Builds the awc client for one endpoint. Call on the arbiter that will use it: awc
/// clients are not `Send`.
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
