//! The flood server's protobuf: the same objects it serves in JSON, encoded once at
//! start by the simulator's encoder (`kubesd::simulator::protobuf`), as the API server
//! answers a client whose `Accept` puts `application/vnd.kubernetes.protobuf` first.
//!
//! The encoder leaves out what its schema does not cover (probes, volume sources, an
//! env var's `valueFrom`), so a pod here is somewhat smaller than a real API server's.

use kubesd::simulator::Resource;
use kubesd::simulator::protobuf as pb;
use serde_json::Value;

/// One object's fields (a list item, without its envelope), from its JSON.
pub fn fields(resource: Resource, json: &str) -> Vec<u8> {
    let value: Value = match serde_json::from_str(json) {
        Ok(value) => value,
        Err(e) => panic!("the bench's {} is not JSON: {e}", resource.kind()),
    };
    match pb::encode_fields(resource, &value) {
        Ok(fields) => fields,
        Err(e) => panic!("the bench's {} does not encode: {e}", resource.kind()),
    }
}

/// One watch frame: the event of `event_type` about the object whose fields (from
/// [`fields`]) are `fields`, in its own envelope.
pub fn frame(resource: Resource, event_type: &str, fields: &[u8]) -> Vec<u8> {
    let object = pb::envelope(resource.api_version(), resource.kind(), fields);
    pb::encode_watch_frame(event_type, &object)
}

/// A LIST body of `items` (each from [`fields`]) at resourceVersion 1000, and what a
/// streaming list sends before its watch: every item as an `ADDED` frame, then the
/// bookmark annotated `k8s.io/initial-events-end`.
pub fn list_and_initial_events(resource: Resource, items: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let body = pb::encode_list(resource, resource.api_version(), items, "1000", None);
    let mut initial = Vec::with_capacity(body.len() + items.len() * 32);
    for item in items {
        initial.extend_from_slice(&frame(resource, "ADDED", item));
    }
    let bookmark = pb::encode_bookmark(resource, "1000", true);
    initial.extend_from_slice(&pb::encode_watch_frame("BOOKMARK", &bookmark));
    (body, initial)
}

/// The bytes that precede a `map<string, string>` entry's value of `width` bytes
/// under `key` (key field 1, value field 2, both short enough for one-byte lengths):
/// the value follows them, so the server patches it in place.
pub fn map_value_prefix(key: &str, width: usize) -> Vec<u8> {
    let mut prefix = vec![0x0a, key.len() as u8];
    prefix.extend_from_slice(key.as_bytes());
    prefix.extend_from_slice(&[0x12, width as u8]);
    prefix
}

/// Where `needle` first ends in `bytes`.
pub fn end_of(bytes: &[u8], needle: &[u8]) -> Option<usize> {
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| at + needle.len())
}
