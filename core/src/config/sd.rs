//! `kubernetes_sd_config`: one scrape job's discovery settings, in Prometheus' shape.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::http::HttpClientConfig;
use crate::api::{RoleSelector, SelectorError};
use crate::model::Role;
use crate::targets::{AttachMetadata, Semantics, TargetOptions};

/// `namespaces`: which namespaces to discover in; empty means all.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceDiscovery {
    /// Namespaces by name.
    #[serde(default)]
    pub names: Vec<String>,
    /// Also the namespace kubesd runs in (read from the service-account mount).
    #[serde(default)]
    pub own_namespace: bool,
}

/// One `kubernetes_sd_configs` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SdConfig {
    /// The API server URL; empty means in-cluster (`KUBERNETES_SERVICE_HOST`/`PORT`, the
    /// service-account token and CA).
    #[serde(default)]
    pub api_server: Option<String>,
    /// The discovery role.
    pub role: Role,
    /// A kubeconfig file to take the server and credentials from (not with `api_server`).
    #[serde(default)]
    pub kubeconfig_file: Option<PathBuf>,
    /// Namespaces to discover in.
    #[serde(default)]
    pub namespaces: NamespaceDiscovery,
    /// Label and field selectors per role.
    #[serde(default)]
    pub selectors: Vec<RoleSelector>,
    /// Related metadata to attach.
    #[serde(default)]
    pub attach_metadata: AttachMetadata,
    /// Auth, TLS and proxy settings.
    #[serde(flatten)]
    pub http: HttpClientConfig,
    /// Keys kubesd does not know; any makes the config invalid (see [`SdConfig::validate`]).
    #[serde(flatten, skip_serializing)]
    pub unknown: BTreeMap<String, serde_json::Value>,
}

impl SdConfig {
    /// A config for `role` against `api_server`, everything else default.
    pub fn new(role: Role, api_server: impl Into<String>) -> SdConfig {
        SdConfig {
            api_server: Some(api_server.into()),
            role,
            kubeconfig_file: None,
            namespaces: NamespaceDiscovery::default(),
            selectors: Vec::new(),
            attach_metadata: AttachMetadata::default(),
            http: HttpClientConfig {
                follow_redirects: true,
                ..HttpClientConfig::default()
            },
            unknown: BTreeMap::new(),
        }
    }

    /// The roles a job of this config watches in `semantics`: its own and those its
    /// labels read.
    pub fn watched_roles(&self, semantics: Semantics) -> Vec<Role> {
        let options = TargetOptions {
            attach: self.attach_metadata,
            semantics,
        };
        watched_roles(self.role, options)
    }

