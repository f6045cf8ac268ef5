//! API errors as the Kubernetes API server reports them: an HTTP status code,
//! a machine-readable `reason` and a message, rendered as a `Status` object.
//!
//! Both the HTTP layer and the in-process API return this type, so a test that
//! calls `sim.create(..)` sees exactly the error a client over HTTP would.

use serde_json::{Value, json};

/// An error in the shape of a Kubernetes `Status` failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason} ({code}): {message}")]
pub struct ApiError {
    /// HTTP status code, also the `code` field of the `Status`.
    pub code: u16,
    /// The `reason` field, e.g. `NotFound`, `Expired`.
    pub reason: &'static str,
    /// Human-readable explanation.
    pub message: String,
}

impl ApiError {
    /// Builds an error from its parts.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
        }
    }

    /// 400: the request itself is malformed (bad selector, bad JSON).
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 401: missing or wrong bearer token.
    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403: the request is not allowed.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(403, "Forbidden", message)
    }

    /// 404: the object (or path) does not exist.
    pub fn not_found(what: &str, name: &str) -> ApiError {
        ApiError::new(404, "NotFound", format!("{what} \"{name}\" not found"))
    }

    /// 405: the verb is not supported on this path.
    pub fn method_not_allowed(message: impl Into<String>) -> ApiError {
        ApiError::new(405, "MethodNotAllowed", message)
    }

    /// 409 on create: an object with this name exists.
    pub fn already_exists(what: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{what} \"{name}\" already exists"),
        )
    }

    /// 409 on update: the object changed since the client read it.
    pub fn conflict(what: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {what} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        )
    }

    /// 410: the requested resourceVersion is no longer retained.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// 415: the request body's content type is not supported.
    pub fn unsupported_media_type(message: impl Into<String>) -> ApiError {
        ApiError::new(415, "UnsupportedMediaType", message)
    }

    /// 422: the object is structurally invalid (e.g. no name).
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(422, "Invalid", message)
    }

    /// 429: the client should back off.
    pub fn too_many_requests() -> ApiError {
        ApiError::new(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
    }

    /// 500: an (injected) internal error.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(500, "InternalError", message)
    }

    /// 504: a resourceVersion newer than the server has seen.
    pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
        ApiError::new(
            504,
            "Timeout",
            format!("Too large resource version: {requested}, current: {current}"),
        )
    }

    /// The `Status` object a Kubernetes API server sends for this error.
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_carries_code_and_reason() {
        let status = ApiError::expired("too old").to_status();
        assert_eq!(status["code"], 410);
        assert_eq!(status["reason"], "Expired");
        assert_eq!(status["status"], "Failure");
    }
}
