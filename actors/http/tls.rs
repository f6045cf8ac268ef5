//! TLS for API connections, with rustls: the CA to trust, a client certificate, a
//! server name override, and (only when the config says so) no verification at all.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

use crate::config::{TlsConfig, TlsVersion};

/// A TLS setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file could not be read or holds nothing usable.
    #[error("tls_config.{field}: cannot use {path}: {problem}")]
    File {
        /// `ca_file`, `cert_file` or `key_file`.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// Inline PEM holds nothing usable (the PEM itself is never printed).
    #[error("tls_config.{field}: {problem}")]
    Inline {
        /// `ca`, `cert` or `key`.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// rustls refused the combination.
    #[error("tls_config: {0}")]
    Rustls(String),
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(field: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |problem: String| TlsError::File {
        field,
        path: path.to_path_buf(),
        problem,
    };
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| err(e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err("no PEM certificate in it".into()));
    }
    Ok(certs)
}

/// Certificates from inline PEM (`ca`, `cert`).
fn inline_certs(field: &'static str, pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let err = |problem: String| TlsError::Inline { field, problem };
    let certs: Vec<_> = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| err(e.to_string()))?;
    if certs.is_empty() {
        return Err(err("no PEM certificate in it".into()));
    }
    Ok(certs)
}

/// The certificates of `ca` or `ca_file`, `cert` or `cert_file`: whichever is set.
fn certs(
    inline: Option<&str>,
    inline_field: &'static str,
    file: Option<&PathBuf>,
    file_field: &'static str,
) -> Result<Option<Vec<CertificateDer<'static>>>, TlsError> {
    match (inline.filter(|p| !p.is_empty()), file) {
        (Some(pem), _) => inline_certs(inline_field, pem).map(Some),
        (None, Some(path)) => read_certs(file_field, path).map(Some),
        (None, None) => Ok(None),
    }
}

/// The system's trusted CAs (`rustls-native-certs`), read once: with webpki's roots,
/// what a config without `ca`/`ca_file` trusts, as Go's crypto/tls trusts the system
/// store. Unreadable entries are skipped (logged once).
fn system_roots() -> &'static [CertificateDer<'static>] {
    static ROOTS: std::sync::OnceLock<Vec<CertificateDer<'static>>> = std::sync::OnceLock::new();
    ROOTS.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if !found.errors.is_empty() {
            tracing::warn!(
                "some system CA certificates could not be read: {}",
                found
                    .errors
                    .iter()
                    .map(|e| e.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        found.certs
    })
}

/// The TLS versions rustls may use within `min_version` and `max_version`. rustls has
/// TLS 1.2 and 1.3 only; a `max_version` below 1.2 is refused when the config is
/// validated, a `min_version` below it allows 1.2 and 1.3.
fn versions(tls: &TlsConfig) -> Vec<&'static rustls::SupportedProtocolVersion> {
    let min = tls.min_version.unwrap_or(TlsVersion::Tls12);
    let max = tls.max_version.unwrap_or(TlsVersion::Tls13);
    let mut out = Vec::new();
    if min <= TlsVersion::Tls12 && max >= TlsVersion::Tls12 {
        out.push(&rustls::version::TLS12);
    }
    if max >= TlsVersion::Tls13 {
        out.push(&rustls::version::TLS13);
    }
    out
}

