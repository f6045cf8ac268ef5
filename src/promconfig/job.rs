//! One `scrape_configs` entry: its name, its `kubernetes_sd_configs`, its
//! `relabel_configs`, the scrape settings its targets are seeded with, and warnings for
//! the keys kubesd ignores.

use std::path::Path;
use std::time::Duration;

use arcstr::ArcStr;
use serde_norway::{Mapping, Value};

use super::duration::{format_duration, parse_duration};
use super::filled::keep_dropped_targets;
use super::global::GlobalScrape;
use super::keys::IGNORED_JOB_KEYS;
use super::paths::resolve_relative_paths;
use super::served_config::ServedConfig;
use crate::config::SdConfig;
use crate::relabel::{
    Action, CompiledRule, Dialect, NameValidation, PARAM_PREFIX, RelabelConfig, RuleOptions,
    ScrapeSettings, is_valid_label_name,
};

/// A scrape job kubesd discovers targets for.
#[derive(Clone, Debug)]
pub struct Job {
    /// `job_name`, unique in the file.
    pub name: String,
    /// Its place among the file's jobs (those of `scrape_config_files` after the
    /// file's own), as Prometheus lists them.
    pub position: usize,
    /// Its `kubernetes_sd_configs`, validated, with relative file names resolved and any
    /// `kubeconfig_file` read into `api_server` and client settings.
    pub sd_configs: Vec<SdConfig>,
    /// Its `relabel_configs`, as written.
    pub relabel: Vec<RelabelConfig>,
    /// The same rules, checked and compiled, ready for [`crate::relabel::process`].
    pub rules: Vec<CompiledRule>,
    /// The dialect the rules were compiled in.
    pub dialect: Dialect,
    /// What its targets are seeded with before relabelling: `job`, `scheme`,
    /// `metrics_path`, `params`, `scrape_interval`, `scrape_timeout`.
    pub scrape: ScrapeSettings,
    /// `params` with every value, in name order: the scrape URL's query.
    pub params: Vec<(String, Vec<String>)>,
    /// `keep_dropped_targets` (its own, else `global`'s): how many dropped targets
    /// Prometheus' targets API lists; 0 lists them all.
    pub keep_dropped_targets: u64,
    /// The entry as Prometheus fills it in and writes it back: what
    /// `/api/v1/status/config` and the target allocator's `/scrape_configs` show.
    pub served: ServedConfig,
}

/// What one `scrape_configs` entry turned out to be.
pub enum Parsed {
    /// A job with Kubernetes discovery.
    Job(Box<Job>),
    /// A job without `kubernetes_sd_configs`, ignored; its name is still taken.
    Ignored,
}

/// A problem in one entry: the key (empty for the entry itself) and what is wrong.
pub struct JobError {
    /// The key at fault, e.g. `kubernetes_sd_configs[0].tls_config`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

/// What reading one entry needs from the file around it.
pub struct JobContext<'a> {
    /// The directory relative file names are taken from.
    pub dir: &'a Path,
    /// The dialect of the rules.
    pub dialect: Dialect,
    /// `global.scrape_interval` and `global.scrape_timeout`.
    pub global: &'a GlobalScrape,
    /// The kubeconfig for discovery configs that say nowhere to discover from
    /// ([`super::LoadOptions::default_kubeconfig`]), when kubesd is not in a cluster.
    pub default_kubeconfig: Option<&'a Path>,
}

