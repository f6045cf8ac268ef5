//! The decoder of one LIST body, chosen by its response's `Content-Type`: JSON
//! ([`ListStream`]) or protobuf ([`ProtoListStream`]), both decoding items as they
//! arrive, with one interface for the watcher.

use super::Encoding;
use super::json::{ListLimits, ListPage, ListStream};
use super::proto::ProtoListStream;
use crate::error::DecodeError;
use crate::model::{Object, Role};

/// A LIST body being decoded as it arrives, in its response's encoding.
#[derive(Debug)]
pub enum ListDecoder {
    /// JSON.
    Json(ListStream),
    /// Protobuf.
    Protobuf(ProtoListStream),
}

impl ListDecoder {
    /// A decoder of a LIST of `role` in `encoding`, held to `limits`.
    pub fn new(encoding: Encoding, role: Role, limits: ListLimits) -> ListDecoder {
        match encoding {
            Encoding::Json => ListDecoder::Json(ListStream::with_limits(role, limits)),
            Encoding::Protobuf => {
                ListDecoder::Protobuf(ProtoListStream::new(role, limits.max_object))
            }
        }
    }

    /// Feeds the next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        match self {
            ListDecoder::Json(list) => list.push(chunk),
            ListDecoder::Protobuf(list) => list.push(chunk),
        }
    }

    /// Takes the items decoded so far.
    pub fn take_items(&mut self) -> Vec<Object> {
        match self {
            ListDecoder::Json(list) => list.take_items(),
            ListDecoder::Protobuf(list) => list.take_items(),
        }
    }

    /// How many decoded items wait to be taken.
    pub fn len(&self) -> usize {
        match self {
            ListDecoder::Json(list) => list.len(),
            ListDecoder::Protobuf(list) => list.len(),
        }
    }

    /// True when no decoded item waits to be taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many items have been found so far.
    pub fn items_seen(&self) -> usize {
        match self {
            ListDecoder::Json(list) => list.items_seen(),
            ListDecoder::Protobuf(list) => list.items_seen(),
        }
    }

    /// Ends the body: the page and the errors of the items skipped.
    pub fn finish(self) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
        match self {
            ListDecoder::Json(list) => list.finish(),
            ListDecoder::Protobuf(list) => list.finish(),
        }
    }
}
