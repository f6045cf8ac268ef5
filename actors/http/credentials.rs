//! The `Authorization` header of API requests, with secrets read from files re-read
//! whenever the file changes (service-account tokens are rotated hourly), tokens from
//! an OAuth 2.0 endpoint, or from a kubeconfig's credential plugin.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use std::sync::Arc;

use super::exec_plugin::PluginError;
use super::exec_source::ExecSource;
use super::oauth2::TokenSource;
use crate::config::{HttpClientConfig, Secret};

/// A secret value, fixed or read from a file.
#[derive(Debug)]
enum SecretSource {
    Fixed(Secret),
    File {
        path: PathBuf,
        /// The file's modification time and content when last read.
        cached: Option<(SystemTime, Secret)>,
    },
}

impl SecretSource {
    fn new(value: &Secret, file: Option<&PathBuf>) -> SecretSource {
        match file {
            Some(path) => SecretSource::File {
                path: path.clone(),
                cached: None,
            },
            None => SecretSource::Fixed(value.clone()),
        }
    }

    fn get(&mut self, field: &'static str) -> Result<&Secret, CredentialsError> {
        match self {
            SecretSource::Fixed(s) => Ok(s),
            SecretSource::File { path, cached } => {
                let read_err = |source| CredentialsError::File {
                    field,
                    path: path.clone(),
                    source,
                };
                let modified = std::fs::metadata(&*path)
                    .and_then(|m| m.modified())
                    .map_err(read_err)?;
                if cached.as_ref().is_none_or(|(t, _)| *t != modified) {
                    let text = read_trimmed(path).map_err(read_err)?;
                    *cached = Some((modified, Secret(text)));
                }
                // Filled just above when it was empty or stale.
                cached
                    .as_ref()
                    .map(|(_, s)| s)
                    .ok_or_else(|| read_err(std::io::ErrorKind::NotFound.into()))
            }
        }
    }
}

fn read_trimmed(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

/// Credentials that cannot be had. Names the config field and the file or endpoint,
/// never the secret.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// A secret file could not be read.
    #[error("{field}: cannot read {path}: {source}")]
    File {
        /// The config field that names the file.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// No valid OAuth 2.0 token (the message names the token endpoint).
    #[error("{0}")]
    OAuth2(String),
    /// No valid credential from a kubeconfig's credential plugin (the error names the
    /// kubeconfig user and the command).
    #[error("{0}")]
    Plugin(PluginError),
}

/// How requests authenticate.
#[derive(Debug)]
pub enum Credentials {
    /// No `Authorization` header (client certificates, or an open server).
    None,
    /// `Authorization: <scheme> <secret>`.
    Header {
        /// `Bearer`, or the `authorization.type`.
        scheme: String,
        /// The token or credentials.
        secret: SecretValue,
        /// The config field, for errors.
        field: &'static str,
    },
    /// `Authorization: Bearer <token>`, the token from an OAuth 2.0 endpoint.
    OAuth2(Arc<TokenSource>),
    /// A kubeconfig's credential plugin: `Authorization: Bearer <token>` when it gives
    /// a token (its client certificate goes to TLS, see [`super::endpoint_tls_config`]).
    Exec {
        /// The plugin's shared credential.
        source: Arc<ExecSource>,
        /// How long a run may take (`credential_plugin_timeout`).
        timeout: Duration,
        /// The generation of the credential the last request carried.
        used: Option<u64>,
    },
    /// `Authorization: Basic base64(user:password)`.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: SecretValue,
    },
}

/// A secret that may come from a file. Opaque: read it through [`Credentials`].
#[derive(Debug)]
pub struct SecretValue(SecretSource);

