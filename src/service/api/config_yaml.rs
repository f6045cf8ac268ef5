//! `/api/v1/status/config`'s YAML: the jobs kubesd runs, as it loaded them, with every
//! secret shown as `<secret>` (as Prometheus shows its config).

use serde_json::{Map, Value};

use crate::promconfig;

/// What Prometheus shows in place of a secret.
pub const REDACTED: &str = "<secret>";

/// Fields that hold a secret, wherever they are (`password` of `basic_auth`,
/// `credentials` of `authorization`, `key` of `tls_config`, `client_secret` of
/// `oauth2`, `bearer_token`, `secrets` of `http_headers`, the values of
/// `proxy_connect_header`).
const SECRET_FIELDS: [&str; 7] = [
    "password",
    "credentials",
    "key",
    "client_secret",
    "bearer_token",
    "secrets",
    "proxy_connect_header",
];

/// The YAML of `jobs` as `scrape_configs`, secrets redacted.
pub fn config_yaml(jobs: &[&promconfig::Job]) -> Result<String, String> {
    let scrape_configs: Vec<Value> = jobs.iter().map(|job| job_value(job)).collect();
    let mut root = Map::new();
    root.insert("scrape_configs".into(), Value::Array(scrape_configs));
    serde_norway::to_string(&Value::Object(root)).map_err(|e| e.to_string())
}

/// One job's section.
fn job_value(job: &promconfig::Job) -> Value {
    let mut section = Map::new();
    let scrape = &job.scrape;
    section.insert("job_name".into(), job.name.clone().into());
    section.insert(
        "scrape_interval".into(),
        scrape.scrape_interval.as_str().into(),
    );
    section.insert(
        "scrape_timeout".into(),
        scrape.scrape_timeout.as_str().into(),
    );
    section.insert("metrics_path".into(), scrape.metrics_path.as_str().into());
    section.insert("scheme".into(), scrape.scheme.as_str().into());
    if !scrape.params.is_empty() {
        let params = scrape.params.iter().map(|(name, value)| {
            let name = name
                .strip_prefix(crate::relabel::PARAM_PREFIX)
                .unwrap_or(name);
            (name.to_string(), Value::from(vec![value.as_str()]))
        });
        section.insert("params".into(), Map::from_iter(params).into());
    }
    let sd: Vec<Value> = job
        .sd_configs
        .iter()
        .map(|sd| {
            let mut value = serde_json::to_value(sd).unwrap_or(Value::Null);
            redact(&mut value);
            value
        })
        .collect();
    section.insert("kubernetes_sd_configs".into(), sd.into());
    let rules: Vec<Value> = job.relabel.iter().map(|r| r.prometheus_json()).collect();
    section.insert("relabel_configs".into(), rules.into());
    Value::Object(section)
}

/// Replaces every secret in `value` by [`REDACTED`]: the secret fields' strings (an
/// empty one stays empty: there is nothing to hide), and the `value` of each `env`
/// entry of a credential plugin.
pub fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (name, field) in map.iter_mut() {
                if SECRET_FIELDS.contains(&name.as_str()) {
                    hide_strings(field);
                } else if name == "env" {
                    for entry in field.as_array_mut().into_iter().flatten() {
                        if let Some(v) = entry.get_mut("value") {
                            hide_strings(v);
                        }
                    }
                } else {
                    redact(field);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

/// Every non-empty string in `value` replaced by [`REDACTED`].
fn hide_strings(value: &mut Value) {
    match value {
        Value::String(s) if !s.is_empty() => *s = REDACTED.to_string(),
        Value::Array(items) => items.iter_mut().for_each(hide_strings),
        Value::Object(map) => map.values_mut().for_each(hide_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_the_rest_kept() {
        let mut value = serde_json::json!({
            "api_server": "https://k:6443",
            "basic_auth": {"username": "u", "password": "hunter2"},
            "authorization": {"type": "Bearer", "credentials": "t0k3n"},
            "tls_config": {"key": "PRIVATE", "cert": "PUBLIC"},
            "oauth2": {"client_id": "c", "client_secret": "s",
                       "proxy_connect_header": {"X": ["a", "b"]}},
            "bearer_token": "",
            "http_headers": {"X-Y": {"values": ["v"], "secrets": ["s1"]}},
            "kubeconfig": {"exec": {"env": [{"name": "N", "value": "V"}]}},
        });
        redact(&mut value);
        let text = value.to_string();
        for secret in [
            "hunter2", "t0k3n", "PRIVATE", "\"s\"", "\"a\"", "s1", "\"V\"",
        ] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        for kept in [
            "https://k:6443",
            "\"u\"",
            "Bearer",
            "PUBLIC",
            "\"c\"",
            "\"v\"",
            "\"N\"",
        ] {
            assert!(text.contains(kept), "{kept} not in {text}");
        }
        assert_eq!(value["basic_auth"]["password"], REDACTED);
        assert_eq!(value["bearer_token"], "");
    }
}
