//! A `scrape_configs` entry as Prometheus' config loader fills it in and its YAML
//! encoder writes it back (`config.ScrapeConfig`): what Prometheus'
//! `/api/v1/status/config` shows and what the OpenTelemetry target allocator's
//! `/scrape_configs` serves. Every setting Prometheus defaults is written, from the
//! job's own value, the `global` section's or Prometheus' default, in Prometheus'
//! order; values are written as Prometheus writes them (`90s` as `1m30s`, `10MB` as
//! `10MiB`, relative file names joined with the config's directory, secrets
//! redacted or not).
//!
//! kubesd knows the keys of Prometheus 3's scrape config. `static_configs` and other
//! discovery mechanisms' configs are written as they are (secrets redacted by name);
//! vmagent's own keys, which Prometheus does not have, are left out.

mod http_client;
mod kubernetes_sd;
pub mod values;

use std::path::Path;

use serde_norway::{Mapping, Value};

use self::http_client::http_client;
use self::kubernetes_sd::kubernetes_sd;
use self::values::{
    Out, Secrets, boolean, field, format_bytes, join_dir, parse_bytes, string, strings, unsigned,
};
use super::duration::{format_duration, parse_duration};
use super::global::GlobalScrape;
use crate::relabel::RelabelConfig;

/// Prometheus' `scrape_protocols` when neither the job nor `global` sets them.
const DEFAULT_SCRAPE_PROTOCOLS: [&str; 4] = [
    "OpenMetricsText1.0.0",
    "OpenMetricsText0.0.1",
    "PrometheusText1.0.0",
    "PrometheusText0.0.4",
];

/// The limits a job takes from `global` when it sets none.
const GLOBAL_LIMITS: [&str; 5] = [
    "sample_limit",
    "target_limit",
    "label_limit",
    "label_name_length_limit",
    "label_value_length_limit",
];

/// The job `entry` filled in and written as Prometheus writes it, its relative file
/// names taken from `dir`.
pub fn filled_job(entry: &Mapping, global: &GlobalScrape, dir: &Path, secrets: Secrets) -> Value {
    let mut out = Out::default();
    out.set("job_name", string(entry, "job_name"));
    out.set_nonempty("honor_labels", boolean(entry, "honor_labels", false).into());
    out.set("honor_timestamps", boolean(entry, "honor_timestamps", true));
    out.set(
        "track_timestamps_staleness",
        boolean(entry, "track_timestamps_staleness", false),
    );
    if let Some(Value::Mapping(params)) = field(entry, "params") {
        let params = params.iter().map(|(k, _)| {
            let name = k.as_str().unwrap_or_default();
            (k.clone(), values::sequence(strings(params, name)))
        });
        out.set_nonempty("params", Value::Mapping(params.collect()));
    }
    scrape_timing(&mut out, entry, global, dir);
    out.set_nonempty(
        "metrics_path",
        default_text(entry, "metrics_path", "/metrics"),
    );
    out.set_nonempty("scheme", default_text(entry, "scheme", "http"));
    out.set(
        "enable_compression",
        boolean(entry, "enable_compression", true),
    );
    limits(&mut out, entry, global);
    metric_names(&mut out, entry, global);
    http_client(&mut out, entry, dir, secrets);
    for key in ["relabel_configs", "metric_relabel_configs"] {
        out.set_nonempty(key, rules(entry, key));
    }
    discovery(&mut out, entry, dir, secrets);
    out.done()
}

/// A text setting with a default; null when set to empty (Prometheus leaves an empty
/// one out).
fn default_text(entry: &Mapping, key: &str, default: &str) -> Value {
    match entry.get(key) {
        None | Some(Value::Null) => default.into(),
        Some(_) => Some(string(entry, key))
            .filter(|s| !s.is_empty())
            .map_or(Value::Null, Value::from),
    }
}

/// The job's value of `key`, or `global`'s.
fn job_or_global<'v>(entry: &'v Mapping, global: &'v GlobalScrape, key: &str) -> Option<&'v Value> {
    field(entry, key).or_else(|| field(&global.written, key))
}

