//! The config file: `kubesd run --config kubesd.yml` reads a Prometheus configuration
//! as it is, so users keep the file they already have; vmagent's additions are read too.
//!
//! From it kubesd takes each `scrape_configs` job with `kubernetes_sd_configs` (also
//! from the files `scrape_config_files` names), its `relabel_configs`, and the scrape
//! settings its targets are seeded with. Everything else Prometheus or vmagent
//! documents is accepted and ignored with one warning per key (returned, for the caller
//! to log); anything else is an error naming where it is, e.g.
//! `scrape_configs[2] (job "pods"): kubernetes_sd_configs[0]: unknown key "api_sever"`.
//! Every error in the file is reported, not only the first.

mod duration;
mod error;
mod filled;
mod global;
mod job;
mod keys;
mod membership;
pub mod monitors;
mod nesting;
mod paths;
mod placeholders;
mod served_config;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_norway::Value;

pub use duration::{format_duration, parse_duration};
pub use error::{LoadError, Problem};
pub use job::Job;
pub use keys::{IGNORED_JOB_KEYS, IGNORED_TOP_LEVEL};
pub use membership::{DEFAULT_HANDOVER, Membership, WeightFrom, parse_membership};
pub use paths::resolve_relative_paths;
pub use placeholders::{Expanded, expand_placeholders};
pub use served_config::{REDACTED, ServedConfig};

use crate::config::SdConfig;
use crate::relabel::Dialect;
use global::GlobalScrape;
use job::{JobContext, Parsed, parse_job};
use monitors::section::{MonitorsSection, parse_section};

/// How to read a config file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Whose meaning to follow where Prometheus and vmagent differ
    /// ([`crate::relabel::Dialect`]): `hashmod`'s hash, `{{label}}` in replacements,
    /// `%{VAR}` placeholders.
    pub dialect: Dialect,
    /// Expand prometheus-operator's `$(VAR)` placeholders from the environment, as its
    /// config reloader does.
    pub expand_reloader_vars: bool,
    /// A kubeconfig for `kubernetes_sd_configs` that name neither `api_server` nor
    /// `kubeconfig_file` and set no client settings, used when kubesd is not in a
    /// cluster (`KUBERNETES_SERVICE_HOST` unset): `--kubeconfig`, or `$KUBECONFIG`.
    pub default_kubeconfig: Option<PathBuf>,
}

/// A loaded config file.
#[derive(Clone, Debug, Default)]
pub struct LoadedConfig {
    /// The jobs with Kubernetes discovery, in file order (then those of
    /// `scrape_config_files`, in their order).
    pub jobs: Vec<Job>,
    /// One message per ignored key or job, naming it, for the caller to log.
    pub warnings: Vec<String>,
    /// The scrapers kubesd assigns targets to (`?member=`), if the file names them.
    pub membership: Option<Membership>,
    /// The prometheus-operator resources whose jobs kubesd runs, if the file names them.
    pub monitors: Option<MonitorsSection>,
}

/// Reads and checks the config file at `path`, with default options.
pub fn load_config(path: &Path) -> Result<LoadedConfig, LoadError> {
    load_config_with(path, &LoadOptions::default())
}

/// Reads and checks the config file at `path`; placeholders read the process'
/// environment.
pub fn load_config_with(path: &Path, options: &LoadOptions) -> Result<LoadedConfig, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_config_with(text.as_str(), path, options, &|name| {
        std::env::var(name).ok()
    })
}

/// Checks config `text` read from `path`, with default options: relative file names in
/// it are taken relative to `path`'s directory, and errors name `path`.
pub fn parse_config(text: &str, path: &Path) -> Result<LoadedConfig, LoadError> {
    parse_config_with(text, path, &LoadOptions::default(), &|name| {
        std::env::var(name).ok()
    })
}

