//! Framing of a protobuf watch stream: each event is a 4-byte big-endian length, then
//! that many bytes, arriving in chunks cut anywhere.
//!
//! As [`crate::wire::json::LineBuffer`] for JSON lines, over the same [`EventBuffer`]: a
//! frame wholly inside a chunk is handed out as a slice of the chunk; only a frame split
//! across chunks is copied, into a buffer kept for the next one. A length over the
//! limit is refused as soon as its four bytes are in, before any of the frame is held.

use crate::wire::buffer::{EventBuffer, Overflow};

/// The bytes of a frame's length.
const PREFIX: usize = 4;

/// Splits a byte stream into length-prefixed frames as chunks arrive.
#[derive(Debug)]
pub struct FrameBuffer {
    /// The unfinished frame, its length prefix included; frames completed.
    buffer: EventBuffer,
    max_frame: usize,
}

/// A frame whose announced length is over the buffer's limit: an object absurdly
/// large, or a stream that is not a protobuf watch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("protobuf watch frame of {length} bytes exceeds the limit of {limit} bytes")]
pub struct FrameTooLong {
    /// The length the frame announced.
    pub length: u64,
    /// The limit.
    pub limit: usize,
}

impl FrameBuffer {
    /// A buffer that refuses frames longer than `max_frame` bytes.
    pub fn new(max_frame: usize) -> Self {
        FrameBuffer {
            buffer: EventBuffer::new(max_frame.saturating_add(PREFIX)),
            max_frame,
        }
    }

    /// Feeds one chunk, calling `on_frame` with each complete frame (without its
    /// length) in order.
    pub fn push(
        &mut self,
        chunk: &[u8],
        mut on_frame: impl FnMut(&[u8]),
    ) -> Result<(), FrameTooLong> {
        let mut rest = chunk;
        // First finish the frame a previous chunk started.
        if !self.buffer.is_empty() {
            let taken = self.fill(rest)?;
            rest = &rest[taken..];
            match length_of(self.buffer.held()) {
                Some(len) if self.buffer.held().len() == PREFIX + len => {
                    self.buffer.count_event();
                    self.buffer.take_held(|frame| on_frame(&frame[PREFIX..]));
                }
                _ => return Ok(()),
            }
        }
        while rest.len() >= PREFIX {
            let len = self.check(&rest[..PREFIX])?;
            if rest.len() < PREFIX + len {
                break;
            }
            self.buffer.count_event();
            on_frame(&rest[PREFIX..PREFIX + len]);
            rest = &rest[PREFIX + len..];
        }
        self.append(rest)
    }

    /// Moves bytes from `chunk` into the unfinished frame, up to its end; returns how
    /// many were taken.
    fn fill(&mut self, chunk: &[u8]) -> Result<usize, FrameTooLong> {
        let mut taken = 0;
        let held = self.buffer.held().len();
        if held < PREFIX {
            taken = (PREFIX - held).min(chunk.len());
            self.append(&chunk[..taken])?;
        }
        if let Some(prefix) = self.buffer.held().get(..PREFIX) {
            let prefix: [u8; PREFIX] = [prefix[0], prefix[1], prefix[2], prefix[3]];
            let len = self.check(&prefix).inspect_err(|_| self.buffer.clear())?;
            let more = (PREFIX + len - self.buffer.held().len()).min(chunk.len() - taken);
            self.append(&chunk[taken..taken + more])?;
            taken += more;
        }
        Ok(taken)
    }

    /// Holds the next bytes of the unfinished frame. Its length was checked first, so
    /// the buffer's bound (the limit and the prefix) is not reached in practice; if it
    /// were, the frame is refused as too long all the same.
    fn append(&mut self, bytes: &[u8]) -> Result<(), FrameTooLong> {
        self.buffer
            .append(bytes)
            .map_err(|overflow: Overflow| FrameTooLong {
                length: overflow.size.saturating_sub(PREFIX) as u64,
                limit: self.max_frame,
            })
    }

    /// The length a prefix announces, if within the limit.
    fn check(&self, prefix: &[u8]) -> Result<usize, FrameTooLong> {
        let length = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
        match usize::try_from(length) {
            Ok(len) if len <= self.max_frame => Ok(len),
            _ => Err(FrameTooLong {
                length: u64::from(length),
                limit: self.max_frame,
            }),
        }
    }

    /// The bytes of an unfinished frame; non-empty at the end of a stream means the
    /// stream was cut inside an event.
    pub(crate) fn pending(&self) -> &[u8] {
        self.buffer.held()
    }

    /// How many frames have been completed: with [`Self::pending`], how a caller tells
    /// a frame that stays incomplete from a stream that makes progress.
    pub(crate) fn completed(&self) -> u64 {
        self.buffer.completed()
    }
}

/// The length a held frame's prefix announces, once its four bytes are in.
fn length_of(held: &[u8]) -> Option<usize> {
    let prefix = held.get(..PREFIX)?;
    Some(u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(frames: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in frames {
            out.extend_from_slice(&(f.len() as u32).to_be_bytes());
            out.extend_from_slice(f);
        }
        out
    }

    #[test]
    fn frames_split_at_every_byte_boundary_come_out_whole() {
        let frames: [&[u8]; 4] = [b"first", b"", b"a longer third frame", b"4"];
        let stream = framed(&frames);
        for cut in 0..=stream.len() {
            for second_cut in cut..=stream.len() {
                let mut buffer = FrameBuffer::new(64);
                let mut out = Vec::new();
                for chunk in [
                    &stream[..cut],
                    &stream[cut..second_cut],
                    &stream[second_cut..],
                ] {
                    buffer.push(chunk, |f| out.push(f.to_vec())).unwrap();
                }
                assert_eq!(
                    out,
                    frames.map(<[u8]>::to_vec),
                    "cut at {cut} and {second_cut}"
                );
                assert!(buffer.pending().is_empty());
            }
        }
    }

    #[test]
    fn a_frame_over_the_limit_is_refused_from_its_length_alone() {
        let stream = framed(&[b"ok", &[0; 100]]);
        let mut buffer = FrameBuffer::new(64);
        let mut out = Vec::new();
        let err = buffer
            .push(&stream[..10], |f| out.push(f.to_vec()))
            .unwrap_err();
        assert_eq!(
            err,
            FrameTooLong {
                length: 100,
                limit: 64
            }
        );
        assert!(err.to_string().contains("100 bytes"), "{err}");
        assert_eq!(out, [b"ok".to_vec()]);
        // Split inside the length prefix: refused once the prefix is whole.
        let mut buffer = FrameBuffer::new(64);
        buffer.push(&stream[6..9], |_| {}).unwrap();
        assert!(buffer.push(&stream[9..12], |_| {}).is_err());
    }

    #[test]
    fn a_stream_cut_inside_a_frame_leaves_it_pending() {
        let stream = framed(&[b"whole", b"cut"]);
        let mut buffer = FrameBuffer::new(64);
        let mut count = 0;
        buffer
            .push(&stream[..stream.len() - 1], |_| count += 1)
            .unwrap();
        assert_eq!(count, 1);
        assert_eq!(buffer.pending(), &[0, 0, 0, 3, b'c', b'u']);
    }
}
