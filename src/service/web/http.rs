//! The service's HTTP endpoints: `/sd/{job}` (Prometheus HTTP SD, with ETag and 304;
//! a query picks one view of the job's targets, see [`crate::service::views`]), `/sd` (the job
//! names; with `?views`, each job's views), `/metrics`, `/healthz`, `/ready`, and in run mode
//! `POST /-/reload`. Every GET route answers HEAD too; responses are gzip-compressed
//! when the client asks (`Accept-Encoding`). With a web config ([`WebGuard`]), every
//! request passes its checks first, and the listener may speak TLS.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{
    AUTHORIZATION, CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER, WWW_AUTHENTICATE,
};
use actix_web::middleware::{Compress, Next, from_fn};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, guard, web};
use tokio::sync::{mpsc, oneshot};

use crate::metrics::{Metrics, escape_label_value};
use crate::sd_output::etag_matches;
use crate::service::SdBody;
use crate::service::fleet::target_allocator;
use crate::service::jobs::job::{Job, JobViewCounts};
use crate::service::metrics::ServiceMetrics;
use crate::service::views::query::parse_view_query;
use crate::service::views::{Bucket, ViewKind};
use crate::service::web::guard::{Decision, WebGuard};
use crate::service::web::process_metrics;

/// What the HTTP handlers read: the running jobs, replaced on reload. Each job's
/// targets are read from its actors' published snapshots: no request waits on a
/// mailbox (but a view partition's first, which has the actors build it).
pub struct ServiceState {
    /// Jobs by name.
    pub jobs: Arc<RwLock<BTreeMap<String, Job>>>,
    /// Where `POST /-/reload` asks the run loop to reload the config (run mode only;
    /// without it the endpoint answers 404).
    pub reload: Option<mpsc::Sender<ReloadRequest>>,
    /// The discovery engine's metrics, rendered on `/metrics`.
    pub engine_metrics: Arc<Metrics>,
    /// The service's own, rendered after them.
    pub service_metrics: Arc<ServiceMetrics>,
}

/// Sent by `POST /-/reload` to the run loop (`cli::run`), which reloads the config
/// file and answers on `done`: `Ok`, or the reason the new config was not applied.
pub struct ReloadRequest {
    /// The outcome, a sentence on failure.
    pub done: oneshot::Sender<Result<(), String>>,
}

impl ServiceState {
    /// The running job `name`.
    pub(crate) fn job(&self, name: &str) -> Option<Job> {
        self.jobs.read().ok()?.get(name).cloned()
    }

    /// Every running job with its name.
    pub(crate) fn all(&self) -> Vec<(String, Job)> {
        self.jobs
            .read()
            .map(|m| m.iter().map(|(n, a)| (n.clone(), a.clone())).collect())
            .unwrap_or_default()
    }
}

