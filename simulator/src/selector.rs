//! `labelSelector` and `fieldSelector` query parameters: parsing the string
//! syntax the API server accepts and matching objects against it.
//!
//! Label selectors support equality (`=`, `==`), inequality (`!=`), set-based
//! `in (...)` / `notin (...)`, existence (`key`) and non-existence (`!key`),
//! joined by commas (AND). Field selectors support `=`, `==` and `!=` on the
//! fields the real server indexes; any other field is a 400, as there.

use super::json_pointer::at;
use serde_json::Value;

use super::error::ApiError;
use super::resource::Resource;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelRequirement {
    /// `key=value` / `key==value`.
    Equals(String, String),
    /// `key!=value`: the label is absent or has another value.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: absent or not one of the values.
    NotIn(String, Vec<String>),
    /// `key`: the label is present.
    Exists(String),
    /// `!key`: the label is absent.
    DoesNotExist(String),
}

/// A parsed label selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

impl LabelSelector {
    /// Parses the `labelSelector` query syntax; errors are 400s.
    pub fn parse(input: &str) -> Result<LabelSelector, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(input)? {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// Whether this selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `object`'s `metadata.labels` satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = at(object, "/metadata/labels");
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|req| match req {
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

/// Splits on commas that are not inside `( ... )`, so `a in (x,y),b` is two parts.
fn split_top_level(input: &str) -> Result<Vec<&str>, ApiError> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| bad_selector(input, "unbalanced ')'"))?;
            }
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad_selector(input, "unbalanced '('"));
    }
    parts.push(&input[start..]);
    Ok(parts)
}

fn parse_requirement(part: &str) -> Result<LabelRequirement, ApiError> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(LabelRequirement::DoesNotExist(valid_key(key.trim(), part)?));
    }
    // Order matters: "!=" and "==" must be tried before "=".
    if let Some((k, v)) = part.split_once("!=") {
        return Ok(LabelRequirement::NotEquals(
            valid_key(k.trim(), part)?,
            valid_value(v.trim(), part)?,
        ));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        return Ok(LabelRequirement::Equals(
            valid_key(k.trim(), part)?,
            valid_value(v.trim(), part)?,
        ));
    }
    if let Some(open) = part.find('(') {
        let head: Vec<&str> = part[..open].split_whitespace().collect();
        let Some(inner) = part[open + 1..].trim_end().strip_suffix(')') else {
            return Err(bad_selector(part, "expected ')' at the end of a set"));
        };
        let values = inner
            .split(',')
            .map(|v| valid_value(v.trim(), part))
            .collect::<Result<Vec<_>, _>>()?;
        return match head.as_slice() {
            [key, "in"] => Ok(LabelRequirement::In(valid_key(key, part)?, values)),
            [key, "notin"] => Ok(LabelRequirement::NotIn(valid_key(key, part)?, values)),
            _ => Err(bad_selector(
                part,
                "expected 'key in (...)' or 'key notin (...)'",
            )),
        };
    }
    Ok(LabelRequirement::Exists(valid_key(part, part)?))
}

/// Label keys: an optional DNS prefix and `/`, then a name of alphanumerics, `-`, `_`, `.`.
fn valid_key(key: &str, part: &str) -> Result<String, ApiError> {
    let ok = !key.is_empty()
        && key.len() <= 317
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if ok {
        Ok(key.to_string())
    } else {
        Err(bad_selector(part, &format!("invalid label key {key:?}")))
    }
}

/// Label values: possibly empty, alphanumerics, `-`, `_`, `.`.
fn valid_value(value: &str, part: &str) -> Result<String, ApiError> {
    let ok = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(value.to_string())
    } else {
        Err(bad_selector(
            part,
            &format!("invalid label value {value:?}"),
        ))
    }
}

fn bad_selector(selector: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("unable to parse requirement: {selector:?}: {why}"))
}

/// One `field=value` or `field!=value` term of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    /// JSON pointer to the field, e.g. `/spec/nodeName`.
    pointer: &'static str,
    value: String,
    negated: bool,
}

/// A parsed field selector; the empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `fieldSelector` for `resource`; unsupported fields are a 400
    /// (`field label not supported`), like the real API server.
    pub fn parse(input: &str, resource: Resource) -> Result<FieldSelector, ApiError> {
        let mut requirements = Vec::new();
        for part in input.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (field, value, negated) = if let Some((f, v)) = part.split_once("!=") {
                (f, v, true)
            } else if let Some((f, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            let pointer = field_pointer(field, resource).ok_or_else(|| {
                ApiError::bad_request(format!("field label not supported: {field}"))
            })?;
            requirements.push(FieldRequirement {
                pointer,
                value: value.trim().to_string(),
                negated,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether this selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `object` satisfies every term; a missing field reads as "".
    pub fn matches(&self, object: &Value) -> bool {
        self.requirements.iter().all(|req| {
            let actual = at(object, req.pointer)
                .and_then(Value::as_str)
                .unwrap_or("");
            (actual == req.value) != req.negated
        })
    }
}

/// The fields the real API server lets clients select on, per resource.
fn field_pointer(field: &str, resource: Resource) -> Option<&'static str> {
    match field {
        "metadata.name" => Some("/metadata/name"),
        "metadata.namespace" => Some("/metadata/namespace"),
        "spec.nodeName" if resource == Resource::Pods => Some("/spec/nodeName"),
        "status.phase" if resource == Resource::Pods => Some("/status/phase"),
        _ => None,
    }
}

/// A label selector and a field selector, both of which must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// The `labelSelector` part.
    pub labels: LabelSelector,
    /// The `fieldSelector` part.
    pub fields: FieldSelector,
}

impl Selector {
    /// Whether `object` matches both parts.
    pub fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    /// Whether both parts are empty (every object matches).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.fields.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels},
               "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}})
    }

    #[test]
    fn label_selector_kinds() {
        let p = pod(json!({"app": "web", "tier": "front"}));
        let m = |s: &str| LabelSelector::parse(s).map(|sel| sel.matches(&p));
        assert_eq!(m("app=web"), Ok(true));
        assert_eq!(m("app==web"), Ok(true));
        assert_eq!(m("app!=web"), Ok(false));
        assert_eq!(m("missing!=x"), Ok(true));
        assert_eq!(m("app in (db, web)"), Ok(true));
        assert_eq!(m("app notin (db,web)"), Ok(false));
        assert_eq!(m("missing notin (db)"), Ok(true));
        assert_eq!(m("tier"), Ok(true));
        assert_eq!(m("!tier"), Ok(false));
        assert_eq!(m("app=web,tier in (front),!gone"), Ok(true));
        assert_eq!(m("app=web,tier=back"), Ok(false));
        assert_eq!(m(""), Ok(true));
        assert!(m("app in (web").is_err());
        assert!(m("a b c").is_err());
    }

    #[test]
    fn field_selector_supported_and_unsupported() {
        let p = pod(json!({}));
        let sel = FieldSelector::parse("spec.nodeName=n1,status.phase!=Pending", Resource::Pods);
        assert_eq!(sel.map(|s| s.matches(&p)), Ok(true));
        let sel = FieldSelector::parse("metadata.name==q", Resource::Pods);
        assert_eq!(sel.map(|s| s.matches(&p)), Ok(false));
        let err = FieldSelector::parse("spec.bogus=1", Resource::Pods);
        assert_eq!(err.map_err(|e| e.code), Err(400));
        let err = FieldSelector::parse("spec.nodeName=n1", Resource::Services);
        assert_eq!(err.map_err(|e| e.code), Err(400));
    }
}
