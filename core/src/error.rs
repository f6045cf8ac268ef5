//! Errors of the model layer: what was wrong with bytes the API server sent.
//!
//! The watcher that received the bytes wraps these with its URL; here they name the
//! role and the problem.

use crate::metrics::RejectReason;
use crate::model::Role;

/// Bytes from the API server that could not be turned into objects or events.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape (a port that is a string, a list that is a
    /// number, ...). serde_json's message carries the line and column.
    #[error("cannot decode {role} JSON: {source}")]
    Json {
        /// The role being decoded.
        role: Role,
        /// What the parser said.
        #[source]
        source: serde_json::Error,
    },
    /// Protobuf that could not be read: cut short, a field of the wrong wire type, a
    /// string that is not UTF-8, a missing `k8s\0` envelope. The message and field
    /// are named.
    #[error("cannot decode {role} protobuf: {source}")]
    Protobuf {
        /// The role being decoded.
        role: Role,
        /// What the reader found.
        #[source]
        source: crate::wire::proto::WireError,
    },
    /// An object without `metadata.name`: it cannot be cached or keyed.
    #[error("{role} object without metadata.name (namespace {namespace:?})")]
    MissingName {
        /// The role being decoded.
        role: Role,
        /// The namespace it claimed, to help find it.
        namespace: String,
    },
    /// An object whose `kind` is not the role's (a Service in a pod watch).
    #[error("{role} watch or list returned an object of kind {kind:?}")]
    WrongKind {
        /// The role being decoded.
        role: Role,
        /// The kind the object claimed.
        kind: String,
    },
    /// A watch event whose `type` is not one of ADDED, MODIFIED, DELETED, BOOKMARK, ERROR.
    #[error("{role} watch event of unknown type {kind:?}")]
    UnknownEventType {
        /// The role being watched.
        role: Role,
        /// The type that was sent.
        kind: String,
    },
    /// A watch event without `type` or without `object`.
    #[error("{role} watch event without {field:?}")]
    MissingEventField {
        /// The role being watched.
        role: Role,
        /// `type` or `object`.
        field: &'static str,
    },
    /// A list whose items could not all be decoded (strict decoding).
    #[error("{role} list item {index}: {source}")]
    ListItem {
        /// The role being listed.
        role: Role,
        /// The item's position in `items`.
        index: usize,
        /// What was wrong with it.
        #[source]
        source: Box<DecodeError>,
    },
    /// One object (a list item or a watch event's line) larger than the engine's
    /// per-object limit: it was skipped as it streamed in, never held whole.
    #[error("{role} object larger than the limit of {limit} bytes")]
    TooLarge {
        /// The role being decoded.
        role: Role,
        /// The limit, in bytes (`EngineOptions::max_object_size`).
        limit: usize,
    },
    /// One object nested deeper than the engine's limit: no Kubernetes object of a
    /// discovery role comes near it, so it is refused before any parser recurses.
    #[error("{role} object nested more than {limit} levels deep")]
    TooDeep {
        /// The role being decoded.
        role: Role,
        /// The limit (`EngineOptions::max_json_depth`).
        limit: usize,
    },
}

impl DecodeError {
    /// Why the bytes were rejected, as the rejected-objects metric counts it.
    pub fn reason(&self) -> RejectReason {
        match self {
            DecodeError::ListItem { source, .. } => source.reason(),
            DecodeError::WrongKind { .. } => RejectReason::WrongKind,
            DecodeError::TooLarge { .. } => RejectReason::TooLarge,
            DecodeError::TooDeep { .. } => RejectReason::TooDeep,
            DecodeError::Json { .. }
            | DecodeError::Protobuf { .. }
            | DecodeError::MissingName { .. }
            | DecodeError::UnknownEventType { .. }
            | DecodeError::MissingEventField { .. } => RejectReason::Undecodable,
        }
    }

    /// The role whose bytes failed to decode.
    pub fn role(&self) -> Role {
        match self {
            DecodeError::Json { role, .. }
            | DecodeError::Protobuf { role, .. }
            | DecodeError::MissingName { role, .. }
            | DecodeError::WrongKind { role, .. }
            | DecodeError::UnknownEventType { role, .. }
            | DecodeError::MissingEventField { role, .. }
            | DecodeError::ListItem { role, .. }
            | DecodeError::TooLarge { role, .. }
            | DecodeError::TooDeep { role, .. } => *role,
        }
    }
}
