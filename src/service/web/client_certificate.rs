//! Which connections proved their client with a certificate the web config verified.

use std::any::Any;

use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;
use actix_web::rt::net::TcpStream;

use super::guard::WebGuard;
use super::tls_settings::ClientAuth;
use crate::service::api::allocator::VerifiedClientCertificate;

/// The listener's `on_connect`: notes [`VerifiedClientCertificate`] on a TLS
/// connection with a client certificate while `guard`'s `client_auth_type` verifies
/// certificates (with the other types a certificate proves nothing).
pub fn note_client_certificate(conn: &dyn Any, ext: &mut Extensions, guard: Option<&WebGuard>) {
    let Some(guard) = guard else {
        return;
    };
    let verifies = guard.current().settings.tls.as_ref().is_some_and(|t| {
        matches!(
            t.client_auth,
            ClientAuth::VerifyClientCertIfGiven | ClientAuth::RequireAndVerifyClientCert
        )
    });
    let presented = conn
        .downcast_ref::<TlsStream<TcpStream>>()
        .and_then(|tls| tls.get_ref().1.peer_certificates())
        .is_some_and(|certs| !certs.is_empty());
    if verifies && presented {
        ext.insert(VerifiedClientCertificate);
    }
}
