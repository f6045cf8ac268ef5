//! JSON objects to protobuf, field by field along a [`schema`](super::schema).

use serde_json::{Map, Value};

use super::schema::{Field, Kind};
use super::writer::Writer;
use crate::timestamp::parse_rfc3339;

/// A JSON value the schema cannot encode: the path of the field and what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot encode {path} in protobuf: expected {expected}")]
pub struct EncodeError {
    /// The field, e.g. `spec.containers.ports.containerPort`.
    pub path: String,
    /// What the schema wanted there.
    pub expected: &'static str,
}

/// Encodes the fields of `object` that `schema` names into `out`. Absent and `null`
/// fields are left out (what Go writes for a nil pointer; an empty value decodes the
/// same either way).
pub fn encode_message(
    out: &mut Writer,
    object: &Map<String, Value>,
    schema: &[Field],
    path: &str,
) -> Result<(), EncodeError> {
    for field in schema {
        if let Kind::Inline(inner) = field.kind {
            let mut nested = Writer::default();
            encode_message(&mut nested, object, inner, path)?;
            if !nested.bytes.is_empty() {
                out.bytes(field.number, &nested.bytes);
            }
            continue;
        }
        let path = || join(path, field.json);
        match object.get(field.json) {
            None | Some(Value::Null) => {}
            // Maps are objects; every other field's array is a repeated field.
            Some(Value::Array(items)) if !matches!(field.kind, Kind::RawJson) => {
                for item in items.iter().filter(|v| !v.is_null()) {
                    encode_value(out, field, item, &path())?;
                }
            }
            Some(value) => encode_value(out, field, value, &path())?,
        }
    }
    Ok(())
}

fn encode_value(
    out: &mut Writer,
    field: &Field,
    value: &Value,
    path: &str,
) -> Result<(), EncodeError> {
    let wrong = |expected| EncodeError {
        path: path.to_string(),
        expected,
    };
    match (&field.kind, value) {
        (Kind::Str, Value::String(s)) => out.bytes(field.number, s.as_bytes()),
        (Kind::Int, Value::Number(n)) => {
            out.varint(field.number, n.as_i64().ok_or(wrong("an integer"))?)
        }
        (Kind::Bool, Value::Bool(b)) => out.varint(field.number, i64::from(*b)),
        (Kind::Message(schema), Value::Object(object)) => {
            let mut nested = Writer::default();
            encode_message(&mut nested, object, schema, path)?;
            out.bytes(field.number, &nested.bytes);
        }
        (Kind::Map | Kind::QuantityMap, Value::Object(map)) => {
            for (key, value) in map {
                let value = match value {
                    Value::String(s) => s.as_str(),
                    // Go decodes a `null` map value as "".
                    Value::Null => "",
                    _ => return Err(wrong("a map of strings")),
                };
                out.message(field.number, |entry| {
                    entry.bytes(1, key.as_bytes());
                    if matches!(field.kind, Kind::QuantityMap) {
                        entry.message(2, |quantity| quantity.bytes(1, value.as_bytes()));
                    } else {
                        entry.bytes(2, value.as_bytes());
                    }
                });
            }
        }
        (Kind::Time, Value::String(s)) => {
            let seconds = parse_rfc3339(s).ok_or(wrong("an RFC 3339 time"))?;
            out.message(field.number, |time| time.varint(1, seconds as i64));
        }
        (Kind::IntOrString, Value::Number(n)) => {
            let n = n.as_i64().ok_or(wrong("an integer or a string"))?;
            out.message(field.number, |v| {
                v.varint(1, 0);
                v.varint(2, n);
            });
        }
        (Kind::IntOrString, Value::String(s)) => out.message(field.number, |v| {
            v.varint(1, 1);
            v.bytes(3, s.as_bytes());
        }),
        (Kind::RawJson, value) => {
            let json = serde_json::to_vec(value).unwrap_or_default();
            out.message(field.number, |raw| raw.bytes(1, &json));
        }
        (Kind::Str, _) => return Err(wrong("a string")),
        (Kind::Int, _) => return Err(wrong("an integer")),
        (Kind::Bool, _) => return Err(wrong("a boolean")),
        (Kind::Message(_), _) => return Err(wrong("an object")),
        (Kind::Map | Kind::QuantityMap, _) => return Err(wrong("a map of strings")),
        (Kind::Time, _) => return Err(wrong("an RFC 3339 time")),
        (Kind::IntOrString, _) => return Err(wrong("an integer or a string")),
        (Kind::Inline(_), _) => {}
    }
    Ok(())
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}
