//! Watch event lines handed on undecoded, for another thread to decode.
//!
//! In a flood of watch events the URL watcher's thread is the engine's bottleneck:
//! decoding is three quarters of its work, while the group's thread, which labels the
//! decoded objects, has time to spare. So, as with a LIST's items, the watcher leaves
//! some object events undecoded and the group decodes them. The watcher only needs to
//! know such a line's type, which it reads from the line's first bytes when they are
//! exactly what the API server writes; any other line it decodes itself.

use crate::error::DecodeError;
use crate::model::{Object, Role};

use super::{WatchEvent, decode_event};

/// The type of an event that carries an object, read from the start of its line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectEventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

/// The type of the event on `line` if the line starts as the API server writes an
/// object event (`{"type":"MODIFIED","object":`, Go's encoding of `metav1.WatchEvent`);
/// `None` for every other line (bookmarks, errors, other spacing or key order), which
/// the watcher decodes itself. The rest of the line is not looked at: a line that fails
/// to decode later is reported back, and the watcher relists as for any bad event.
pub fn object_event_type(line: &[u8]) -> Option<ObjectEventType> {
    const PREFIXES: [(&[u8], ObjectEventType); 3] = [
        (
            br#"{"type":"MODIFIED","object":"#,
            ObjectEventType::Modified,
        ),
        (br#"{"type":"ADDED","object":"#, ObjectEventType::Added),
        (br#"{"type":"DELETED","object":"#, ObjectEventType::Deleted),
    ];
    PREFIXES
        .iter()
        .find(|(prefix, _)| line.starts_with(prefix))
        .map(|&(_, kind)| kind)
}

/// One watch event line of `role`, as received, for the group to decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndecodedEvent {
    /// The watched role.
    pub role: Role,
    /// The line (without its newline).
    pub json: Box<[u8]>,
}

impl UndecodedEvent {
    /// Decodes it, as the watcher would have, into its type and object. A line that
    /// decodes to anything but an object event (it cannot, given its start, unless it is
    /// broken) is an error.
    pub fn decode(&self) -> Result<(ObjectEventType, Object), DecodeError> {
        match decode_event(self.role, &self.json)? {
            WatchEvent::Added(o) => Ok((ObjectEventType::Added, o)),
            WatchEvent::Modified(o) => Ok((ObjectEventType::Modified, o)),
            WatchEvent::Deleted(o) => Ok((ObjectEventType::Deleted, o)),
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {
                Err(DecodeError::MissingEventField {
                    role: self.role,
                    field: "object",
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_start_as_the_api_server_writes_them_are_recognised() {
        let modified = br#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}"#;
        assert_eq!(object_event_type(modified), Some(ObjectEventType::Modified));
        assert_eq!(
            object_event_type(br#"{"type":"ADDED","object":{}}"#),
            Some(ObjectEventType::Added)
        );
        assert_eq!(
            object_event_type(br#"{"type":"DELETED","object":{}}"#),
            Some(ObjectEventType::Deleted)
        );
        for other in [
            &br#"{"type":"BOOKMARK","object":{}}"#[..],
            br#"{"type":"ERROR","object":{}}"#,
            br#"{"object":{},"type":"MODIFIED"}"#,
            br#"{ "type":"MODIFIED","object":{}}"#,
            br#"{"type":"MODIFIEDX","object":{}}"#,
            br#"{"type":"MODIFIED""#,
        ] {
            assert_eq!(
                object_event_type(other),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn decodes_as_the_watcher_would_and_rejects_what_it_would_reject() {
        let event = |json: &[u8]| UndecodedEvent {
            role: Role::Pod,
            json: json.into(),
        };
        let ok = event(br#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n"}}}"#);
        assert!(
            matches!(ok.decode(), Ok((ObjectEventType::Deleted, o)) if o.key().to_string() == "n/a")
        );
        let truncated = event(br#"{"type":"MODIFIED","object":{"metadata":{"na"#);
        assert!(matches!(truncated.decode(), Err(DecodeError::Json { .. })));
        // A second `type` would make it a bookmark; the watcher rejects that too.
        let twice =
            event(br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"type":"BOOKMARK"}"#);
        assert!(twice.decode().is_err());
    }
}
