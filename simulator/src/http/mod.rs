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
mod table;
mod watch;
mod write;

use std::collections::HashMap;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use serde_json::Value;

use super::error::ApiError;
use super::faults::{Failure, FaultRequest};
use super::resource::Resource;
use super::sim::Simulator;

/// What every request handler needs; shared through `web::Data`.
pub struct HttpState {
    /// The cluster served.
    pub sim: Simulator,
    /// If set, every request must carry `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// How often watches with `allowWatchBookmarks=true` get a bookmark.
    pub bookmark_interval: Duration,
    /// The pause between the two halves of a split event, long enough for
    /// the server to flush the first half as its own write.
    pub split_pause: Duration,
    /// How long one second of a watch's `timeoutSeconds` lasts (1 s unless a
    /// test compresses time).
    pub timeout_second: Duration,
}

/// The resource a request addresses, parsed from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resource type.
    pub resource: Resource,
    /// `namespaces/{ns}/` in the path, if present.
    pub namespace: Option<String>,
    /// The object name, for single-object requests.
    pub name: Option<String>,
}

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

/// The `Status` response for an error.
pub fn error_response(err: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status).json(err.to_status())
}

/// Splits `/api/v1/...` or `/apis/{g}/{v}/...` into resource, namespace, name.
pub fn parse_target(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (prefix, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("/api/v1".to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("/apis/{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, plural, name) = match rest {
        [plural] => (None, *plural, None),
        [plural, name] => (None, *plural, Some(*name)),
        ["namespaces", ns, plural] => (Some(*ns), *plural, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name)),
        _ => return None,
    };
    let resource = Resource::from_path(&prefix, plural)?;
    // Scope rules: a cluster-scoped resource never sits under a namespace,
    // and a namespaced object can only be addressed within its namespace.
    if !resource.namespaced() && namespace.is_some() {
        return None;
    }
    if resource.namespaced() && namespace.is_none() && name.is_some() {
        return None;
    }
    if name.is_some_and(str::is_empty) || namespace.is_some_and(str::is_empty) {
        return None;
    }
    Some(Target {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    })
}

/// The query string as a map (last value wins, as Go's `Get` does for the first).
pub fn query_params(req: &HttpRequest) -> HashMap<String, String> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect()
}

/// Kubernetes boolean query parameters accept `true` and `1`.
fn is_true(value: Option<&String>) -> bool {
    matches!(value.map(String::as_str), Some("true" | "1"))
}

/// Serialises an object with `kind` and `apiVersion` first, as single-object
/// responses and watch events carry them (stored objects lack both).
pub fn object_json(resource: Resource, object: &Value) -> String {
    let body = serde_json::to_string(object).unwrap_or_else(|_| "{}".into());
    let head = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\"",
        resource.kind(),
        resource.api_version()
    );
    match body.strip_prefix('{') {
        Some("}") | None => format!("{head}}}"),
        Some(rest) => format!("{head},{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_paths_with_scope_rules() {
        let t = parse_target("/api/v1/namespaces/ns/pods/p");
        assert_eq!(
            t,
            Some(Target {
                resource: Resource::Pods,
                namespace: Some("ns".into()),
                name: Some("p".into())
            })
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/ns").map(|t| t.resource),
            Some(Resource::Namespaces)
        );
        assert_eq!(
            parse_target("/apis/discovery.k8s.io/v1/endpointslices").map(|t| t.name),
            Some(None)
        );
        assert_eq!(parse_target("/api/v1/pods/p"), None);
        assert_eq!(parse_target("/api/v1/namespaces/ns/nodes"), None);
        assert_eq!(parse_target("/api/v1/ingresses"), None);
    }

    #[test]
    fn object_json_adds_kind() {
        let s = object_json(Resource::Pods, &json!({"metadata": {"name": "p"}}));
        assert_eq!(
            s,
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}"#
        );
        assert_eq!(
            object_json(Resource::Nodes, &json!({})),
            r#"{"kind":"Node","apiVersion":"v1"}"#
        );
    }
}
