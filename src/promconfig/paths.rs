//! Relative file names in a job's discovery config, resolved against the config file's
//! directory as Prometheus does (`SetDirectory`), so the config means the same whatever
//! directory kubesd is started from.

use std::path::{Path, PathBuf};

use crate::config::SdConfig;

/// Makes every file name in `config` that is relative absolute under `dir`: the
/// kubeconfig, the token, password, credentials and client-secret files, the TLS files
/// (the API server's and the token endpoint's), and `http_headers` files.
pub fn resolve_relative_paths(config: &mut SdConfig, dir: &Path) {
    let h = &mut config.http;
    let mut files: Vec<&mut PathBuf> = [
        config.kubeconfig_file.as_mut(),
        h.bearer_token_file.as_mut(),
        h.basic_auth.as_mut().and_then(|b| b.password_file.as_mut()),
        h.authorization
            .as_mut()
            .and_then(|a| a.credentials_file.as_mut()),
        h.tls_config.ca_file.as_mut(),
        h.tls_config.cert_file.as_mut(),
        h.tls_config.key_file.as_mut(),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(o) = h.oauth2.as_mut() {
        files.extend(o.client_secret_file.as_mut());
        files.extend(o.tls_config.ca_file.as_mut());
        files.extend(o.tls_config.cert_file.as_mut());
        files.extend(o.tls_config.key_file.as_mut());
    }
    for header in h.http_headers.values_mut() {
        files.extend(header.files.iter_mut());
    }
    for path in files {
        // An empty name means "not set" to Prometheus; leave it for validation.
        if path.is_relative() && !path.as_os_str().is_empty() {
            *path = dir.join(&*path);
        }
    }
}
