//! The simulator's protobuf encoder: stored JSON objects as the API server sends them
//! to a client that accepts `application/vnd.kubernetes.protobuf`.
//!
//! - a LIST body: `k8s\0`, then a `runtime.Unknown` envelope (`typeMeta` 1 with
//!   `apiVersion` 1 and `kind` 2; `raw` 2) around the list (`metadata` 1 with
//!   `resourceVersion` 2 and `continue` 3; `items` 2);
//! - a watch stream: each event a 4-byte big-endian length, then a
//!   `metav1.WatchEvent` (`type` 1, `object` 2 whose `raw` (1) is the object in its own
//!   `k8s\0` envelope), with no envelope around the event itself, as the API server's
//!   stream serializer writes it.
//!
//! Kinds without a schema here (Deployments, CronJobs) are served in JSON, as the API
//! server serves custom resources: clients read the response's `Content-Type`. The
//! tests use the same encoder to turn the conformance corpus into protobuf.
//! Self-contained: it depends on nothing of kubesd but the simulator's [`Resource`].

mod encode;
pub mod schema;
mod writer;

use serde_json::Value;

pub use encode::EncodeError;
use encode::encode_message;
use schema::Field;
pub use writer::Writer;

use super::resource::Resource;

/// The media type of Kubernetes' protobuf.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub const WATCH_CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The magic that starts every protobuf body.
const MAGIC: &[u8; 4] = b"k8s\0";

/// True when a request's `Accept` header asks for protobuf before JSON (as client-go
/// and kubesd send `application/vnd.kubernetes.protobuf, application/json`).
pub fn wants_protobuf(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    accept
        .split(',')
        .next()
        .and_then(|first| first.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(CONTENT_TYPE))
}

/// The API version and schema `object` of `resource` is encoded with; `None` for a
/// resource served only in JSON.
pub fn schema_of(resource: Resource, object: &Value) -> Option<(String, &'static [Field])> {
    let stated = object.get("apiVersion").and_then(Value::as_str);
    let api_version = stated.unwrap_or(resource.api_version()).to_string();
    let schema = match resource {
        Resource::Pods => schema::POD,
        Resource::Nodes => schema::NODE,
        Resource::Services => schema::SERVICE,
        Resource::Endpoints => schema::ENDPOINTS,
        Resource::EndpointSlices => return Some(slice_schema(object, api_version)),
        Resource::Ingresses => schema::INGRESS,
        Resource::Namespaces | Resource::ReplicaSets | Resource::Jobs => schema::METADATA_ONLY,
        // Served in JSON only: the simulator keeps no schema for Deployments,
        // CronJobs, Secrets and ConfigMaps, and custom resources (the Gateway API's,
        // prometheus-operator's) have none.
        Resource::Deployments
        | Resource::CronJobs
        | Resource::Gateways
        | Resource::HttpRoutes
        | Resource::GrpcRoutes
        | Resource::Secrets
        | Resource::ConfigMaps
        | Resource::ServiceMonitors
        | Resource::PodMonitors
        | Resource::Probes
        | Resource::ScrapeConfigs => return None,
    };
    Some((api_version, schema))
}

/// `v1beta1` when the object says so or has a `v1beta1`-only `topology` map.
fn slice_schema(object: &Value, api_version: String) -> (String, &'static [Field]) {
    let has_topology = object
        .get("endpoints")
        .and_then(Value::as_array)
        .is_some_and(|endpoints| endpoints.iter().any(|e| !e["topology"].is_null()));
    if has_topology || api_version.ends_with("/v1beta1") {
        (
            "discovery.k8s.io/v1beta1".to_string(),
            schema::ENDPOINT_SLICE_V1BETA1,
        )
    } else {
        (api_version, schema::ENDPOINT_SLICE_V1)
    }
}

/// True when `resource` is served in protobuf to clients that ask for it.
pub fn has_schema(resource: Resource) -> bool {
    schema_of(resource, &Value::Null).is_some()
}

/// One object's fields, in protobuf, without an envelope (a list item).
pub fn encode_fields(resource: Resource, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let not_an_object = || EncodeError {
        path: resource.kind().to_string(),
        expected: "an object served in protobuf",
    };
    let (_, schema) = schema_of(resource, object).ok_or_else(not_an_object)?;
    let map = object.as_object().ok_or_else(not_an_object)?;
    let mut out = Writer::default();
    encode_message(&mut out, map, schema, "")?;
    Ok(out.bytes)
}

/// One object in its `k8s\0` envelope, as a GET or a watch event carries it.
pub fn encode_object(resource: Resource, object: &Value) -> Result<Vec<u8>, EncodeError> {
    let api_version = schema_of(resource, object)
        .map(|(v, _)| v)
        .unwrap_or_default();
    let raw = encode_fields(resource, object)?;
    Ok(envelope(&api_version, resource.kind(), &raw))
}

