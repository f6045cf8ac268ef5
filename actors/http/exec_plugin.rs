//! One run of a kubeconfig credential plugin (`users[].user.exec`), as kubectl
//! (client-go's `exec` authenticator) runs it: the command with its arguments, kubesd's
//! environment plus the plugin's `env`, and `KUBERNETES_EXEC_INFO` holding an
//! `ExecCredential` whose `spec.interactive` is false and whose `spec.cluster` is the
//! cluster's connection settings when `provideClusterInfo` asks for them. Its stdout
//! must be an `ExecCredential` of the configured `apiVersion` with a token, a client
//! certificate and key, or both.
//!
//! The child is awaited asynchronously (tokio's process support) and killed when it
//! outlives the timeout. Its stdin is closed: kubesd never has a terminal to lend.
//! stdout and stderr are read to a bound, so a plugin that floods them costs no
//! memory; only the start of stderr is kept, for the error.
//!
//! A [`PluginError`] names the kubeconfig user and the command (never its arguments,
//! which sometimes carry keys), with the plugin's stderr and `installHint`. The
//! credential itself ([`PluginCredential`]) never prints.

use std::fmt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::config::{ExecCluster, ExecConfig, InteractiveMode, Secret};

/// The most of a plugin's stdout read: an `ExecCredential` is a few KiB.
const MAX_OUTPUT: usize = 1 << 20;
/// The most of its stderr kept (the rest is read and dropped).
const MAX_STDERR: usize = 4 << 10;
/// The most of its stderr shown in an error.
const STDERR_SHOWN: usize = 1000;

/// What a plugin run gave: a token, a client certificate, or both, and until when.
pub struct PluginCredential {
    /// `status.token`.
    pub token: Option<Secret>,
    /// `status.clientCertificateData` with `clientKeyData`, ready for rustls.
    pub client_cert: Option<Arc<CertifiedKey>>,
    /// `status.expirationTimestamp`; `None`: valid until the server refuses it.
    pub expires: Option<SystemTime>,
}

impl fmt::Debug for PluginCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginCredential")
            .field("token", &self.token)
            .field(
                "client_cert",
                &self.client_cert.as_ref().map(|_| "<secret>"),
            )
            .field("expires", &self.expires)
            .finish()
    }
}

/// Why a credential plugin gave no credential, in words, with the user and command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginError {
    /// The kubeconfig user whose plugin it is.
    pub user: Arc<str>,
    /// The command (without its arguments).
    pub command: Arc<str>,
    /// What went wrong.
    pub problem: PluginProblem,
    /// The start of what the plugin wrote to stderr, on one line.
    pub stderr: String,
    /// The kubeconfig's `installHint`, shown when the command is missing.
    pub install_hint: Arc<str>,
    /// The plugin's `interactiveMode`.
    pub interactive_mode: InteractiveMode,
}

/// What went wrong with a credential plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginProblem {
    /// The command does not exist or may not be run (not installed).
    NotInstalled(String),
    /// It could not be started for another reason.
    Spawn(String),
    /// It ran longer than `credential_plugin_timeout` and was killed.
    TimedOut(Duration),
    /// It exited unsuccessfully (its exit status).
    Failed(String),
    /// Its output is not a usable `ExecCredential`.
    BadOutput(String),
    /// No run has answered yet (the first is under way).
    Pending,
}

impl fmt::Display for PluginProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginProblem::NotInstalled(e) => write!(f, "is not installed or not runnable ({e})"),
            PluginProblem::Spawn(e) => write!(f, "cannot be started: {e}"),
            PluginProblem::TimedOut(t) => write!(
                f,
                "did not answer within {} s (credential_plugin_timeout) and was killed",
                t.as_secs_f64()
            ),
            PluginProblem::Failed(status) => write!(f, "failed ({status})"),
            PluginProblem::BadOutput(e) => write!(f, "printed no usable ExecCredential: {e}"),
            PluginProblem::Pending => f.write_str("has not answered yet"),
        }
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "kubeconfig user {:?}: credential plugin {:?} {}",
            self.user, self.command, self.problem
        )?;
        if !self.stderr.is_empty() {
            write!(f, "; its stderr: {}", self.stderr)?;
        }
        let ran = matches!(
            self.problem,
            PluginProblem::Failed(_) | PluginProblem::TimedOut(_)
        );
        if ran && self.interactive_mode != InteractiveMode::Never {
            write!(
                f,
                "; note: interactiveMode is {:?} but kubesd has no terminal, the plugin ran \
                 with stdin closed (log in beforehand, or use a non-interactive plugin)",
                self.interactive_mode
            )?;
        }
        if matches!(self.problem, PluginProblem::NotInstalled(_)) && !self.install_hint.is_empty() {
            write!(f, "; install hint: {}", self.install_hint.trim())?;
        }
        Ok(())
    }
}

