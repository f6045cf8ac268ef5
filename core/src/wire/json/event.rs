//! Watch events: one JSON object per line, `{"type": ..., "object": ...}`.
//!
//! [`WatchEvent`] is the one decoded event and [`decode_event`] the one way to a
//! [`WatchEvent`] from a line. [`EventType`] names an event's type, read from a decoded
//! event or from the start of a line.

use arcstr::ArcStr;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::DecodeError;
use crate::model::json::{empty_str, map_str, nullable_str, without_interning};
use crate::model::{Object, ObjectSeed, Role};
use crate::wire::Status;

/// One decoded watch event.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchEvent {
    /// An object was created (or started matching the selector).
    Added(Object),
    /// An object changed.
    Modified(Object),
    /// An object was deleted (or stopped matching); carries its last state.
    Deleted(Object),
    /// Progress notice: every event up to `resource_version` has been sent.
    Bookmark {
        /// The resourceVersion to resume from.
        resource_version: ArcStr,
        /// The bookmark is annotated `k8s.io/initial-events-end: "true"`: on a
        /// streaming list (`sendInitialEvents=true`) it ends the initial state.
        initial_events_end: bool,
    },
    /// The server ended the watch with an error, typically 410 Gone.
    Error(Status),
}

impl WatchEvent {
    /// The resourceVersion the event advances the watch to, if it carries one.
    pub fn resource_version(&self) -> Option<&ArcStr> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                Some(o.resource_version())
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => Some(resource_version),
            WatchEvent::Error(_) => None,
        }
    }

    /// The event's type.
    pub fn event_type(&self) -> EventType {
        match self {
            WatchEvent::Added(_) => EventType::Added,
            WatchEvent::Modified(_) => EventType::Modified,
            WatchEvent::Deleted(_) => EventType::Deleted,
            WatchEvent::Bookmark { .. } => EventType::Bookmark,
            WatchEvent::Error(_) => EventType::Error,
        }
    }
}

/// The `type` of a watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
    /// `BOOKMARK`.
    Bookmark,
    /// `ERROR`.
    Error,
}

