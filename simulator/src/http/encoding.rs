//! The encoding a LIST or WATCH response is served in: protobuf when the request's
//! `Accept` puts it first and the resource has a protobuf schema, JSON otherwise (as
//! the API server answers custom resources and Table requests in JSON). Here, the
//! pieces of a watch stream in either encoding: an event, a bookmark, an error.

use actix_web::HttpRequest;
use actix_web::http::header;
use bytes::Bytes;
use serde_json::Value;

use super::response::object_json;
use crate::error::ApiError;
use crate::protobuf;
use crate::resource::Resource;

/// The encoding of one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseEncoding {
    /// JSON: a list object, or newline-delimited events.
    Json,
    /// Kubernetes' protobuf: an envelope, or length-prefixed frames.
    Protobuf,
}

impl ResponseEncoding {
    /// What `req` gets for `resource`.
    pub fn of(req: &HttpRequest, resource: Resource) -> ResponseEncoding {
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok());
        if protobuf::wants_protobuf(accept) && protobuf::has_schema(resource) {
            ResponseEncoding::Protobuf
        } else {
            ResponseEncoding::Json
        }
    }

    /// The `Content-Type` of a watch stream in this encoding.
    pub fn watch_content_type(self) -> &'static str {
        match self {
            ResponseEncoding::Json => "application/json",
            ResponseEncoding::Protobuf => protobuf::WATCH_CONTENT_TYPE,
        }
    }

    /// One event of `event_type` about `object`.
    pub fn event(self, resource: Resource, event_type: &str, object: &Value) -> Bytes {
        match self {
            ResponseEncoding::Json => Bytes::from(format!(
                "{{\"type\":\"{event_type}\",\"object\":{}}}\n",
                object_json(resource, object)
            )),
            ResponseEncoding::Protobuf => match protobuf::encode_object(resource, object) {
                Ok(encoded) => Bytes::from(protobuf::encode_watch_frame(event_type, &encoded)),
                // Stored objects are checked JSON; one the schema cannot encode is
                // reported in-stream, as the API server reports an encoding failure.
                Err(e) => self.error(&ApiError::internal(e.to_string())),
            },
        }
    }

    /// A bookmark at `resource_version`; with `initial_events_end`, the one that ends a
    /// streaming list's initial events (annotated `k8s.io/initial-events-end`).
    pub fn bookmark(
        self,
        resource: Resource,
        resource_version: u64,
        initial_events_end: bool,
    ) -> Bytes {
        match self {
            ResponseEncoding::Json => {
                let annotations = if initial_events_end {
                    r#","annotations":{"k8s.io/initial-events-end":"true"}"#
                } else {
                    ""
                };
                Bytes::from(format!(
                    "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{resource_version}\"{annotations}}}}}}}\n",
                    resource.kind(),
                    resource.api_version()
                ))
            }
            ResponseEncoding::Protobuf => Bytes::from(protobuf::encode_watch_frame(
                "BOOKMARK",
                &protobuf::encode_bookmark(
                    resource,
                    &resource_version.to_string(),
                    initial_events_end,
                ),
            )),
        }
    }

    /// An `ERROR` event carrying `err` as a `Status`.
    pub fn error(self, err: &ApiError) -> Bytes {
        match self {
            ResponseEncoding::Json => Bytes::from(format!(
                "{{\"type\":\"ERROR\",\"object\":{}}}\n",
                err.to_status()
            )),
            ResponseEncoding::Protobuf => Bytes::from(protobuf::encode_watch_frame(
                "ERROR",
                &protobuf::encode_status(err.code, err.reason, &err.message),
            )),
        }
    }
}
