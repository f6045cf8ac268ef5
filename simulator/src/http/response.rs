//! How answers are written: an error's `Status`, an object with its kind.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde_json::Value;

use crate::error::ApiError;
use crate::resource::Resource;

/// The `Status` response for an error.
pub fn error_response(err: &ApiError) -> HttpResponse {
    let status = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    HttpResponse::build(status).json(err.to_status())
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
