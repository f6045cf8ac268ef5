//! What both framers of a watch stream keep between chunks: the bytes of the one event
//! a chunk boundary cut, under a bound, and how many events the stream has completed.
//! [`LineBuffer`](super::json::LineBuffer) (JSON lines) and
//! [`FrameBuffer`](super::proto::FrameBuffer) (protobuf frames) only find where their
//! events end.
//!
//! An event wholly inside a chunk never enters the buffer: the framers hand it out as a
//! slice of the chunk. Only a cut event is copied in, once, and [`EventBuffer::take_held`]
//! keeps the allocation for the next one, so the steady state allocates nothing. There
//! is no read position and nothing to compact: the buffer holds one unfinished event,
//! handed out whole and dropped whole.

/// The unfinished event of a framed stream, bounded, and the count of finished ones.
#[derive(Debug)]
pub(crate) struct EventBuffer {
    /// The bytes of the event a chunk boundary cut, as far as they have arrived.
    held: Vec<u8>,
    /// The most bytes `held` may reach.
    limit: usize,
    /// Events completed so far.
    completed: u64,
}

/// Appending would have held more than the buffer's bound: the event is refused and
/// what was held of it dropped. Each framer turns it into its own error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// How many bytes would have been held.
    pub size: usize,
    /// The bound.
    pub limit: usize,
}

impl EventBuffer {
    /// An empty buffer that holds at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> EventBuffer {
        EventBuffer {
            held: Vec::new(),
            limit,
            completed: 0,
        }
    }

    /// The bytes held of an unfinished event.
    pub(crate) fn held(&self) -> &[u8] {
        &self.held
    }

    /// True when no unfinished event is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Checks that `more` bytes would fit after those held, without copying them: the
    /// bound holds for an event read straight from a chunk as for one held. When they
    /// would not fit, what is held is dropped.
    pub(crate) fn admit(&mut self, more: usize) -> Result<(), Overflow> {
        let size = self.held.len().saturating_add(more);
        if size > self.limit {
            self.held.clear();
            return Err(Overflow {
                size,
                limit: self.limit,
            });
        }
        Ok(())
    }

    /// Appends the next bytes of the unfinished event, refused whole (see
    /// [`Self::admit`]) if they would pass the bound.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), Overflow> {
        self.admit(bytes.len())?;
        self.held.extend_from_slice(bytes);
        Ok(())
    }

    /// Hands the held bytes, now a whole event, to `on_event`, then empties the buffer
    /// (its allocation kept for the next cut event).
    pub(crate) fn take_held(&mut self, on_event: impl FnOnce(&[u8])) {
        on_event(&self.held);
        self.held.clear();
    }

    /// Counts one more completed event, held or read straight from a chunk.
    pub(crate) fn count_event(&mut self) {
        self.completed += 1;
    }

    /// How many events have been completed.
    pub(crate) fn completed(&self) -> u64 {
        self.completed
    }

    /// Forgets any unfinished event (a new stream starts); the count goes on.
    pub(crate) fn clear(&mut self) {
        self.held.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_cut_across_appends_is_taken_whole_and_the_buffer_reused() {
        let mut buffer = EventBuffer::new(16);
        buffer.append(b"{\"a\"").unwrap();
        buffer.append(b":1}").unwrap();
        assert_eq!(buffer.held(), b"{\"a\":1}");
        let mut taken = Vec::new();
        buffer.take_held(|event| taken = event.to_vec());
        assert_eq!(taken, b"{\"a\":1}");
        assert!(buffer.is_empty());
        let capacity = buffer.held.capacity();
        buffer.append(b"next").unwrap();
        assert_eq!(buffer.held.capacity(), capacity, "the allocation is kept");
    }

    #[test]
    fn bytes_past_the_bound_are_refused_and_what_was_held_dropped() {
        let mut buffer = EventBuffer::new(8);
        buffer.append(b"12345").unwrap();
        assert_eq!(buffer.append(b"6789"), Err(Overflow { size: 9, limit: 8 }));
        assert!(buffer.is_empty());
        // Exactly the bound fits.
        buffer.append(b"12345678").unwrap();
        assert_eq!(buffer.held(), b"12345678");
        assert_eq!(buffer.admit(1), Err(Overflow { size: 9, limit: 8 }));
        assert!(buffer.is_empty());
    }

    #[test]
    fn admit_checks_without_holding() {
        let mut buffer = EventBuffer::new(8);
        buffer.admit(8).unwrap();
        assert!(buffer.is_empty());
        buffer.append(b"abc").unwrap();
        buffer.admit(5).unwrap();
        assert_eq!(buffer.held(), b"abc");
        assert_eq!(
            buffer.admit(usize::MAX),
            Err(Overflow {
                size: usize::MAX,
                limit: 8
            })
        );
    }

    #[test]
    fn the_count_survives_a_cleared_event() {
        let mut buffer = EventBuffer::new(8);
        buffer.count_event();
        buffer.append(b"cut").unwrap();
        buffer.count_event();
        buffer.clear();
        assert!(buffer.is_empty());
        assert_eq!(buffer.completed(), 2);
    }
}
