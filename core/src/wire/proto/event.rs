//! One protobuf watch event: a frame holding a `metav1.WatchEvent` (`type` 1, `object`
//! 2, a `RawExtension` whose `raw` (1) is the object in its own `k8s\0` envelope).
//!
//! The API server writes the event itself without an envelope (Kubernetes' "raw"
//! stream serializer); a frame that starts with the magic is opened first, so either
//! form is read. The result is the [`WatchEvent`] the JSON path gives for the same
//! event, and a `MODIFIED` object is decoded without interning, as in JSON (see
//! [`crate::wire::json::decode_event`]).

use super::envelope::{Envelope, MAGIC};
use super::fields::for_each_field;
use super::meta::bookmark_of;
use super::object::decode_object;
use super::reader::WireError;
use crate::error::DecodeError;
use crate::model::Role;
use crate::model::json::without_interning;
use crate::wire::Status;
use crate::wire::json::{EventType, WatchEvent};

/// Decodes one watch frame of `role`.
pub fn decode_event(role: Role, frame: &[u8]) -> Result<WatchEvent, DecodeError> {
    let protobuf = |source| DecodeError::Protobuf { role, source };
    let message = if frame.starts_with(MAGIC) {
        Envelope::open(frame).map_err(protobuf)?.raw
    } else {
        frame
    };
    let (kind, object) = read_event(message).map_err(protobuf)?;
    let kind = match kind {
        Some(name) => EventType::parse(name).ok_or_else(|| DecodeError::UnknownEventType {
            role,
            kind: name.to_string(),
        })?,
        None => {
            return Err(DecodeError::MissingEventField {
                role,
                field: "type",
            });
        }
    };
    let object = object.ok_or(DecodeError::MissingEventField {
        role,
        field: "object",
    })?;
    let envelope = Envelope::open(object).map_err(protobuf)?;
    let decode = || decode_object(role, envelope.api_version, envelope.kind, envelope.raw);
    Ok(match kind {
        EventType::Added => WatchEvent::Added(decode()?),
        EventType::Modified => WatchEvent::Modified(without_interning(decode)?),
        EventType::Deleted => WatchEvent::Deleted(decode()?),
        EventType::Bookmark => {
            let (resource_version, initial_events_end) =
                bookmark_of(envelope.raw).map_err(protobuf)?;
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            }
        }
        EventType::Error => WatchEvent::Error(status(envelope.raw).map_err(protobuf)?),
    })
}

/// The event's `type` and its object's bytes (`object.raw`), as sent.
fn read_event(message: &[u8]) -> Result<(Option<&str>, Option<&[u8]>), WireError> {
    let (mut kind, mut object) = (None, None);
    for_each_field(message, "WatchEvent", |f| {
        match f.number {
            1 => kind = Some(f.str("type")?),
            2 => {
                for_each_field(f.bytes("object")?, "RawExtension", |raw| {
                    if raw.number == 1 {
                        object = Some(raw.bytes("raw")?);
                    }
                    Ok(())
                })?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok((kind, object))
}

/// A `metav1.Status`: `message` 3, `reason` 4, `code` 6.
pub(crate) fn status(bytes: &[u8]) -> Result<Status, WireError> {
    let mut status = Status::default();
    for_each_field(bytes, "Status", |f| {
        match f.number {
            3 => status.message = f.str("message")?.to_string(),
            4 => status.reason = f.str("reason")?.to_string(),
            6 => status.code = u16::try_from(f.int32("code")?).unwrap_or(0),
            _ => {}
        }
        Ok(())
    })?;
    Ok(status)
}
