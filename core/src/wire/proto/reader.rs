//! The protobuf wire format, read in place: a message is a run of (field number, wire
//! type, value) triples, and [`Reader`] hands them out one by one as slices of the
//! message's own bytes. Nothing is allocated: a field kubesd does not read costs the
//! few instructions that step over it.
//!
//! Only the four wire types proto3 and Kubernetes' proto2 messages use are accepted
//! (varint, 64-bit, length-delimited, 32-bit); the deprecated groups and the unused
//! codes 6 and 7 end the message with an error, since their length cannot be known.

/// What is wrong with protobuf bytes, and in which message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The bytes end inside a field (a cut body, a wrong length prefix).
    #[error("{message} is truncated at byte {at}")]
    Truncated {
        /// The message being read, e.g. `PodSpec`.
        message: &'static str,
        /// The offset in that message where more bytes were needed.
        at: usize,
    },
    /// A varint longer than ten bytes.
    #[error("{message} has a malformed varint at byte {at}")]
    BadVarint {
        /// The message being read.
        message: &'static str,
        /// Its offset.
        at: usize,
    },
    /// A wire type that cannot be stepped over (groups, or the unused codes 6 and 7).
    #[error("{message} field {field} has unsupported wire type {wire_type}")]
    UnsupportedWireType {
        /// The message being read.
        message: &'static str,
        /// The field number.
        field: u64,
        /// The wire type.
        wire_type: u8,
    },
    /// A field kubesd reads sent with another wire type than its schema's (a string
    /// sent as a number).
    #[error("{message}.{name} (field {field}) has the wrong wire type")]
    WrongWireType {
        /// The message being read.
        message: &'static str,
        /// The field's name in the schema.
        name: &'static str,
        /// The field number.
        field: u32,
    },
    /// A string field kubesd reads that is not UTF-8.
    #[error("{message}.{name} is not UTF-8")]
    NotUtf8 {
        /// The message being read.
        message: &'static str,
        /// The field's name.
        name: &'static str,
    },
    /// A field the message cannot do without is absent (an envelope without its
    /// object: a body cut between two fields).
    #[error("{message} has no {name}")]
    Missing {
        /// The message being read.
        message: &'static str,
        /// The absent field.
        name: &'static str,
    },
    /// A field of the envelope or of a list's own (not an item) over the object size
    /// limit: no Kubernetes body has one.
    #[error("{message} has a field of {length} bytes, over the object size limit")]
    FieldTooLarge {
        /// The message being read.
        message: &'static str,
        /// The field's length.
        length: u64,
    },
    /// A kind the API server serves in JSON only (a custom resource, such as the
    /// Gateway API's), sent in protobuf all the same.
    #[error("{kind} has no protobuf schema: the API server serves it in JSON")]
    NoSchema {
        /// The kind.
        kind: &'static str,
    },
    /// The body does not start with the `k8s\0` magic of Kubernetes' protobuf.
    #[error("not a Kubernetes protobuf body (no k8s\\0 prefix)")]
    NoMagic,
    /// The envelope holds something other than plain protobuf (a `contentEncoding`
    /// such as gzip, or a `contentType` that is not protobuf).
    #[error("the envelope's object is encoded as {0:?}, not plain protobuf")]
    UnsupportedEnvelope(String),
}

/// One field's value, as its wire type gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: a string, bytes, an embedded message or a packed list.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// Reads the fields of one message, in order.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    message: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over the bytes of one `message` (its name goes into errors).
    pub fn new(buf: &'a [u8], message: &'static str) -> Self {
        Reader {
            buf,
            pos: 0,
            message,
        }
    }

    /// The next field, or `None` at the end of the message.
    // Inlined into each message's loop: a call per field, and its result written
    // through memory, cost more than reading a short field.
    #[inline(always)]
    pub fn next_field(&mut self) -> Result<Option<(u32, Value<'a>)>, WireError> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let field = tag >> 3;
        let wire_type = (tag & 7) as u8;
        let value = match wire_type {
            0 => Value::Varint(self.varint()?),
            1 => Value::Fixed64(u64::from_le_bytes(self.fixed::<8>()?)),
            2 => {
                let len = self.varint()?;
                Value::Bytes(self.take(len)?)
            }
            5 => Value::Fixed32(u32::from_le_bytes(self.fixed::<4>()?)),
            _ => {
                return Err(WireError::UnsupportedWireType {
                    message: self.message,
                    field,
                    wire_type,
                });
            }
        };
        // Field numbers are at most 2^29 - 1; a larger one matches no schema field.
        Ok(Some((u32::try_from(field).unwrap_or(u32::MAX), value)))
    }

    /// The offset of the next field in the message's bytes.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, WireError> {
        // One byte holds the tag of every field numbered below 16 and the length of
        // every string below 128 bytes: most varints of a Kubernetes object.
        if let Some(&byte) = self.buf.get(self.pos)
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        self.long_varint()
    }

    fn long_varint(&mut self) -> Result<u64, WireError> {
        let (value, used) = read_varint(&self.buf[self.pos..]).map_err(|e| match e {
            VarintError::Truncated => WireError::Truncated {
                message: self.message,
                at: self.buf.len(),
            },
            VarintError::TooLong => WireError::BadVarint {
                message: self.message,
                at: self.pos,
            },
        })?;
        self.pos += used;
        Ok(value)
    }

    fn take(&mut self, len: u64) -> Result<&'a [u8], WireError> {
        let rest = self.buf.len() - self.pos;
        match usize::try_from(len) {
            Ok(len) if len <= rest => {
                let bytes = &self.buf[self.pos..self.pos + len];
                self.pos += len;
                Ok(bytes)
            }
            _ => Err(WireError::Truncated {
                message: self.message,
                at: self.buf.len(),
            }),
        }
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let bytes = self.take(N as u64)?;
        let mut out = [0; N];
        out.copy_from_slice(bytes);
        Ok(out)
    }
}

