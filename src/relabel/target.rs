//! A discovered target's labels after a job's rules, with the steps Prometheus wraps
//! around relabelling when it turns a discovered label set into a scrape target
//! (`scrape.PopulateLabels`): the job's scrape settings seeded before, and after, only
//! what a consumer of HTTP SD needs to scrape it.

use arcstr::ArcStr;
use serde::Serialize;

use super::apply::{WorkingSet, apply};
use super::config::CompiledRule;
use super::name_memo::NameMemo;
use crate::labels::Labels;

/// What became of a discovered target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// A target, with these labels.
    Keep(Labels),
    /// A rule dropped it.
    Dropped,
    /// It has no `__address__` after relabelling: Prometheus reports such a target as an
    /// error ("no address") and does not scrape it.
    NoAddress,
}

/// The label that holds a target's `host:port`.
pub const ADDRESS_LABEL: &str = "__address__";
/// Labels with this prefix are discovery metadata, removed after relabelling.
pub const META_PREFIX: &str = "__meta_";
/// Labels with this prefix are rules' scratch space, removed after relabelling.
pub const TMP_PREFIX: &str = "__tmp_";
/// The scrape's URL scheme.
pub const SCHEME_LABEL: &str = "__scheme__";
/// The scrape's URL path.
pub const METRICS_PATH_LABEL: &str = "__metrics_path__";
/// The scrape's interval.
pub const SCRAPE_INTERVAL_LABEL: &str = "__scrape_interval__";
/// The scrape's timeout.
pub const SCRAPE_TIMEOUT_LABEL: &str = "__scrape_timeout__";
/// A scrape URL parameter: `__param_<name>`.
pub const PARAM_PREFIX: &str = "__param_";

/// What a scrape job seeds each target with before relabelling, as Prometheus'
/// `PopulateLabels` does, so rules that read `__metrics_path__` or `__param_module`
/// see the job's settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct ScrapeSettings {
    /// `job_name`: the `job` label.
    pub job_name: ArcStr,
    /// `scheme`: `__scheme__` (default `http`).
    pub scheme: ArcStr,
    /// `metrics_path`: `__metrics_path__` (default `/metrics`).
    pub metrics_path: ArcStr,
    /// `params`, as labels: `(__param_<name>, the first of its values)`. Shared strings,
    /// because every target gets them.
    pub params: Vec<(ArcStr, ArcStr)>,
    /// `scrape_interval` as Prometheus writes it: `__scrape_interval__`.
    pub scrape_interval: ArcStr,
    /// `scrape_timeout` as Prometheus writes it: `__scrape_timeout__`.
    pub scrape_timeout: ArcStr,
}

/// Prometheus' default `scheme`.
pub const DEFAULT_SCHEME: &str = "http";
/// Prometheus' default `metrics_path`.
pub const DEFAULT_METRICS_PATH: &str = "/metrics";

impl ScrapeSettings {
    /// A job called `job_name` with Prometheus' defaults: `http`, `/metrics`, no
    /// params, every `1m` with a `10s` timeout.
    pub fn new(job_name: &str) -> ScrapeSettings {
        ScrapeSettings {
            job_name: ArcStr::from(job_name),
            scheme: arcstr::literal!("http"),
            metrics_path: arcstr::literal!("/metrics"),
            params: Vec::new(),
            scrape_interval: arcstr::literal!("1m"),
            scrape_timeout: arcstr::literal!("10s"),
        }
    }
}

/// Runs a job's `rules` on one discovered target, as Prometheus does:
///
/// 1. `job`, `__scrape_interval__`, `__scrape_timeout__`, `__metrics_path__`,
///    `__scheme__` and `__param_<name>` are set from `scrape` unless the target already
///    has them, so rules can read them;
/// 2. the rules, as [`super::relabel`] (empty values removed);
/// 3. a target without `__address__` is [`Target::NoAddress`];
/// 4. what the program reading kubesd's output needs to scrape is kept, the rest of
///    the seeded and internal labels removed: every `__meta_*` and `__tmp_*` label;
///    `__scheme__` when `http` and `__metrics_path__` when `/metrics` (the scraper's
///    defaults); `__scrape_interval__` and `__scrape_timeout__` unless a rule changed
///    them (the scraper's own job sets its interval). `__param_*` labels are kept: the
///    scraper's job does not know this job's `params`.
///
/// Not done, because the program reading kubesd's output does it after its own
/// relabelling, where it belongs: setting `instance` to `__address__` when absent.
pub fn process(labels: &Labels, scrape: &ScrapeSettings, rules: &[CompiledRule]) -> Target {
    process_with(labels, scrape, rules, None)
}

