//! A kubeconfig user's `exec` credential plugin, read into [`ExecConfig`] and checked
//! as kubectl checks it: a command, a known `apiVersion` (`v1` or `v1beta1`), an
//! `interactiveMode` (required by `v1`; `IfAvailable` by default in `v1beta1`), named
//! `env` entries. With `provideClusterInfo`, the cluster's settings are kept for
//! `KUBERNETES_EXEC_INFO`.

use std::path::PathBuf;

use base64::Engine;
use serde::Deserialize;

use super::file::Cluster;
use crate::config::{ExecApiVersion, ExecCluster, ExecConfig, ExecEnv, InteractiveMode, Secret};

/// The name of the cluster extension whose content is `spec.cluster.config`.
const EXEC_EXTENSION: &str = "client.authentication.k8s.io/exec";

/// `users[].user.exec` as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Exec {
    #[serde(default)]
    command: String,
    #[serde(default)]
    args: Option<Vec<String>>,
    #[serde(default)]
    env: Option<Vec<EnvVar>>,
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    install_hint: String,
    #[serde(default)]
    provide_cluster_info: bool,
    #[serde(default)]
    interactive_mode: String,
}

#[derive(Deserialize)]
struct EnvVar {
    #[serde(default)]
    name: String,
    #[serde(default)]
    value: String,
}

/// Reads the `exec` of user `user` (its YAML as JSON), for `cluster`; relative paths
/// are resolved by `relative`. Errors name the field, from `users[...].user.exec`.
pub(super) fn exec_config(
    value: &serde_json::Value,
    user: &str,
    cluster: &Cluster,
    relative: &impl Fn(&PathBuf) -> PathBuf,
) -> Result<ExecConfig, String> {
    let at = |field: &str| format!("users[{user:?}].user.exec.{field}");
    let exec: Exec = serde_json::from_value(value.clone())
        .map_err(|e| format!("users[{user:?}].user.exec: {e}"))?;
    if exec.command.is_empty() {
        return Err(format!("{} is not set", at("command")));
    }
    let api_version =
        api_version(&exec.api_version).map_err(|e| format!("{} {e}", at("apiVersion")))?;
    let interactive_mode = interactive_mode(&exec.interactive_mode, api_version)
        .map_err(|e| format!("{} {e}", at("interactiveMode")))?;
    let mut env = Vec::new();
    for var in exec.env.unwrap_or_default() {
        if var.name.is_empty() {
            return Err(format!("{} has an entry without a name", at("env")));
        }
        env.push(ExecEnv {
            name: var.name,
            value: Secret(var.value),
        });
    }
    // A relative path with a separator is relative to the kubeconfig (kubectl's
    // rule); a bare name is looked up in PATH.
    let command = PathBuf::from(&exec.command);
    let command = if command.is_relative() && exec.command.contains('/') {
        relative(&command)
    } else {
        command
    };
    let cluster = if exec.provide_cluster_info {
        Some(cluster_info(cluster, relative)?)
    } else {
        None
    };
    Ok(ExecConfig {
        user: user.to_string(),
        command,
        args: exec.args.unwrap_or_default(),
        env,
        api_version,
        install_hint: exec.install_hint,
        interactive_mode,
        cluster,
    })
}

/// `apiVersion`: `v1` or `v1beta1`.
fn api_version(text: &str) -> Result<ExecApiVersion, String> {
    match text {
        "client.authentication.k8s.io/v1" => Ok(ExecApiVersion::V1),
        "client.authentication.k8s.io/v1beta1" => Ok(ExecApiVersion::V1Beta1),
        "" => Err("is not set".into()),
        other => Err(format!(
            "{other:?} is not supported: use client.authentication.k8s.io/v1 or v1beta1"
        )),
    }
}

/// `interactiveMode`: required by `v1`, `IfAvailable` by default in `v1beta1`.
fn interactive_mode(text: &str, version: ExecApiVersion) -> Result<InteractiveMode, String> {
    match (text, version) {
        ("Never", _) => Ok(InteractiveMode::Never),
        ("IfAvailable", _) | ("", ExecApiVersion::V1Beta1) => Ok(InteractiveMode::IfAvailable),
        ("Always", _) => Ok(InteractiveMode::Always),
        ("", ExecApiVersion::V1) => Err(format!(
            "must be set with {} (Never, IfAvailable or Always)",
            version.as_str()
        )),
        (other, _) => Err(format!("{other:?} is not Never, IfAvailable or Always")),
    }
}

/// The cluster's settings as `KUBERNETES_EXEC_INFO` carries them; a CA given as a
/// file is read, as kubectl sends its content.
fn cluster_info(
    cluster: &Cluster,
    relative: &impl Fn(&PathBuf) -> PathBuf,
) -> Result<ExecCluster, String> {
    let inline = cluster
        .certificate_authority_data
        .as_deref()
        .map(|d| d.chars().filter(|c| !c.is_whitespace()).collect::<String>())
        .filter(|d| !d.is_empty());
    let certificate_authority_data = match (inline, &cluster.certificate_authority) {
        (Some(data), _) => Some(data),
        (None, Some(file)) if !file.as_os_str().is_empty() => {
            let path = relative(file);
            let pem = std::fs::read(&path).map_err(|e| {
                format!(
                    "certificate-authority {} (for the credential plugin's cluster info): {e}",
                    path.display()
                )
            })?;
            Some(base64::engine::general_purpose::STANDARD.encode(pem))
        }
        _ => None,
    };
    let config = cluster
        .extensions
        .iter()
        .find(|e| e.name == EXEC_EXTENSION)
        .map(|e| e.extension.to_string());
    Ok(ExecCluster {
        server: cluster.server.clone(),
        tls_server_name: cluster.tls_server_name.clone().filter(|s| !s.is_empty()),
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
        certificate_authority_data,
        proxy_url: cluster.proxy_url.clone().filter(|s| !s.is_empty()),
        config,
    })
}