/// Reads one `scrape_configs` entry. Every problem found is pushed to `errors` (one
/// per key, so a user fixes them all in one go); `warn` collects one message per
/// ignored key. Both without the job prefix, which the caller adds. Returns the job's
/// name, if it has one, and what the entry is, if it has no errors.
pub fn parse_job(
    entry: &Value,
    ctx: &JobContext<'_>,
    errors: &mut Vec<JobError>,
    warn: &mut Vec<String>,
) -> (Option<String>, Option<Parsed>) {
    let mut problems = Problems { errors, bad: false };
    let Value::Mapping(map) = entry else {
        problems.fail("", "expected a mapping".into());
        return (None, None);
    };
    let name = job_name(map, &mut problems);
    // A job without a valid name is not a job, but the rest is still checked.
    problems.bad = false;
    let keys = JobKeys::read(map, ctx.global.names, &mut problems, warn);
    let scrape = match keys
        .scrape
        .settings(name.as_deref().unwrap_or(""), ctx.global)
    {
        Ok(s) => Some(s),
        Err((key, p)) => {
            problems.fail(key, p);
            None
        }
    };
    // Rules are checked even for a job that is ignored: a config kubesd accepts should
    // be one Prometheus (or vmagent) accepts.
    let (relabel, rules) =
        relabel_rules(keys.relabel, ctx.dialect, keys.names, &mut problems, warn);
    let sd_configs = sd_configs(keys.sd, ctx, &mut problems);
    let (Some(name), Some(scrape), false) = (name.clone(), scrape, problems.bad) else {
        return (name, None);
    };
    if keys.sd.is_empty() {
        return (Some(name), Some(Parsed::Ignored));
    }
    let job = Job {
        name: name.clone(),
        // The loader numbers the jobs it keeps.
        position: 0,
        sd_configs,
        relabel,
        rules,
        dialect: ctx.dialect,
        scrape,
        params: keys.scrape.params.clone(),
        keep_dropped_targets: keep_dropped_targets(map, ctx.global),
        served: ServedConfig::filled(entry, ctx.global, ctx.dir),
    };
    (Some(name), Some(Parsed::Job(Box::new(job))))
}

/// Where one entry's problems go, and whether any was found since `bad` was cleared.
struct Problems<'e> {
    errors: &'e mut Vec<JobError>,
    bad: bool,
}

impl Problems<'_> {
    fn fail(&mut self, key: &str, problem: String) {
        self.bad = true;
        self.errors.push(JobError {
            key: key.to_string(),
            problem,
        });
    }
}

/// `job_name`: a non-empty string.
fn job_name(map: &Mapping, problems: &mut Problems<'_>) -> Option<String> {
    match map.get("job_name") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(Value::String(_)) | Some(Value::Null) | None => {
            problems.fail("job_name", "missing or empty".into());
            None
        }
        Some(_) => {
            problems.fail("job_name", "expected a string".into());
            None
        }
    }
}

/// An entry's keys, read once: the lists to parse next and the scrape settings.
struct JobKeys<'v> {
    names: NameValidation,
    sd: &'v [Value],
    relabel: &'v [Value],
    scrape: ScrapeKeys,
}

impl<'v> JobKeys<'v> {
    fn read(
        map: &'v Mapping,
        names: NameValidation,
        problems: &mut Problems<'_>,
        warn: &mut Vec<String>,
    ) -> JobKeys<'v> {
        let mut keys = JobKeys {
            names,
            sd: &[],
            relabel: &[],
            scrape: ScrapeKeys::default(),
        };
        for (key, value) in map {
            let Value::String(key) = key else {
                problems.fail("", format!("key {key:?} is not a string"));
                continue;
            };
            if let Err(p) = keys.read_key(key, value, warn) {
                problems.fail(key, p);
            }
        }
        keys
    }

    fn read_key(
        &mut self,
        key: &str,
        value: &'v Value,
        warn: &mut Vec<String>,
    ) -> Result<(), String> {
        match key {
            "job_name" => {}
            "kubernetes_sd_configs" => self.sd = list(value)?,
            "relabel_configs" => self.relabel = list(value)?,
            "scheme" | "metrics_path" | "params" | "scrape_interval" | "scrape_timeout" => {
                self.scrape.read(key, value)?
            }
            "keep_dropped_targets" => {
                if !value.is_null() && value.as_u64().is_none() {
                    return Err("expected a number of targets".into());
                }
            }
            "metric_name_validation_scheme" => self.names = name_validation(value)?,
            k if IGNORED_JOB_KEYS.contains(&k) => {
                warn.push(format!("ignoring {k:?}: {}", why_ignored(k)));
            }
            other => return Err(format!("unknown key {other:?}")),
        }
        Ok(())
    }
}

