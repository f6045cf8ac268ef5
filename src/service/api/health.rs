//! The process's own endpoints: `/healthz`, `/ready` and `POST /-/reload`.

use actix_web::{HttpResponse, web};
use tokio::sync::oneshot;

use crate::service::state::{ReloadRequest, ServiceState};

/// `/healthz`: the process answers.
pub(super) async fn healthz() -> HttpResponse {
    HttpResponse::Ok().body("ok\n")
}

/// `/ready`: every job has listed what it discovers once.
pub(super) async fn ready(state: web::Data<ServiceState>) -> HttpResponse {
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
pub(super) async fn reload(state: web::Data<ServiceState>) -> HttpResponse {
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
