//! A `Status` read from an HTTP error body, in either encoding: the one place where
//! the JSON `Status` and the protobuf decoder of one meet.

use super::Status;
use super::proto::{Envelope, MAGIC, status};

impl Status {
    /// Decodes a `Status` from an HTTP error body, in JSON or (to a request that
    /// preferred it) protobuf; `None` when it is not one.
    pub fn from_body(body: &[u8]) -> Option<Status> {
        if body.starts_with(MAGIC) {
            let envelope = Envelope::open(body).ok()?;
            return (envelope.kind == "Status")
                .then(|| status(envelope.raw).ok())
                .flatten();
        }
        serde_json::from_slice(body).ok()
    }
}