/// [`process`], with `memos` (one per rule, at its index) remembering name-only rules'
/// decisions.
pub(super) fn process_with(
    labels: &Labels,
    scrape: &ScrapeSettings,
    rules: &[CompiledRule],
    memos: Option<&mut [NameMemo]>,
) -> Target {
    let Some(mut set) = run_rules(labels, scrape, rules, memos, false) else {
        return Target::Dropped;
    };
    if !set.contains(ADDRESS_LABEL) {
        return Target::NoAddress;
    }
    Target::Keep(output(&mut set, scrape))
}

/// Steps 1 and 2 of [`process`]: the working set after seeding and the rules, or `None`
/// if a rule dropped the target. With `record_writes`, the set records the names the
/// rules write.
pub(super) fn run_rules<'a>(
    labels: &'a Labels,
    scrape: &'a ScrapeSettings,
    rules: &[CompiledRule],
    mut memos: Option<&mut [NameMemo]>,
    record_writes: bool,
) -> Option<WorkingSet<'a>> {
    let mut set = run_rules_seeded_set(labels, scrape);
    if record_writes {
        set.record_writes();
    }
    for (i, rule) in rules.iter().enumerate() {
        let memo = memos.as_deref_mut().and_then(|m| m.get_mut(i));
        if !apply(rule, &mut set, memo) {
            return None;
        }
    }
    Some(set)
}

/// Step 1 of [`process`]: the working set of `labels` with `scrape`'s settings seeded.
pub(super) fn run_rules_seeded_set<'a>(
    labels: &'a Labels,
    scrape: &'a ScrapeSettings,
) -> WorkingSet<'a> {
    let seeds = [
        &scrape.job_name,
        &scrape.scrape_interval,
        &scrape.scrape_timeout,
        &scrape.metrics_path,
        &scrape.scheme,
    ];
    WorkingSet::seeded(
        labels,
        SEED_NAMES
            .iter()
            .zip(seeds)
            .chain(scrape.params.iter().map(|(n, v)| (n, v))),
    )
}

/// The labels [`process`] seeds a target with (with `__param_*`); borrowed strings:
/// seeding costs neither allocations nor reference counts.
pub(super) static SEED_NAMES: [ArcStr; 5] = [
    arcstr::literal!("job"),
    arcstr::literal!("__scrape_interval__"),
    arcstr::literal!("__scrape_timeout__"),
    arcstr::literal!("__metrics_path__"),
    arcstr::literal!("__scheme__"),
];

/// Step 4 of [`process`]: what the program reading kubesd's output needs, from the
/// working set after the rules.
pub(super) fn output(set: &mut WorkingSet<'_>, scrape: &ScrapeSettings) -> Labels {
    let unchanged = |name: &str, seeded: &str, set: &WorkingSet| set.get(name) == seeded;
    let drop_interval = unchanged(SCRAPE_INTERVAL_LABEL, &scrape.scrape_interval, set);
    let drop_timeout = unchanged(SCRAPE_TIMEOUT_LABEL, &scrape.scrape_timeout, set);
    let drop_scheme = unchanged(SCHEME_LABEL, DEFAULT_SCHEME, set);
    let drop_path = unchanged(METRICS_PATH_LABEL, DEFAULT_METRICS_PATH, set);
    set.retain(|name| {
        !(name.starts_with(META_PREFIX)
            || name.starts_with(TMP_PREFIX)
            || (drop_interval && name == SCRAPE_INTERVAL_LABEL)
            || (drop_timeout && name == SCRAPE_TIMEOUT_LABEL)
            || (drop_scheme && name == SCHEME_LABEL)
            || (drop_path && name == METRICS_PATH_LABEL))
    });
    set.finish()
}
