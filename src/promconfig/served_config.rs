//! A `scrape_configs` entry as the OpenTelemetry target allocator's `/scrape_configs`
//! serves it to collectors: as written, in JSON, without `kubernetes_sd_configs` (the
//! collector discovers through the allocator instead), with every inline secret
//! replaced by `<secret>` as Prometheus writes a secret out; the form with the secrets
//! only for a client authenticated by a verified TLS client certificate.

use std::sync::Arc;

use serde_json::Value as Json;
use serde_norway::Value;

/// What Prometheus writes in place of a secret.
pub const REDACTED: &str = "<secret>";

/// Keys whose string value is a secret wherever they appear: `basic_auth.password`,
/// `authorization.credentials`, `bearer_token`, `oauth2.client_secret`.
const SECRET_KEYS: [&str; 4] = ["password", "credentials", "bearer_token", "client_secret"];

/// Maps whose every value is secret (Prometheus' `proxy_connect_header` values).
const SECRET_VALUE_MAPS: [&str; 1] = ["proxy_connect_header"];

/// An entry as served; its `Debug` shows the redacted form only.
#[derive(Clone, PartialEq, Default)]
pub struct ServedConfig {
    /// Secrets replaced by [`REDACTED`].
    pub redacted: Arc<Json>,
    /// With its secrets.
    pub with_secrets: Arc<Json>,
}

impl std::fmt::Debug for ServedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ServedConfig({})", self.redacted)
    }
}

impl ServedConfig {
    /// The entry `entry` (a mapping) served: its keys but `kubernetes_sd_configs`,
    /// secrets redacted. An entry YAML cannot express in JSON (a non-string key) is
    /// served with what can.
    pub fn of(entry: &Value) -> ServedConfig {
        let mut json = serde_json::to_value(entry).unwrap_or(Json::Null);
        if let Json::Object(map) = &mut json {
            map.remove("kubernetes_sd_configs");
        }
        let with_secrets = Arc::new(json.clone());
        redact(&mut json, None);
        ServedConfig {
            redacted: Arc::new(json),
            with_secrets,
        }
    }
}

/// Replaces the secrets in `value` (the value of key `key`) by [`REDACTED`].
fn redact(value: &mut Json, key: Option<&str>) {
    match value {
        Json::Object(map) => {
            let every_value = key.is_some_and(|k| SECRET_VALUE_MAPS.contains(&k));
            let tls = key == Some("tls_config");
            for (k, v) in map.iter_mut() {
                let secret = SECRET_KEYS.contains(&k.as_str()) || (tls && k == "key");
                if (secret || every_value) && !v.is_null() {
                    *v = Json::String(REDACTED.into());
                } else {
                    redact(v, Some(k));
                }
            }
        }
        Json::Array(items) => {
            for item in items {
                redact(item, key);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_redacted_and_discovery_left_out() {
        let entry: Value = serde_norway::from_str(
            "job_name: pods
scrape_interval: 30s
basic_auth: {username: u, password: hunter2, password_file: /p}
authorization: {credentials: tok}
oauth2: {client_id: c, client_secret: s, tls_config: {key: PEM, key_file: /k}}
tls_config: {cert: C, key: K}
proxy_connect_header: {X-Auth: [v]}
kubernetes_sd_configs: [{role: pod, bearer_token: b}]
relabel_configs: [{action: keep, source_labels: [a], regex: password}]",
        )
        .expect("yaml");
        let served = ServedConfig::of(&entry);
        let text = serde_json::to_string(&*served.redacted).expect("json");
        for secret in ["hunter2", "tok", "\"s\"", "PEM", "\"K\"", "[\"v\"]"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(!format!("{served:?}").contains("hunter2"));
        assert_eq!(served.with_secrets["basic_auth"]["password"], "hunter2");
        assert!(served.with_secrets.get("kubernetes_sd_configs").is_none());
        let j = &*served.redacted;
        assert_eq!(j["basic_auth"]["password"], REDACTED);
        assert_eq!(j["basic_auth"]["password_file"], "/p");
        assert_eq!(j["oauth2"]["tls_config"]["key_file"], "/k");
        assert_eq!(j["tls_config"]["cert"], "C");
        assert_eq!(j["relabel_configs"][0]["regex"], "password");
        assert!(j.get("kubernetes_sd_configs").is_none());
        assert_eq!(j["scrape_interval"], "30s");
    }
}
