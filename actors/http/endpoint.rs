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
    resolve_endpoint_with(config, |name| std::env::var(name).ok())
}

/// [`resolve_endpoint`] with the environment looked up through `env`.
pub fn resolve_endpoint_with(
    config: &SdConfig,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ApiEndpoint, ConfigError> {
    if let Some(server) = config.api_server.as_deref().filter(|s| !s.is_empty()) {
        return Ok(ApiEndpoint {
            base_url: server.trim_end_matches('/').to_string(),
            http: config.http.clone(),
        });
    }
    let host = env("KUBERNETES_SERVICE_HOST").ok_or_else(|| {
        ConfigError::InCluster("KUBERNETES_SERVICE_HOST is not set (not running in a pod?)".into())
    })?;
    let port = env("KUBERNETES_SERVICE_PORT").unwrap_or_else(|| "443".into());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;
    use crate::model::Role;

    fn in_cluster(role: Role) -> SdConfig {
        let mut c = SdConfig::new(role, "");
        c.api_server = None;
        c
    }

    #[test]
    fn in_cluster_defaults_come_from_the_service_account() {
        let env = |name: &str| match name {
            "KUBERNETES_SERVICE_HOST" => Some("fd00::1".to_string()),
            "KUBERNETES_SERVICE_PORT" => Some("6443".to_string()),
            _ => None,
        };
        let e = resolve_endpoint_with(&in_cluster(Role::Pod), env).unwrap();
        assert_eq!(e.base_url, "https://[fd00::1]:6443");
        assert_eq!(
            e.http.bearer_token_file.as_deref(),
            Some(std::path::Path::new(IN_CLUSTER_TOKEN_FILE))
        );
        assert_eq!(
            e.http.tls_config.ca_file.as_deref(),
            Some(std::path::Path::new(IN_CLUSTER_CA_FILE))
        );

        // The config's own credentials and CA win over the defaults.
        let mut own = in_cluster(Role::Pod);
        own.http.bearer_token = Secret("t".into());
        own.http.tls_config.insecure_skip_verify = true;
        let e = resolve_endpoint_with(&own, env).unwrap();
        assert_eq!(e.http.bearer_token_file, None);
        assert_eq!(e.http.tls_config.ca_file, None);

        let err = resolve_endpoint_with(&in_cluster(Role::Pod), |_| None).unwrap_err();
        assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"), "{err}");
    }

    #[test]
    fn an_explicit_server_is_used_as_given() {
        let e = resolve_endpoint_with(&SdConfig::new(Role::Node, "https://k8s:6443/"), |_| None)
            .unwrap();
        assert_eq!(e.base_url, "https://k8s:6443");
        assert_eq!(e.http.bearer_token_file, None);
    }
}
