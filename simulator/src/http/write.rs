//! Single-object requests: GET, and the writes POST (create), PUT
//! (replace), PATCH (JSON merge patch) and DELETE. Each answers with the
//! object, or a `Status` failure, as the API server does.
//!
//! `application/strategic-merge-patch+json` (what `kubectl apply` sends for
//! built-in types) is applied as a plain merge patch: lists are replaced
//! rather than merged by key. That is exact for the objects kubectl's
//! client-side apply produces here, and simpler than carrying the schema.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::Value;

use super::request::{Target, query_params};
use super::response::object_json;
use super::table::{self, IncludeObject};
use crate::error::ApiError;
use crate::sim::Simulator;
use crate::store::WriteMode;

fn object_response(
    status: actix_web::http::StatusCode,
    target: &Target,
    object: &Value,
) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("application/json")
        .body(object_json(target.resource, object))
}

fn parse_body(body: &Bytes) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("invalid JSON body: {e}")))
}

/// Makes the body's namespace agree with the path: filled in when absent,
/// 400 when different (the API server's own check).
fn align_namespace(target: &Target, object: &mut Value) -> Result<(), ApiError> {
    let Some(path_ns) = &target.namespace else {
        if target.resource.namespaced() {
            return Err(ApiError::method_not_allowed(
                "a namespaced object must be created within a namespace",
            ));
        }
        return Ok(());
    };
    let meta = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body must be a JSON object"))?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let meta = meta
        .as_object_mut()
        .ok_or_else(|| ApiError::invalid("metadata: must be an object"))?;
    match meta.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && ns != path_ns => Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            meta.insert("namespace".into(), Value::String(path_ns.clone()));
            Ok(())
        }
    }
}

fn namespace(target: &Target) -> &str {
    target.namespace.as_deref().unwrap_or("")
}

/// `GET` one object.
pub fn get(
    sim: &Simulator,
    req: &HttpRequest,
    target: &Target,
    name: &str,
) -> Result<HttpResponse, ApiError> {
    let object = sim
        .store()
        .get(target.resource, namespace(target), name)
        .ok_or_else(|| ApiError::not_found(target.resource.plural(), name))?;
    if table::wants_table(req) {
        let include = IncludeObject::parse(query_params(req).get("includeObject"));
        let metadata = serde_json::json!({"resourceVersion": sim.store().current_rv().to_string()});
        return Ok(HttpResponse::Ok().json(table::table(
            target.resource,
            [&*object],
            include,
            metadata,
        )));
    }
    Ok(object_response(
        actix_web::http::StatusCode::OK,
        target,
        &object,
    ))
}

/// `POST` to a collection: create, 409 if the name is taken.
pub fn create(sim: &Simulator, target: &Target, body: &Bytes) -> Result<HttpResponse, ApiError> {
    let mut object = parse_body(body)?;
    align_namespace(target, &mut object)?;
    let written = sim.write_object(target.resource, WriteMode::Create, object)?;
    Ok(object_response(
        actix_web::http::StatusCode::CREATED,
        target,
        &written.object,
    ))
}

/// `PUT` an object: replace, 404 if missing, 409 on a stale resourceVersion.
pub fn replace(
    sim: &Simulator,
    target: &Target,
    name: &str,
    body: &Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut object = parse_body(body)?;
    align_namespace(target, &mut object)?;
    if object.pointer("/metadata/name").and_then(Value::as_str) != Some(name) {
        return Err(ApiError::bad_request(
            "the name of the object does not match the name on the URL",
        ));
    }
    let written = sim.write_object(target.resource, WriteMode::Update, object)?;
    Ok(object_response(
        actix_web::http::StatusCode::OK,
        target,
        &written.object,
    ))
}

/// `PATCH` an object with a merge patch.
pub fn patch(
    sim: &Simulator,
    req: &HttpRequest,
    target: &Target,
    name: &str,
    body: &Bytes,
) -> Result<HttpResponse, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    if media != "application/merge-patch+json" && media != "application/strategic-merge-patch+json"
    {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/merge-patch+json, application/strategic-merge-patch+json (got {content_type:?})"
        )));
    }
    let patch = parse_body(body)?;
    let written = sim.patch_object(target.resource, namespace(target), name, &patch)?;
    Ok(object_response(
        actix_web::http::StatusCode::OK,
        target,
        &written.object,
    ))
}

/// `DELETE` an object: answers with its last state, 404 if missing.
pub fn delete(sim: &Simulator, target: &Target, name: &str) -> Result<HttpResponse, ApiError> {
    let written = sim.delete_object(target.resource, namespace(target), name)?;
    Ok(object_response(
        actix_web::http::StatusCode::OK,
        target,
        &written.object,
    ))
}
