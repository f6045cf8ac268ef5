//! The simulator's HTTP front: Kubernetes API paths served by actix-web.
//!
//! One dispatcher handles every request: it checks the bearer token, serves
//! `/sim/faults` and `/metrics` (the simulator's own, [`crate::metrics`]), lets an
//! armed fault fail the request, then routes by parsing the path the way the
//! API server lays it out (`/api/v1/...`, `/apis/{group}/{version}/...`,
//! optionally under `namespaces/{ns}/`). Parsing by hand rather than
//! registering a route per resource keeps scope rules in one place.

mod discovery;
mod encoding;
mod list;
mod request;
mod response;
mod state;
mod table;
mod watch;
mod write;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;

use super::error::ApiError;
use super::faults::{Failure, FaultRequest};
use super::sim::Simulator;
use request::{Target, is_true, parse_target, query_params};
use response::error_response;
pub use state::HttpState;

/// Registers the simulator's handlers on an actix-web app.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.default_service(web::to(dispatch));
}

async fn dispatch(req: HttpRequest, body: Bytes, state: web::Data<HttpState>) -> HttpResponse {
    if let Some(token) = &state.token {
        let expected = format!("Bearer {token}");
        let given = req
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes);
        if given != Some(expected.as_bytes()) {
            return error_response(&ApiError::unauthorized());
        }
    }
    let path = req.path().trim_end_matches('/');
    if path == "/sim/faults" {
        return fault_endpoint(&req, &body, &state.sim);
    }
    // Before an armed fault is taken: a scrape must not use up a fault meant for a client.
    if path == "/metrics" && req.method() == actix_web::http::Method::GET {
        return HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(state.sim.metrics().render(state.sim.store()));
    }
    if let Some(failure) = state.sim.faults().take_failure() {
        return failure_response(failure);
    }
    let crds = discovery::Crds {
        gateway_api: state.sim.gateway_api_served(),
        monitoring: state.sim.monitoring_served(),
    };
    if let Some(response) = discovery::serve(&req, path, crds) {
        return response;
    }
    let served = |t: &Target| {
        (!t.resource.is_gateway_api() || crds.gateway_api)
            && (!t.resource.is_monitoring() || crds.monitoring)
    };
    let target = match parse_target(path).filter(served) {
        Some(target) => target,
        None => {
            return error_response(&ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource ({path})"),
            ));
        }
    };
    let query = query_params(&req);
    let method = req.method().as_str();
    let result = match (method, &target.name) {
        ("GET", None) if is_true(query.get("watch")) => {
            return watch::serve(&state, &req, &target, &query);
        }
        ("GET", None) => list::serve(&state.sim, &req, &target, &query),
        ("GET", Some(name)) => write::get(&state.sim, &req, &target, name),
        ("POST", None) => write::create(&state.sim, &target, &body),
        ("PUT", Some(name)) => write::replace(&state.sim, &target, name, &body),
        ("PATCH", Some(name)) => write::patch(&state.sim, &req, &target, name, &body),
        ("DELETE", Some(name)) => write::delete(&state.sim, &target, name),
        _ => Err(ApiError::method_not_allowed(format!(
            "{method} is not supported on {path}"
        ))),
    };
    result.unwrap_or_else(|err| error_response(&err))
}

/// `POST /sim/faults` with a [`FaultRequest`] body arms or triggers a fault.
fn fault_endpoint(req: &HttpRequest, body: &Bytes, sim: &Simulator) -> HttpResponse {
    if req.method() != actix_web::http::Method::POST {
        return error_response(&ApiError::method_not_allowed("use POST"));
    }
    match serde_json::from_slice::<FaultRequest>(body) {
        Ok(fault) => {
            sim.apply_fault(fault);
            HttpResponse::Ok().json(
                serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
            )
        }
        Err(err) => error_response(&ApiError::bad_request(format!("bad fault request: {err}"))),
    }
}

fn failure_response(failure: Failure) -> HttpResponse {
    let err = match failure {
        Failure::ServerError => ApiError::internal("injected internal error"),
        Failure::TooManyRequests => ApiError::too_many_requests(),
        Failure::Forbidden => ApiError::forbidden("injected: forbidden"),
    };
    let mut response = error_response(&err);
    if failure == Failure::TooManyRequests {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}