/// `relabel_configs`: each rule as written and compiled, with the warnings a rule that
/// works but may surprise deserves.
fn relabel_rules(
    values: &[Value],
    dialect: Dialect,
    names: NameValidation,
    problems: &mut Problems<'_>,
    warn: &mut Vec<String>,
) -> (Vec<RelabelConfig>, Vec<CompiledRule>) {
    let mut relabel = Vec::with_capacity(values.len());
    let mut rules = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let rule: RelabelConfig = match serde_norway::from_value(value.clone()) {
            Ok(rule) => rule,
            Err(e) => {
                problems.fail(&format!("relabel_configs[{i}]"), e.to_string());
                continue;
            }
        };
        match rule.compile_with(i, RuleOptions { dialect, names }) {
            Ok(compiled) => rules.push(compiled),
            Err(e) => problems.fail(
                &format!("relabel_configs[{}].{}", e.index, e.field),
                e.problem,
            ),
        }
        if let Some(why) = rule.action.and_then(meaningless_for_targets) {
            warn.push(format!("relabel_configs[{i}]: {why}"));
        }
        let target = rule.target_label.as_deref().unwrap_or("");
        if !target.is_empty() && !target.contains('$') && !is_valid_label_name(target) {
            warn.push(format!(
                "relabel_configs[{i}].target_label {target:?} is not a classic label name: \
                 Prometheus 3 accepts it, earlier versions and other programs may refuse \
                 the whole target list"
            ));
        }
        relabel.push(rule);
    }
    (relabel, rules)
}

/// `kubernetes_sd_configs`, each validated, a problem named by its index and key.
fn sd_configs(
    values: &[Value],
    ctx: &JobContext<'_>,
    problems: &mut Problems<'_>,
) -> Vec<SdConfig> {
    let mut sd_configs = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let at = format!("kubernetes_sd_configs[{i}]");
        match sd_config(value, ctx.dir, ctx.default_kubeconfig) {
            Ok(config) => sd_configs.push(config),
            Err((key, problem)) => {
                let key = if key.is_empty() {
                    at
                } else {
                    format!("{at}.{key}")
                };
                problems.fail(&key, problem);
            }
        }
    }
    sd_configs
}

/// Why a vmagent action means nothing for a discovered target, if it does not: they
/// read `__name__`, which only scraped samples have. Accepted (vmagent accepts them in
/// `relabel_configs` too), with this warning.
fn meaningless_for_targets(action: Action) -> Option<String> {
    let what = match action {
        Action::KeepMetrics => "keeps a target only if its regex matches the empty string",
        Action::DropMetrics => "drops a target only if its regex matches the empty string",
        Action::Graphite => "never matches",
        _ => return None,
    };
    Some(format!(
        "action {action} reads __name__, which a discovered target does not have, so here \
         it {what}; it belongs in metric_relabel_configs"
    ))
}

/// `metric_name_validation_scheme`: `utf8` (or empty, the default) or `legacy`.
pub fn name_validation(value: &Value) -> Result<NameValidation, String> {
    match value {
        Value::Null => Ok(NameValidation::Utf8),
        Value::String(s) if s.is_empty() || s == "utf8" => Ok(NameValidation::Utf8),
        Value::String(s) if s == "legacy" => Ok(NameValidation::Legacy),
        other => Err(format!("{other:?} is not utf8 or legacy")),
    }
}

/// The job keys that seed targets, as written.
#[derive(Default)]
struct ScrapeKeys {
    scheme: Option<String>,
    metrics_path: Option<String>,
    params: Vec<(String, Vec<String>)>,
    scrape_interval: Option<Duration>,
    scrape_timeout: Option<Duration>,
}

