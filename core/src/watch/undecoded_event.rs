//! Watch event lines handed on undecoded, for another thread to decode.
//!
//! In a flood of watch events the URL watcher's thread is the engine's bottleneck:
//! decoding is most of its work, while the group's thread, which labels the decoded
//! objects, has time to spare. So, as with a LIST's items, the watcher leaves some
//! object events undecoded and the group decodes them, with the same [`decode_event`].
//! The watcher only needs to know such a line's type, which it reads from the line's
//! first bytes when they are exactly what the API server writes
//! ([`EventType::of_object_line`]); any other line it decodes itself.

use crate::error::DecodeError;
use crate::model::Role;

use super::{EventType, WatchEvent, decode_event};

/// One object event line of `role`, as received, for the group to decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndecodedEvent {
    /// The watched role.
    pub role: Role,
    /// The line (without its newline).
    pub json: Box<[u8]>,
}

impl UndecodedEvent {
    /// Decodes it, as the watcher would have. A line that decodes to anything but an
    /// object event (`ADDED`, `MODIFIED`, `DELETED`: it cannot, given its start, unless
    /// it is broken) is an error.
    pub fn decode(&self) -> Result<WatchEvent, DecodeError> {
        let event = decode_event(self.role, &self.json)?;
        match event.event_type() {
            EventType::Added | EventType::Modified | EventType::Deleted => Ok(event),
            EventType::Bookmark | EventType::Error => Err(DecodeError::MissingEventField {
                role: self.role,
                field: "object",
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_as_the_watcher_would_and_rejects_what_it_would_reject() {
        let event = |json: &[u8]| UndecodedEvent {
            role: Role::Pod,
            json: json.into(),
        };
        let ok = event(br#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n"}}}"#);
        assert!(matches!(ok.decode(), Ok(WatchEvent::Deleted(o)) if o.key().to_string() == "n/a"));
        let truncated = event(br#"{"type":"MODIFIED","object":{"metadata":{"na"#);
        assert!(matches!(truncated.decode(), Err(DecodeError::Json { .. })));
        // A second `type` would make it a bookmark; the watcher rejects that too.
        let twice =
            event(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"type":"BOOKMARK"}"#);
        assert!(twice.decode().is_err());
        // Not an object event at all: the group has nothing to do with it.
        let bookmark =
            event(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}"#);
        assert!(matches!(
            bookmark.decode(),
            Err(DecodeError::MissingEventField {
                field: "object",
                ..
            })
        ));
    }
}
