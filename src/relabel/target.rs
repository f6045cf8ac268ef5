//! A discovered target's labels after a job's rules, with the steps Prometheus wraps
//! around relabelling when it turns a discovered label set into a scrape target
//! (`scrape.PopulateLabels`), as far as they belong to discovery.

use arcstr::ArcStr;

use super::apply::{WorkingSet, apply};
use super::config::CompiledRule;
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

/// The label that names a target's job.
pub const JOB_LABEL: &str = "job";
/// The label that holds a target's `host:port`.
pub const ADDRESS_LABEL: &str = "__address__";
/// Labels with this prefix are discovery metadata, removed after relabelling.
pub const META_PREFIX: &str = "__meta_";

/// Runs a job's `rules` on one discovered target, as Prometheus does:
///
/// 1. `job` is set to `job_name` unless the target already has one, so rules can read
///    it (and a consumer of kubesd's output keeps the job's name, since Prometheus only
///    sets `job` when it is absent);
/// 2. the rules, as [`super::relabel`] (empty values removed);
/// 3. a target without `__address__` is [`Target::NoAddress`];
/// 4. every `__meta_*` label is removed.
///
/// Not done, because the program reading kubesd's output does it after its own
/// relabelling, where it belongs: setting `instance` to `__address__` when absent,
/// and the scrape defaults (`__scheme__`, `__metrics_path__`, `__scrape_interval__`,
/// `__scrape_timeout__`, `__param_*`). Other `__` labels a rule wrote (`__scheme__`,
/// `__metrics_path__`, `__param_*`, `__tmp_*`, ...) are kept: the scraper reads them,
/// and leaves them off the stored series itself.
pub fn process(labels: &Labels, job_name: &str, rules: &[CompiledRule]) -> Target {
    process_with_job(labels, &ArcStr::from(job_name), rules)
}

/// [`process`] with the job's name as a shared string: the `job` label of every target
/// holds this very string (no copy per target), which also lets a caller recognise it
/// by pointer in the result.
pub fn process_with_job(labels: &Labels, job_name: &ArcStr, rules: &[CompiledRule]) -> Target {
    let mut set = WorkingSet::new(labels);
    if !set.contains(JOB_LABEL) {
        set.set_shared(arcstr::literal!("job"), ArcStr::clone(job_name));
    }
    for rule in rules {
        if !apply(rule, &mut set) {
            return Target::Dropped;
        }
    }
    if !set.contains(ADDRESS_LABEL) {
        return Target::NoAddress;
    }
    set.retain(|name| !name.starts_with(META_PREFIX));
    Target::Keep(set.finish())
}
