//! The envelope of every protobuf body the API server sends: the magic `k8s\0`, then a
//! `runtime.Unknown` message: `typeMeta` (1: `apiVersion` 1, `kind` 2), `raw` (2: the
//! object's own protobuf), `contentEncoding` (3) and `contentType` (4).

use super::reader::{Reader, WireError};

/// The four bytes that start a Kubernetes protobuf body.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

/// An opened envelope: its type and the object's bytes, borrowed from the body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Envelope<'a> {
    /// `typeMeta.apiVersion`, e.g. `v1` or `discovery.k8s.io/v1`.
    pub api_version: &'a str,
    /// `typeMeta.kind`, e.g. `PodList`, `Pod` or `Status`.
    pub kind: &'a str,
    /// `raw`: the object, in protobuf.
    pub raw: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// Opens the envelope of `body`. The API server leaves `contentEncoding` and
    /// `contentType` empty (plain protobuf); anything else is refused, not guessed at.
    pub(crate) fn open(body: &'a [u8]) -> Result<Envelope<'a>, WireError> {
        let message = body.strip_prefix(MAGIC).ok_or(WireError::NoMagic)?;
        let mut envelope = Envelope::default();
        let mut has_raw = false;
        let mut fields = Reader::new(message, "runtime.Unknown");
        while let Some((field, value)) = fields.next_field()? {
            match field {
                1 => {
                    let type_meta = value.bytes("runtime.Unknown", "typeMeta", 1)?;
                    (envelope.api_version, envelope.kind) = read_type_meta(type_meta)?;
                }
                2 => {
                    envelope.raw = value.bytes("runtime.Unknown", "raw", 2)?;
                    has_raw = true;
                }
                3 | 4 => {
                    let name = if field == 3 {
                        "contentEncoding"
                    } else {
                        "contentType"
                    };
                    let text = value.str("runtime.Unknown", name, field)?;
                    if !text.is_empty() && !text.starts_with("application/vnd.kubernetes.protobuf")
                    {
                        return Err(WireError::UnsupportedEnvelope(text.to_string()));
                    }
                }
                _ => {}
            }
        }
        // The API server always sends the object, empty or not; without it, the body
        // was cut, and an empty list read from it would drop every target.
        if !has_raw {
            return Err(WireError::Missing {
                message: "runtime.Unknown",
                name: "raw",
            });
        }
        Ok(envelope)
    }
}

fn read_type_meta(bytes: &[u8]) -> Result<(&str, &str), WireError> {
    let (mut api_version, mut kind) = ("", "");
    let mut fields = Reader::new(bytes, "runtime.TypeMeta");
    while let Some((field, value)) = fields.next_field()? {
        match field {
            1 => api_version = value.str("runtime.TypeMeta", "apiVersion", 1)?,
            2 => kind = value.str("runtime.TypeMeta", "kind", 2)?,
            _ => {}
        }
    }
    Ok((api_version, kind))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `k8s\0` + Unknown{typeMeta{"v1","Pod"}, raw "xy", fields 3 and 4 as given}.
    fn body(encoding: &[u8], content_type: &[u8]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[0x0a, 9, 0x0a, 2, b'v', b'1', 0x12, 3, b'P', b'o', b'd']);
        b.extend_from_slice(&[0x12, 2, b'x', b'y']);
        b.extend_from_slice(&[0x1a, encoding.len() as u8]);
        b.extend_from_slice(encoding);
        b.extend_from_slice(&[0x22, content_type.len() as u8]);
        b.extend_from_slice(content_type);
        b
    }

    #[test]
    fn opens_the_envelope_of_a_plain_protobuf_object() {
        let bytes = body(b"", b"");
        let envelope = Envelope::open(&bytes).unwrap();
        assert_eq!(
            envelope,
            Envelope {
                api_version: "v1",
                kind: "Pod",
                raw: b"xy"
            }
        );
        assert!(Envelope::open(&body(b"", b"application/vnd.kubernetes.protobuf")).is_ok());
    }

    #[test]
    fn refuses_what_is_not_a_plain_protobuf_envelope() {
        assert_eq!(
            Envelope::open(b"{\"kind\":\"Pod\"}"),
            Err(WireError::NoMagic)
        );
        assert!(matches!(
            Envelope::open(&body(b"gzip", b"")),
            Err(WireError::UnsupportedEnvelope(e)) if e == "gzip"
        ));
        assert!(Envelope::open(&body(b"", b"application/json")).is_err());
        let bytes = body(b"", b"");
        let without_raw = &bytes[..4 + 11];
        assert_eq!(
            Envelope::open(without_raw),
            Err(WireError::Missing {
                message: "runtime.Unknown",
                name: "raw"
            })
        );
        let bytes = body(b"", b"");
        let truncated = &bytes[..bytes.len() - 3];
        assert!(matches!(
            Envelope::open(truncated),
            Err(WireError::Truncated { .. })
        ));
    }
}