/// Interval, timeout, protocols, histogram settings and the failure log.
fn scrape_timing(out: &mut Out, entry: &Mapping, global: &GlobalScrape, dir: &Path) {
    let written = |key| parse_duration(&string(entry, key)).ok();
    let interval = written("scrape_interval").unwrap_or(global.scrape_interval);
    let timeout = written("scrape_timeout").unwrap_or(global.scrape_timeout.min(interval));
    out.set("scrape_interval", format_duration(interval));
    out.set("scrape_timeout", format_duration(timeout));
    let native = job_or_global(entry, global, "scrape_native_histograms")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let protocols = match job_or_global(entry, global, "scrape_protocols") {
        Some(Value::Sequence(items)) => Value::Sequence(items.clone()),
        _ => {
            let proto = native.then_some("PrometheusProto");
            let all = proto.into_iter().chain(DEFAULT_SCRAPE_PROTOCOLS);
            Value::Sequence(all.map(Value::from).collect())
        }
    };
    out.set("scrape_protocols", protocols);
    out.set_nonempty(
        "fallback_scrape_protocol",
        string(entry, "fallback_scrape_protocol").into(),
    );
    out.set("scrape_native_histograms", native);
    for key in [
        "always_scrape_classic_histograms",
        "convert_classic_histograms_to_nhcb",
    ] {
        let on = job_or_global(entry, global, key).and_then(Value::as_bool);
        out.set(key, on.unwrap_or(false));
    }
    let log = match field(entry, "scrape_failure_log_file") {
        Some(_) => string(entry, "scrape_failure_log_file"),
        None => string(&global.written, "scrape_failure_log_file"),
    };
    out.set_nonempty("scrape_failure_log_file", join_dir(dir, &log).into());
}

/// The body size and label limits (the job's, else `global`'s) and the job's own
/// histogram limits and `keep_dropped_targets`.
fn limits(out: &mut Out, entry: &Mapping, global: &GlobalScrape) {
    let size = |map: &Mapping| parse_bytes(&string(map, "body_size_limit")).unwrap_or(0);
    let body = Some(size(entry))
        .filter(|b| *b != 0)
        .unwrap_or_else(|| size(&global.written));
    if body != 0 {
        out.set("body_size_limit", format_bytes(body));
    }
    for key in GLOBAL_LIMITS {
        let limit = Some(unsigned(entry, key))
            .filter(|l| *l != 0)
            .unwrap_or_else(|| unsigned(&global.written, key));
        out.set_nonempty(key, limit.into());
    }
    out.set_nonempty(
        "native_histogram_bucket_limit",
        unsigned(entry, "native_histogram_bucket_limit").into(),
    );
    let factor = field(entry, "native_histogram_min_bucket_factor").and_then(Value::as_f64);
    out.set_nonempty(
        "native_histogram_min_bucket_factor",
        factor.unwrap_or(0.0).into(),
    );
    out.set_nonempty(
        "keep_dropped_targets",
        keep_dropped_targets(entry, global).into(),
    );
}

/// `metric_name_validation_scheme`, `metric_name_escaping_scheme` (from the validation
/// scheme when unset, as Prometheus derives it) and `extra_scrape_metrics`.
fn metric_names(out: &mut Out, entry: &Mapping, global: &GlobalScrape) {
    let global_validation = Some(string(&global.written, "metric_name_validation_scheme"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "utf8".into());
    let escaping_for = |validation: &str| match validation {
        "legacy" => "underscores",
        _ => "allow-utf-8",
    };
    let global_escaping = Some(string(&global.written, "metric_name_escaping_scheme"))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| escaping_for(&global_validation).into());
    let own_validation = string(entry, "metric_name_validation_scheme");
    let escaping = match (
        string(entry, "metric_name_escaping_scheme"),
        own_validation.as_str(),
    ) {
        (set, _) if !set.is_empty() => set,
        (_, "") => global_escaping,
        (_, validation) => escaping_for(validation).into(),
    };
    let validation = Some(own_validation)
        .filter(|s| !s.is_empty())
        .unwrap_or(global_validation);
    out.set("metric_name_validation_scheme", validation);
    out.set("metric_name_escaping_scheme", escaping);
    let extra = job_or_global(entry, global, "extra_scrape_metrics").and_then(Value::as_bool);
    out.set("extra_scrape_metrics", extra.unwrap_or(false));
}

