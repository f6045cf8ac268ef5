//! The listener's TLS (rustls), from the web config's `tls_server_config`.
//!
//! The certificate and the client-certificate policy are looked up in the web config
//! at every handshake (`CurrentCertificate`, `CurrentClientPolicy`), so a renewed
//! certificate, a new client CA or a changed `client_auth_type` apply to the next
//! connection without a restart, as with the exporter-toolkit. Versions, cipher suites
//! and curves are fixed when the listener starts (rustls takes them once).

use std::sync::Arc;

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

use crate::service::web::guard::WebGuard;
use crate::service::web::tls_settings::{TlsSettings, TlsVersion};

/// The rustls server config of the web config in force when the listener starts; None
/// when it has no `tls_server_config` (plain HTTP).
pub fn server_config(guard: &Arc<WebGuard>) -> Result<Option<ServerConfig>, String> {
    let loaded = guard.current();
    let Some(tls) = &loaded.settings.tls else {
        return Ok(None);
    };
    let provider = provider_for(tls);
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| *v >= tls.versions.0 && *v <= tls.versions.1)
    .map(|(_, v)| v)
    .collect();
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls_server_config: {e}"))?
        .with_client_cert_verifier(Arc::new(CurrentClientPolicy {
            guard: Arc::clone(guard),
            fallback: Arc::clone(&tls.client_verifier),
        }))
        .with_cert_resolver(Arc::new(CurrentCertificate {
            guard: Arc::clone(guard),
            fallback: Arc::clone(&tls.certified_key),
        }));
    config.ignore_client_order = tls.prefer_server_cipher_suites;
    Ok(Some(config))
}

/// ring's provider, narrowed to the configured TLS 1.2 suites and curves.
fn provider_for(tls: &TlsSettings) -> CryptoProvider {
    let mut provider = rustls::crypto::ring::default_provider();
    if !tls.tls12_suites.is_empty() {
        // cipher_suites names TLS 1.2 suites only (as Go): TLS 1.3's stay as they are.
        let mut suites: Vec<_> = provider
            .cipher_suites
            .iter()
            .filter(|s| s.version() == &rustls::version::TLS13)
            .copied()
            .collect();
        suites.extend(tls.tls12_suites.iter().copied());
        provider.cipher_suites = suites;
    }
    if !tls.curves.is_empty() {
        provider.kx_groups = tls.curves.clone();
    }
    provider
}

/// The web config's certificate, looked up per handshake.
#[derive(Debug)]
struct CurrentCertificate {
    guard: Arc<WebGuard>,
    /// The certificate the listener started with, if TLS has been removed since (the
    /// listener stays HTTPS until restarted).
    fallback: Arc<CertifiedKey>,
}

impl ResolvesServerCert for CurrentCertificate {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let loaded = self.guard.current();
        Some(loaded.settings.tls.as_ref().map_or_else(
            || Arc::clone(&self.fallback),
            |t| Arc::clone(&t.certified_key),
        ))
    }
}

/// The web config's client-certificate policy, looked up per handshake.
#[derive(Debug)]
struct CurrentClientPolicy {
    guard: Arc<WebGuard>,
    fallback: Arc<dyn ClientCertVerifier>,
}

impl CurrentClientPolicy {
    fn verifier(&self) -> Arc<dyn ClientCertVerifier> {
        let loaded = self.guard.current();
        loaded.settings.tls.as_ref().map_or_else(
            || Arc::clone(&self.fallback),
            |t| Arc::clone(&t.client_verifier),
        )
    }
}

impl ClientCertVerifier for CurrentClientPolicy {
    fn offer_client_auth(&self) -> bool {
        self.verifier().offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.verifier().client_auth_mandatory()
    }

    /// No hints: a client picks its certificate itself (the hints would have to
    /// outlive the look-up of the current policy).
    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.verifier()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.verifier().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.verifier().supported_verify_schemes()
    }
}
