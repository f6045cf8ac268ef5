//! The building blocks of the per-kind decoders: one field of a message with the
//! conversions the model needs, each keeping its string as the JSON path keeps the
//! same field (unique, interned, map value or enum value: `model::json`), and lists
//! gathered into slices of exactly their length.

use arcstr::ArcStr;

use super::wire::{Reader, Value, WireError};
use crate::model::StringMap;
use crate::model::json::{
    ScratchElement, collect_exact, enum_string, map_value_string, repeated_string, unique_string,
};

/// One field of a message being decoded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    /// The field number.
    pub number: u32,
    value: Value<'a>,
    message: &'static str,
}

impl<'a> Field<'a> {
    /// An embedded message's bytes.
    pub fn bytes(self, name: &'static str) -> Result<&'a [u8], WireError> {
        self.value.bytes(self.message, name, self.number)
    }

    /// A string unique to its object (a name, an IP).
    pub fn unique(self, name: &'static str) -> Result<ArcStr, WireError> {
        Ok(unique_string(self.str(name)?))
    }

    /// A string that repeats across objects (a namespace, an image, a node name).
    pub fn repeated(self, name: &'static str) -> Result<ArcStr, WireError> {
        Ok(repeated_string(self.str(name)?))
    }

    /// A Kubernetes enum's value (a protocol, a phase, a kind).
    pub fn enum_value(self, name: &'static str) -> Result<ArcStr, WireError> {
        Ok(enum_string(self.str(name)?))
    }

    /// A string, in the message's bytes.
    pub fn str(self, name: &'static str) -> Result<&'a str, WireError> {
        self.value.str(self.message, name, self.number)
    }

    /// An `int32` field, truncated to 32 bits as Go's decoder does.
    pub fn int32(self, name: &'static str) -> Result<i64, WireError> {
        Ok(i64::from(
            self.value.int(self.message, name, self.number)? as i32
        ))
    }

    /// A `bool` field.
    pub fn bool(self, name: &'static str) -> Result<bool, WireError> {
        Ok(self.value.int(self.message, name, self.number)? != 0)
    }
}

/// Calls `each` with every field of `message`'s `bytes`, in order.
pub(crate) fn for_each_field<'a>(
    bytes: &'a [u8],
    message: &'static str,
    mut each: impl FnMut(Field<'a>) -> Result<(), WireError>,
) -> Result<(), WireError> {
    let mut reader = Reader::new(bytes, message);
    while let Some((number, value)) = reader.next_field()? {
        each(Field {
            number,
            value,
            message,
        })?;
    }
    Ok(())
}

/// Every occurrence of repeated field `number` of `message`, decoded by `decode`, in a
/// slice of exactly their number (gathered in the element type's per-thread scratch
/// vector, as the JSON path's lists are).
pub(crate) fn repeated<'a, T: ScratchElement>(
    bytes: &'a [u8],
    message: &'static str,
    number: u32,
    mut decode: impl FnMut(Field<'a>) -> Result<T, WireError>,
) -> Result<Box<[T]>, WireError> {
    let mut reader = Reader::new(bytes, message);
    collect_exact(|| {
        while let Some((n, value)) = reader.next_field()? {
            if n == number {
                return decode(Field {
                    number,
                    value,
                    message,
                })
                .map(Some);
            }
        }
        Ok(None)
    })
}

/// A `map<string, string>` field (labels, annotations, topology): its entries are
/// repeated messages of `key` (1) and `value` (2), kept as [`StringMap`] keeps JSON's.
pub(crate) fn string_map(
    bytes: &[u8],
    message: &'static str,
    number: u32,
) -> Result<StringMap, WireError> {
    repeated(bytes, message, number, |entry| {
        let (mut key, mut value) = (ArcStr::new(), ArcStr::new());
        for_each_field(entry.bytes("map entry")?, "map entry", |f| {
            match f.number {
                1 => key = f.repeated("key")?,
                2 => value = map_value_string(f.str("value")?),
                _ => {}
            }
            Ok(())
        })?;
        Ok((key, value))
    })
    .map(StringMap)
}

/// A `repeated string` field of unique strings (addresses, hosts), as a vector of
/// exactly their number.
pub(crate) fn unique_strings(
    bytes: &[u8],
    message: &'static str,
    number: u32,
    name: &'static str,
) -> Result<Box<[ArcStr]>, WireError> {
    repeated(bytes, message, number, |f| f.unique(name))
}
