//! The OpenTelemetry target allocator's HTTP API, served from the same discovery, so
//! that an unmodified collector (`prometheus` receiver with `target_allocator:
//! {endpoint, collector_id, interval}`) takes its share from kubesd:
//!
//! - `GET /scrape_configs`: each job's scrape config by name, as JSON, without its
//!   `kubernetes_sd_configs` (the collector replaces its discovery by the next two);
//!   inline secrets redacted (`<secret>`) but to a client whose TLS client certificate
//!   the web config's client CA verified (`client_auth_type` `VerifyClientCertIfGiven`
//!   or `RequireAndVerifyClientCert`), as the allocator serves them over mTLS.
//! - `GET /jobs`: `{"<job>": {"_link": "/jobs/<job>/targets"}}`.
//! - `GET /jobs/{job}/targets?collector_id=ID`: the targets assigned to member `ID` in
//!   HTTP SD JSON, each with its *discovered* labels: the collector applies the job's
//!   `relabel_configs` itself. Only targets the job's relabelling keeps are served, and
//!   each is assigned by its relabelled `__address__`, so a collector's share,
//!   relabelled, is `/sd/{job}?member=ID`'s. An unknown collector gets `[]`.
//!
//! The targets are a view partition like the member views
//! ([`crate::service::views::ViewKind::Allocator`], assigned when asked for: see
//! [`super::assigned`]): each object's kept targets, split by member, as shares of the
//! object's discovered label sets (the group's, not a copy), serialized only while a
//! collector's share is sent, without the `__meta_*` labels no rule of the job reads
//! (unless `--allocator.keep-unread-labels`): the labels of 600k targets, kept
//! serialized, would be several times kubesd's own memory.

use std::any::Any;

use actix_tls::accept::rustls_0_23::TlsStream;
use actix_web::dev::Extensions;
use actix_web::http::header::RETRY_AFTER;
use actix_web::rt::net::TcpStream;
use actix_web::{HttpRequest, HttpResponse, web};
use arcstr::ArcStr;

use crate::service::ServiceState;
use crate::service::views::ViewQuery;
use crate::service::web::config::ClientAuth;
use crate::service::web::guard::WebGuard;
use crate::service::web::http::serve_body;

/// Noted on a connection (by [`note_client_certificate`]) whose client presented a
/// certificate that the web config's client CA verified.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedClientCertificate;

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

/// `GET /scrape_configs`: every job's scrape config by name (see
/// [`crate::promconfig::ServedConfig`]), with its secrets only on a connection with a
/// [`VerifiedClientCertificate`].
pub async fn scrape_configs(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let secrets = req.conn_data::<VerifiedClientCertificate>().is_some();
    let configs: serde_json::Map<String, serde_json::Value> = state
        .all()
        .into_iter()
        .map(|(name, job)| {
            let served = job.served_config();
            let json = if secrets {
                &served.with_secrets
            } else {
                &served.redacted
            };
            (name, (**json).clone())
        })
        .collect();
    HttpResponse::Ok().json(configs)
}

/// `GET /jobs`: each job's link to its targets.
pub async fn jobs(state: web::Data<ServiceState>) -> HttpResponse {
    let links: serde_json::Map<String, serde_json::Value> = state
        .all()
        .into_iter()
        .map(|(name, _)| {
            let escaped: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
            let link = serde_json::json!({"_link": format!("/jobs/{escaped}/targets")});
            (name, link)
        })
        .collect();
    HttpResponse::Ok().json(links)
}

/// `GET /jobs/{job}/targets?collector_id=ID`: the targets of `job` assigned to member
/// `ID`, with their discovered labels.
pub async fn targets(
    req: HttpRequest,
    job: web::Path<String>,
    state: web::Data<ServiceState>,
) -> HttpResponse {
    let Some(collector) = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "collector_id")
        .map(|(_, value)| value.into_owned())
        .filter(|id| !id.is_empty())
    else {
        return HttpResponse::BadRequest()
            .body("collector_id= must name the collector (its member pod)\n");
    };
    let name = job.into_inner();
    // The collector escapes the name as a query value: a space is `+`.
    let Some(running) = state
        .job(&name)
        .or_else(|| state.job(&name.replace('+', " ")))
    else {
        return HttpResponse::NotFound().body(format!("there is no job named {name:?}\n"));
    };
    if !running.status().synced {
        return HttpResponse::ServiceUnavailable()
            .insert_header((RETRY_AFTER, "5"))
            .body(format!(
                "job {name:?} has not listed everything it discovers yet\n"
            ));
    }
    let body = running
        .view(&ViewQuery::Allocator(ArcStr::from(collector)))
        .await;
    serve_body(&req, body)
}