async fn sd(
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
        Some(len) => {
            let chunks = body.chunks().map(Ok::<_, std::convert::Infallible>);
            response
                .no_chunking(len as u64)
                .streaming(futures_util::stream::iter(chunks))
        }
        // A body of discovered label sets is serialized as it is sent, which takes
        // a while: on a blocking thread, so that the listener serves other requests
        // meanwhile, and chunked, its length being known only at its end.
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
async fn job_names(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
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

/// The query string that asks for `bucket` of `kind`.
pub(crate) fn view_query_text(kind: ViewKind, bucket: &Bucket) -> String {
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    match (kind, bucket) {
        (ViewKind::Shards(n), Bucket::Shard(i)) => format!("shard={i}&shards={n}"),
        (ViewKind::Node, Bucket::Name(node)) => format!("node={}", encode(node)),
        (ViewKind::Member, Bucket::Name(member)) => format!("member={}", encode(member)),
        (ViewKind::Allocator, Bucket::Name(member)) => format!("collector_id={}", encode(member)),
        (kind, bucket) => format!("{kind:?}={bucket:?}"),
    }
}

/// `kubesd_job_view_targets`: targets per shard and per member (bounded by the shard
/// counts and members asked for), but per node only in total and for the empty node
/// (thousands of nodes would be thousands of series); `kubesd_job_view_buckets`: how
/// many buckets each view kind holds.
fn render_views(out: &mut String, views: &[(String, JobViewCounts)]) {
    let _ = writeln!(
        out,
        "# HELP kubesd_job_view_targets Targets a view of a job serves (per shard and member; per node summed, with node=\"\" the targets on no node).\n# TYPE kubesd_job_view_targets gauge"
    );
    for (job, counts) in views {
        for (kind, buckets) in counts {
            match kind {
                ViewKind::Shards(n) => {
                    for (bucket, t) in buckets {
                        if let Bucket::Shard(i) = bucket {
                            let _ = writeln!(
                                out,
                                "kubesd_job_view_targets{{job=\"{job}\",view=\"shard\",shards=\"{n}\",shard=\"{i}\"}} {t}"
                            );
                        }
                    }
                }
                // The same targets as the member views, counted there.
                ViewKind::Allocator => {}
                ViewKind::Member => {
                    for (bucket, t) in buckets {
                        if let Bucket::Name(m) = bucket {
                            let m = escape_label_value(m);
                            let _ = writeln!(
                                out,
                                "kubesd_job_view_targets{{job=\"{job}\",view=\"member\",member=\"{m}\"}} {t}"
                            );
                        }
                    }
                }
                ViewKind::Node => {
                    let none = buckets.get(&Bucket::Name(Default::default())).copied();
                    let on_nodes: usize = buckets.values().sum::<usize>() - none.unwrap_or(0);
                    let _ = writeln!(
                        out,
                        "kubesd_job_view_targets{{job=\"{job}\",view=\"node\"}} {on_nodes}\nkubesd_job_view_targets{{job=\"{job}\",view=\"node\",node=\"\"}} {}",
                        none.unwrap_or(0)
                    );
                }
            }
        }
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_view_buckets Shards, nodes or members a view kind of a job has targets in.\n# TYPE kubesd_job_view_buckets gauge"
    );
    for (job, counts) in views {
        for (kind, buckets) in counts {
            let view = match kind {
                ViewKind::Shards(n) => format!("view=\"shard\",shards=\"{n}\""),
                ViewKind::Node => "view=\"node\"".to_string(),
                ViewKind::Member => "view=\"member\"".to_string(),
                ViewKind::Allocator => "view=\"allocator\"".to_string(),
            };
            let _ = writeln!(
                out,
                "kubesd_job_view_buckets{{job=\"{job}\",{view}}} {}",
                buckets.len()
            );
        }
    }
}

async fn metrics(state: web::Data<ServiceState>) -> HttpResponse {
    let mut out = state.engine_metrics.render();
    state.service_metrics.render(&mut out);
    process_metrics::render(&mut out);
    let jobs = state.all();
    // Jobs' status only: never their targets' bodies.
    let mut statuses = Vec::with_capacity(jobs.len());
    let mut views = Vec::new();
    for (name, job) in &jobs {
        statuses.push((escape_label_value(name), job.status()));
        let counts = job.views();
        if !counts.is_empty() {
            views.push((escape_label_value(name), counts));
        }
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_targets Targets a job serves.\n# TYPE kubesd_job_targets gauge"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_targets{{job=\"{name}\"}} {}",
            status.targets
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_synced 1 once every discovery of a job has listed.\n# TYPE kubesd_job_synced gauge"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_synced{{job=\"{name}\"}} {}",
            u8::from(status.synced)
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_changes_applied_total Object changes a job applied to its targets.\n# TYPE kubesd_job_changes_applied_total counter"
    );
    for (name, status) in &statuses {
        let _ = writeln!(
            out,
            "kubesd_job_changes_applied_total{{job=\"{name}\"}} {}",
            status.applied
        );
    }
    let _ = writeln!(
        out,
        "# HELP kubesd_job_change_visible_seconds Time from a watch event's arrival to its change being visible in the job's /sd.\n# TYPE kubesd_job_change_visible_seconds histogram"
    );
    for (name, status) in &statuses {
        status.latency.render(
            "kubesd_job_change_visible_seconds",
            &format!("job=\"{name}\""),
            &mut out,
        );
    }
    if !views.is_empty() {
        render_views(&mut out, &views);
    }
    crate::service::fleet::metrics::render(&mut out, &jobs);
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8"))
        .body(out)
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().body("ok\n")
}

async fn ready(state: web::Data<ServiceState>) -> HttpResponse {
    let mut waiting = Vec::new();
    for (name, job) in state.all() {
        if !job.status().synced {
            waiting.push(name);
        }
    }
    if waiting.is_empty() {
        HttpResponse::Ok().body("ready\n")
    } else {
        HttpResponse::ServiceUnavailable().body(format!(
            "waiting for the first sync of: {}\n",
            waiting.join(", ")
        ))
    }
}

/// `POST /-/reload`: reloads the config file as SIGHUP does, and says how it went.
async fn reload(state: web::Data<ServiceState>) -> HttpResponse {
    let Some(sender) = &state.reload else {
        return HttpResponse::NotFound().body("reloading is not available in this mode\n");
    };
    let (done, outcome) = oneshot::channel();
    if sender.send(ReloadRequest { done }).await.is_err() {
        return HttpResponse::ServiceUnavailable().body("kubesd is stopping\n");
    }
    match outcome.await {
        Ok(Ok(())) => HttpResponse::Ok().body("config reloaded\n"),
        Ok(Err(reason)) => HttpResponse::InternalServerError().body(format!(
            "failed to reload the config, the running jobs are kept: {reason}\n"
        )),
        Err(_) => HttpResponse::ServiceUnavailable().body("kubesd is stopping\n"),
    }
}

/// The web config's checks, before any handler: credentials and rate limits, then its
/// response headers.
async fn check_access(
    guard: Arc<WebGuard>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let client = req.peer_addr().map(|a| a.ip());
    let authorization = req
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.as_bytes().to_vec());
    let decision = guard
        .check(req.path(), client, authorization.as_deref())
        .await;
    let mut response = match decision {
        Decision::Allow => next.call(req).await?.map_into_boxed_body(),
        Decision::Unauthorized => req.into_response(
            HttpResponse::Unauthorized()
                .insert_header((WWW_AUTHENTICATE, "Basic"))
                .body("Unauthorized\n"),
        ),
        Decision::TooManyRequests => {
            req.into_response(HttpResponse::TooManyRequests().body("Too Many Requests\n"))
        }
    };
    for (name, value) in guard.headers() {
        response.headers_mut().insert(name, value);
    }
    Ok(response)
}

/// GET, and HEAD (answered as GET, without the body).
pub(crate) fn get_or_head() -> actix_web::Route {
    web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
}

/// Binds `listen` and returns the server, to be awaited (or spawned) by the caller.
/// With `web`, requests pass its checks, and the listener speaks TLS if its
/// `tls_server_config` is set.
pub fn serve_http(
    listen: SocketAddr,
    state: Arc<ServiceState>,
    web: Option<Arc<WebGuard>>,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    let data = web::Data::from(state);
    let tls = match &web {
        Some(guard) => {
            crate::service::web::tls::server_config(guard).map_err(std::io::Error::other)?
        }
        None => None,
    };
    let app_guard = web.clone();
    let connect_guard = web.clone();
    let server = HttpServer::new(move || {
        let guard = app_guard.clone();
        App::new()
            .app_data(data.clone())
            .wrap(Compress::default())
            .wrap(from_fn(move |req, next| {
                let guard = guard.clone();
                async move {
                    match guard {
                        Some(guard) => check_access(guard, req, next).await,
                        None => Ok(next.call(req).await?.map_into_boxed_body()),
                    }
                }
            }))
            .route("/sd", get_or_head().to(job_names))
            // `{job:.*}`: a job name may hold `/` (`serviceMonitor/default/app/0`), raw
            // or escaped as `%2F`; both reach the same job.
            .route("/sd/{job:.*}", get_or_head().to(sd))
            .route("/metrics", get_or_head().to(metrics))
            .route("/healthz", get_or_head().to(healthz))
            .route("/ready", get_or_head().to(ready))
            .route("/-/reload", web::post().to(reload))
            // The OpenTelemetry target allocator's API (`fleet::target_allocator`).
            .route(
                "/scrape_configs",
                get_or_head().to(target_allocator::scrape_configs),
            )
            .route("/jobs", get_or_head().to(target_allocator::jobs))
            .route(
                "/jobs/{job:.*}/targets",
                get_or_head().to(target_allocator::targets),
            )
            .configure(crate::service::api::routes)
    })
    .on_connect(move |conn, ext| {
        target_allocator::note_client_certificate(conn, ext, connect_guard.as_deref())
    })
    .workers(1)
    .disable_signals();
    let server = match tls {
        Some(config) => server.bind_rustls_0_23(listen, config)?,
        None => server.bind(listen)?,
    };
    let bound = server.addrs().first().copied().unwrap_or(listen);
    Ok((server.run(), bound))
}