/// `relabel_configs` or `metric_relabel_configs`, each rule as Prometheus writes it; a
/// rule that is not one is written as it is.
fn rules(entry: &Mapping, key: &str) -> Value {
    let items = field(entry, key).and_then(Value::as_sequence);
    let written = items.into_iter().flatten().map(|rule| {
        match serde_norway::from_value::<RelabelConfig>(rule.clone()) {
            Ok(config) => {
                let fields = config.prometheus_fields().into_iter().map(|(name, value)| {
                    // An empty regex is written as null (its `MarshalYAML`).
                    let value = match (name, value) {
                        ("regex", serde_json::Value::String(s)) if s.is_empty() => Value::Null,
                        (_, value) => serde_norway::to_value(value).unwrap_or(Value::Null),
                    };
                    (Value::from(name), value)
                });
                Value::Mapping(fields.collect())
            }
            Err(_) => rule.clone(),
        }
    });
    Value::Sequence(written.collect())
}

/// `kubernetes_sd_configs`, filled in; `static_configs` and other discovery
/// mechanisms' configs as written.
fn discovery(out: &mut Out, entry: &Mapping, dir: &Path, secrets: Secrets) {
    let configs = field(entry, "kubernetes_sd_configs").and_then(Value::as_sequence);
    let filled: Vec<Value> = (configs.into_iter().flatten())
        .filter_map(Value::as_mapping)
        .map(|sd| kubernetes_sd(sd, dir, secrets))
        .collect();
    out.set_nonempty("kubernetes_sd_configs", Value::Sequence(filled));
    for (key, value) in entry {
        let Some(name) = key.as_str() else {
            continue;
        };
        let other_discovery = name.ends_with("_sd_configs") && name != "kubernetes_sd_configs";
        if name == "static_configs" || other_discovery {
            let mut value = value.clone();
            if secrets == Secrets::Redacted {
                redact_by_name(&mut value);
            }
            out.set_nonempty(name, value);
        }
    }
}

/// Keys whose values are secrets wherever they are, in configs written as they are.
const SECRET_KEYS: [&str; 7] = [
    "password",
    "credentials",
    "bearer_token",
    "client_secret",
    "client_certificate_key",
    "secrets",
    "token",
];

/// Every secret `value` holds by its key's name replaced by Prometheus' `<secret>`
/// (and a TLS `key`).
fn redact_by_name(value: &mut Value) {
    match value {
        Value::Mapping(map) => {
            for (key, field) in map.iter_mut() {
                let name = key.as_str().unwrap_or_default();
                let tls_key = name == "key" && field.is_string();
                if SECRET_KEYS.contains(&name) || tls_key || name == "proxy_connect_header" {
                    hide_strings(field);
                } else {
                    redact_by_name(field);
                }
            }
        }
        Value::Sequence(items) => items.iter_mut().for_each(redact_by_name),
        _ => {}
    }
}

/// Every non-empty string in `value` replaced by `<secret>`.
fn hide_strings(value: &mut Value) {
    match value {
        Value::String(s) if !s.is_empty() => *s = values::REDACTED.to_string(),
        Value::Sequence(items) => items.iter_mut().for_each(hide_strings),
        Value::Mapping(map) => map.iter_mut().for_each(|(_, v)| hide_strings(v)),
        _ => {}
    }
}

/// The job's `keep_dropped_targets` as Prometheus takes it: its own, else `global`'s;
/// 0 keeps every dropped target.
pub fn keep_dropped_targets(entry: &Mapping, global: &GlobalScrape) -> u64 {
    Some(unsigned(entry, "keep_dropped_targets"))
        .filter(|k| *k != 0)
        .unwrap_or(global.keep_dropped_targets)
}
