//! Query escaping as Go's `net/url` does it, because the clients kubesd answers are Go
//! programs that build and read URLs with it: Prometheus writes a target's scrape URL
//! with `url.Values.Encode`, and the OpenTelemetry collector asks the target allocator
//! for `/jobs/<url.QueryEscape(job)>/targets`, which the allocator reads back with
//! `url.QueryUnescape`.

/// `text` as Go's `url.QueryEscape` writes it: letters, digits and `-_.~` as they are,
/// a space as `+`, every other byte as `%XX` (upper case).
pub fn query_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte))
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A URL path as Go's `url.URL.EscapedPath` writes it: letters, digits, `-_.~` and
/// `$&+,/:;=@` as they are, every other byte as `%XX`.
pub fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => out.push(char::from(byte)),
            b'-' | b'_' | b'.' | b'~' | b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'='
            | b'@' => out.push(char::from(byte)),
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A `%` escape that is not one, as Go's `url.EscapeError` names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnescapeError {
    /// A `%` not followed by two hexadecimal digits.
    #[error("invalid URL escape {0:?}")]
    BadEscape(String),
    /// The bytes are not UTF-8 text.
    #[error("the unescaped text is not UTF-8")]
    NotText,
}

/// `text` as Go's `url.QueryUnescape` reads it, in one step: `+` is a space, `%XX` a
/// byte.
pub fn query_unescape(text: &str) -> Result<String, UnescapeError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let digits = bytes
                    .get(i + 1..i + 3)
                    .filter(|d| d.iter().all(u8::is_ascii_hexdigit));
                let Some(digits) = digits else {
                    let end = (i + 3).min(bytes.len());
                    let escape = String::from_utf8_lossy(&bytes[i..end]).into_owned();
                    return Err(UnescapeError::BadEscape(escape));
                };
                let hex = std::str::from_utf8(digits).unwrap_or("0");
                out.push(u8::from_str_radix(hex, 16).unwrap_or(0));
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| UnescapeError::NotText)
}

/// A query as Go's `url.Values.Encode` writes it: names in byte order, each value as
/// `name=value`, both escaped by [`query_escape`], joined by `&`.
pub fn encode_values(values: &[(String, Vec<String>)]) -> String {
    let mut sorted: Vec<&(String, Vec<String>)> = values.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut pairs = Vec::new();
    for (name, values) in sorted {
        let name = query_escape(name);
        for value in values {
            pairs.push(format!("{name}={}", query_escape(value)));
        }
    }
    pairs.join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Go 1.27's `url.QueryEscape` writes for these names.
    #[test]
    fn escapes_as_go_does() {
        for (name, escaped) in [
            ("node exporter+textfile", "node+exporter%2Btextfile"),
            ("a/b%c", "a%2Fb%25c"),
            ("~tilde*star", "~tilde%2Astar"),
            ("ünï", "%C3%BCn%C3%AF"),
            ("collect[]", "collect%5B%5D"),
        ] {
            assert_eq!(query_escape(name), escaped, "{name}");
            assert_eq!(query_unescape(escaped).as_deref(), Ok(name), "{escaped}");
        }
        assert_eq!(
            query_unescape("a%2"),
            Err(UnescapeError::BadEscape("%2".into()))
        );
        assert_eq!(
            query_unescape("a%zzb"),
            Err(UnescapeError::BadEscape("%zz".into()))
        );
        assert_eq!(query_unescape("%FF"), Err(UnescapeError::NotText));
    }

    /// What Go 1.27's `url.URL.String` writes for these paths.
    #[test]
    fn paths_are_escaped_as_go_does() {
        assert_eq!(escape_path("/metrics"), "/metrics");
        assert_eq!(escape_path("/a b/ü?x=1&y"), "/a%20b/%C3%BC%3Fx=1&y");
        assert_eq!(escape_path("/$&+,:;=@~%"), "/$&+,:;=@~%25");
    }

    #[test]
    fn values_are_sorted_by_name_each_value_kept() {
        let values = vec![
            ("z".to_string(), vec!["1".to_string()]),
            (
                "collect[]".to_string(),
                vec!["cpu".to_string(), "a b".to_string()],
            ),
        ];
        assert_eq!(
            encode_values(&values),
            "collect%5B%5D=cpu&collect%5B%5D=a+b&z=1"
        );
    }
}