impl Credentials {
    /// The credentials a client config asks for; a credential plugin's runs may take
    /// `plugin_timeout`.
    pub fn from_config(c: &HttpClientConfig, plugin_timeout: Duration) -> Credentials {
        if let Some(e) = &c.exec {
            return Credentials::Exec {
                source: ExecSource::for_config(e),
                timeout: plugin_timeout,
                used: None,
            };
        }
        if let Some(o) = &c.oauth2 {
            return Credentials::OAuth2(TokenSource::for_config(o));
        }
        if let Some(b) = &c.basic_auth {
            return Credentials::Basic {
                username: b.username.clone(),
                password: SecretValue(SecretSource::new(&b.password, b.password_file.as_ref())),
            };
        }
        if let Some(a) = &c.authorization {
            let scheme = if a.kind.is_empty() {
                "Bearer".to_string()
            } else {
                a.kind.clone()
            };
            return Credentials::Header {
                scheme,
                secret: SecretValue(SecretSource::new(
                    &a.credentials,
                    a.credentials_file.as_ref(),
                )),
                field: "authorization.credentials_file",
            };
        }
        if !c.bearer_token.0.is_empty() || c.bearer_token_file.is_some() {
            return Credentials::Header {
                scheme: "Bearer".into(),
                secret: SecretValue(SecretSource::new(
                    &c.bearer_token,
                    c.bearer_token_file.as_ref(),
                )),
                field: "bearer_token_file",
            };
        }
        Credentials::None
    }

    /// The `Authorization` header value for the next request, re-reading a secret file
    /// if it changed since the last request.
    pub fn header(&mut self) -> Result<Option<String>, CredentialsError> {
        match self {
            Credentials::None => Ok(None),
            Credentials::Header {
                scheme,
                secret,
                field,
            } => {
                let s = secret.0.get(field)?;
                Ok(Some(format!("{scheme} {}", s.expose())))
            }
            Credentials::OAuth2(source) => {
                source.header().map(Some).map_err(CredentialsError::OAuth2)
            }
            Credentials::Exec {
                source,
                timeout,
                used,
            } => {
                let header = source.header(*timeout).map_err(CredentialsError::Plugin)?;
                *used = Some(header.generation);
                Ok(header.value)
            }
            Credentials::Basic { username, password } => {
                let p = password.0.get("basic_auth.password_file")?;
                Ok(Some(format!(
                    "Basic {}",
                    base64(format!("{username}:{}", p.expose()).as_bytes())
                )))
            }
        }
    }
}

impl Credentials {
    /// The API server answered 401 to the last request: a credential plugin runs
    /// again (once for the whole wave of 401s). Other credentials have nothing to
    /// renew: files are re-read when they change, OAuth 2.0 tokens when they expire.
    pub fn refused(&self) {
        if let Credentials::Exec {
            source,
            timeout,
            used: Some(generation),
        } = self
        {
            source.refused(*generation, *timeout);
        }
    }

    /// Which client certificate a credential plugin gave (`None`: none, or no
    /// plugin). A client built before it changed holds connections made with the old
    /// one.
    pub fn client_cert_generation(&self) -> Option<u64> {
        match self {
            Credentials::Exec { source, .. } => source.client_cert_generation(),
            _ => None,
        }
    }
}

/// Standard base64 with padding (RFC 4648), for basic auth.
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BasicAuth;

    #[test]
    fn base64_matches_rfc4648() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"user:pass"), "dXNlcjpwYXNz");
    }

    #[test]
    fn token_file_is_reread_when_it_changes() {
        let dir = std::env::temp_dir().join(format!("kubesd-cred-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "one\n").unwrap();
        let config = HttpClientConfig {
            bearer_token_file: Some(file.clone()),
            ..HttpClientConfig::default()
        };
        let mut creds = Credentials::from_config(&config, Duration::from_secs(1));
        assert_eq!(creds.header().unwrap().as_deref(), Some("Bearer one"));
        std::fs::write(&file, "two").unwrap();
        // Make the change visible even on filesystems with coarse timestamps.
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(creds.header().unwrap().as_deref(), Some("Bearer two"));
        std::fs::remove_file(&file).unwrap();
        let err = creds.header().unwrap_err().to_string();
        assert!(
            err.starts_with("bearer_token_file: cannot read") && !err.contains("two"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn basic_auth_header() {
        let config = HttpClientConfig {
            basic_auth: Some(BasicAuth {
                username: "user".into(),
                password: Secret("pass".into()),
                password_file: None,
            }),
            ..HttpClientConfig::default()
        };
        let mut creds = Credentials::from_config(&config, Duration::from_secs(1));
        assert_eq!(
            creds.header().unwrap().as_deref(),
            Some("Basic dXNlcjpwYXNz")
        );
        assert!(!format!("{creds:?}").contains("pass\""));
    }
}
