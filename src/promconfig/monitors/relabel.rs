//! The relabelling rules prometheus-operator generates around a monitor's own: the job
//! name kept in `__tmp_prometheus_job_name`, selectors as keep and drop rules, the
//! finished-pod filter, the monitor's rules in Prometheus' keys, and sharding.

use kubesd_core::monitors::{LabelSelector, RelabelConfig};
use serde_norway::Value;

use super::yaml::{Map, strings};

/// The label the sharding rules hash into.
const HASH_LABEL: &str = "__tmp_hash";
/// A label that, set by a monitor's rules, keeps its target on every shard.
const DISABLE_SHARDING_LABEL: &str = "__tmp_disable_sharding";

/// `name` with every character but ASCII letters, digits and `_` replaced by `_`, as
/// the label names built from Kubernetes label keys are.
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A rule from `(key, value)` pairs written in order.
pub fn rule(entries: &[(&str, Value)]) -> Value {
    let mut map = Map::new();
    for (key, value) in entries {
        map.put(key, value.clone());
    }
    map.into()
}

/// The first rule of every job: the job's name into `__tmp_prometheus_job_name`.
pub fn job_name_rule() -> Value {
    rule(&[
        ("source_labels", strings(&["job"])),
        ("target_label", "__tmp_prometheus_job_name".into()),
    ])
}

/// Drops the targets of pods that have finished.
pub fn running_filter() -> Value {
    rule(&[
        ("action", "drop".into()),
        ("source_labels", strings(&["__meta_kubernetes_pod_phase"])),
        ("regex", "(Failed|Succeeded)".into()),
    ])
}

/// A label selector as keep and drop rules on the labels of `object` (`service`, `pod`
/// or `ingress`): `matchLabels` sorted by key, then `matchExpressions` in order.
pub fn selector_rules(selector: &LabelSelector, object: &str) -> Vec<Value> {
    let label = |key: &str| format!("__meta_kubernetes_{object}_label_{}", sanitize(key));
    let present = |key: &str| format!("__meta_kubernetes_{object}_labelpresent_{}", sanitize(key));
    let mut rules = Vec::new();
    for (key, value) in &selector.match_labels {
        rules.push(rule(&[
            ("action", "keep".into()),
            ("source_labels", strings(&[label(key), present(key)])),
            ("regex", format!("({value});true").into()),
        ]));
    }
    for e in &selector.match_expressions {
        let values = format!("({});true", e.values.join("|"));
        let (action, sources, regex) = match e.operator.as_str() {
            "In" => ("keep", vec![label(&e.key), present(&e.key)], values),
            "NotIn" => ("drop", vec![label(&e.key), present(&e.key)], values),
            "Exists" => ("keep", vec![present(&e.key)], "true".into()),
            "DoesNotExist" => ("drop", vec![present(&e.key)], "true".into()),
            _ => continue,
        };
        rules.push(rule(&[
            ("action", action.into()),
            ("source_labels", strings(&sources)),
            ("regex", regex.into()),
        ]));
    }
    rules
}

/// A monitor's rules in Prometheus' keys, each key only when set, the action in lower
/// case (`generateRelabelConfig`).
pub fn monitor_rules(rules: &[RelabelConfig]) -> Vec<Value> {
    rules
        .iter()
        .map(|r| {
            let mut map = Map::new();
            if !r.source_labels.is_empty() {
                map.put("source_labels", strings(&r.source_labels));
            }
            map.put_some("separator", r.separator.clone());
            if !r.target_label.is_empty() {
                map.put("target_label", r.target_label.as_str());
            }
            if !r.regex.is_empty() {
                map.put("regex", r.regex.as_str());
            }
            if r.modulus != 0 {
                map.put("modulus", r.modulus);
            }
            map.put_some("replacement", r.replacement.clone());
            if !r.action.is_empty() {
                map.put("action", r.action.to_lowercase());
            }
            map.into()
        })
        .collect()
}

/// The sharding rules: `label` (or `__tmp_hash` if a rule set it) hashed modulo
/// `shards`, keeping the shard `$(SHARD)` (which prometheus-operator's config reloader
/// expands) or a target with `__tmp_disable_sharding` set.
pub fn sharding_rules(shards: u32, label: &str) -> Vec<Value> {
    vec![
        rule(&[
            ("source_labels", strings(&[label, HASH_LABEL])),
            ("target_label", HASH_LABEL.into()),
            ("regex", "(.+);".into()),
            ("replacement", "$1".into()),
            ("action", "replace".into()),
        ]),
        rule(&[
            ("source_labels", strings(&[HASH_LABEL])),
            ("target_label", HASH_LABEL.into()),
            ("modulus", shards.into()),
            ("action", "hashmod".into()),
        ]),
        rule(&[
            (
                "source_labels",
                strings(&[HASH_LABEL, DISABLE_SHARDING_LABEL]),
            ),
            ("regex", "$(SHARD);|.+;.+".into()),
            ("action", "keep".into()),
        ]),
    ]
}

/// The sharding rules on `__address__` unless a rule already hashes (a ScrapeConfig's
/// own `hashmod` shards it as its author meant).
pub fn sharding_rules_if_missing(rules: &[Value], shards: u32) -> Vec<Value> {
    let hashes = rules
        .iter()
        .any(|r| r.get("action").and_then(Value::as_str) == Some("hashmod"));
    if hashes {
        Vec::new()
    } else {
        sharding_rules(shards, "__address__")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_become_label_names() {
        assert_eq!(sanitize("app.kubernetes.io/name"), "app_kubernetes_io_name");
        assert_eq!(sanitize("é-x"), "__x");
    }
}