/// Checks config `text` read from `path`, reading placeholders' variables through
/// `env`.
pub fn parse_config_with(
    text: &str,
    path: &Path,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedConfig, LoadError> {
    let mut loader = Loader {
        options,
        env,
        global: GlobalScrape::default(),
        loaded: LoadedConfig::default(),
        problems: Vec::new(),
        seen: HashMap::new(),
    };
    let root = loader.document(text, path)?;
    let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let top = match root {
        Value::Mapping(map) => map,
        // An empty file is a valid (empty) Prometheus config.
        Value::Null => return loader.finish(path),
        _ => {
            loader.problem("(top level)", "expected a mapping");
            return loader.finish(path);
        }
    };
    // `global` first: jobs take their defaults from it, wherever it is in the file.
    if let Some(global) = top.get("global") {
        loader.read_global(global);
    }
    let mut scrape_configs: &[Value] = &[];
    let mut files: Vec<String> = Vec::new();
    for (key, value) in &top {
        let Value::String(key) = key else {
            loader.problem("(top level)", &format!("key {key:?} is not a string"));
            continue;
        };
        match key.as_str() {
            "scrape_configs" => match value {
                Value::Sequence(items) => scrape_configs = items,
                Value::Null => {}
                _ => loader.problem(key, "expected a list"),
            },
            "scrape_config_files" => {
                match serde_norway::from_value::<Option<Vec<String>>>(value.clone()) {
                    Ok(patterns) => files = patterns.unwrap_or_default(),
                    Err(_) => loader.problem(key, "expected a list of file names or globs"),
                }
            }
            "global" => {}
            "membership" => loader.membership(value, &dir),
            "monitors" => loader.monitors(value, &dir),
            k if IGNORED_TOP_LEVEL.contains(&k) => loader.loaded.warnings.push(format!(
                "ignoring top-level section {k:?}: kubesd only does service discovery"
            )),
            other => loader.problem("(top level)", &format!("unknown key {other:?}")),
        }
    }
    for (i, entry) in scrape_configs.iter().enumerate() {
        loader.job(entry, &dir, &format!("scrape_configs[{i}]"));
    }
    for pattern in files {
        loader.scrape_config_files(&dir, &pattern);
    }
    loader.finish(path)
}

/// One `kubernetes_sd_configs` entry, checked and ready to run, as a job's is (relative
/// file names from `dir`; `default_kubeconfig` for an entry that names no server); on
/// error, the key at fault (empty if none in particular) and the problem.
pub fn check_sd_config(
    value: &Value,
    dir: &Path,
    default_kubeconfig: Option<&Path>,
) -> Result<SdConfig, (String, String)> {
    job::sd_config(value, dir, default_kubeconfig)
}

/// One load in progress: what it found so far.
struct Loader<'a> {
    options: &'a LoadOptions,
    env: &'a dyn Fn(&str) -> Option<String>,
    global: GlobalScrape,
    loaded: LoadedConfig,
    problems: Vec<Problem>,
    /// Job names taken, and where first.
    seen: HashMap<String, String>,
}

