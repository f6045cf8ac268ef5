//! vmagent's `action: graphite`: a glob `match` on the `__name__` label (`*` matches
//! anything up to the next part, never a `.`) and `labels` templates that use what
//! each `*` matched (`$1`, `${2}`; `$0` is the whole name), as vmagent documents it.

/// A compiled `match` template: literal parts and `*` wildcards.
#[derive(Clone, Debug)]
pub struct GraphiteMatch {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Literal(String),
    Star,
}

impl GraphiteMatch {
    /// Compiles `template`, e.g. `*.server.*.total`.
    pub fn new(template: &str) -> GraphiteMatch {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(star) = rest.find('*') {
            if star > 0 {
                parts.push(Part::Literal(rest[..star].to_string()));
            }
            parts.push(Part::Star);
            rest = &rest[star + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        GraphiteMatch { parts }
    }

    /// What `name` matches: the whole name, then each `*`'s part; `None` if it does not
    /// match.
    pub fn captures<'a>(&self, name: &'a str) -> Option<Vec<&'a str>> {
        let mut captures = vec![name];
        let mut s = name;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(p) => {
                    s = s.strip_prefix(p.as_str())?;
                    i += 1;
                }
                Part::Star => match self.parts.get(i + 1) {
                    None => {
                        if s.contains('.') {
                            return None;
                        }
                        captures.push(s);
                        return Some(captures);
                    }
                    Some(Part::Literal(next)) => {
                        let n = s.find(next.as_str())?;
                        let taken = &s[..n];
                        if taken.contains('.') {
                            return None;
                        }
                        captures.push(taken);
                        s = &s[n + next.len()..];
                        i += 2;
                    }
                    // Two stars in a row: the first takes nothing, as in vmagent.
                    Some(Part::Star) => {
                        captures.push("");
                        i += 1;
                    }
                },
            }
        }
        s.is_empty().then_some(captures)
    }
}

/// `template` with `$N` and `${N}` replaced by capture N (nothing if there is none);
/// anything else is kept as written.
pub fn expand_graphite(template: &str, captures: &[&str]) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        rest = &rest[dollar + 1..];
        let (digits, after, braced) = match rest.strip_prefix('{') {
            Some(inner) => match inner.find('}') {
                Some(end) => (&inner[..end], &inner[end + 1..], true),
                None => {
                    out.push('$');
                    continue;
                }
            },
            None => {
                let n = rest
                    .find(|c: char| !c.is_ascii_digit())
                    .unwrap_or(rest.len());
                (&rest[..n], &rest[n..], false)
            }
        };
        match digits.parse::<usize>() {
            Ok(n) => {
                if let Some(c) = captures.get(n) {
                    out.push_str(c);
                }
            }
            Err(_) if braced => {
                out.push_str("${");
                out.push_str(digits);
                out.push('}');
            }
            Err(_) => out.push('$'),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// vmagent's own cases (`lib/promrelabel/graphite_test.go`).
    #[test]
    fn matches_as_vmagent() {
        fn m<'a>(template: &str, name: &'a str) -> Option<Vec<&'a str>> {
            GraphiteMatch::new(template).captures(name)
        }
        assert_eq!(m("", ""), Some(vec![""]));
        assert_eq!(
            m("test.*.*.counter", "test.foo.bar.counter"),
            Some(vec!["test.foo.bar.counter", "foo", "bar"])
        );
        assert_eq!(m("test.*.*.counter", "test.foo.bar.baz.counter"), None);
        assert_eq!(m("*", "foo"), Some(vec!["foo", "foo"]));
        assert_eq!(m("*", "foo.bar"), None);
        assert_eq!(
            m("app*prod.requests", "app42prod.requests"),
            Some(vec!["app42prod.requests", "42"])
        );
        assert_eq!(m("foo.*", "foo."), Some(vec!["foo.", ""]));
        assert_eq!(
            expand_graphite("${2}_total:$1-$9-$x", &["a.b", "a", "b"]),
            "b_total:a--$x"
        );
    }
}