impl std::error::Error for PluginError {}

impl PluginError {
    /// An error of `config`'s plugin.
    pub fn new(config: &ExecConfig, problem: PluginProblem, stderr: &[u8]) -> PluginError {
        PluginError {
            user: config.user.as_str().into(),
            command: config.command.display().to_string().into(),
            problem,
            stderr: one_line(stderr),
            install_hint: config.install_hint.as_str().into(),
            interactive_mode: config.interactive_mode,
        }
    }
}

/// Runs `config`'s plugin once, killing it after `timeout`, and reads its answer.
pub async fn run_plugin(
    config: &ExecConfig,
    timeout: Duration,
) -> Result<PluginCredential, PluginError> {
    let fail = |problem, stderr: &[u8]| PluginError::new(config, problem, stderr);
    let mut command = tokio::process::Command::new(&config.command);
    command
        .args(&config.args)
        .envs(config.env.iter().map(|e| (&e.name, e.value.expose())))
        .env("KUBERNETES_EXEC_INFO", exec_info(config))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| {
        let problem = match e.kind() {
            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                PluginProblem::NotInstalled(e.to_string())
            }
            _ => PluginProblem::Spawn(e.to_string()),
        };
        fail(problem, b"")
    })?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let work = async {
        tokio::join!(
            read_bounded(stdout, MAX_OUTPUT),
            read_bounded(stderr, MAX_STDERR),
            child.wait()
        )
    };
    // On a timeout the child is dropped, which kills it (`kill_on_drop`).
    let ((out, out_whole), (err, _), status) = tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| fail(PluginProblem::TimedOut(timeout), b""))?;
    let status = status.map_err(|e| fail(PluginProblem::Spawn(e.to_string()), &err))?;
    if !status.success() {
        return Err(fail(PluginProblem::Failed(status.to_string()), &err));
    }
    if !out_whole {
        let problem = format!("its output is over {MAX_OUTPUT} bytes");
        return Err(fail(PluginProblem::BadOutput(problem), &err));
    }
    parse_answer(config, &out).map_err(|e| fail(PluginProblem::BadOutput(e), &err))
}

/// Up to `max` bytes of `pipe`, and whether that was all of it; the rest is read
/// and dropped, so that the plugin never blocks on a full pipe.
async fn read_bounded(pipe: Option<impl AsyncRead + Unpin>, max: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return (kept, true);
    };
    let limit = u64::try_from(max).unwrap_or(u64::MAX);
    // A broken pipe ends the reading; what came before it is what we have.
    let _ = (&mut pipe).take(limit).read_to_end(&mut kept).await;
    let dropped = tokio::io::copy(&mut pipe, &mut tokio::io::sink())
        .await
        .unwrap_or(0);
    (kept, dropped == 0)
}

/// The `KUBERNETES_EXEC_INFO` value: an `ExecCredential` with `spec.interactive`
/// false, and `spec.cluster` when the kubeconfig provides cluster info.
fn exec_info(config: &ExecConfig) -> String {
    let mut spec = serde_json::json!({ "interactive": false });
    if let Some(cluster) = &config.cluster {
        spec["cluster"] = cluster_json(cluster);
    }
    serde_json::json!({
        "apiVersion": config.api_version.as_str(),
        "kind": "ExecCredential",
        "spec": spec,
    })
    .to_string()
}

/// `spec.cluster` as client-go writes it: unset fields left out.
fn cluster_json(c: &ExecCluster) -> serde_json::Value {
    let mut out = serde_json::Map::new();
    out.insert("server".into(), c.server.clone().into());
    if let Some(name) = &c.tls_server_name {
        out.insert("tls-server-name".into(), name.clone().into());
    }
    if c.insecure_skip_tls_verify {
        out.insert("insecure-skip-tls-verify".into(), true.into());
    }
    if let Some(ca) = &c.certificate_authority_data {
        out.insert("certificate-authority-data".into(), ca.clone().into());
    }
    if let Some(proxy) = &c.proxy_url {
        out.insert("proxy-url".into(), proxy.clone().into());
    }
    // Checked to be JSON when the kubeconfig was read.
    if let Some(config) = c
        .config
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
    {
        out.insert("config".into(), config);
    }
    serde_json::Value::Object(out)
}

