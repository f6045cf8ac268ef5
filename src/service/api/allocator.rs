//! The OpenTelemetry target allocator's HTTP API, served from the same discovery, so
//! that an unmodified collector (`prometheus` receiver with `target_allocator:
//! {endpoint, collector_id, interval}`) takes its share from kubesd:
//!
//! - `GET /scrape_configs`: each job's scrape config by name, as JSON, without its
//!   `kubernetes_sd_configs` (the collector replaces its discovery by the next two);
//!   inline secrets redacted (`<secret>`) but to a client whose TLS client certificate
//!   the web config's client CA verified (`client_auth_type` `VerifyClientCertIfGiven`
//!   or `RequireAndVerifyClientCert`), as the allocator serves them over mTLS.
//! - `GET /jobs`: `{"<job>": {"_link": "/jobs/<job>/targets"}}`, for each job that has
//!   a target.
//! - `GET /jobs/{job}/targets?collector_id=ID`: the targets assigned to member `ID` in
//!   HTTP SD JSON, each with its *discovered* labels: the collector applies the job's
//!   `relabel_configs` itself. Only targets the job's relabelling keeps are served, and
//!   each is assigned by its relabelled `__address__`, so a collector's share,
//!   relabelled, is `/sd/{job}?member=ID`'s. An unknown collector gets `[]`; without
//!   `collector_id`, every member's share (`allocator_shares.rs`).
//!
//! The targets are a view partition like the member views
//! ([`crate::service::views::ViewKind::Allocator`], assigned when asked for: see
//! [`crate::service::fleet::assigned`]): each object's kept targets, split by member, as shares of the
//! object's discovered label sets (the group's, not a copy), serialized only while a
//! collector's share is sent, without the `__meta_*` labels no rule of the job reads
//! (unless `--allocator.keep-unread-labels`): the labels of 600k targets, kept
//! serialized, would be several times kubesd's own memory.

use actix_web::http::header::RETRY_AFTER;
use actix_web::{HttpRequest, HttpResponse, web};
use arcstr::ArcStr;

use super::allocator_shares::every_collectors_share;
use super::sd::serve_body;
use crate::service::api::go_query::{UnescapeError, query_escape, query_unescape};
use crate::service::state::ServiceState;
use crate::service::views::ViewQuery;

/// Noted on a connection (by the listener's `on_connect`) whose client presented a
/// certificate that the web config's client CA verified.
#[derive(Clone, Copy, Debug)]
pub struct VerifiedClientCertificate;

/// `GET /scrape_configs`: every job's scrape config by name, as Prometheus fills it in
/// ([`crate::promconfig::ServedConfig::allocator_json`]), with its secrets only on a
/// connection with a [`VerifiedClientCertificate`].
pub async fn scrape_configs(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let secrets = req.conn_data::<VerifiedClientCertificate>().is_some();
    let configs: serde_json::Map<String, serde_json::Value> = state
        .all()
        .into_iter()
        .map(|(name, job)| (name, job.served_config().allocator_json(secrets)))
        .collect();
    HttpResponse::Ok().json(configs)
}

/// `GET /jobs`: the link to its targets of each job that has a target, the name
/// escaped as the allocator escapes it (Go's `url.QueryEscape`). The allocator lists
/// the jobs of the targets it holds (`JobsHandler`): a job with none is left out.
pub async fn jobs(state: web::Data<ServiceState>) -> HttpResponse {
    let links: serde_json::Map<String, serde_json::Value> = state
        .all()
        .into_iter()
        .filter(|(_, job)| job.status().targets > 0)
        .map(|(name, _)| {
            let link = format!("/jobs/{}/targets", query_escape(&name));
            (name, serde_json::json!({"_link": link}))
        })
        .collect();
    HttpResponse::Ok().json(links)
}

/// `GET /jobs/{job}/targets?collector_id=ID`: the targets of `job` assigned to member
/// `ID`, with their discovered labels; without `collector_id`, every member's
/// (`allocator_shares.rs`). The name is read from the path as the allocator
/// reads it: the raw segment, unescaped once as a query value (Go's
/// `url.QueryUnescape`: `+` is a space, `%2B` a plus). A job or collector that does
/// not exist has no targets: `[]`, as the allocator answers.
pub async fn targets(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    // The first value, as the allocator takes it; an empty one names no member.
    let collector = form_urlencoded::parse(req.query_string().as_bytes())
        .find(|(name, _)| name == "collector_id")
        .map(|(_, value)| value.into_owned());
    let raw = req.uri().path();
    let segment = (raw.strip_prefix("/jobs/"))
        .and_then(|rest| rest.strip_suffix("/targets"))
        .unwrap_or_default();
    let name = match query_unescape(segment) {
        Ok(name) => Some(name),
        // Not text: no job has that name.
        Err(UnescapeError::NotText) => None,
        Err(e) => {
            return HttpResponse::BadRequest().body(format!("job name {segment:?}: {e}\n"));
        }
    };
    let running = name.as_deref().and_then(|name| state.job(name));
    if let Some(job) = &running
        && !job.status().synced
    {
        return HttpResponse::ServiceUnavailable()
            .insert_header((RETRY_AFTER, "5"))
            .body(format!(
                "job {:?} has not listed everything it discovers yet\n",
                job.name()
            ));
    }
    let Some(collector) = collector else {
        let escaped = name
            .as_deref()
            .map_or_else(|| segment.to_string(), query_escape);
        // Every job follows the same member watch: another names the members too.
        let members_from =
            (running.clone()).or_else(|| state.all().into_iter().next().map(|(_, job)| job));
        return every_collectors_share(&escaped, running.as_ref(), members_from.as_ref()).await;
    };
    let Some(running) = running.filter(|_| !collector.is_empty()) else {
        return no_targets();
    };
    let body = running
        .view(&ViewQuery::Allocator(ArcStr::from(collector)))
        .await;
    serve_body(&req, body)
}

/// An empty list of targets: what the allocator answers for a job or collector it
/// does not know.
fn no_targets() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body("[]")
}
