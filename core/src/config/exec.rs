//! A kubeconfig user's `exec` credential plugin, as kubesd keeps it: what to run and
//! what to tell it (the Kubernetes client authentication API,
//! `client.authentication.k8s.io/v1` and `v1beta1`). Only a kubeconfig sets it
//! ([`crate::kubeconfig`]); a Prometheus config has no such field. Running it is
//! `kubesd_actors::http::ExecSource`'s work.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::secret::Secret;

/// `users[].user.exec`: a program that prints an `ExecCredential`. Part of the group
/// key (through [`super::HttpClientConfig`]), and the key of the process-wide plugin
/// source: every job that uses the same kubeconfig user shares one plugin run. Its
/// Debug output leaves out the arguments and `env` values, which some plugins are
/// handed keys in.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecConfig {
    /// The kubeconfig user's name, for errors.
    pub user: String,
    /// The program: a name looked up in `PATH`, or a path (a relative one with a `/`
    /// is resolved against the kubeconfig's directory, as kubectl does).
    pub command: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to kubesd's own environment for it (values may be secrets).
    pub env: Vec<ExecEnv>,
    /// The `ExecCredential` version it speaks and must answer in.
    pub api_version: ExecApiVersion,
    /// What to tell a user whose plugin is not installed (`installHint`).
    pub install_hint: String,
    /// Whether the plugin may use a terminal (`interactiveMode`). kubesd never has one
    /// for it: every mode runs with stdin closed.
    pub interactive_mode: InteractiveMode,
    /// The cluster's connection settings for `KUBERNETES_EXEC_INFO`, when
    /// `provideClusterInfo` is true.
    pub cluster: Option<ExecCluster>,
}

impl std::fmt::Debug for ExecConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecConfig")
            .field("user", &self.user)
            .field("command", &self.command)
            .field("args", &format_args!("<{} arguments>", self.args.len()))
            .field("env", &self.env)
            .field("api_version", &self.api_version)
            .field("interactive_mode", &self.interactive_mode)
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

/// One `env` entry of an `exec` plugin.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecEnv {
    /// The variable's name.
    pub name: String,
    /// Its value; plugins are often handed keys this way, so it is never printed.
    pub value: Secret,
}

/// The versions of `client.authentication.k8s.io` kubesd speaks (`v1alpha1` was
/// removed from Kubernetes and is refused, as kubectl does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExecApiVersion {
    /// `client.authentication.k8s.io/v1`.
    V1,
    /// `client.authentication.k8s.io/v1beta1`.
    V1Beta1,
}

impl ExecApiVersion {
    /// The `apiVersion` text.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecApiVersion::V1 => "client.authentication.k8s.io/v1",
            ExecApiVersion::V1Beta1 => "client.authentication.k8s.io/v1beta1",
        }
    }
}

/// `interactiveMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InteractiveMode {
    /// The plugin never needs a terminal.
    Never,
    /// It uses one if there is one (the `v1beta1` default).
    IfAvailable,
    /// It needs one. kubectl refuses to run it without a terminal; kubesd runs it with
    /// stdin closed (it may have cached credentials) and says so if it fails.
    Always,
}

/// What `KUBERNETES_EXEC_INFO`'s `spec.cluster` holds (`provideClusterInfo: true`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ExecCluster {
    /// The API server URL.
    pub server: String,
    /// `tls-server-name`.
    pub tls_server_name: Option<String>,
    /// `insecure-skip-tls-verify`.
    pub insecure_skip_tls_verify: bool,
    /// The CA bundle, base64 (from `certificate-authority-data` or the file
    /// `certificate-authority` names, as kubectl sends it).
    pub certificate_authority_data: Option<String>,
    /// `proxy-url`.
    pub proxy_url: Option<String>,
    /// The cluster's `client.authentication.k8s.io/exec` extension, as JSON text.
    pub config: Option<String>,
}
