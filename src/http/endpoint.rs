//! Which API server a job talks to, and with what: the config's `api_server`, or the
//! in-cluster defaults a pod's service account provides.

use std::path::PathBuf;

use crate::config::{ConfigError, HttpClientConfig, SdConfig};

/// The service-account token mounted into every pod.
pub const IN_CLUSTER_TOKEN_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/token";
/// The cluster CA mounted into every pod.
pub const IN_CLUSTER_CA_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";

/// An API server and the client settings to reach it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ApiEndpoint {
    /// The base URL, without a trailing `/`.
    pub base_url: String,
    /// Auth and TLS settings, with in-cluster defaults filled in.
    pub http: HttpClientConfig,
}

/// Resolves where `config` discovers from. With an empty `api_server`, that is the
/// cluster kubesd runs in: `https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT`,
/// authenticated with the service-account token and verified with its CA (unless the
/// config sets its own).
pub fn resolve_endpoint(config: &SdConfig) -> Result<ApiEndpoint, ConfigError> {
    if let Some(server) = config.api_server.as_deref().filter(|s| !s.is_empty()) {
        return Ok(ApiEndpoint {
            base_url: server.trim_end_matches('/').to_string(),
            http: config.http.clone(),
        });
    }
    let host = std::env::var("KUBERNETES_SERVICE_HOST").map_err(|_| {
        ConfigError::InCluster("KUBERNETES_SERVICE_HOST is not set (not running in a pod?)".into())
    })?;
    let port = std::env::var("KUBERNETES_SERVICE_PORT").unwrap_or_else(|_| "443".into());
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host
    };
    let mut http = config.http.clone();
    let has_auth = !http.bearer_token.0.is_empty()
        || http.bearer_token_file.is_some()
        || http.basic_auth.is_some()
        || http.authorization.is_some()
        || http.tls_config.cert_file.is_some();
    if !has_auth {
        http.bearer_token_file = Some(PathBuf::from(IN_CLUSTER_TOKEN_FILE));
    }
    if http.tls_config.ca_file.is_none() && !http.tls_config.insecure_skip_verify {
        http.tls_config.ca_file = Some(PathBuf::from(IN_CLUSTER_CA_FILE));
    }
    Ok(ApiEndpoint {
        base_url: format!("https://{host}:{port}"),
        http,
    })
}
