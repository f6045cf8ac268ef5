//! The status page's target filter, applied where the targets are listed: terms
//! separated by commas, all of which must match: `name=value`, `name!=value`,
//! `name=~regex` (anchored, as Prometheus' matchers are), or plain text found in any
//! `name=value`. A target's final labels are looked at first, then its discovered ones.

use regex::Regex;

use crate::labels::Labels;

/// One term.
#[derive(Debug)]
enum Term {
    Equal(String, String),
    NotEqual(String, String),
    Matches(String, Regex),
    Text(String),
}

/// A parsed filter; empty matches every target.
#[derive(Debug, Default)]
pub struct TargetFilter {
    terms: Vec<Term>,
}

impl TargetFilter {
    /// The filter `text` writes; an error names a regex that does not compile.
    pub fn parse(text: &str) -> Result<TargetFilter, String> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            terms.push(parse_term(term)?);
        }
        Ok(TargetFilter { terms })
    }

    /// True if every term matches the target with these labels (`labels`: its final
    /// labels, none for a dropped target).
    pub fn matches(&self, discovered: &Labels, labels: Option<&Labels>) -> bool {
        let value = |name: &str| {
            labels
                .and_then(|l| l.get(name))
                .or_else(|| discovered.get(name))
                .unwrap_or("")
        };
        self.terms.iter().all(|term| match term {
            Term::Equal(name, want) => value(name) == want,
            Term::NotEqual(name, want) => value(name) != want,
            Term::Matches(name, re) => re.is_match(value(name)),
            Term::Text(text) => labels
                .into_iter()
                .chain([discovered])
                .flat_map(|l| l.iter())
                .any(|l| format!("{}={}", l.name, l.value).contains(text.as_str())),
        })
    }
}

fn parse_term(term: &str) -> Result<Term, String> {
    let split = |op: &str| {
        term.split_once(op)
            .map(|(n, v)| (n.trim().to_string(), v.to_string()))
            .filter(|(n, _)| !n.is_empty() && !n.contains(['=', '!', '~']))
    };
    if let Some((name, pattern)) = split("=~") {
        let re =
            Regex::new(&format!("^(?:{pattern})$")).map_err(|e| format!("filter {term:?}: {e}"))?;
        return Ok(Term::Matches(name, re));
    }
    if let Some((name, value)) = split("!=") {
        return Ok(Term::NotEqual(name, value));
    }
    if let Some((name, value)) = split("=") {
        return Ok(Term::Equal(name, value));
    }
    Ok(Term::Text(term.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_final_labels_first_then_discovered() {
        let discovered = Labels::from_pairs([("__meta_x", "abc"), ("job", "old")]);
        let labels = Labels::from_pairs([("job", "pods"), ("pod", "p-1")]);
        let matches = |f: &str, l: Option<&Labels>| {
            TargetFilter::parse(f)
                .expect("parses")
                .matches(&discovered, l)
        };
        assert!(matches("", None));
        assert!(matches("job=pods, pod=~p-.*", Some(&labels)));
        assert!(
            matches("job=old", None),
            "a dropped target: discovered labels"
        );
        assert!(!matches("job=old", Some(&labels)));
        assert!(matches("job!=x,__meta_x=abc", Some(&labels)));
        assert!(matches("meta_x", Some(&labels)), "text");
        assert!(!matches("pod=~p", Some(&labels)), "anchored");
        assert!(TargetFilter::parse("a=~(").is_err());
    }
}