/// A plugin's answer, as far as kubesd reads it.
#[derive(Deserialize)]
struct Answer {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    kind: String,
    status: Option<AnswerStatus>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnswerStatus {
    #[serde(default)]
    expiration_timestamp: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    client_certificate_data: Option<String>,
    #[serde(default)]
    client_key_data: Option<String>,
}

/// Reads a plugin's stdout as client-go does: the configured version, a status with a
/// token or a certificate and key (or both), an expiry still to come.
fn parse_answer(config: &ExecConfig, out: &[u8]) -> Result<PluginCredential, String> {
    // serde's messages can quote the input, which may hold a secret: only the place
    // is said.
    let answer: Answer = serde_json::from_slice(out).map_err(|e| {
        let what = match e.classify() {
            serde_json::error::Category::Data => "JSON of the wrong shape",
            _ => "not JSON",
        };
        format!("{what} (at line {} column {})", e.line(), e.column())
    })?;
    let want = config.api_version.as_str();
    if answer.kind != "ExecCredential" || answer.api_version != want {
        return Err(format!(
            "it is kind {:?} of apiVersion {:?}, not an ExecCredential of {want}",
            answer.kind, answer.api_version
        ));
    }
    let status = answer.status.ok_or("it has no status")?;
    let nonempty = |s: Option<String>| s.filter(|s| !s.is_empty());
    let token = nonempty(status.token).map(Secret);
    let client_cert = match (
        nonempty(status.client_certificate_data),
        nonempty(status.client_key_data),
    ) {
        (Some(cert), Some(key)) => Some(certified_key(&cert, &key)?),
        (None, None) => None,
        _ => return Err("it gives only one of clientCertificateData and clientKeyData".into()),
    };
    if token.is_none() && client_cert.is_none() {
        return Err("it has neither a token nor a client certificate and key".into());
    }
    let expires = match nonempty(status.expiration_timestamp) {
        None => None,
        Some(text) => {
            let at = parse_timestamp(&text)
                .ok_or_else(|| format!("expirationTimestamp {text:?} is not an RFC 3339 time"))?;
            if at <= SystemTime::now() {
                return Err(format!("expirationTimestamp {text} is already past"));
            }
            Some(at)
        }
    };
    Ok(PluginCredential {
        token,
        client_cert,
        expires,
    })
}

/// A client certificate chain and its key, from the plugin's PEM, for rustls.
fn certified_key(cert: &str, key: &str) -> Result<Arc<CertifiedKey>, String> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("clientCertificateData is not PEM: {e}"))?;
    if chain.is_empty() {
        return Err("clientCertificateData holds no PEM certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes())
        .map_err(|e| format!("clientKeyData is not a PEM private key: {e}"))?;
    let signer = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| format!("clientKeyData: {e}"))?;
    Ok(Arc::new(CertifiedKey::new(chain, signer)))
}

/// An RFC 3339 time: UTC (`Z`, as Go writes `metav1.Time`) or with a `±hh:mm` offset.
fn parse_timestamp(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    if let Some(utc) = text.strip_suffix('Z').or_else(|| text.strip_suffix('z')) {
        return humantime::parse_rfc3339_weak(utc).ok();
    }
    let split = text.len().checked_sub(6)?;
    let (local, offset) = (text.get(..split)?, text.get(split..)?);
    let sign = match offset.as_bytes().first()? {
        b'+' => 1i64,
        b'-' => -1,
        _ => return humantime::parse_rfc3339_weak(text).ok(),
    };
    let hours: u64 = offset.get(1..3)?.parse().ok()?;
    let minutes: u64 = offset.get(4..6)?.parse().ok()?;
    let shift = Duration::from_secs(hours * 3600 + minutes * 60);
    let local = humantime::parse_rfc3339_weak(local).ok()?;
    // Local time minus a positive offset is UTC.
    if sign > 0 {
        local.checked_sub(shift)
    } else {
        local.checked_add(shift)
    }
}

/// The start of a plugin's stderr on one line, control characters blanked.
fn one_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out: String = text
        .chars()
        .take(STDERR_SHOWN)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out.truncate(out.trim_end().len());
    out.trim_start().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_in_utc_or_with_an_offset() {
        let utc = parse_timestamp("2030-01-02T03:04:05Z").expect("utc");
        assert_eq!(parse_timestamp("2030-01-02T05:04:05+02:00"), Some(utc));
        assert_eq!(parse_timestamp("2030-01-02T01:04:05-02:00"), Some(utc));
        assert!(parse_timestamp("2030-01-02T03:04:05.123Z").is_some());
        assert_eq!(parse_timestamp("tomorrow"), None);
    }

    #[test]
    fn stderr_is_cut_to_one_line() {
        assert_eq!(one_line(b"  error:\n\tno creds\n"), "error:  no creds");
        assert_eq!(one_line(&[b'x'; 5000]).len(), STDERR_SHOWN);
    }
}
