//! Framing of a watch stream: newline-delimited JSON arriving in arbitrary chunks.
//!
//! The [`EventBuffer`] holds only the incomplete tail of the last chunk; complete lines
//! are handed out as slices of the chunk itself, so an event split across chunks costs
//! one copy and every other event none.

use crate::wire::buffer::{EventBuffer, Overflow};

/// Splits a byte stream into lines as chunks arrive.
#[derive(Debug)]
pub struct LineBuffer {
    /// The unfinished line, bounded by the longest line accepted; lines completed
    /// (blank ones included).
    buffer: EventBuffer,
}

/// A line longer than the buffer's limit: the stream is not a watch stream, or an
/// object is absurdly large. The partial line is dropped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("watch event line exceeds {limit} bytes")]
pub struct LineTooLong {
    /// The limit that was exceeded.
    pub limit: usize,
}

impl From<Overflow> for LineTooLong {
    fn from(overflow: Overflow) -> Self {
        LineTooLong {
            limit: overflow.limit,
        }
    }
}

impl LineBuffer {
    /// A buffer that rejects lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        LineBuffer {
            buffer: EventBuffer::new(max_line),
        }
    }

    /// Feeds one chunk, calling `on_line` for each complete, non-blank line in order.
    pub fn push(
        &mut self,
        chunk: &[u8],
        mut on_line: impl FnMut(&[u8]),
    ) -> Result<(), LineTooLong> {
        let mut rest = chunk;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let (line, tail) = rest.split_at(pos);
            rest = &tail[1..];
            self.buffer.count_event();
            // The limit holds for every line, wherever the network cut the stream.
            if self.buffer.is_empty() {
                self.buffer.admit(line.len())?;
                emit(line, &mut on_line);
            } else {
                self.buffer.append(line)?;
                self.buffer.take_held(|whole| emit(whole, &mut on_line));
            }
        }
        self.buffer.append(rest)?;
        Ok(())
    }

    /// The bytes of an unfinished line; non-empty at the end of a stream means the
    /// stream was cut inside an event.
    pub fn pending(&self) -> &[u8] {
        self.buffer.held()
    }

    /// How many lines have been completed (blank ones too): with [`Self::pending`], how
    /// a caller tells a line that stays incomplete from a stream that makes progress.
    pub(crate) fn completed(&self) -> u64 {
        self.buffer.completed()
    }
}

fn emit(line: &[u8], on_line: &mut impl FnMut(&[u8])) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.iter().all(u8::is_ascii_whitespace) {
        on_line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(buf: &mut LineBuffer, chunks: &[&[u8]]) -> Vec<String> {
        let mut out = Vec::new();
        for c in chunks {
            buf.push(c, |l| out.push(String::from_utf8_lossy(l).into_owned()))
                .unwrap();
        }
        out
    }

    #[test]
    fn lines_split_across_chunks_are_reassembled() {
        let mut buf = LineBuffer::new(1024);
        let out = feed(
            &mut buf,
            &[
                b"{\"a\":1}\n{\"b\"",
                b":2}\n\n{\"c\":",
                b"3}",
                b"\r\n{\"d\"",
            ],
        );
        assert_eq!(out, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
        assert_eq!(buf.pending(), b"{\"d\"");
    }

    #[test]
    fn a_line_over_the_limit_is_an_error() {
        let mut buf = LineBuffer::new(8);
        assert_eq!(
            buf.push(b"0123456789", |_| {}),
            Err(LineTooLong { limit: 8 })
        );
        assert!(buf.pending().is_empty());
        let out = feed(&mut buf, &[b"abc\n"]);
        assert_eq!(out, ["abc"]);
    }
}
