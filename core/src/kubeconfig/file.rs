//! The parts of a kubeconfig file kubesd reads, as written: its contexts, clusters and
//! users, each a named entry of its list.

use std::path::PathBuf;

use serde::Deserialize;

/// The parts of a kubeconfig kubesd reads. Other keys (`preferences`, `extensions`,
/// ...) are allowed and ignored, as kubectl does.
#[derive(Deserialize, Default)]
pub(super) struct File {
    #[serde(default, rename = "current-context")]
    pub(super) current_context: String,
    #[serde(default)]
    pub(super) contexts: Vec<Named<Context>>,
    #[serde(default)]
    pub(super) clusters: Vec<Named<Cluster>>,
    #[serde(default)]
    pub(super) users: Vec<Named<User>>,
}

/// A list entry: `{name, <kind>: {...}}`; the inner key differs per list.
#[derive(Deserialize)]
pub(super) struct Named<T> {
    pub(super) name: String,
    #[serde(alias = "context", alias = "cluster", alias = "user")]
    pub(super) value: Option<T>,
}

/// A context: which cluster and user, and the default namespace.
#[derive(Deserialize, Default)]
pub(super) struct Context {
    #[serde(default)]
    pub(super) cluster: String,
    #[serde(default)]
    pub(super) user: String,
    #[serde(default)]
    pub(super) namespace: String,
}

/// A cluster: the API server's URL, how to verify it and how to reach it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub(super) struct Cluster {
    #[serde(default)]
    pub(super) server: String,
    #[serde(default)]
    pub(super) certificate_authority: Option<PathBuf>,
    #[serde(default)]
    pub(super) certificate_authority_data: Option<String>,
    #[serde(default)]
    pub(super) insecure_skip_tls_verify: bool,
    #[serde(default)]
    pub(super) tls_server_name: Option<String>,
    #[serde(default)]
    pub(super) proxy_url: Option<String>,
    #[serde(default)]
    pub(super) extensions: Vec<Extension>,
}

/// A named extension of a cluster (`client.authentication.k8s.io/exec` is read).
#[derive(Deserialize)]
pub(super) struct Extension {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) extension: serde_json::Value,
}

/// A user: the credentials to send (a token, a client certificate, a password) or
/// the credential plugin that gives them.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub(super) struct User {
    #[serde(default)]
    pub(super) token: Option<String>,
    #[serde(default, rename = "tokenFile")]
    pub(super) token_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) client_certificate: Option<PathBuf>,
    #[serde(default)]
    pub(super) client_certificate_data: Option<String>,
    #[serde(default)]
    pub(super) client_key: Option<PathBuf>,
    #[serde(default)]
    pub(super) client_key_data: Option<String>,
    #[serde(default)]
    pub(super) username: Option<String>,
    #[serde(default)]
    pub(super) password: Option<String>,
    #[serde(default)]
    pub(super) exec: Option<serde_json::Value>,
    #[serde(default, rename = "auth-provider")]
    pub(super) auth_provider: Option<serde_json::Value>,
}

/// The entry called `name`.
pub(super) fn find<'a, T>(list: &'a [Named<T>], name: &str) -> Option<&'a T> {
    list.iter()
        .find(|n| n.name == name)
        .and_then(|n| n.value.as_ref())
}
