//! The framing of one watch response, chosen by its `Content-Type`: JSON events one per
//! line ([`LineBuffer`]), or protobuf events in length-prefixed frames
//! ([`FrameBuffer`]); and the decoder of one event in that encoding.

use super::Encoding;
use super::json::{LineBuffer, LineTooLong, WatchEvent, decode_event};
use super::proto::{self, FrameBuffer};
use crate::error::DecodeError;
use crate::model::Role;

/// Splits a watch stream into events, in the encoding of its response.
#[derive(Debug)]
pub enum EventFraming {
    /// Newline-delimited JSON.
    Lines(LineBuffer),
    /// Length-prefixed protobuf frames.
    Frames(FrameBuffer),
}

impl EventFraming {
    /// The framing of `encoding`, refusing events over `max_event` bytes.
    pub fn new(encoding: Encoding, max_event: usize) -> EventFraming {
        match encoding {
            Encoding::Json => EventFraming::Lines(LineBuffer::new(max_event)),
            Encoding::Protobuf => EventFraming::Frames(FrameBuffer::new(max_event)),
        }
    }

    /// Feeds one chunk, calling `on_event` with each complete event's bytes in order.
    /// An event over the limit is an error (its limit is what [`LineTooLong`] carries
    /// for either framing).
    pub fn push(&mut self, chunk: &[u8], on_event: impl FnMut(&[u8])) -> Result<(), LineTooLong> {
        match self {
            EventFraming::Lines(lines) => lines.push(chunk, on_event),
            EventFraming::Frames(frames) => {
                frames
                    .push(chunk, on_event)
                    .map_err(|too_long| LineTooLong {
                        limit: too_long.limit,
                    })
            }
        }
    }

    /// The bytes of an unfinished event.
    pub fn pending(&self) -> &[u8] {
        match self {
            EventFraming::Lines(lines) => lines.pending(),
            EventFraming::Frames(frames) => frames.pending(),
        }
    }

    /// How many events have been completed.
    pub fn completed(&self) -> u64 {
        match self {
            EventFraming::Lines(lines) => lines.completed(),
            EventFraming::Frames(frames) => frames.completed(),
        }
    }
}

/// Decodes one event of `role` in `encoding` (as [`EventFraming`] of that encoding
/// produced it).
pub fn decode_event_in(
    encoding: Encoding,
    role: Role,
    event: &[u8],
) -> Result<WatchEvent, DecodeError> {
    match encoding {
        Encoding::Json => decode_event(role, event),
        Encoding::Protobuf => proto::decode_event(role, event),
    }
}
