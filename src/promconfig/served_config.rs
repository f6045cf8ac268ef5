//! A `scrape_configs` entry as Prometheus fills it in and writes it back
//! ([`super::filled`]): what `/api/v1/status/config` shows, secrets redacted, and what
//! the OpenTelemetry target allocator's `/scrape_configs` serves to collectors
//! (redacted, or with its secrets for a client authenticated by a verified TLS client
//! certificate).

use std::path::Path;
use std::sync::Arc;

use serde_norway::{Mapping, Value};

use super::filled::filled_job;
use super::filled::values::Secrets;
use super::global::GlobalScrape;

pub use super::filled::values::REDACTED;

/// An entry as Prometheus writes it back; its `Debug` shows the redacted form only.
#[derive(Clone, PartialEq, Default)]
pub struct ServedConfig {
    /// Secrets replaced by [`REDACTED`].
    pub redacted: Arc<Value>,
    /// With its secrets.
    pub with_secrets: Arc<Value>,
}

impl std::fmt::Debug for ServedConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_norway::to_string(&*self.redacted).unwrap_or_default();
        write!(f, "ServedConfig({text})")
    }
}

impl ServedConfig {
    /// The entry `entry` (a mapping) filled in with `global`'s defaults, its relative
    /// file names taken from `dir`.
    pub fn filled(entry: &Value, global: &GlobalScrape, dir: &Path) -> ServedConfig {
        let empty = Mapping::new();
        let map = entry.as_mapping().unwrap_or(&empty);
        ServedConfig {
            redacted: Arc::new(filled_job(map, global, dir, Secrets::Redacted)),
            with_secrets: Arc::new(filled_job(map, global, dir, Secrets::Shown)),
        }
    }

    /// The entry `entry` filled in with Prometheus' global defaults, file names as
    /// written.
    pub fn of(entry: &Value) -> ServedConfig {
        ServedConfig::filled(entry, &GlobalScrape::default(), Path::new(""))
    }

    /// The form the target allocator serves, as JSON (its server turns Prometheus'
    /// YAML into JSON): with secrets or not, and without `regex` in `keepequal` and
    /// `dropequal` rules, which the allocator removes because collectors refuse it.
    pub fn allocator_json(&self, secrets: bool) -> serde_json::Value {
        let form = if secrets {
            &self.with_secrets
        } else {
            &self.redacted
        };
        let mut json = serde_json::to_value(&**form).unwrap_or(serde_json::Value::Null);
        for key in ["relabel_configs", "metric_relabel_configs"] {
            let rules = json.get_mut(key).and_then(|r| r.as_array_mut());
            for rule in rules.into_iter().flatten() {
                let action = rule.get("action").and_then(|a| a.as_str());
                if matches!(action, Some("keepequal" | "dropequal"))
                    && let Some(rule) = rule.as_object_mut()
                {
                    rule.remove("regex");
                }
            }
        }
        json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(text: &str) -> ServedConfig {
        let entry: Value = serde_norway::from_str(text).expect("yaml");
        ServedConfig::filled(&entry, &GlobalScrape::default(), Path::new("/etc/p"))
    }

    #[test]
    fn secrets_are_redacted_and_defaults_filled_in() {
        let served = filled(
            "job_name: pods
scrape_interval: 90s
basic_auth: {username: u, password: hunter2, password_file: p}
oauth2: {client_id: c, client_secret: s, token_url: 'http://t', tls_config: {key: PEM, key_file: /k}}
tls_config: {cert: C, key: K}
proxy_connect_header: {X-Auth: [v]}
kubernetes_sd_configs: [{role: pod, bearer_token: b}]
relabel_configs: [{action: keepequal, source_labels: [a], target_label: c, regex: '(.*)'}]",
        );
        let text = serde_norway::to_string(&*served.redacted).expect("yaml");
        for secret in ["hunter2", ": s\n", "PEM", ": K\n", "- v\n", ": b\n"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(!format!("{served:?}").contains("hunter2"));
        let j = served.allocator_json(false);
        assert_eq!(j["basic_auth"]["password"], REDACTED);
        assert_eq!(j["basic_auth"]["password_file"], "/etc/p/p");
        assert_eq!(j["oauth2"]["tls_config"]["key_file"], "/k");
        assert_eq!(j["tls_config"]["cert"], "C");
        assert_eq!(j["scrape_interval"], "1m30s");
        assert_eq!(j["scrape_timeout"], "10s");
        assert_eq!(j["metrics_path"], "/metrics");
        assert_eq!(
            j["kubernetes_sd_configs"][0]["authorization"]["type"],
            "Bearer"
        );
        assert_eq!(j["kubernetes_sd_configs"][0]["kubeconfig_file"], "");
        assert!(j["relabel_configs"][0].get("regex").is_none());
        let shown = served.allocator_json(true);
        assert_eq!(shown["basic_auth"]["password"], "hunter2");
        assert_eq!(
            shown["kubernetes_sd_configs"][0]["authorization"]["credentials"],
            "b"
        );
    }
}
