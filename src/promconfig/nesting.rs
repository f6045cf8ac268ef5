//! A guard against deeply nested flow collections (`[[[[...` or `{a: {a: ...`).
//!
//! The YAML scanner (libyaml's, as ported) re-checks every open flow level for stale
//! simple keys on each token, so parsing a flow nesting `d` levels deep costs O(d²):
//! 100,000 brackets (200 KB) kept the loader busy for minutes. The deserializer would
//! refuse such a document anyway (its recursion limit is 128), only after the scanner
//! has finished; this refuses it before the scanner starts.

/// The deepest flow nesting accepted; far above any real config and above the
/// deserializer's own recursion limit, so no config that could load is refused.
pub const MAX_FLOW_DEPTH: usize = 1_000;

/// An upper bound of the flow nesting depth of `text`: brackets and braces, outside
/// quoted scalars and comments, counted as if every one opened or closed a collection
/// (a plain scalar such as `a[b` can only make the estimate larger).
pub fn flow_depth_exceeds(text: &str, limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut comment = false;
    let mut prev = b'\n';
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if comment {
            comment = b != b'\n';
        } else if let Some(q) = quote {
            if b == b'\\' && q == b'"' {
                i += 1;
            } else if b == q {
                quote = None;
            }
        } else {
            match b {
                b'"' | b'\'' if !prev.is_ascii_alphanumeric() => quote = Some(b),
                b'#' if prev.is_ascii_whitespace() => comment = true,
                b'[' | b'{' => {
                    depth += 1;
                    if depth > limit {
                        return Some(i);
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = b;
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_brackets_outside_quotes_and_comments() {
        assert_eq!(flow_depth_exceeds("a: [[1]]", 2), None);
        assert_eq!(flow_depth_exceeds("a: [[[1]]]", 2), Some(5));
        assert_eq!(flow_depth_exceeds("a: \"[[[[\"\nb: '{{{{'", 1), None);
        assert_eq!(flow_depth_exceeds("a: 1 # [[[[[[\nb: [2]", 1), None);
        assert_eq!(flow_depth_exceeds("a: \"\\\"[[[\"", 1), None);
        assert_eq!(
            flow_depth_exceeds(&"[".repeat(1_001), MAX_FLOW_DEPTH),
            Some(1_000)
        );
    }
}
