//! Label selectors as Kubernetes reads them (`metav1.LabelSelectorAsSelector`): checked,
//! matched against labels, and written in the API's query form, which
//! `selectorMechanism: RoleSelector` sends to the API server.

use std::collections::BTreeMap;

use super::refs::{LabelSelector, LabelSelectorRequirement};

/// Why a label selector is invalid, in the API's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// An operator other than `In`, `NotIn`, `Exists` and `DoesNotExist`.
    #[error("{0:?} is not a valid label selector operator")]
    Operator(String),
    /// A key that is not a qualified name.
    #[error("key: Invalid value: {key:?}: {why}")]
    Key {
        /// The key.
        key: String,
        /// What is wrong with it.
        why: String,
    },
    /// A value that is not a label value.
    #[error("values[{key}]: Invalid value: {value:?}: {why}")]
    Value {
        /// The key it is compared with.
        key: String,
        /// The value.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// `In` and `NotIn` without values, `Exists` and `DoesNotExist` with some.
    #[error("values: Invalid value: {key:?}: {why}")]
    Values {
        /// The key.
        key: String,
        /// What is wrong.
        why: &'static str,
    },
}

/// One requirement, after checking.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k,
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }

    /// As `labels.Requirement.String()`: values of `in` and `notin` sorted.
    fn query(&self) -> String {
        let set = |vs: &[String]| {
            let mut vs = vs.to_vec();
            vs.sort();
            vs.join(",")
        };
        match self {
            Requirement::Equals(k, v) => format!("{k}={v}"),
            Requirement::In(k, vs) => format!("{k} in ({})", set(vs)),
            Requirement::NotIn(k, vs) => format!("{k} notin ({})", set(vs)),
            Requirement::Exists(k) => k.clone(),
            Requirement::DoesNotExist(k) => format!("!{k}"),
        }
    }
}

impl LabelSelector {
    /// The requirements, checked, ordered by key as Kubernetes orders them.
    fn requirements(&self) -> Result<Vec<Requirement>, SelectorError> {
        let mut out = Vec::with_capacity(self.match_labels.len() + self.match_expressions.len());
        for (key, value) in &self.match_labels {
            check_key(key)?;
            check_value(key, value)?;
            out.push(Requirement::Equals(key.clone(), value.clone()));
        }
        for expression in &self.match_expressions {
            out.push(requirement(expression)?);
        }
        out.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(out)
    }

    /// Checks the selector as the API server would.
    pub fn check(&self) -> Result<(), SelectorError> {
        self.requirements().map(drop)
    }

    /// Whether `labels` satisfy every requirement (an empty selector matches all).
    /// An invalid selector matches nothing.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements()
            .is_ok_and(|reqs| reqs.iter().all(|r| r.matches(labels)))
    }

    /// The selector in the API's query form (`app=web,tier in (a,b),!canary`), as
    /// `labels.Selector.String()` writes it; empty for an empty selector.
    pub fn to_query(&self) -> Result<String, SelectorError> {
        let reqs = self.requirements()?;
        Ok(reqs
            .iter()
            .map(Requirement::query)
            .collect::<Vec<_>>()
            .join(","))
    }
}

fn requirement(e: &LabelSelectorRequirement) -> Result<Requirement, SelectorError> {
    let key = e.key.clone();
    let values = e.values.clone();
    let req = match e.operator.as_str() {
        "In" => Requirement::In(key, values),
        "NotIn" => Requirement::NotIn(key, values),
        "Exists" => Requirement::Exists(key),
        "DoesNotExist" => Requirement::DoesNotExist(key),
        other => return Err(SelectorError::Operator(other.to_string())),
    };
    check_key(&e.key)?;
    let why = match (&req, e.values.is_empty()) {
        (Requirement::In(..) | Requirement::NotIn(..), true) => {
            Some("for 'in', 'notin' operators, values set can't be empty")
        }
        (Requirement::Exists(_) | Requirement::DoesNotExist(_), false) => {
            Some("values set must be empty for exists and does not exist")
        }
        _ => None,
    };
    if let Some(why) = why {
        return Err(SelectorError::Values {
            key: e.key.clone(),
            why,
        });
    }
    for value in &e.values {
        check_value(&e.key, value)?;
    }
    Ok(req)
}

