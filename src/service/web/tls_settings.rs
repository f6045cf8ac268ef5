//! The web config's TLS settings as the listener applies them (its
//! `tls_server_config`, which [`crate::service::web::config`] reads and checks into
//! them), with the check of client certificates each `client_auth_type` makes. The
//! web config, the listener's TLS ([`crate::service::web::tls`]) and the allocator
//! (which serves secrets only to a verified client certificate) import them; they
//! import nothing of the listener back.

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::sign::CertifiedKey;
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme, SupportedCipherSuite,
};

/// Whether and how a client must present a certificate (Go's `tls.ClientAuthType`, by
/// the names the toolkit reads).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for.
    NoClientCert,
    /// A certificate is asked for and not checked (insecure; as Go).
    RequestClientCert,
    /// A certificate is required and not checked (insecure; as Go).
    RequireAnyClientCert,
    /// A certificate is asked for and, if sent, must verify against the client CA.
    VerifyClientCertIfGiven,
    /// A certificate is required and must verify against the client CA.
    RequireAndVerifyClientCert,
}

/// The TLS versions rustls serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    Tls12,
    /// TLS 1.3.
    Tls13,
}

/// The TLS settings of a web config.
pub struct TlsSettings {
    /// The server's certificate chain and key.
    pub certified_key: Arc<CertifiedKey>,
    /// Client certificate policy.
    pub client_auth: ClientAuth,
    /// The check of client certificates that `client_auth` and the client CA make.
    pub client_verifier: Arc<dyn ClientCertVerifier>,
    /// Lowest and highest version served.
    pub versions: (TlsVersion, TlsVersion),
    /// TLS 1.2 suites allowed, in preference order; empty: rustls' defaults.
    pub tls12_suites: Vec<SupportedCipherSuite>,
    /// The server's order of suites wins over the client's.
    pub prefer_server_cipher_suites: bool,
    /// Key exchange groups in preference order; empty: rustls' defaults.
    pub curves: Vec<&'static dyn rustls::crypto::SupportedKxGroup>,
}

impl TlsSettings {
    /// The parts a running listener cannot change: versions, suites and curves are
    /// fixed when it starts.
    pub fn fixed_part(&self) -> (TlsVersion, TlsVersion, Vec<String>, bool, Vec<String>) {
        (
            self.versions.0,
            self.versions.1,
            self.tls12_suites
                .iter()
                .map(|s| s.suite().as_str().unwrap_or("?").to_string())
                .collect(),
            self.prefer_server_cipher_suites,
            self.curves
                .iter()
                .map(|g| g.name().as_str().unwrap_or("?").to_string())
                .collect(),
        )
    }
}

/// The client-certificate check of one `client_auth_type`.
pub fn client_verifier(
    client_auth: ClientAuth,
    roots: Option<Arc<RootCertStore>>,
) -> Result<Arc<dyn ClientCertVerifier>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let verifying = |roots: Option<Arc<RootCertStore>>| {
        roots.ok_or_else(|| "a verifying client_auth_type needs a client CA".to_string())
    };
    Ok(match client_auth {
        ClientAuth::NoClientCert => Arc::new(AnyClientCert {
            offer: false,
            mandatory: false,
            algorithms,
        }),
        ClientAuth::RequestClientCert => Arc::new(AnyClientCert {
            offer: true,
            mandatory: false,
            algorithms,
        }),
        ClientAuth::RequireAnyClientCert => Arc::new(AnyClientCert {
            offer: true,
            mandatory: true,
            algorithms,
        }),
        ClientAuth::VerifyClientCertIfGiven => {
            WebPkiClientVerifier::builder_with_provider(verifying(roots)?, provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("cannot verify client certificates with this CA: {e}"))?
        }
        ClientAuth::RequireAndVerifyClientCert => {
            WebPkiClientVerifier::builder_with_provider(verifying(roots)?, provider)
                .build()
                .map_err(|e| format!("cannot verify client certificates with this CA: {e}"))?
        }
    })
}

/// `NoClientCert`, `RequestClientCert` and `RequireAnyClientCert`: a certificate is not
/// asked for, or asked for and accepted unverified (Go's semantics, which the toolkit
/// documents as insecure); the handshake's signature is still checked, so the client
/// holds the key of what it sent.
#[derive(Debug)]
struct AnyClientCert {
    offer: bool,
    mandatory: bool,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        self.offer
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
