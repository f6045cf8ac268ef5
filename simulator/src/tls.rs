//! TLS for the simulator: a fresh self-signed certificate for `localhost`
//! and `127.0.0.1`, generated at start, and the rustls server config using it.
//!
//! The certificate is its own CA, so a client trusts the server by adding
//! [`SelfSigned::cert_pem`] as its only root, exactly like a kubeconfig's
//! `certificate-authority-data`.

use std::io;
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A generated certificate and its key.
#[derive(Clone)]
pub struct SelfSigned {
    /// The certificate (also the CA to trust), PEM.
    pub cert_pem: String,
    /// The certificate, DER.
    pub cert_der: CertificateDer<'static>,
    key_der: Vec<u8>,
}

impl SelfSigned {
    /// Generates a certificate valid for `localhost` and `127.0.0.1`.
    pub fn generate() -> io::Result<SelfSigned> {
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let certified = rcgen::generate_simple_self_signed(names).map_err(io::Error::other)?;
        Ok(SelfSigned {
            cert_pem: certified.cert.pem(),
            cert_der: certified.cert.der().clone(),
            key_der: certified.signing_key.serialize_der(),
        })
    }

    /// The rustls server configuration presenting this certificate
    /// (ring provider, TLS 1.2 and 1.3, HTTP/1.1 only: watches are HTTP/1.1
    /// chunked streams).
    pub fn server_config(&self) -> io::Result<rustls::ServerConfig> {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_der.clone()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .with_no_client_auth()
            .with_single_cert(vec![self.cert_der.clone()], key)
            .map_err(io::Error::other)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_usable_config() {
        let tls = SelfSigned::generate().expect("generate");
        assert!(tls.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(tls.server_config().is_ok());
    }
}