/// A label key: a name, optionally prefixed by a DNS subdomain and `/`.
fn check_key(key: &str) -> Result<(), SelectorError> {
    let bad = |why: String| SelectorError::Key {
        key: key.to_string(),
        why,
    };
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            return Err(bad("prefix part must be non-empty".into()));
        }
        if !is_dns_subdomain(prefix) {
            return Err(bad(format!(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case \
                 alphanumeric characters, '-' or '.', and must start and end with an \
                 alphanumeric character (got {prefix:?})"
            )));
        }
    }
    if name.is_empty() {
        return Err(bad("name part must be non-empty".into()));
    }
    name_rule(name).map_err(|why| bad(format!("name part {why}")))
}

/// A label value: empty, or a name.
fn check_value(key: &str, value: &str) -> Result<(), SelectorError> {
    if value.is_empty() {
        return Ok(());
    }
    name_rule(value).map_err(|why| SelectorError::Value {
        key: key.to_string(),
        value: value.to_string(),
        why: format!("a valid label {why}"),
    })
}

/// At most 63 characters, alphanumeric at both ends, `-`, `_` or `.` between.
fn name_rule(text: &str) -> Result<(), String> {
    if text.len() > 63 {
        return Err("must be no more than 63 characters".into());
    }
    let alnum = |c: char| c.is_ascii_alphanumeric();
    let ends = text.starts_with(alnum) && text.ends_with(alnum);
    let middle = text
        .chars()
        .all(|c| alnum(c) || c == '-' || c == '_' || c == '.');
    if ends && middle {
        Ok(())
    } else {
        Err(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start \
             and end with an alphanumeric character"
                .into(),
        )
    }
}

/// A lowercase RFC 1123 subdomain of at most 253 characters.
fn is_dns_subdomain(text: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    text.len() <= 253
        && text.starts_with(alnum)
        && text.ends_with(alnum)
        && text.chars().all(|c| alnum(c) || c == '-' || c == '.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector(yaml: &str) -> LabelSelector {
        serde_norway::from_str(yaml).expect("selector")
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_query_form_is_sorted_by_key_with_sorted_sets() {
        let s = selector(
            "{matchLabels: {team: a, app: web}, matchExpressions: [
              {key: tier, operator: NotIn, values: [z, b]},
              {key: canary, operator: DoesNotExist},
              {key: example.com/zone, operator: Exists}]}",
        );
        assert_eq!(
            s.to_query().as_deref(),
            Ok("app=web,!canary,example.com/zone,team=a,tier notin (b,z)")
        );
        assert_eq!(selector("{}").to_query().as_deref(), Ok(""));
    }

    #[test]
    fn matching_follows_each_operator() {
        let s = selector(
            "{matchLabels: {app: web}, matchExpressions: [
              {key: tier, operator: In, values: [front, back]},
              {key: canary, operator: DoesNotExist}]}",
        );
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "back"), ("canary", "")])));
        let not_in = selector("{matchExpressions: [{key: t, operator: NotIn, values: [x]}]}");
        assert!(
            not_in.matches(&labels(&[])),
            "NotIn matches a missing label"
        );
        assert!(selector("{}").matches(&labels(&[("any", "thing")])));
    }

    #[test]
    fn invalid_selectors_are_named_as_the_api_server_names_them() {
        for (yaml, message) in [
            (
                "{matchExpressions: [{key: a, operator: Equals, values: [b]}]}",
                "\"Equals\" is not a valid label selector operator",
            ),
            (
                "{matchExpressions: [{key: a, operator: In}]}",
                "values set can't be empty",
            ),
            (
                "{matchExpressions: [{key: a, operator: Exists, values: [b]}]}",
                "values set must be empty",
            ),
            ("{matchLabels: {'-a': b}}", "name part must consist"),
            ("{matchLabels: {a: 'b c'}}", "a valid label must consist"),
            ("{matchLabels: {'Ex.com/a': b}}", "prefix part"),
        ] {
            let error = selector(yaml).check().expect_err(yaml).to_string();
            assert!(error.contains(message), "{yaml}: {error}");
            assert!(!selector(yaml).matches(&labels(&[("a", "b")])), "{yaml}");
        }
    }
}