/// The rustls client config for `tls`. Verification is on unless
/// `insecure_skip_verify`, which is logged as a warning. With `http2`, ALPN offers
/// HTTP/2 before HTTP/1.1 (`enable_http2`, on by default as in Prometheus).
pub fn build_tls_config(
    tls: &TlsConfig,
    http2: bool,
) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let versions = versions(tls);
    if versions.is_empty() {
        return Err(TlsError::Rustls(format!(
            "no TLS version between min_version {} and max_version {} that kubesd's TLS \
             library (rustls: TLS 1.2 and 1.3) speaks",
            tls.min_version.map_or("TLS12", TlsVersion::as_str),
            tls.max_version.map_or("TLS13", TlsVersion::as_str)
        )));
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let verifier = server_verifier(tls, root_store(tls)?)?;
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let chain = certs(
        tls.cert.as_deref(),
        "cert",
        tls.cert_file.as_ref(),
        "cert_file",
    )?;
    let key = private_key(tls)?;
    let mut config = match (chain, key) {
        (Some(chain), Some(key)) => builder
            .with_client_auth_cert(chain, key)
            .map_err(|e| TlsError::Rustls(e.to_string()))?,
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

/// The CA certificates to trust: `ca`/`ca_file` when given, else the web's and the
/// system's roots.
fn root_store(tls: &TlsConfig) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    match certs(tls.ca.as_deref(), "ca", tls.ca_file.as_ref(), "ca_file")? {
        Some(certs) => {
            for cert in certs {
                roots
                    .add(cert)
                    .map_err(|e| TlsError::Rustls(format!("CA certificate: {e}")))?;
            }
        }
        None => {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            // Unparsable system certificates are skipped, as Go does.
            roots.add_parsable_certificates(system_roots().iter().cloned());
        }
    }
    Ok(roots)
}

/// How the API server's certificate is checked: against `roots` (for the URL's host or
/// `server_name`), or not at all with `insecure_skip_verify` (logged as a warning).
fn server_verifier(
    tls: &TlsConfig,
    roots: rustls::RootCertStore,
) -> Result<Arc<dyn ServerCertVerifier>, TlsError> {
    if tls.insecure_skip_verify {
        tracing::warn!(
            "tls_config.insecure_skip_verify is on: the API server's certificate is not verified"
        );
        return Ok(Arc::new(NoVerification));
    }
    let webpki =
        rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| TlsError::Rustls(e.to_string()))?;
    Ok(match &tls.server_name {
        Some(name) => Arc::new(RenamedServer {
            inner: webpki,
            name: ServerName::try_from(name.clone())
                .map_err(|e| TlsError::Rustls(format!("server_name {name:?}: {e}")))?,
        }),
        None => webpki,
    })
}

/// The client certificate's private key, from `key` or `key_file`, if one is given.
fn private_key(tls: &TlsConfig) -> Result<Option<PrivateKeyDer<'static>>, TlsError> {
    if !tls.key.expose().is_empty() {
        let key = PrivateKeyDer::from_pem_slice(tls.key.expose().as_bytes()).map_err(|e| {
            TlsError::Inline {
                field: "key",
                problem: format!("no usable PEM private key: {e}"),
            }
        })?;
        return Ok(Some(key));
    }
    let Some(path) = &tls.key_file else {
        return Ok(None);
    };
    let key = PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::File {
        field: "key_file",
        path: path.clone(),
        problem: e.to_string(),
    })?;
    Ok(Some(key))
}

/// Verifies against `tls_config.server_name` instead of the URL's host.
#[derive(Debug)]
struct RenamedServer {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    name: ServerName<'static>,
}

impl ServerCertVerifier for RenamedServer {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.inner
            .verify_server_cert(end_entity, intermediates, &self.name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// Accepts any certificate: `insecure_skip_verify: true`.
#[derive(Debug)]
struct NoVerification;

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        provider()
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_or_empty_ca_file_names_the_field() {
        let missing = TlsConfig {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..TlsConfig::default()
        };
        let err = build_tls_config(&missing, false).unwrap_err().to_string();
        assert!(
            err.starts_with("tls_config.ca_file: cannot use /nonexistent/ca.pem"),
            "{err}"
        );
        assert!(build_tls_config(&TlsConfig::default(), true).is_ok());
        let insecure = TlsConfig {
            insecure_skip_verify: true,
            ..TlsConfig::default()
        };
        assert!(build_tls_config(&insecure, true).is_ok());
    }
}