impl ScrapeKeys {
    fn read(&mut self, key: &str, value: &Value) -> Result<(), String> {
        let string = |value: &Value| match value {
            Value::String(s) => Ok(s.clone()),
            Value::Null => Ok(String::new()),
            _ => Err("expected a string".to_string()),
        };
        match key {
            "scheme" => {
                let scheme = string(value)?;
                if !matches!(scheme.as_str(), "" | "http" | "https") {
                    return Err(format!("{scheme:?} is not http or https"));
                }
                self.scheme = Some(scheme).filter(|s| !s.is_empty());
            }
            // Written empty, it stays empty: Prometheus then sets no `__metrics_path__`
            // and scrapes the address itself (a Probe without `prober.path`).
            "metrics_path" if !value.is_null() => self.metrics_path = Some(string(value)?),
            "params" => {
                let params: Option<std::collections::BTreeMap<String, Vec<String>>> =
                    serde_norway::from_value(value.clone())
                        .map_err(|e| format!("expected a map of lists of strings: {e}"))?;
                self.params = params.unwrap_or_default().into_iter().collect();
            }
            "scrape_interval" => self.scrape_interval = Some(parse_duration(&string(value)?)?),
            "scrape_timeout" => self.scrape_timeout = Some(parse_duration(&string(value)?)?),
            _ => {}
        }
        Ok(())
    }

    /// The job's settings, with defaults from `global` as Prometheus takes them.
    fn settings(
        &self,
        job_name: &str,
        global: &GlobalScrape,
    ) -> Result<ScrapeSettings, (&'static str, String)> {
        let interval = self.scrape_interval.unwrap_or(global.scrape_interval);
        let timeout = match self.scrape_timeout {
            Some(t) => t,
            // Prometheus: the global timeout, but never more than the job's interval.
            None => global.scrape_timeout.min(interval),
        };
        if timeout > interval {
            return Err((
                "scrape_timeout",
                format!(
                    "{} is greater than scrape_interval {}",
                    format_duration(timeout),
                    format_duration(interval)
                ),
            ));
        }
        let mut settings = ScrapeSettings::new(job_name);
        if let Some(scheme) = &self.scheme {
            settings.scheme = ArcStr::from(scheme.as_str());
        }
        if let Some(path) = &self.metrics_path {
            settings.metrics_path = ArcStr::from(path.as_str());
        }
        // Prometheus seeds the first value of each (`__param_<name>`).
        settings.params = (self.params.iter())
            .filter_map(|(n, values)| Some((n, values.first()?)))
            .map(|(n, v)| {
                (
                    ArcStr::from(format!("{PARAM_PREFIX}{n}")),
                    ArcStr::from(v.as_str()),
                )
            })
            .collect();
        settings.scrape_interval = ArcStr::from(format_duration(interval));
        settings.scrape_timeout = ArcStr::from(format_duration(timeout));
        Ok(settings)
    }
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
/// fault (empty if none in particular) and the problem. An entry that names no server,
/// no kubeconfig and no client settings takes `default_kubeconfig`, if given.
pub(super) fn sd_config(
    value: &Value,
    dir: &Path,
    default_kubeconfig: Option<&Path>,
) -> Result<SdConfig, (String, String)> {
    let mut config: SdConfig = serde_norway::from_value(value.clone())
        .map_err(|e| (culprit(value).unwrap_or_default(), e.to_string()))?;
    // Unknown keys end up in `unknown`; name the first the way the loader names keys.
    if let Some(key) = config.unknown.keys().next() {
        return Err((String::new(), format!("unknown key {key:?}")));
    }
    resolve_relative_paths(&mut config, dir);
    let names_no_server = config.api_server.as_deref().unwrap_or("").is_empty()
        && config.kubeconfig_file.is_none()
        && config.http == SdConfig::new(config.role, "").http;
    if let Some(kubeconfig) = default_kubeconfig.filter(|_| names_no_server) {
        config.kubeconfig_file = Some(kubeconfig.to_path_buf());
        config.api_server = None;
    }
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
    } else {
        "it configures scraping, which the program reading kubesd's targets does"
    }
}
