//! HTTP SD: `/sd/{job}` (a job's targets, or a view of them) and `/sd` (the jobs, with
//! the views asked of each).

use actix_web::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use actix_web::{HttpRequest, HttpResponse, web};

use crate::sd_output::{BODY_CHUNK, SdBody, etag_matches};
use crate::service::state::ServiceState;
use crate::service::views::query::{parse_view_query, view_query_text};

/// `/sd/{job}`: the job's targets, or the view its query asks for; `503` before the
/// job's first sync.
pub(super) async fn sd(
    req: HttpRequest,
    job: web::Path<String>,
    state: web::Data<ServiceState>,
) -> HttpResponse {
    let job = job.into_inner();
    let query = match parse_view_query(req.query_string()) {
        Ok(query) => query,
        Err(why) => return HttpResponse::BadRequest().body(format!("{why}\n")),
    };
    let Some(running) = state.job(&job) else {
        return HttpResponse::NotFound().body(format!("there is no job named \"{job}\"\n"));
    };
    // Before its first sync a job's targets are partial or empty; served as `200`,
    // Prometheus would drop every target of a kubesd restarted behind a flaky API
    // server. A 503 makes it keep what it had. After the first sync the last good
    // targets are served through any fault.
    if !running.status().synced {
        return HttpResponse::ServiceUnavailable()
            .insert_header((RETRY_AFTER, "5"))
            .body(format!(
                "job {job:?} has not listed everything it discovers yet (see kubesd's log and kubesd_request_errors_total)\n"
            ));
    }
    serve_body(&req, running.view(&query).await)
}

/// How many chunks of a body written apart ([`written_apart`]) wait for their
/// connection at most.
const CHUNKS_AHEAD: usize = 4;

/// A job's (or a view's) body as the answer to `req`: `304` when the client's
/// `If-None-Match` names its ETag, else `200` written out from the snapshot's
/// per-object parts as it is sent, so that no copy of the whole body is made or kept
/// per request.
pub(crate) fn serve_body(req: &HttpRequest, body: SdBody) -> HttpResponse {
    let if_none_match = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    if if_none_match.is_some_and(|v| etag_matches(v, &body.etag)) {
        return HttpResponse::NotModified()
            .insert_header((ETAG, body.etag))
            .finish();
    }
    let mut response = HttpResponse::Ok();
    response
        .insert_header((CONTENT_TYPE, "application/json"))
        .insert_header((ETAG, body.etag.clone()));
    match body.known_len() {
        // A body of one piece is written here.
        Some(len) if len <= BODY_CHUNK => {
            let chunks = body.chunks().map(Ok::<_, std::convert::Infallible>);
            response
                .no_chunking(len as u64)
                .streaming(futures_util::stream::iter(chunks))
        }
        // A larger one is written on a blocking thread as it is sent, so that the
        // listener serves other requests meanwhile (a member's view is megabytes cut
        // from its objects' bytes).
        Some(len) => response
            .no_chunking(len as u64)
            .streaming(written_apart(body.chunks())),
        // So is a body of discovered label sets, serialized as it is sent; chunked,
        // its length being known only at its end.
        None => response.streaming(written_apart(body.chunks())),
    }
}

/// `chunks`, written on a blocking thread at most [`CHUNKS_AHEAD`] ahead of the
/// connection (a body of discovered label sets is serialized as it is taken); the
/// writing stops when the connection goes.
pub(crate) fn written_apart(
    chunks: impl Iterator<Item = bytes::Bytes> + Send + 'static,
) -> impl futures_util::Stream<Item = Result<bytes::Bytes, std::convert::Infallible>> {
    let (tx, rx) = tokio::sync::mpsc::channel(CHUNKS_AHEAD);
    actix_web::rt::task::spawn_blocking(move || {
        for chunk in chunks {
            if tx.blocking_send(chunk).is_err() {
                return;
            }
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move {
        let chunk = rx.recv().await?;
        Some((Ok(chunk), rx))
    })
}

/// `/sd`: the job names; `/sd?views`: each job with the views asked of it so far and
/// their targets (`{"job": .., "targets": .., "views": [{"view": "shard=0&shards=2",
/// "targets": ..}, ..]}`).
pub(super) async fn job_names(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    if req.query_string() != "views" {
        let names: Vec<String> = state.all().into_iter().map(|(n, _)| n).collect();
        return HttpResponse::Ok().json(names);
    }
    let mut jobs = Vec::new();
    for (name, job) in state.all() {
        let (status, views) = (job.status(), job.views());
        let views: Vec<serde_json::Value> = views
            .iter()
            .flat_map(|(kind, buckets)| buckets.iter().map(move |(b, n)| (*kind, b, *n)))
            .map(|(kind, bucket, targets)| {
                serde_json::json!({"view": view_query_text(kind, bucket), "targets": targets})
            })
            .collect();
        jobs.push(serde_json::json!({"job": name, "targets": status.targets, "views": views}));
    }
    HttpResponse::Ok().json(jobs)
}