    /// Rejects what cannot work, naming the field: unknown keys, a role that is not a
    /// discovery role, selectors for roles the job does not watch, conflicting auth
    /// settings, features kubesd does not have.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(key) = self.unknown.keys().next() {
            return Err(ConfigError::UnknownKey(key.clone()));
        }
        if !self.role.is_discovery_role() {
            return Err(ConfigError::Invalid {
                field: "role",
                problem: format!("{:?} is not a discovery role", self.role.as_str()),
            });
        }
        self.check_selectors()?;
        self.check_api_server()?;
        check_http_client(&self.http, self.kubeconfig_file.is_some())
    }

    /// Each selector is valid and for a role this config's role watches.
    fn check_selectors(&self) -> Result<(), ConfigError> {
        let allowed = selector_roles(self.role);
        for (i, s) in self.selectors.iter().enumerate() {
            let role = s.validate(i)?;
            if !allowed.contains(&role) {
                let allowed: Vec<&str> = allowed.iter().map(|r| r.as_str()).collect();
                return Err(ConfigError::Invalid {
                    field: "selectors",
                    problem: format!(
                        "selectors[{i}].role {:?} is not watched by role {}: allowed are {}",
                        s.role,
                        self.role,
                        allowed.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// `api_server` is an http(s) URL, and not given beside `kubeconfig_file`.
    fn check_api_server(&self) -> Result<(), ConfigError> {
        let Some(server) = self.api_server.as_deref().filter(|s| !s.is_empty()) else {
            return Ok(());
        };
        if self.kubeconfig_file.is_some() {
            return Err(ConfigError::Conflict("api_server", "kubeconfig_file"));
        }
        if !(server.starts_with("http://") || server.starts_with("https://")) {
            return Err(ConfigError::Invalid {
                field: "api_server",
                problem: format!("{server:?} is not an http:// or https:// URL"),
            });
        }
        Ok(())
    }
}

/// The client settings: none beside a kubeconfig (it sets the client), proxies and
/// headers valid, at most one way to authenticate, TLS and OAuth 2.0 complete.
fn check_http_client(h: &HttpClientConfig, with_kubeconfig: bool) -> Result<(), ConfigError> {
    if with_kubeconfig && *h != kubeconfig_http_default() {
        // As Prometheus: the kubeconfig sets the client, so the config may not.
        return Err(ConfigError::Invalid {
            field: "kubeconfig_file",
            problem: "cannot be used with client settings (bearer_token, \
                      bearer_token_file, basic_auth, authorization, oauth2, tls_config, \
                      proxy settings, http_headers, enable_http2, follow_redirects): the \
                      kubeconfig sets the client"
                .into(),
        });
    }
    check_proxy(
        h.proxy_url.as_deref(),
        h.no_proxy.as_deref(),
        h.proxy_from_environment,
        !h.proxy_connect_header.is_empty(),
        "",
    )?;
    super::check_http_headers(&h.http_headers).map_err(|problem| ConfigError::Invalid {
        field: "http_headers",
        problem,
    })?;
    check_auth(h)?;
    check_tls(&h.tls_config, "tls_config")?;
    if let Some(o) = &h.oauth2 {
        check_oauth2(o)?;
    }
    Ok(())
}

/// At most one way to authenticate, and no secret given both inline and by file.
fn check_auth(h: &HttpClientConfig) -> Result<(), ConfigError> {
    let auth_methods: Vec<&'static str> = [
        (!h.bearer_token.0.is_empty(), "bearer_token"),
        (h.bearer_token_file.is_some(), "bearer_token_file"),
        (h.basic_auth.is_some(), "basic_auth"),
        (h.authorization.is_some(), "authorization"),
        (h.oauth2.is_some(), "oauth2"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect();
    if let [a, b, ..] = auth_methods[..] {
        return Err(ConfigError::Conflict(a, b));
    }
    if let Some(a) = &h.authorization
        && !a.credentials.0.is_empty()
        && a.credentials_file.is_some()
    {
        return Err(ConfigError::Conflict(
            "authorization.credentials",
            "authorization.credentials_file",
        ));
    }
    if let Some(b) = &h.basic_auth
        && !b.password.0.is_empty()
        && b.password_file.is_some()
    {
        return Err(ConfigError::Conflict(
            "basic_auth.password",
            "basic_auth.password_file",
        ));
    }
    Ok(())
}

/// The proxy settings of `http_config` (or, with `prefix` `oauth2.`, of its token
/// endpoint): one source of proxy, and settings that need a proxy only with one.
fn check_proxy(
    url: Option<&str>,
    no_proxy: Option<&str>,
    from_environment: bool,
    connect_headers: bool,
    prefix: &'static str,
) -> Result<(), ConfigError> {
    let url = url.filter(|u| !u.is_empty());
    let no_proxy = no_proxy.filter(|n| !n.is_empty());
    let field = |name: &'static str| -> &'static str {
        match (prefix, name) {
            ("", n) => n,
            (_, "proxy_url") => "oauth2.proxy_url",
            (_, "no_proxy") => "oauth2.no_proxy",
            (_, _) => "oauth2.proxy_connect_header",
        }
    };
    if from_environment && (url.is_some() || no_proxy.is_some()) {
        return Err(ConfigError::Invalid {
            field: field("proxy_url"),
            problem: "cannot be set with proxy_from_environment, which takes the proxy and \
                      no_proxy from the environment"
                .into(),
        });
    }
    if no_proxy.is_some() && url.is_none() {
        return Err(ConfigError::Invalid {
            field: field("no_proxy"),
            problem: "needs proxy_url: it lists the hosts reached without it".into(),
        });
    }
    if connect_headers && url.is_none() && !from_environment {
        return Err(ConfigError::Invalid {
            field: field("proxy_connect_header"),
            problem: "needs proxy_url or proxy_from_environment: it is sent to the proxy".into(),
        });
    }
    if let Some(url) = url {
        super::check_proxy_url(url).map_err(|problem| ConfigError::Invalid {
            field: field("proxy_url"),
            problem,
        })?;
    }
    Ok(())
}

/// A `tls_config` (the API server's, or `oauth2.tls_config`).
fn check_tls(tls: &crate::config::TlsConfig, field: &'static str) -> Result<(), ConfigError> {
    use crate::config::TlsVersion;
    let invalid = |problem: String| Err(ConfigError::Invalid { field, problem });
    let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
    for (inline, file, name) in [
        (set(&tls.ca), tls.ca_file.is_some(), "ca"),
        (set(&tls.cert), tls.cert_file.is_some(), "cert"),
        (!tls.key.0.is_empty(), tls.key_file.is_some(), "key"),
    ] {
        if inline && file {
            return invalid(format!("{name} and {name}_file cannot both be set"));
        }
    }
    let has_cert = set(&tls.cert) || tls.cert_file.is_some();
    let has_key = !tls.key.0.is_empty() || tls.key_file.is_some();
    if has_cert != has_key {
        return invalid(
            "a client certificate (cert or cert_file) and its key (key or \
                        key_file) must be set together"
                .into(),
        );
    }
    if let Some(max) = tls.max_version
        && max < TlsVersion::Tls12
    {
        return invalid(format!(
            "max_version {} cannot apply: kubesd's TLS library (rustls) speaks TLS 1.2 and \
             1.3 only",
            max.as_str()
        ));
    }
    if let (Some(min), Some(max)) = (tls.min_version, tls.max_version)
        && min > max
    {
        return invalid(format!(
            "min_version {} is above max_version {}",
            min.as_str(),
            max.as_str()
        ));
    }
    Ok(())
}

/// `oauth2`: a token endpoint to ask, one client secret.
fn check_oauth2(o: &crate::config::OAuth2) -> Result<(), ConfigError> {
    if !(o.token_url.starts_with("http://") || o.token_url.starts_with("https://")) {
        return Err(ConfigError::Invalid {
            field: "oauth2.token_url",
            problem: format!("{:?} is not an http:// or https:// URL", o.token_url),
        });
    }
    if !o.client_secret.0.is_empty() && o.client_secret_file.is_some() {
        return Err(ConfigError::Conflict(
            "oauth2.client_secret",
            "oauth2.client_secret_file",
        ));
    }
    check_proxy(
        o.proxy_url.as_deref(),
        o.no_proxy.as_deref(),
        o.proxy_from_environment,
        !o.proxy_connect_header.is_empty(),
        "oauth2.",
    )?;
    check_tls(&o.tls_config, "oauth2.tls_config")
}

impl SdConfig {
    /// Replaces `kubeconfig_file` by what it says: `api_server` and the client settings
    /// of its current context (see [`crate::kubeconfig`]), and `own_namespace` by the
    /// context's namespace (`default` when it names none). Does nothing without one.
    ///
    /// Run after [`SdConfig::validate`], which rejects a kubeconfig with `api_server` or
    /// client settings; afterwards the config is like one that named its server itself.
    pub fn resolve_kubeconfig(&mut self) -> Result<(), ConfigError> {
        let Some(path) = self.kubeconfig_file.take() else {
            return Ok(());
        };
        let target =
            crate::kubeconfig::load_kubeconfig(&path).map_err(|e| ConfigError::Invalid {
                field: "kubeconfig_file",
                problem: e.to_string(),
            })?;
        self.api_server = Some(target.api_server);
        self.http = target.http;
        if self.namespaces.own_namespace {
            self.namespaces.own_namespace = false;
            self.namespaces.names.push(target.namespace);
        }
        Ok(())
    }
}

/// The client settings of a config that sets none (`follow_redirects` defaults to on).
fn kubeconfig_http_default() -> HttpClientConfig {
    HttpClientConfig {
        follow_redirects: true,
        ..HttpClientConfig::default()
    }
}

/// The roles watched for a job of `role` with `options`: its own, and those its labels
/// look up.
pub fn watched_roles(role: Role, options: TargetOptions) -> Vec<Role> {
    let attach = options.attach;
    let mut roles = vec![role];
    if matches!(role, Role::Endpoints | Role::EndpointSlice) {
        roles.extend([Role::Pod, Role::Service]);
    }
    // A route's parentRefs name Gateways (their listeners) or Services (their ports),
    // which only VictoriaMetrics' semantics reads.
    if matches!(role, Role::HttpRoute | Role::GrpcRoute)
        && options.semantics.routes_follow_listeners()
    {
        roles.extend([Role::Gateway, Role::Service]);
    }
    if attach.node && matches!(role, Role::Pod | Role::Endpoints | Role::EndpointSlice) {
        roles.push(Role::Node);
    }
    if attach.namespace && role != Role::Node {
        roles.push(Role::Namespace);
    }
    // A pod's Deployment is read from its ReplicaSet, its CronJob from its Job; the
    // Job's own name needs no look-up.
    if matches!(role, Role::Pod | Role::Endpoints | Role::EndpointSlice) {
        if attach.deployment {
            roles.push(Role::ReplicaSet);
        }
        if attach.cronjob {
            roles.push(Role::Job);
        }
    }
    roles
}

/// The roles a job of `role` may have selectors for (Prometheus' rule).
fn selector_roles(role: Role) -> Vec<Role> {
    match role {
        Role::Endpoints => vec![Role::Endpoints, Role::Pod, Role::Service],
        Role::EndpointSlice => vec![Role::EndpointSlice, Role::Pod, Role::Service],
        Role::Pod => vec![Role::Pod, Role::Node],
        Role::HttpRoute => vec![Role::HttpRoute, Role::Gateway, Role::Service],
        Role::GrpcRoute => vec![Role::GrpcRoute, Role::Gateway, Role::Service],
        other => vec![other],
    }
}

/// A `kubernetes_sd_config` kubesd cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A key kubesd does not know.
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    /// A field with a value that cannot work.
    #[error("{field}: {problem}")]
    Invalid {
        /// The field, as written in the config.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// Two fields that exclude each other.
    #[error("{0} and {1} cannot both be set")]
    Conflict(&'static str, &'static str),
    /// A bad selector.
    #[error(transparent)]
    Selector(#[from] SelectorError),
    /// The own namespace could not be read.
    #[error("{0}")]
    OwnNamespace(String),
    /// A credentials file could not be read (the message names the field and file).
    #[error("{0}")]
    Credentials(String),
    /// In-cluster defaults could not be found.
    #[error("api_server is empty and {0}")]
    InCluster(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> SdConfig {
        serde_json::from_str(json).expect("config parses")
    }

    #[test]
    fn parses_prometheus_shape() {
        let c = parse(
            r#"{"api_server":"https://k8s:6443","role":"endpointslice","namespaces":{"names":["a"],"own_namespace":true},
                "selectors":[{"role":"pod","label":"app=web"}],"attach_metadata":{"node":true},
                "bearer_token_file":"/t","tls_config":{"ca_file":"/ca","insecure_skip_verify":false}}"#,
        );
        assert_eq!(c.role, Role::EndpointSlice);
        assert!(c.attach_metadata.node);
        assert_eq!(c.http.bearer_token_file, Some(PathBuf::from("/t")));
        c.validate().unwrap();
        assert_eq!(
            c.watched_roles(Semantics::Prometheus),
            [Role::EndpointSlice, Role::Pod, Role::Service, Role::Node]
        );
    }

    #[test]
    fn rejects_with_the_field_named() {
        let cases = [
            (
                r#"{"role":"pod","api_sever":"x"}"#,
                "unknown key \"api_sever\"",
            ),
            (r#"{"role":"namespace"}"#, "role:"),
            (
                r#"{"role":"pod","selectors":[{"role":"service","label":"a=b"}]}"#,
                "selectors[0].role \"service\"",
            ),
            (
                r#"{"role":"pod","selectors":[{"role":"pod","label":"a in (b"}]}"#,
                "selectors[0].label",
            ),
            (
                r#"{"role":"pod","bearer_token":"x","bearer_token_file":"/f"}"#,
                "bearer_token and bearer_token_file",
            ),
            (
                r#"{"role":"pod","proxy_url":"socks5://p:1080"}"#,
                "proxy_url: \"socks5://p:1080\" is not an http:// URL",
            ),
            (
                r#"{"role":"pod","no_proxy":"localhost"}"#,
                "no_proxy: needs proxy_url",
            ),
            (
                r#"{"role":"pod","proxy_url":"http://p:3128","proxy_from_environment":true}"#,
                "proxy_url: cannot be set with proxy_from_environment",
            ),
            (
                r#"{"role":"pod","http_headers":{"Authorization":{"values":["x"]}}}"#,
                "http_headers: \"Authorization\" is reserved",
            ),
            (
                r#"{"role":"pod","tls_config":{"max_version":"TLS11"}}"#,
                "max_version TLS11 cannot apply",
            ),
            (
                r#"{"role":"pod","tls_config":{"ca":"x","ca_file":"/ca"}}"#,
                "ca and ca_file cannot both be set",
            ),
            (
                r#"{"role":"pod","tls_config":{"min_version":"TLS13","max_version":"TLS12"}}"#,
                "min_version TLS13 is above max_version TLS12",
            ),
            (
                r#"{"role":"pod","oauth2":{"client_id":"a","token_url":"t"}}"#,
                "oauth2.token_url",
            ),
            (
                r#"{"role":"pod","bearer_token":"x","oauth2":{"client_id":"a","token_url":"http://t"}}"#,
                "bearer_token and oauth2 cannot both be set",
            ),
            (r#"{"role":"pod","api_server":"k8s:6443"}"#, "api_server:"),
            (
                r#"{"role":"pod","tls_config":{"cert_file":"/c"}}"#,
                "tls_config:",
            ),
        ];
        for (json, want) in cases {
            let err = parse(json).validate().expect_err(json).to_string();
            assert!(err.contains(want), "{json}: {err}");
        }
        assert!(serde_json::from_str::<SdConfig>(r#"{"role":"pods"}"#).is_err());
    }
}
