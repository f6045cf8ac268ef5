//! The building blocks of the per-kind decoders: one field of a message with the
//! conversions the model needs, each keeping its string as the JSON path keeps the
//! same field (unique, interned, map value or enum value: `model::json`), and lists
//! in slices of exactly their length.
//!
//! A message is scanned once: its scalar fields are decoded as they come, and where a
//! repeated field's occurrences lie is noted ([`Repeated`]); each list is then decoded
//! from that stretch alone, counted, so it is allocated once at its exact length.

use arcstr::ArcStr;

use super::reader::{Reader, Value, WireError};
use crate::model::StringMap;
use crate::model::json::{enum_string, map_value_string, repeated_string, unique_string};

/// One field of a message being decoded.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Field<'a> {
    /// The field number.
    pub number: u32,
    value: Value<'a>,
    message: &'static str,
    /// Where the field (its tag) starts in the message's bytes.
    start: usize,
    /// Where the field ends in the message's bytes.
    end: usize,
}

impl<'a> Field<'a> {
    /// An embedded message's bytes.
    pub(crate) fn bytes(self, name: &'static str) -> Result<&'a [u8], WireError> {
        self.value.bytes(self.message, name, self.number)
    }

    /// A string unique to its object (a name, an IP).
    pub(crate) fn unique(self, name: &'static str) -> Result<ArcStr, WireError> {
        self.kept(name, unique_string)
    }

    /// A string that repeats across objects (a namespace, an image, a node name).
    pub(crate) fn repeated(self, name: &'static str) -> Result<ArcStr, WireError> {
        self.kept(name, repeated_string)
    }

    /// A Kubernetes enum's value (a protocol, a phase, a kind).
    pub(crate) fn enum_value(self, name: &'static str) -> Result<ArcStr, WireError> {
        self.kept(name, enum_string)
    }

    /// A value of a string map (a label's, an annotation's).
    pub(crate) fn map_value(self, name: &'static str) -> Result<ArcStr, WireError> {
        self.kept(name, map_value_string)
    }

    /// A string field kept as `keep` keeps it, which checks the bytes as UTF-8 only
    /// where it copies them (a string already interned is known to be UTF-8).
    fn kept(
        self,
        name: &'static str,
        keep: impl FnOnce(&'a [u8]) -> Result<ArcStr, std::str::Utf8Error>,
    ) -> Result<ArcStr, WireError> {
        keep(self.bytes(name)?).map_err(|_| WireError::NotUtf8 {
            message: self.message,
            name,
        })
    }

    /// A string, in the message's bytes.
    pub(crate) fn str(self, name: &'static str) -> Result<&'a str, WireError> {
        self.value.str(self.message, name, self.number)
    }

    /// An `int32` field, truncated to 32 bits as Go's decoder does.
    pub(crate) fn int32(self, name: &'static str) -> Result<i64, WireError> {
        Ok(i64::from(
            self.value.int(self.message, name, self.number)? as i32
        ))
    }

    /// A `bool` field.
    pub(crate) fn bool(self, name: &'static str) -> Result<bool, WireError> {
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
    loop {
        let start = reader.position();
        let Some((number, value)) = reader.next_field()? else {
            return Ok(());
        };
        each(Field {
            number,
            value,
            message,
            start,
            end: reader.position(),
        })?;
    }
}

/// The occurrences of one repeated field, noted while its message is scanned: their
/// number, and the stretch of the message's bytes from the first to the last. The
/// API server writes a message's fields in order of their numbers, so that stretch
/// holds the occurrences alone and decoding the list reads nothing else (any other
/// field found in it is stepped over).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Repeated {
    number: u32,
    count: usize,
    start: usize,
    end: usize,
}

impl Repeated {
    /// Notes one occurrence, `field`, met in the message's scan.
    pub(crate) fn note(&mut self, field: Field<'_>) {
        if self.count == 0 {
            self.number = field.number;
            self.start = field.start;
        }
        self.end = field.end;
        self.count += 1;
    }

    /// The occurrences in `message`'s `bytes` (the bytes the scan that noted them
    /// read), decoded by `decode`, in a slice of exactly their number.
    pub(crate) fn decode<'a, T>(
        self,
        bytes: &'a [u8],
        message: &'static str,
        mut decode: impl FnMut(Field<'a>) -> Result<T, WireError>,
    ) -> Result<Box<[T]>, WireError> {
        if self.count == 0 {
            return Ok(Box::default());
        }
        let mut items = Vec::with_capacity(self.count);
        for_each_field(&bytes[self.start..self.end], message, |f| {
            if f.number == self.number {
                items.push(decode(f)?);
            }
            Ok(())
        })?;
        // The capacity is the length: no reallocation.
        Ok(items.into_boxed_slice())
    }
}

/// Every occurrence of repeated field `number` of `message`'s `bytes`, for a message
/// of which nothing else is read, decoded by `decode`, in a slice of exactly their
/// number.
pub(crate) fn repeated<'a, T>(
    bytes: &'a [u8],
    message: &'static str,
    number: u32,
    decode: impl FnMut(Field<'a>) -> Result<T, WireError>,
) -> Result<Box<[T]>, WireError> {
    let mut occurrences = Repeated::default();
    for_each_field(bytes, message, |f| {
        if f.number == number {
            occurrences.note(f);
        }
        Ok(())
    })?;
    occurrences.decode(bytes, message, decode)
}

/// A `map<string, string>` field (labels, annotations, topology) of `message`'s
/// `bytes`, whose `entries` the scan noted: repeated messages of `key` (1) and `value`
/// (2), kept as [`StringMap`] keeps JSON's.
pub(crate) fn string_map(
    bytes: &[u8],
    message: &'static str,
    entries: Repeated,
) -> Result<StringMap, WireError> {
    entries
        .decode(bytes, message, |entry| {
            let (mut key, mut value) = (ArcStr::new(), ArcStr::new());
            for_each_field(entry.bytes("map entry")?, "map entry", |f| {
                match f.number {
                    1 => key = f.repeated("key")?,
                    2 => value = f.map_value("value")?,
                    _ => {}
                }
                Ok(())
            })?;
            Ok((key, value))
        })
        .map(StringMap)
}

/// A `repeated string` field of unique strings (addresses, hosts) of `message`'s
/// `bytes`, whose `occurrences` the scan noted.
pub(crate) fn unique_strings(
    bytes: &[u8],
    message: &'static str,
    occurrences: Repeated,
    name: &'static str,
) -> Result<Box<[ArcStr]>, WireError> {
    occurrences.decode(bytes, message, |f| f.unique(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A length-delimited field `number` holding `bytes`.
    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, bytes.len() as u8];
        out.extend_from_slice(bytes);
        out
    }

    fn entry(key: &str, value: &[u8]) -> Vec<u8> {
        [field(1, key.as_bytes()), field(2, value)].concat()
    }

    type Strings = Box<[ArcStr]>;

    /// Notes fields 2 and 3 of `message` and decodes them as strings.
    fn two_lists(message: &[u8]) -> Result<(Strings, Strings), WireError> {
        let (mut twos, mut threes) = (Repeated::default(), Repeated::default());
        for_each_field(message, "Test", |f| {
            match f.number {
                2 => twos.note(f),
                3 => threes.note(f),
                _ => {}
            }
            Ok(())
        })?;
        Ok((
            unique_strings(message, "Test", twos, "two")?,
            unique_strings(message, "Test", threes, "three")?,
        ))
    }

    #[test]
    fn interleaved_occurrences_are_each_decoded_once_in_order() {
        let message = [
            field(2, b"a"),
            field(3, b"x"),
            field(1, b"other"),
            field(2, b"b"),
            field(3, b"y"),
            field(2, b"c"),
        ]
        .concat();
        let (twos, threes) = two_lists(&message).unwrap();
        assert_eq!(
            twos.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(
            threes.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
        let (none, _) = two_lists(&field(3, b"x")).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn a_map_key_or_value_that_is_not_utf8_is_an_error() {
        let decode = |message: &[u8]| {
            let mut entries = Repeated::default();
            for_each_field(message, "Test", |f| {
                if f.number == 11 {
                    entries.note(f);
                }
                Ok(())
            })?;
            string_map(message, "Test", entries)
        };
        let good = field(11, &entry("app", b"shop"));
        let map = decode(&good).unwrap();
        assert_eq!(map.get("app").map(|v| v.as_str()), Some("shop"));
        // The same key, then a value that is not UTF-8: the key is found interned,
        // the value is never in the table, so it is checked.
        let bad = field(11, &entry("app", b"sh\xffp"));
        assert!(matches!(
            decode(&bad),
            Err(WireError::NotUtf8 { name: "value", .. })
        ));
        let bad_key = [0x5a, 5, 0x0a, 1, 0xff, 0x12, 0].to_vec();
        assert!(matches!(
            decode(&bad_key),
            Err(WireError::NotUtf8 { name: "key", .. })
        ));
    }
}