/// A LIST body of `resource` in `api_version` (a `v1beta1` list holds `v1beta1`
/// items): the items (already encoded with [`encode_fields`]), the list's
/// resourceVersion and continue token, in the list's envelope.
pub fn encode_list(
    resource: Resource,
    api_version: &str,
    items: &[Vec<u8>],
    resource_version: &str,
    continue_token: Option<&str>,
) -> Vec<u8> {
    let mut list = Writer::default();
    list.message(1, |meta| {
        meta.bytes(2, resource_version.as_bytes());
        if let Some(token) = continue_token {
            meta.bytes(3, token.as_bytes());
        }
    });
    for item in items {
        list.bytes(2, item);
    }
    envelope(api_version, &resource.list_kind(), &list.bytes)
}

/// One watch frame: the length, then the event of `event_type` (`ADDED`, `BOOKMARK`,
/// ...) around `object` (an envelope, from [`encode_object`] or [`encode_status`]).
pub fn encode_watch_frame(event_type: &str, object: &[u8]) -> Vec<u8> {
    let mut event = Writer::default();
    event.bytes(1, event_type.as_bytes());
    event.message(2, |raw| raw.bytes(1, object));
    let mut frame = Vec::with_capacity(4 + event.bytes.len());
    frame.extend_from_slice(&(event.bytes.len() as u32).to_be_bytes());
    frame.extend_from_slice(&event.bytes);
    frame
}

/// A bookmark's object: a `resource` object with only `metadata.resourceVersion`, and
/// with `initial_events_end` the `k8s.io/initial-events-end: "true"` annotation (an
/// `ObjectMeta.annotations` map entry, field 12).
pub fn encode_bookmark(
    resource: Resource,
    resource_version: &str,
    initial_events_end: bool,
) -> Vec<u8> {
    let mut object = Writer::default();
    object.message(1, |meta| {
        meta.bytes(6, resource_version.as_bytes());
        if initial_events_end {
            meta.message(12, |entry| {
                entry.bytes(1, b"k8s.io/initial-events-end");
                entry.bytes(2, b"true");
            });
        }
    });
    envelope(resource.api_version(), resource.kind(), &object.bytes)
}

/// A `metav1.Status` failure in its envelope (an `ERROR` event's object).
pub fn encode_status(code: u16, reason: &str, message: &str) -> Vec<u8> {
    let mut status = Writer::default();
    status.bytes(2, b"Failure");
    status.bytes(3, message.as_bytes());
    status.bytes(4, reason.as_bytes());
    status.varint(6, i64::from(code));
    envelope("v1", "Status", &status.bytes)
}

/// `k8s\0` and the `runtime.Unknown` envelope around `raw`, an object of `kind`.
pub fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut unknown = Writer::default();
    unknown.message(1, |type_meta| {
        type_meta.bytes(1, api_version.as_bytes());
        type_meta.bytes(2, kind.as_bytes());
    });
    unknown.bytes(2, raw);
    let mut body = MAGIC.to_vec();
    body.extend_from_slice(&unknown.bytes);
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_headers_that_put_protobuf_first_get_it() {
        assert!(wants_protobuf(Some(
            "application/vnd.kubernetes.protobuf, application/json"
        )));
        assert!(wants_protobuf(Some("application/vnd.kubernetes.protobuf")));
        assert!(!wants_protobuf(Some("application/json")));
        assert!(!wants_protobuf(Some(
            "application/json, application/vnd.kubernetes.protobuf"
        )));
        assert!(!wants_protobuf(None));
    }

    #[test]
    fn values_of_the_wrong_type_are_errors_that_name_the_field() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"ports": [{"containerPort": "http"}]}]}});
        let err = encode_fields(Resource::Pods, &pod).unwrap_err();
        assert_eq!(err.path, "spec.containers.ports.containerPort");
        assert!(encode_fields(Resource::Deployments, &json!({})).is_err());
    }

    #[test]
    fn v1beta1_slices_are_told_by_their_topology() {
        let beta = json!({"endpoints": [{"addresses": ["1.2.3.4"], "topology": {"zone": "a"}}]});
        let v1 = json!({"endpoints": [{"addresses": ["1.2.3.4"], "zone": "a"}]});
        let version = |o: &Value| schema_of(Resource::EndpointSlices, o).map(|(v, _)| v);
        assert_eq!(version(&beta).as_deref(), Some("discovery.k8s.io/v1beta1"));
        assert_eq!(version(&v1).as_deref(), Some("discovery.k8s.io/v1"));
    }
}