impl EventType {
    /// The type of the object event on `line` if the line starts as the API server
    /// writes one (`{"type":"MODIFIED","object":`, Go's encoding of
    /// `metav1.WatchEvent`): `Added`, `Modified` or `Deleted`. `None` for every other
    /// line (bookmarks, errors, other spacing or key order), which only
    /// [`decode_event`] reads. The rest of the line is not looked at: whoever trusts
    /// this must still decode the line and handle its failure.
    pub(crate) fn of_object_line(line: &[u8]) -> Option<EventType> {
        const PREFIXES: [(&[u8], EventType); 3] = [
            (br#"{"type":"MODIFIED","object":"#, EventType::Modified),
            (br#"{"type":"ADDED","object":"#, EventType::Added),
            (br#"{"type":"DELETED","object":"#, EventType::Deleted),
        ];
        PREFIXES
            .iter()
            .find(|(prefix, _)| line.starts_with(prefix))
            .map(|&(_, kind)| kind)
    }

    /// The type a watch event's `type` field names (the same words in JSON and
    /// protobuf).
    pub(crate) fn parse(s: &str) -> Option<EventType> {
        Some(match s {
            "ADDED" => EventType::Added,
            "MODIFIED" => EventType::Modified,
            "DELETED" => EventType::Deleted,
            "BOOKMARK" => EventType::Bookmark,
            "ERROR" => EventType::Error,
            _ => return None,
        })
    }
}

/// Decodes one watch event line of `role`.
///
/// The strings of a `MODIFIED` object are not looked up in the per-thread intern
/// table: those the thread interned recently are reused, the others are the object's
/// own copies. The object replaces a cached version, and [`Object::share_strings_of`]
/// points it at that version's equal strings.
pub fn decode_event(role: Role, line: &[u8]) -> Result<WatchEvent, DecodeError> {
    // Checked as UTF-8 once, the line is parsed without checking each string again. A
    // line that is not UTF-8 as a whole goes to the checking parser, which rejects it
    // only where a string kubesd reads is broken.
    let decode = || match std::str::from_utf8(line) {
        Ok(text) => decode_event_from(role, serde_json::Deserializer::from_str(text)),
        Err(_) => decode_event_from(role, serde_json::Deserializer::from_slice(line)),
    };
    // A modified object replaces a cached one, which the group shares its strings from
    // (`Object::share_strings_of`): cheaper than the intern table's look-ups (see
    // `without_interning`). A line with another key order is decoded the usual way.
    if EventType::of_object_line(line) == Some(EventType::Modified) {
        without_interning(decode)
    } else {
        decode()
    }
}

fn decode_event_from<'de, R: serde_json::de::Read<'de>>(
    role: Role,
    mut de: serde_json::Deserializer<R>,
) -> Result<WatchEvent, DecodeError> {
    let raw = de
        .deserialize_map(EventVisitor { role })
        .and_then(|raw| de.end().map(|()| raw))
        .map_err(|source| DecodeError::Json { role, source })?;
    let kind = match raw.kind {
        Some(Ok(kind)) => kind,
        Some(Err(unknown)) => {
            return Err(DecodeError::UnknownEventType {
                role,
                kind: unknown,
            });
        }
        None => {
            return Err(DecodeError::MissingEventField {
                role,
                field: "type",
            });
        }
    };
    let decoded = match raw.object {
        Some(DecodedObject::Done(d)) => d,
        Some(DecodedObject::Deferred(json)) => decode_object_of(role, kind, json.get())?,
        Some(DecodedObject::Skipped) | None => {
            return Err(DecodeError::MissingEventField {
                role,
                field: "object",
            });
        }
    };
    Ok(match (kind, decoded) {
        (EventType::Added, Decoded::Object(o)) => WatchEvent::Added(o.validate()?),
        (EventType::Modified, Decoded::Object(o)) => WatchEvent::Modified(o.validate()?),
        (EventType::Deleted, Decoded::Object(o)) => WatchEvent::Deleted(o.validate()?),
        (EventType::Bookmark, Decoded::Bookmark(meta)) => WatchEvent::Bookmark {
            initial_events_end: meta.initial_events_end(),
            resource_version: meta.resource_version,
        },
        (EventType::Error, Decoded::Status(status)) => WatchEvent::Error(status),
        // The object is decoded by the type it came with, and a second `type` is
        // rejected while parsing, so the pairs agree; should they not, it is bad input.
        (_, _) => {
            return Err(DecodeError::MissingEventField {
                role,
                field: "object",
            });
        }
    })
}

/// Decodes the object of a `BOOKMARK` event and returns its resourceVersion.
pub fn decode_bookmark(json: &[u8]) -> Result<ArcStr, serde_json::Error> {
    Ok(serde_json::from_slice::<BookmarkObject>(json)?
        .metadata
        .resource_version)
}

#[derive(Deserialize, Default)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Deserialize, Default)]
struct BookmarkMeta {
    #[serde(
        rename = "resourceVersion",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    resource_version: ArcStr,
    /// Only the one annotation a bookmark is read for; any other is skipped unread.
    #[serde(default)]
    annotations: Option<BookmarkAnnotations>,
}

impl BookmarkMeta {
    fn initial_events_end(&self) -> bool {
        self.annotations
            .as_ref()
            .and_then(|a| a.initial_events_end.as_deref())
            == Some("true")
    }
}

/// The annotations of a bookmark: `k8s.io/initial-events-end` marks the end of a
/// streaming list's initial state (Kubernetes' `metav1.InitialEventsAnnotationKey`).
#[derive(Deserialize, Default)]
struct BookmarkAnnotations {
    #[serde(rename = "k8s.io/initial-events-end", default)]
    initial_events_end: Option<String>,
}

// Short-lived on the stack while one event is decoded; boxing would add an allocation
// per event for nothing.
#[allow(clippy::large_enum_variant)]
enum Decoded {
    Object(Object),
    Bookmark(BookmarkMeta),
    Status(Status),
}

fn decode_object_of(role: Role, kind: EventType, json: &str) -> Result<Decoded, DecodeError> {
    let mut de = serde_json::Deserializer::from_str(json);
    ObjectOfEvent { role, kind }
        .deserialize(&mut de)
        .map_err(|source| DecodeError::Json { role, source })
}

/// Decodes an event's `object` according to the event's type.
struct ObjectOfEvent {
    role: Role,
    kind: EventType,
}

impl<'de> DeserializeSeed<'de> for ObjectOfEvent {
    type Value = Decoded;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Decoded, D::Error> {
        Ok(match self.kind {
            EventType::Added | EventType::Modified | EventType::Deleted => {
                Decoded::Object(ObjectSeed(self.role).deserialize(d)?)
            }
            EventType::Bookmark => Decoded::Bookmark(BookmarkObject::deserialize(d)?.metadata),
            EventType::Error => Decoded::Status(Status::deserialize(d)?),
        })
    }
}

#[allow(clippy::large_enum_variant)] // As `Decoded`.
enum DecodedObject {
    /// `type` came first, so the object was decoded directly.
    Done(Decoded),
    /// `object` came before `type`: kept as raw JSON and decoded once the type is known.
    Deferred(Box<RawValue>),
    /// The type was unknown when `object` arrived, so it was skipped unread.
    Skipped,
}

/// A top-level key of a watch event, told apart in the parser's buffer: serde's
/// `Cow<str>` always builds a `String`, which would cost an allocation per key and one
/// for the type's name in every event.
enum EventKey {
    Type,
    Object,
    Other,
}

impl<'de> Deserialize<'de> for EventKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        map_str(deserializer, |key| match key {
            "type" => EventKey::Type,
            "object" => EventKey::Object,
            _ => EventKey::Other,
        })
    }
}

/// The event's `type`: a known one, or the unknown name (kept for the error).
struct EventTypeName(Result<EventType, String>);

impl<'de> Deserialize<'de> for EventTypeName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        map_str(deserializer, |name| {
            EventTypeName(EventType::parse(name).ok_or_else(|| name.to_owned()))
        })
    }
}

