//! One `scrape_configs` entry: its name, its `kubernetes_sd_configs`, its
//! `relabel_configs`, and warnings for the keys kubesd ignores.

use std::path::Path;

use serde_norway::{Mapping, Value};

use super::keys::IGNORED_JOB_KEYS;
use super::paths::resolve_relative_paths;
use crate::config::SdConfig;
use crate::relabel::{CompiledRule, RelabelConfig, compile_all};

/// A scrape job kubesd discovers targets for.
#[derive(Clone, Debug)]
pub struct Job {
    /// `job_name`, unique in the file.
    pub name: String,
    /// Its `kubernetes_sd_configs`, validated, with relative file names resolved and any
    /// `kubeconfig_file` read into `api_server` and client settings.
    pub sd_configs: Vec<SdConfig>,
    /// Its `relabel_configs`, as written.
    pub relabel: Vec<RelabelConfig>,
    /// The same rules, checked and compiled, ready for [`crate::relabel::process`].
    pub rules: Vec<CompiledRule>,
}

/// What one `scrape_configs` entry turned out to be.
pub enum Parsed {
    /// A job with Kubernetes discovery.
    Job(Job),
    /// A job without `kubernetes_sd_configs`, ignored; its name is still taken.
    Ignored(String),
}

/// A problem in one entry: the key (empty for the entry itself) and what is wrong.
pub struct JobError {
    /// The job's name, if it got that far.
    pub name: Option<String>,
    /// The key at fault, e.g. `kubernetes_sd_configs[0].tls_config`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

/// Reads one `scrape_configs` entry. `dir` is the config file's directory, for relative
/// file names; `warn` collects one message per ignored key (without the job prefix,
/// which the caller adds).
pub fn parse_job(entry: &Value, dir: &Path, warn: &mut Vec<String>) -> Result<Parsed, JobError> {
    let fail = |name: Option<&str>, key: &str, problem: String| JobError {
        name: name.map(str::to_string),
        key: key.to_string(),
        problem,
    };
    let Value::Mapping(map) = entry else {
        return Err(fail(None, "", "expected a mapping".into()));
    };
    let name = match map.get("job_name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) | Some(Value::Null) | None => {
            return Err(fail(None, "job_name", "missing or empty".into()));
        }
        Some(_) => return Err(fail(None, "job_name", "expected a string".into())),
    };
    let fail = |key: &str, problem: String| fail(Some(&name), key, problem);

    let mut sd_values: &[Value] = &[];
    let mut relabel_values: &[Value] = &[];
    for (key, value) in map {
        let Value::String(key) = key else {
            return Err(fail("", format!("key {key:?} is not a string")));
        };
        match key.as_str() {
            "job_name" => {}
            "kubernetes_sd_configs" => sd_values = list(value).map_err(|p| fail(key, p))?,
            "relabel_configs" => relabel_values = list(value).map_err(|p| fail(key, p))?,
            k if IGNORED_JOB_KEYS.contains(&k) => {
                warn.push(format!("ignoring {k:?}: {}", why_ignored(k)));
            }
            other => return Err(fail(other, format!("unknown key {other:?}"))),
        }
    }

    // Rules are checked even for a job that is ignored: a config kubesd accepts should
    // be one Prometheus accepts.
    let mut relabel = Vec::with_capacity(relabel_values.len());
    for (i, value) in relabel_values.iter().enumerate() {
        let rule: RelabelConfig = serde_norway::from_value(value.clone())
            .map_err(|e| fail(&format!("relabel_configs[{i}]"), e.to_string()))?;
        relabel.push(rule);
    }
    let rules = compile_all(&relabel).map_err(|e| {
        fail(
            &format!("relabel_configs[{}].{}", e.index, e.field),
            e.problem,
        )
    })?;

    let mut sd_configs = Vec::with_capacity(sd_values.len());
    for (i, value) in sd_values.iter().enumerate() {
        let at = format!("kubernetes_sd_configs[{i}]");
        let config = sd_config(value, dir).map_err(|(key, problem)| {
            let key = if key.is_empty() {
                at.clone()
            } else {
                format!("{at}.{key}")
            };
            fail(&key, problem)
        })?;
        sd_configs.push(config);
    }
    if sd_configs.is_empty() {
        return Ok(Parsed::Ignored(name));
    }
    Ok(Parsed::Job(Job {
        name,
        sd_configs,
        relabel,
        rules,
    }))
}

/// The items of a list value; null is an empty list, as in Prometheus.
fn list(value: &Value) -> Result<&[Value], String> {
    match value {
        Value::Sequence(items) => Ok(items),
        Value::Null => Ok(&[]),
        _ => Err("expected a list".into()),
    }
}

/// One `kubernetes_sd_configs` entry, checked and ready to run; on error, the key at
/// fault (empty if none in particular) and the problem.
fn sd_config(value: &Value, dir: &Path) -> Result<SdConfig, (String, String)> {
    let mut config: SdConfig = serde_norway::from_value(value.clone())
        .map_err(|e| (culprit(value).unwrap_or_default(), e.to_string()))?;
    // Unknown keys end up in `unknown`; name the first the way the loader names keys.
    if let Some(key) = config.unknown.keys().next() {
        return Err((String::new(), format!("unknown key {key:?}")));
    }
    resolve_relative_paths(&mut config, dir);
    let check = |config: &SdConfig| {
        config
            .validate()
            .map_err(|e| (String::new(), e.to_string()))
    };
    check(&config)?;
    if config.kubeconfig_file.is_some() {
        config
            .resolve_kubeconfig()
            .map_err(|e| (String::new(), e.to_string()))?;
        // What the kubeconfig set must pass the same checks as settings written here.
        check(&config)?;
    }
    Ok(config)
}

/// The key of an `SdConfig` mapping whose value does not decode, found by decoding
/// each key on its own (with a placeholder `role`, which is required). serde's errors
/// through `#[serde(flatten)]` do not say which field failed; this keeps the field
/// list in one place, `SdConfig`, instead of repeating it here.
fn culprit(value: &Value) -> Option<String> {
    let Value::Mapping(map) = value else {
        return None;
    };
    for (key, v) in map {
        let mut single = Mapping::new();
        if key.as_str() != Some("role") {
            single.insert(Value::from("role"), Value::from("pod"));
        }
        single.insert(key.clone(), v.clone());
        if serde_norway::from_value::<SdConfig>(Value::Mapping(single)).is_err() {
            return key.as_str().map(str::to_string);
        }
    }
    None
}

/// Why kubesd ignores a job key, for the warning.
fn why_ignored(key: &str) -> &'static str {
    if key.ends_with("_sd_configs") || key == "static_configs" {
        "kubesd only does Kubernetes discovery"
    } else if key == "metric_relabel_configs" {
        "it applies to scraped samples, which kubesd never sees"
    } else if matches!(key, "metrics_path" | "scheme" | "params") {
        "kubesd does not scrape; the scraper's own setting applies (relabel rules here \
         cannot read it)"
    } else {
        "it configures scraping, which the program reading kubesd's targets does"
    }
}