impl Loader<'_> {
    fn problem(&mut self, at: &str, problem: &str) {
        self.problems.push(Problem {
            at: at.to_string(),
            problem: problem.to_string(),
        });
    }

    fn finish(self, path: &Path) -> Result<LoadedConfig, LoadError> {
        if self.problems.is_empty() {
            Ok(self.loaded)
        } else {
            Err(LoadError::Invalid {
                path: path.to_path_buf(),
                problems: self.problems,
            })
        }
    }

    /// The YAML document in `text`, placeholders expanded and merge keys applied.
    fn document(&mut self, text: &str, path: &Path) -> Result<Value, LoadError> {
        let syntax = |message: String| LoadError::Syntax {
            path: path.to_path_buf(),
            message,
        };
        let percent = self.options.dialect == Dialect::VictoriaMetrics;
        let expanded =
            expand_placeholders(text, percent, self.options.expand_reloader_vars, self.env);
        for w in expanded.warnings {
            self.loaded
                .warnings
                .push(format!("{}: {w}", path.display()));
        }
        let text = expanded.text;
        if let Some(at) = nesting::flow_depth_exceeds(&text, nesting::MAX_FLOW_DEPTH) {
            let line = text[..at].matches('\n').count() + 1;
            return Err(syntax(format!(
                "line {line}: collections nested more than {} levels deep",
                nesting::MAX_FLOW_DEPTH
            )));
        }
        let mut root: Value = serde_norway::from_str(&text).map_err(|e| syntax(e.to_string()))?;
        // `<<: *anchor` merge keys, which Prometheus' YAML decoder applies.
        root.apply_merge().map_err(|e| LoadError::Invalid {
            path: path.to_path_buf(),
            problems: vec![Problem {
                at: "<<".into(),
                problem: e.to_string(),
            }],
        })?;
        Ok(root)
    }

    /// `global.scrape_interval`, `global.scrape_timeout`, `metric_name_validation_scheme`
    /// and `keep_dropped_targets`; its other keys are ignored with a warning (and kept
    /// as written for the jobs' defaults as Prometheus shows them).
    fn read_global(&mut self, global: &Value) {
        let Value::Mapping(map) = global else {
            if !global.is_null() {
                self.problem("global", "expected a mapping");
            }
            return;
        };
        self.global.written = map.clone();
        let mut ignored = Vec::new();
        for (key, value) in map {
            let key = key.as_str().unwrap_or_default();
            if key == "keep_dropped_targets" {
                match value.as_u64() {
                    Some(n) => self.global.keep_dropped_targets = n,
                    None if value.is_null() => {}
                    None => self.problem("global.keep_dropped_targets", "expected a number"),
                }
                continue;
            }
            if key == "metric_name_validation_scheme" {
                match job::name_validation(value) {
                    Ok(names) => self.global.names = names,
                    Err(p) => self.problem("global.metric_name_validation_scheme", &p),
                }
                continue;
            }
            let slot = match key {
                "scrape_interval" => &mut self.global.scrape_interval,
                "scrape_timeout" => &mut self.global.scrape_timeout,
                other => {
                    ignored.push(format!("{other:?}"));
                    continue;
                }
            };
            match value.as_str().map(parse_duration) {
                Some(Ok(d)) => *slot = d,
                Some(Err(e)) => self.problems.push(Problem {
                    at: format!("global.{key}"),
                    problem: e,
                }),
                None => self.problems.push(Problem {
                    at: format!("global.{key}"),
                    problem: "expected a duration such as 15s".into(),
                }),
            }
        }
        let g = &self.global;
        if g.scrape_timeout > g.scrape_interval {
            let problem = format!(
                "{} is greater than scrape_interval {}",
                format_duration(g.scrape_timeout),
                format_duration(g.scrape_interval)
            );
            self.problem("global.scrape_timeout", &problem);
        }
        if !ignored.is_empty() {
            self.loaded.warnings.push(format!(
                "ignoring global {}: kubesd only does service discovery",
                ignored.join(", ")
            ));
        }
    }

    /// The kubeconfig a job or section that names no API server reads: the default one,
    /// unless kubesd runs in a pod, where no server means the pod's cluster, as in
    /// Prometheus.
    fn section_kubeconfig(&self) -> Option<&Path> {
        let in_cluster = (self.env)("KUBERNETES_SERVICE_HOST").is_some_and(|h| !h.is_empty());
        (self.options.default_kubeconfig.as_deref()).filter(|_| !in_cluster)
    }

    /// The `membership` section, checked.
    fn membership(&mut self, value: &Value, dir: &Path) {
        match parse_membership(value, dir, self.section_kubeconfig()) {
            Ok(m) => self.loaded.membership = Some(m),
            Err((key, why)) if key.is_empty() => self.problem("membership", &why),
            Err((key, why)) => self.problem(&format!("membership.{key}"), &why),
        }
    }

    /// The `monitors` section, checked.
    fn monitors(&mut self, value: &Value, dir: &Path) {
        match parse_section(value, dir, self.section_kubeconfig()) {
            Ok(m) => self.loaded.monitors = Some(m),
            Err((key, why)) if key.is_empty() => self.problem("monitors", &why),
            Err((key, why)) => self.problem(&format!("monitors.{key}"), &why),
        }
    }

    /// One `scrape_configs` entry at `at` (e.g. `scrape_configs[2]`), with relative
    /// file names taken from `dir`.
    fn job(&mut self, entry: &Value, dir: &Path, at: &str) {
        let ctx = JobContext {
            dir,
            dialect: self.options.dialect,
            global: &self.global,
            default_kubeconfig: self.section_kubeconfig(),
        };
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let (name, parsed) = parse_job(entry, &ctx, &mut errors, &mut warnings);
        let at = match &name {
            Some(name) => format!("{at} (job {name:?})"),
            None => at.to_string(),
        };
        for e in errors {
            let where_ = if e.key.is_empty() {
                at.clone()
            } else {
                format!("{at}: {}", e.key)
            };
            self.problems.push(Problem {
                at: where_,
                problem: e.problem,
            });
        }
        if let Some(name) = &name {
            if let Some(first) = self.seen.get(name) {
                let problem = format!("duplicate job name, first used by {first}");
                self.problem(&format!("{at}: job_name"), &problem);
            } else {
                let first = at.split(" (job").next().unwrap_or(&at).to_string();
                self.seen.insert(name.clone(), first);
            }
        }
        match parsed {
            Some(Parsed::Job(mut job)) => {
                self.loaded
                    .warnings
                    .extend(warnings.into_iter().map(|w| format!("{at}: {w}")));
                job.position = self.loaded.jobs.len();
                self.loaded.jobs.push(*job);
            }
            Some(Parsed::Ignored) => self.loaded.warnings.push(format!(
                "{at}: ignoring the job: it has no kubernetes_sd_configs"
            )),
            None => {}
        }
    }

    /// The jobs of the files `pattern` matches, as Prometheus reads
    /// `scrape_config_files`: a glob relative to the config file's directory, each file
    /// holding only `scrape_configs`, whose relative file names are taken from that
    /// file's own directory.
    fn scrape_config_files(&mut self, dir: &Path, pattern: &str) {
        let at = format!("scrape_config_files {pattern:?}");
        let full = if Path::new(pattern).is_absolute() {
            PathBuf::from(pattern)
        } else {
            dir.join(pattern)
        };
        let matches = match glob::glob(&full.to_string_lossy()) {
            Ok(m) => m,
            Err(e) => {
                self.problem(&at, &format!("not a valid glob: {e}"));
                return;
            }
        };
        for file in matches {
            let file = match file {
                Ok(f) => f,
                Err(e) => {
                    self.problem(&at, &e.to_string());
                    continue;
                }
            };
            self.scrape_config_file(&file);
        }
    }

    /// The jobs of one file `scrape_config_files` matched.
    fn scrape_config_file(&mut self, file: &Path) {
        let at = format!("scrape_config_files: {}", file.display());
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) => {
                self.problem(&at, &format!("cannot read: {e}"));
                return;
            }
        };
        let root = match self.document(&text, file) {
            Ok(root) => root,
            Err(e) => {
                self.problem(&at, &e.to_string());
                return;
            }
        };
        let file_dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
        let entries = match &root {
            Value::Null => return,
            Value::Mapping(map) => self.scrape_configs_in(&at, map),
            _ => {
                self.problem(&at, "expected a mapping");
                return;
            }
        };
        for (i, entry) in entries.iter().enumerate() {
            self.job(entry, &file_dir, &format!("{at}: scrape_configs[{i}]"));
        }
    }

    /// The `scrape_configs` of a scrape config file's mapping, the only key it may hold.
    fn scrape_configs_in(&mut self, at: &str, map: &serde_norway::Mapping) -> Vec<Value> {
        let mut entries: &[Value] = &[];
        for (key, value) in map {
            match (key.as_str(), value) {
                (Some("scrape_configs"), Value::Sequence(items)) => entries = items,
                (Some("scrape_configs"), Value::Null) => {}
                (Some("scrape_configs"), _) => {
                    self.problem(&format!("{at}: scrape_configs"), "expected a list")
                }
                _ => self.problem(
                    at,
                    &format!(
                        "unknown key {:?}: a scrape config file holds only \
                         scrape_configs",
                        key.as_str().unwrap_or("(not a string)")
                    ),
                ),
            }
        }
        entries.to_vec()
    }
}