struct RawEvent {
    /// `Err` holds an unknown type name.
    kind: Option<Result<EventType, String>>,
    object: Option<DecodedObject>,
}

struct EventVisitor {
    role: Role,
}

impl<'de> Visitor<'de> for EventVisitor {
    type Value = RawEvent;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} watch event object", self.role)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEvent, A::Error> {
        let mut event = RawEvent {
            kind: None,
            object: None,
        };
        while let Some(key) = map.next_key::<EventKey>()? {
            match key {
                EventKey::Type => {
                    if event.kind.is_some() {
                        // The object may already have been decoded for the first type.
                        return Err(serde::de::Error::duplicate_field("type"));
                    }
                    event.kind = Some(map.next_value::<EventTypeName>()?.0);
                }
                EventKey::Object => {
                    event.object = Some(match event.kind {
                        Some(Ok(kind)) => {
                            DecodedObject::Done(map.next_value_seed(ObjectOfEvent {
                                role: self.role,
                                kind,
                            })?)
                        }
                        // Unknown type: the object is skipped; the error names the type.
                        Some(Err(_)) => {
                            map.next_value::<IgnoredAny>()?;
                            DecodedObject::Skipped
                        }
                        None => DecodedObject::Deferred(map.next_value()?),
                    });
                }
                EventKey::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_start_as_the_api_server_writes_them_have_a_type_before_decoding() {
        for (line, kind) in [
            (
                &br#"{"type":"MODIFIED","object":{"metadata":{"name":"a"}}}"#[..],
                EventType::Modified,
            ),
            (br#"{"type":"ADDED","object":{}}"#, EventType::Added),
            (br#"{"type":"DELETED","object":{}}"#, EventType::Deleted),
        ] {
            assert_eq!(EventType::of_object_line(line), Some(kind));
        }
        for other in [
            &br#"{"type":"BOOKMARK","object":{}}"#[..],
            br#"{"type":"ERROR","object":{}}"#,
            br#"{"object":{},"type":"MODIFIED"}"#,
            br#"{ "type":"MODIFIED","object":{}}"#,
            br#"{"type":"MODIFIEDX","object":{}}"#,
            br#"{"type":"MODIFIED""#,
        ] {
            assert_eq!(
                EventType::of_object_line(other),
                None,
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }

    #[test]
    fn lines_that_are_not_utf8_are_judged_by_the_strings_kubesd_reads() {
        // Valid lines take the parser that trusts a once-checked text; the others the
        // checking one, which only minds strings it reads, as Go's decoder would.
        let mut line =
            br#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n"},"junk":"#
                .to_vec();
        line.extend_from_slice(b"\"\xff\"}}");
        let ev = decode_event(Role::Pod, &line).expect("an ignored field may be broken");
        assert!(matches!(ev, WatchEvent::Added(o) if &*o.key().name == "a"));
        let mut line = br#"{"type":"ADDED","object":{"metadata":{"namespace":"n","name":"#.to_vec();
        line.extend_from_slice(b"\"\xff\"}}}");
        assert!(
            decode_event(Role::Pod, &line).is_err(),
            "a broken name is an error"
        );
    }

    #[test]
    fn decodes_every_event_type() {
        let added = decode_event(Role::Pod, br#"{"type":"ADDED","object":{"metadata":{"name":"a","namespace":"n","resourceVersion":"5"}}}"#).unwrap();
        assert!(matches!(&added, WatchEvent::Added(o) if o.key().to_string() == "n/a"));
        assert_eq!(added.resource_version().map(|v| &**v), Some("5"));
        let deleted = decode_event(
            Role::Pod,
            br#"{"type":"DELETED","object":{"metadata":{"name":"a","namespace":"n"}}}"#,
        )
        .unwrap();
        assert!(matches!(deleted, WatchEvent::Deleted(_)));
        let bookmark = decode_event(
            Role::Pod,
            br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"12"}}}"#,
        )
        .unwrap();
        assert_eq!(
            bookmark,
            WatchEvent::Bookmark {
                resource_version: "12".into(),
                initial_events_end: false,
            }
        );
        // The end of a streaming list's initial events, as the API server writes it;
        // other annotations, and a value other than "true", do not end it.
        let end = br#"{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"13","annotations":{"other":"x","k8s.io/initial-events-end":"true"}}}}"#;
        assert_eq!(
            decode_event(Role::Pod, end).unwrap(),
            WatchEvent::Bookmark {
                resource_version: "13".into(),
                initial_events_end: true,
            }
        );
        let not_end = br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"14","annotations":{"k8s.io/initial-events-end":"false"}}}}"#;
        assert!(matches!(
            decode_event(Role::Pod, not_end).unwrap(),
            WatchEvent::Bookmark {
                initial_events_end: false,
                ..
            }
        ));
        let error = decode_event(Role::Pod, br#"{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}"#).unwrap();
        assert!(matches!(error, WatchEvent::Error(s) if s.is_gone()));
    }

    #[test]
    fn object_before_type_is_decoded_too() {
        let ev = decode_event(
            Role::Node,
            br#"{"object":{"metadata":{"name":"n1"}},"type":"MODIFIED"}"#,
        )
        .unwrap();
        assert!(matches!(ev, WatchEvent::Modified(Object::Node(n)) if &*n.metadata.name == "n1"));
        let ev = decode_event(
            Role::Node,
            br#"{"object":{"metadata":{"resourceVersion":"3"}},"type":"BOOKMARK"}"#,
        )
        .unwrap();
        assert_eq!(ev.resource_version().map(|v| &**v), Some("3"));
    }

    #[test]
    fn bad_events_are_errors_that_name_the_role() {
        let unknown = decode_event(Role::Pod, br#"{"type":"WEIRD","object":{}}"#).unwrap_err();
        assert!(
            unknown.to_string().contains("WEIRD") && unknown.to_string().contains("pod"),
            "{unknown}"
        );
        let no_name = decode_event(
            Role::Service,
            br#"{"type":"ADDED","object":{"metadata":{}}}"#,
        )
        .unwrap_err();
        assert!(no_name.to_string().contains("metadata.name"), "{no_name}");
        let truncated =
            decode_event(Role::Pod, br#"{"type":"ADDED","object":{"metadata":{"na"#).unwrap_err();
        assert!(matches!(
            truncated,
            DecodeError::Json {
                role: Role::Pod,
                ..
            }
        ));
        let no_object = decode_event(Role::Pod, br#"{"type":"ADDED"}"#).unwrap_err();
        assert!(no_object.to_string().contains("object"), "{no_object}");
        assert!(decode_event(Role::Pod, b"[]").is_err());
        let twice = br#"{"type":"ADDED","object":{"metadata":{"name":"a"}},"type":"BOOKMARK"}"#;
        assert!(decode_event(Role::Pod, twice).is_err());
    }

    #[test]
    fn a_modified_objects_strings_are_the_interned_ones_or_copies_left_for_the_cache() {
        let line = |kind: &str| {
            format!(
                r#"{{"type":"{kind}","object":{{"metadata":{{"name":"a","namespace":"n","labels":{{"app":"shop"}}}}}}}}"#
            )
        };
        // The label's key and value, and the namespace.
        let strings = |ev: WatchEvent| match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let (key, value) = o.metadata().labels.0[0].clone();
                [key, value, o.metadata().namespace.clone()]
            }
            other => panic!("{other:?}"),
        };
        // Never interned on this thread: a MODIFIED object's strings are copies, for
        // the cache to point at its own.
        let modified = strings(decode_event(Role::Pod, line("MODIFIED").as_bytes()).unwrap());
        let added = strings(decode_event(Role::Pod, line("ADDED").as_bytes()).unwrap());
        let again = strings(decode_event(Role::Pod, line("ADDED").as_bytes()).unwrap());
        assert_eq!(added, modified);
        for ((added, again), modified) in added.iter().zip(&again).zip(&modified) {
            assert!(ArcStr::ptr_eq(added, again), "ADDED: {added} interned");
            assert!(
                !ArcStr::ptr_eq(added, modified),
                "MODIFIED: {modified} a copy"
            );
        }
        // Interned since: the very strings, with no look-up in the table.
        let later = strings(decode_event(Role::Pod, line("MODIFIED").as_bytes()).unwrap());
        for (added, later) in added.iter().zip(&later) {
            assert!(ArcStr::ptr_eq(added, later), "MODIFIED: {later} reused");
        }
    }
}
