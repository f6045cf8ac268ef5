//! Reading a value as Prometheus' config loader reads it and writing it back as its YAML
//! encoder writes it: byte sizes (`10MiB`), file names joined
//! with the config's directory, secrets, URLs with their password hidden.

use std::path::{Component, Path, PathBuf};

use serde_norway::{Mapping, Value};

/// What Prometheus writes in place of a secret.
pub const REDACTED: &str = "<secret>";

/// Whether secrets are written out or replaced by [`REDACTED`] (Prometheus'
/// `MarshalSecretValue`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secrets {
    /// Each non-empty secret written as [`REDACTED`].
    Redacted,
    /// Each secret written as it is.
    Shown,
}

/// A mapping being written, key by key, in the order Prometheus writes them.
#[derive(Default)]
pub struct Out(pub Mapping);

impl Out {
    /// Sets `key` to `value`.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(Value::from(key), value.into());
    }

    /// Sets `key` to `value` unless it is empty (a string, list or mapping), as an
    /// `omitempty` field.
    pub fn set_nonempty(&mut self, key: &str, value: Value) {
        let empty = match &value {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Sequence(items) => items.is_empty(),
            Value::Mapping(map) => map.is_empty(),
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::Bool(b) => !b,
            Value::Tagged(_) => false,
        };
        if !empty {
            self.0.insert(Value::from(key), value);
        }
    }

    /// The mapping written.
    pub fn done(self) -> Value {
        Value::Mapping(self.0)
    }
}

/// The entry `key` of `map`, if it is there and not null.
pub fn field<'v>(map: &'v Mapping, key: &str) -> Option<&'v Value> {
    map.get(key).filter(|v| !v.is_null())
}

/// `key` of `map` as a mapping; an empty one when absent or not a mapping.
pub fn mapping<'v>(map: &'v Mapping, key: &str) -> Option<&'v Mapping> {
    field(map, key).and_then(Value::as_mapping)
}

/// A string field; empty when absent. A number or boolean reads as YAML reads it into
/// a Go string.
pub fn string(map: &Mapping, key: &str) -> String {
    match field(map, key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

/// A boolean field, or `default` when absent.
pub fn boolean(map: &Mapping, key: &str, default: bool) -> bool {
    field(map, key).and_then(Value::as_bool).unwrap_or(default)
}

/// An unsigned integer field; 0 when absent.
pub fn unsigned(map: &Mapping, key: &str) -> u64 {
    field(map, key).and_then(Value::as_u64).unwrap_or(0)
}

/// A list of strings; empty when absent.
pub fn strings(map: &Mapping, key: &str) -> Vec<String> {
    let items = field(map, key).and_then(Value::as_sequence);
    items
        .into_iter()
        .flatten()
        .filter_map(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        })
        .collect()
}

/// A list of strings as a YAML sequence.
pub fn sequence(items: Vec<String>) -> Value {
    Value::Sequence(items.into_iter().map(Value::from).collect())
}

/// A size in bytes as Prometheus' `body_size_limit` reads it (`10MB` is ten mebibytes,
/// as `units.ParseBase2Bytes` takes it); `None` when it is not one.
pub fn parse_bytes(text: &str) -> Option<u64> {
    const UNITS: [(&str, u32); 13] = [
        ("KiB", 1),
        ("MiB", 2),
        ("GiB", 3),
        ("TiB", 4),
        ("PiB", 5),
        ("EiB", 6),
        ("KB", 1),
        ("MB", 2),
        ("GB", 3),
        ("TB", 4),
        ("PB", 5),
        ("EB", 6),
        ("B", 0),
    ];
    let mut rest = text;
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let number: u64 = rest.get(..digits)?.parse().ok()?;
        rest = &rest[digits..];
        let (unit, power) = UNITS.iter().find(|(u, _)| rest.starts_with(u))?;
        rest = &rest[unit.len()..];
        total = total.checked_add(number.checked_mul(1024u64.checked_pow(*power)?)?)?;
    }
    (!text.is_empty()).then_some(total)
}

/// `bytes` as Prometheus writes a size (`units.Base2Bytes`): `10MiB`, `1MiB512KiB`,
/// `100B`.
pub fn format_bytes(bytes: u64) -> String {
    const SUFFIXES: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut parts = Vec::new();
    let mut n = bytes;
    for suffix in SUFFIXES {
        if !n.is_multiple_of(1024) || (suffix == "B" && n == 0) {
            parts.push(format!("{}{suffix}", n % 1024));
        }
        n /= 1024;
        if n == 0 {
            break;
        }
    }
    parts.reverse();
    parts.concat()
}

/// A secret as Prometheus writes it: left out when empty, [`REDACTED`] or as it is.
pub fn secret(text: String, secrets: Secrets) -> Value {
    match (text.is_empty(), secrets) {
        (true, _) => Value::Null,
        (false, Secrets::Redacted) => Value::from(REDACTED),
        (false, Secrets::Shown) => Value::from(text),
    }
}

/// A URL as Prometheus writes one (`config.URL`): a password in it as `xxxxx`.
pub fn url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let Some((userinfo, host)) = rest[..authority_end].rsplit_once('@') else {
        return text.to_string();
    };
    let Some((user, _password)) = userinfo.split_once(':') else {
        return text.to_string();
    };
    format!("{scheme}://{user}:xxxxx@{host}{}", &rest[authority_end..])
}

/// A file name as Prometheus' `config.JoinDir` makes it: a relative one joined with
/// `dir` and cleaned (`filepath.Join`); empty and absolute ones as they are.
pub fn join_dir(dir: &Path, file: &str) -> String {
    if file.is_empty() || Path::new(file).is_absolute() {
        return file.to_string();
    }
    clean(&dir.join(file))
}

/// A path cleaned lexically as Go's `filepath.Clean` does: no `.`, `x/..` folded,
/// `.` for nothing.
fn clean(path: &Path) -> String {
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                Some(Component::RootDir) => {}
                _ => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    let cleaned: PathBuf = parts.iter().collect();
    match cleaned.to_string_lossy() {
        text if text.is_empty() => ".".to_string(),
        text => text.into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_and_written_as_prometheus_does() {
        for (text, bytes, back) in [
            ("10MB", 10 << 20, "10MiB"),
            ("1KB", 1024, "1KiB"),
            ("1MiB512KiB", (1 << 20) + (512 << 10), "1MiB512KiB"),
            ("100B", 100, "100B"),
            ("0", 0, "0B"),
        ] {
            if text != "0" {
                assert_eq!(parse_bytes(text), Some(bytes), "{text}");
            }
            assert_eq!(format_bytes(bytes), back, "{text}");
        }
        assert_eq!(parse_bytes("ten"), None);
    }

    #[test]
    fn files_are_joined_and_cleaned_as_go_does() {
        assert_eq!(join_dir(Path::new(""), "ca.pem"), "ca.pem");
        assert_eq!(join_dir(Path::new("."), "./ca.pem"), "ca.pem");
        assert_eq!(
            join_dir(Path::new("/etc/p"), "../x/ca.pem"),
            "/etc/x/ca.pem"
        );
        assert_eq!(join_dir(Path::new("/etc/p"), "/abs"), "/abs");
        assert_eq!(join_dir(Path::new("/etc/p"), ""), "");
    }

    #[test]
    fn a_password_in_a_url_is_hidden() {
        assert_eq!(url("http://u:p@h:1/x"), "http://u:xxxxx@h:1/x");
        assert_eq!(url("http://h:1/x@y"), "http://h:1/x@y");
        assert_eq!(url("http://u@h"), "http://u@h");
    }
}
