//! The service's HTTP endpoints: `/sd/{job}` (Prometheus HTTP SD, with ETag and 304),
//! `/sd` (the job names), `/metrics`, `/healthz`, `/ready`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};

use actix::Addr;
use actix_web::http::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH, RETRY_AFTER};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};

use super::job::{GetSd, GetStatus, JobActor};
use super::process_metrics;
use crate::metrics::METRICS;
use crate::sd_output::etag_matches;

/// What the HTTP handlers read: the running jobs, replaced on reload.
pub struct ServiceState {
    /// Jobs by name.
    pub jobs: Arc<RwLock<BTreeMap<String, Addr<JobActor>>>>,
}

impl ServiceState {
    fn job(&self, name: &str) -> Option<Addr<JobActor>> {
        self.jobs.read().ok()?.get(name).cloned()
    }

    fn all(&self) -> Vec<(String, Addr<JobActor>)> {
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
    let Some(addr) = state.job(&job) else {
        return HttpResponse::NotFound().body(format!("no job {job:?}\n"));
    };
    // Before its first sync a job's targets are partial or empty; served as `200`,
    // Prometheus would drop every target of a kubesd restarted behind a flaky API
    // server. A 503 makes it keep what it had. After the first sync the last good
    // targets are served through any fault.
    match addr.send(GetStatus).await {
        Ok(status) if status.synced => {}
        Ok(_) => {
            return HttpResponse::ServiceUnavailable()
                .insert_header((RETRY_AFTER, "5"))
                .body(format!(
                    "job {job:?} has not listed everything it discovers yet (see kubesd's log and kubesd_request_errors_total)\n"
                ));
        }
        Err(_) => return HttpResponse::ServiceUnavailable().body("the job is restarting\n"),
    }
    let Ok(body) = addr.send(GetSd).await else {
        return HttpResponse::ServiceUnavailable().body("the job is restarting\n");
    };
    let if_none_match = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    if if_none_match.is_some_and(|v| etag_matches(v, &body.etag)) {
        return HttpResponse::NotModified()
            .insert_header((ETAG, body.etag))
            .finish();
    }
    // Written out from the job's per-object parts as it is sent: no copy of the whole
    // body is made or kept per request.
    let len = body.len() as u64;
    let chunks = futures_util::stream::iter(body.chunks().map(Ok::<_, std::convert::Infallible>));
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "application/json"))
        .insert_header((ETAG, body.etag))
        .no_chunking(len)
        .streaming(chunks)
}

async fn job_names(state: web::Data<ServiceState>) -> HttpResponse {
    let names: Vec<String> = state.all().into_iter().map(|(n, _)| n).collect();
    HttpResponse::Ok().json(names)
}

async fn metrics(state: web::Data<ServiceState>) -> HttpResponse {
    let mut out = METRICS.render();
    process_metrics::render(&mut out);
    let jobs = state.all();
    // Jobs' status only: never their targets' bodies.
    let mut statuses = Vec::with_capacity(jobs.len());
    for (name, addr) in &jobs {
        if let Ok(status) = addr.send(GetStatus).await {
            statuses.push((escape(name), status));
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
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8"))
        .body(out)
}

/// A label value escaped for the text format.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().body("ok\n")
}

async fn ready(state: web::Data<ServiceState>) -> HttpResponse {
    let mut waiting = Vec::new();
    for (name, addr) in state.all() {
        match addr.send(GetStatus).await {
            Ok(status) if status.synced => {}
            _ => waiting.push(name),
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

/// Binds `listen` and returns the server, to be awaited (or spawned) by the caller.
pub fn serve_http(
    listen: SocketAddr,
    state: Arc<ServiceState>,
) -> std::io::Result<(actix_web::dev::Server, SocketAddr)> {
    let data = web::Data::from(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .route("/sd", web::get().to(job_names))
            // `{job:.*}`: a job name may hold `/` (`serviceMonitor/default/app/0`), raw
            // or escaped as `%2F`; both reach the same job.
            .route("/sd/{job:.*}", web::get().to(sd))
            .route("/metrics", web::get().to(metrics))
            .route("/healthz", web::get().to(healthz))
            .route("/ready", web::get().to(ready))
    })
    .workers(1)
    .disable_signals()
    .bind(listen)?;
    let bound = server.addrs().first().copied().unwrap_or(listen);
    Ok((server.run(), bound))
}