/// Why [`read_varint`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes end before the varint does.
    Truncated,
    /// More than ten bytes.
    TooLong,
}

/// A varint at the start of `bytes`, and how many bytes it took.
pub(crate) fn read_varint(bytes: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok((value, i + 1));
        }
    }
    if bytes.len() >= 10 {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Truncated)
    }
}

impl<'a> Value<'a> {
    /// The bytes of a length-delimited field (`name` of `message` for the error).
    pub(crate) fn bytes(
        self,
        message: &'static str,
        name: &'static str,
        field: u32,
    ) -> Result<&'a [u8], WireError> {
        match self {
            Value::Bytes(b) => Ok(b),
            _ => Err(WireError::WrongWireType {
                message,
                name,
                field,
            }),
        }
    }

    /// A string field, checked as UTF-8.
    pub(crate) fn str(
        self,
        message: &'static str,
        name: &'static str,
        field: u32,
    ) -> Result<&'a str, WireError> {
        std::str::from_utf8(self.bytes(message, name, field)?)
            .map_err(|_| WireError::NotUtf8 { message, name })
    }

    /// An integer field (`int32`, `int64`, `bool`): the varint as Go's decoder reads
    /// it, a negative `int32` being sent as ten bytes of two's complement.
    pub(crate) fn int(
        self,
        message: &'static str,
        name: &'static str,
        field: u32,
    ) -> Result<i64, WireError> {
        match self {
            Value::Varint(v) => Ok(v as i64),
            _ => Err(WireError::WrongWireType {
                message,
                name,
                field,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(bytes: &[u8]) -> Result<Vec<(u32, Value<'_>)>, WireError> {
        let mut r = Reader::new(bytes, "Test");
        let mut out = Vec::new();
        while let Some(f) = r.next_field()? {
            out.push(f);
        }
        Ok(out)
    }

    #[test]
    fn every_steppable_wire_type_is_read_in_place() {
        // 1: varint 300; 2: "hi"; 3: fixed64; 4: fixed32.
        let bytes = [
            0x08, 0xac, 0x02, 0x12, 2, b'h', b'i', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 2, 0, 0, 0,
        ];
        assert_eq!(
            fields(&bytes),
            Ok(vec![
                (1, Value::Varint(300)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed64(1)),
                (4, Value::Fixed32(2)),
            ])
        );
    }

    #[test]
    fn groups_and_unused_wire_types_are_errors_that_name_the_message() {
        for wire_type in [3u8, 4, 6, 7] {
            let err = fields(&[(5 << 3) | wire_type, 0]).unwrap_err();
            assert_eq!(
                err,
                WireError::UnsupportedWireType {
                    message: "Test",
                    field: 5,
                    wire_type
                }
            );
            assert!(err.to_string().contains("Test field 5"), "{err}");
        }
    }

    #[test]
    fn cut_fields_and_runaway_varints_are_errors() {
        assert!(matches!(
            fields(&[0x12, 5, b'a']),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            fields(&[0x08, 0x80]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            fields(&[0x19, 1, 2]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            fields(&[
                0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1
            ]),
            Err(WireError::BadVarint { .. })
        ));
        // A length past what a usize holds is a truncation, not an overflow.
        let huge = [
            0x12, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        assert!(matches!(fields(&huge), Err(WireError::Truncated { .. })));
    }

    #[test]
    fn a_negative_int32_reads_back_negative() {
        let minus_one = [
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ];
        let (_, value) = fields(&minus_one).unwrap()[0];
        assert_eq!(value.int("Test", "n", 1), Ok(-1));
        assert!(Value::Bytes(b"x").int("Test", "n", 1).is_err());
        assert!(Value::Bytes(b"\xff").str("Test", "s", 1).is_err());
    }
}
