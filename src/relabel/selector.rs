//! vmagent's `if:` on a relabel rule: series selectors such as
//! `{__meta_kubernetes_pod_name=~"test-.*", namespace!="qa"}` or `up{job="a" or job="b"}`,
//! one or a list; the rule applies only to label sets that one of them matches.
//!
//! The grammar is PromQL's series selector, as vmagent reads it: an optional metric
//! name (a `__name__` matcher), then braces holding matchers joined by `,` (and) and
//! `or`; a matcher is a label name, `=`, `!=`, `=~` or `!~`, and a quoted string (`"`,
//! `'` or backticks). Regexes are anchored, as in PromQL.

use regex::Regex;

/// One matcher: a label compared with a value or a regex.
#[derive(Clone, Debug)]
struct Matcher {
    name: String,
    kind: MatchKind,
}

#[derive(Clone, Debug)]
enum MatchKind {
    Equal(String),
    NotEqual(String),
    Regex(Regex),
    NotRegex(Regex),
}

impl Matcher {
    fn matches(&self, value: &str) -> bool {
        match &self.kind {
            MatchKind::Equal(v) => value == v,
            MatchKind::NotEqual(v) => value != v,
            MatchKind::Regex(re) => re.is_match(value),
            MatchKind::NotRegex(re) => !re.is_match(value),
        }
    }
}

/// The `if:` of a rule, compiled: matches when any of its alternatives (each a list of
/// matchers that must all hold) does.
#[derive(Clone, Debug)]
pub struct SeriesSelector {
    alternatives: Vec<Vec<Matcher>>,
}

impl SeriesSelector {
    /// Parses one selector or several (a list means "any of them").
    pub fn parse_all(selectors: &[String]) -> Result<SeriesSelector, String> {
        let mut alternatives = Vec::new();
        for s in selectors {
            let parsed = parse(s).map_err(|e| format!("{s:?}: {e}"))?;
            alternatives.extend(parsed);
        }
        Ok(SeriesSelector { alternatives })
    }

    /// True if the labels `get` reads (absent labels read as empty) match.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> &'a str) -> bool {
        self.alternatives
            .iter()
            .any(|all| all.iter().all(|m| m.matches(get(&m.name))))
    }
}

/// The alternatives of one selector string.
fn parse(text: &str) -> Result<Vec<Vec<Matcher>>, String> {
    let mut p = Parser {
        rest: text.trim_start(),
    };
    let name = p.identifier();
    let mut base = Vec::new();
    if !name.is_empty() {
        base.push(Matcher {
            name: "__name__".into(),
            kind: MatchKind::Equal(name.to_string()),
        });
    }
    p.skip_space();
    if p.rest.is_empty() {
        if base.is_empty() {
            return Err("empty selector".into());
        }
        return Ok(vec![base]);
    }
    p.expect('{')?;
    let mut alternatives = vec![base.clone()];
    loop {
        p.skip_space();
        if p.eat('}') {
            break;
        }
        let matcher = p.matcher()?;
        let current = alternatives
            .last_mut()
            .ok_or_else(|| "no alternative".to_string())?;
        current.push(matcher);
        p.skip_space();
        if p.eat(',') {
            continue;
        }
        if p.rest.starts_with("or") && !p.rest[2..].starts_with(is_name_char) {
            p.rest = &p.rest[2..];
            alternatives.push(base.clone());
            continue;
        }
        p.skip_space();
        p.expect('}')?;
        break;
    }
    p.skip_space();
    if !p.rest.is_empty() {
        return Err(format!("unexpected {:?} after the selector", p.rest));
    }
    Ok(alternatives)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '.'
}

struct Parser<'a> {
    rest: &'a str,
}

impl<'a> Parser<'a> {
    /// One matcher: a label name, an operator and a quoted value.
    fn matcher(&mut self) -> Result<Matcher, String> {
        let label = self.identifier();
        if label.is_empty() {
            return Err(format!("expected a label name at {:?}", self.rest));
        }
        self.skip_space();
        let op = ["=~", "!~", "!=", "="]
            .into_iter()
            .find(|op| self.rest.starts_with(op))
            .ok_or_else(|| format!("expected =, !=, =~ or !~ after {label:?}"))?;
        self.rest = &self.rest[op.len()..];
        self.skip_space();
        let value = self.string()?;
        let anchored = || {
            Regex::new(&format!("^(?:{value})$"))
                .map_err(|e| format!("regex {value:?} does not compile: {e}"))
        };
        let kind = match op {
            "=" => MatchKind::Equal(value.clone()),
            "!=" => MatchKind::NotEqual(value.clone()),
            "=~" => MatchKind::Regex(anchored()?),
            _ => MatchKind::NotRegex(anchored()?),
        };
        Ok(Matcher {
            name: label.to_string(),
            kind,
        })
    }

    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(after) => {
                self.rest = after;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, c: char) -> Result<(), String> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(format!("expected {c:?} at {:?}", self.rest))
        }
    }

    /// A metric or label name (possibly empty).
    fn identifier(&mut self) -> &'a str {
        let len = self
            .rest
            .find(|c: char| !is_name_char(c))
            .unwrap_or(self.rest.len());
        let (name, rest) = self.rest.split_at(len);
        self.rest = rest;
        name
    }

    /// A quoted string: `"..."` with Go escapes, `'...'`, or `` `...` `` (raw).
    fn string(&mut self) -> Result<String, String> {
        let quote = self
            .rest
            .chars()
            .next()
            .filter(|c| matches!(c, '"' | '\'' | '`'))
            .ok_or_else(|| format!("expected a quoted value at {:?}", self.rest))?;
        let body = &self.rest[1..];
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.rest = &body[i + 1..];
                return Ok(out);
            }
            if c == '\\' && quote != '`' {
                let (_, escaped) = chars
                    .next()
                    .ok_or_else(|| "unterminated string".to_string())?;
                out.push(match escaped {
                    'n' => '\n',
                    't' => '\t',
                    'r' => '\r',
                    other => other,
                });
                continue;
            }
            out.push(c);
        }
        Err("unterminated string".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(selector: &str, labels: &[(&str, &str)]) -> bool {
        let s = SeriesSelector::parse_all(&[selector.to_string()]).expect("parses");
        s.matches(|name| {
            labels
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, v)| v)
        })
    }

    #[test]
    fn selectors_as_vmagent_reads_them() {
        let pod = [(
            "__meta_kubernetes_pod_name",
            "test-payment-7cbd8d77b6-4l5xv",
        )];
        assert!(matches(r#"{__meta_kubernetes_pod_name=~"test-.*"}"#, &pod));
        assert!(!matches(r#"{__meta_kubernetes_pod_name=~"test"}"#, &pod));
        assert!(matches(
            r#"{__meta_kubernetes_pod_name!~"backend-.*"}"#,
            &pod
        ));
        assert!(matches(
            "up{job='a' or job=`b`}",
            &[("__name__", "up"), ("job", "b")]
        ));
        assert!(!matches("up{job='a'}", &[("job", "a")]));
        assert!(matches("up", &[("__name__", "up")]));
        assert!(matches(r#"{x="", y!="z"}"#, &[]));
        assert!(matches(r#"{a="q\"x"}"#, &[("a", "q\"x")]));
        for bad in ["", "{", "{a}", "{a=b}", r#"{a="b"} x"#, r#"{a=~"("}"#] {
            assert!(
                SeriesSelector::parse_all(&[bad.to_string()]).is_err(),
                "{bad}"
            );
        }
    }
}
