//! Expansion of `$1`, `${1}`, `$name` and `${name}` in a replacement, with Go's
//! `regexp.Expand` rules, which Prometheus uses.
//!
//! Not the regex crate's `Captures::expand`, because the two differ at the edges that
//! a config may hit: Go reads `$01` as a group *named* "01" (so it expands to nothing),
//! and counts Unicode letters and digits as part of a name.

use regex::Captures;

/// `template` with each group reference replaced by what that group matched in `caps`.
///
/// `$$` is a literal `$`; a reference to a group that does not exist or did not take
/// part in the match expands to nothing; a `$` not followed by a name (or `${` without
/// its `}`) is kept as it is.
pub fn expand(template: &str, caps: &Captures<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        rest = &rest[dollar + 1..];
        if let Some(after) = rest.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        match reference(rest) {
            Some((name, after)) => {
                if let Some(m) = group(caps, name) {
                    out.push_str(m);
                }
                rest = after;
            }
            None => out.push('$'),
        }
    }
    out.push_str(rest);
    out
}

/// The group reference at the start of `s` (just after a `$`): its name and the text
/// after it, or `None` if there is no well-formed reference.
fn reference(s: &str) -> Option<(&str, &str)> {
    let (braced, body) = match s.strip_prefix('{') {
        Some(body) => (true, body),
        None => (false, s),
    };
    let len = body
        .char_indices()
        .find(|&(_, c)| !(c.is_alphabetic() || c.is_numeric() || c == '_'))
        .map_or(body.len(), |(i, _)| i);
    if len == 0 {
        return None;
    }
    let (name, after) = body.split_at(len);
    if braced {
        let after = after.strip_prefix('}')?;
        return Some((name, after));
    }
    Some((name, after))
}

/// What the group called `name` matched: by number if `name` is a number without a
/// leading zero (Go's rule), else by name.
fn group<'h>(caps: &Captures<'h>, name: &str) -> Option<&'h str> {
    let is_number = name.bytes().all(|b| b.is_ascii_digit())
        && !(name.starts_with('0') && name.len() > 1)
        && name.len() <= 8;
    let m = if is_number {
        caps.get(name.parse::<usize>().ok()?)
    } else {
        caps.name(name)
    };
    m.map(|m| m.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    #[test]
    fn expands_like_go() {
        let re = Regex::new(r"^(?s:(?P<first>a+)(b*)(x)?)$").expect("pattern");
        let caps = re.captures("aab").expect("matches");
        let cases = [
            ("$1", "aa"),
            ("${1}", "aa"),
            ("$2-$1", "b-aa"),
            ("${first}_${2}", "aa_b"),
            ("$first", "aa"),
            // `$1x` is the group named "1x", which does not exist.
            ("$1x", ""),
            ("${1}x", "aax"),
            ("$3", ""),  // did not take part in the match
            ("$9", ""),  // no such group
            ("$01", ""), // a name, not group 1
            ("$$1", "$1"),
            ("a$", "a$"),
            ("${1", "${1"),
            ("$-", "$-"),
            ("no refs", "no refs"),
            ("${}", "${}"),
        ];
        for (template, want) in cases {
            assert_eq!(expand(template, &caps), want, "{template}");
        }
    }
}
