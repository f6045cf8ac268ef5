//! Relative file names in a job's discovery config, resolved against the config file's
//! directory as Prometheus does (`SetDirectory`), so the config means the same whatever
//! directory kubesd is started from.

use std::path::{Path, PathBuf};

use crate::config::SdConfig;

/// Makes every file name in `config` that is relative absolute under `dir`: the
/// kubeconfig, the token, password and credentials files, and the TLS files.
pub fn resolve_relative_paths(config: &mut SdConfig, dir: &Path) {
    let h = &mut config.http;
    let files: [Option<&mut PathBuf>; 7] = [
        config.kubeconfig_file.as_mut(),
        h.bearer_token_file.as_mut(),
        h.basic_auth.as_mut().and_then(|b| b.password_file.as_mut()),
        h.authorization
            .as_mut()
            .and_then(|a| a.credentials_file.as_mut()),
        h.tls_config.ca_file.as_mut(),
        h.tls_config.cert_file.as_mut(),
        h.tls_config.key_file.as_mut(),
    ];
    for path in files.into_iter().flatten() {
        // An empty name means "not set" to Prometheus; leave it for validation.
        if path.is_relative() && !path.as_os_str().is_empty() {
            *path = dir.join(&*path);
        }
    }
}
