//! The config file: `kubesd run --config kubesd.yml` reads a Prometheus configuration
//! as it is, so users keep the file they already have.
//!
//! From it kubesd takes each `scrape_configs` job with `kubernetes_sd_configs`, and its
//! `relabel_configs`. Everything else Prometheus documents is accepted and ignored with
//! one warning per key (returned, for the caller to log); anything else is an error
//! naming where it is, e.g.
//! `scrape_configs[2] (job "pods"): kubernetes_sd_configs[0]: unknown key "api_sever"`.

mod error;
mod job;
mod keys;
mod nesting;
mod paths;

use std::collections::HashMap;
use std::path::Path;

use serde_norway::Value;

pub use error::LoadError;
pub use job::Job;
pub use keys::{IGNORED_JOB_KEYS, IGNORED_TOP_LEVEL};
pub use paths::resolve_relative_paths;

use job::{Parsed, parse_job};

/// A loaded config file.
#[derive(Clone, Debug, Default)]
pub struct LoadedConfig {
    /// The jobs with Kubernetes discovery, in file order.
    pub jobs: Vec<Job>,
    /// One message per ignored key or job, naming it, for the caller to log.
    pub warnings: Vec<String>,
}

/// Reads and checks the config file at `path`.
pub fn load_config(path: &Path) -> Result<LoadedConfig, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_config(&text, path)
}

/// Checks config `text` read from `path`: relative file names in it are taken relative
/// to `path`'s directory, and errors name `path`.
pub fn parse_config(text: &str, path: &Path) -> Result<LoadedConfig, LoadError> {
    let invalid = |at: String, problem: String| LoadError::Invalid {
        path: path.to_path_buf(),
        at,
        problem,
    };
    if let Some(at) = nesting::flow_depth_exceeds(text, nesting::MAX_FLOW_DEPTH) {
        let line = text[..at].matches('\n').count() + 1;
        return Err(LoadError::Syntax {
            path: path.to_path_buf(),
            message: format!(
                "line {line}: collections nested more than {} levels deep",
                nesting::MAX_FLOW_DEPTH
            ),
        });
    }
    let mut root: Value = serde_norway::from_str(text).map_err(|e| LoadError::Syntax {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    // `<<: *anchor` merge keys, which Prometheus' YAML decoder applies.
    root.apply_merge()
        .map_err(|e| invalid("<<".into(), e.to_string()))?;
    let dir = path.parent().unwrap_or(Path::new(""));

    let mut loaded = LoadedConfig::default();
    let top = match &root {
        Value::Mapping(map) => map.clone(),
        // An empty file is a valid (empty) Prometheus config.
        Value::Null => return Ok(loaded),
        _ => return Err(invalid("(top level)".into(), "expected a mapping".into())),
    };
    let mut scrape_configs: &[Value] = &[];
    for (key, value) in &top {
        let Value::String(key) = key else {
            return Err(invalid(
                "(top level)".into(),
                format!("key {key:?} is not a string"),
            ));
        };
        match key.as_str() {
            "scrape_configs" => match value {
                Value::Sequence(items) => scrape_configs = items,
                Value::Null => {}
                _ => return Err(invalid(key.clone(), "expected a list".into())),
            },
            "scrape_config_files" => {
                // Ignoring it would silently lose the jobs those files hold.
                return Err(invalid(
                    key.clone(),
                    "not supported by kubesd: put the jobs in this file".into(),
                ));
            }
            k if IGNORED_TOP_LEVEL.contains(&k) => loaded.warnings.push(format!(
                "ignoring top-level section {k:?}: kubesd only does service discovery"
            )),
            other => {
                return Err(invalid(
                    "(top level)".into(),
                    format!("unknown key {other:?}"),
                ));
            }
        }
    }

    let mut seen: HashMap<String, usize> = HashMap::new();
    for (i, entry) in scrape_configs.iter().enumerate() {
        let mut warnings = Vec::new();
        let parsed = parse_job(entry, dir, &mut warnings).map_err(|e| {
            let at = job_at(i, e.name.as_deref());
            let at = if e.key.is_empty() {
                at
            } else {
                format!("{at}: {}", e.key)
            };
            invalid(at, e.problem)
        })?;
        let name = match &parsed {
            Parsed::Job(job) => job.name.clone(),
            Parsed::Ignored(name) => name.clone(),
        };
        let at = job_at(i, Some(&name));
        if let Some(first) = seen.insert(name.clone(), i) {
            return Err(invalid(
                format!("{at}: job_name"),
                format!("duplicate job name, first used by scrape_configs[{first}]"),
            ));
        }
        match parsed {
            Parsed::Job(job) => {
                loaded
                    .warnings
                    .extend(warnings.into_iter().map(|w| format!("{at}: {w}")));
                loaded.jobs.push(job);
            }
            Parsed::Ignored(_) => loaded.warnings.push(format!(
                "{at}: ignoring the job: it has no kubernetes_sd_configs"
            )),
        }
    }
    Ok(loaded)
}

/// How errors and warnings name entry `index` of `scrape_configs`.
fn job_at(index: usize, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("scrape_configs[{index}] (job {name:?})"),
        None => format!("scrape_configs[{index}]"),
    }
}
