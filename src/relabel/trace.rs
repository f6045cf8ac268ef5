//! Relabelling one target rule by rule, recording what each rule did: the data behind
//! Prometheus' `/api/v1/targets/relabel_steps`, the status page's trace and `kubesd
//! explain`. Each step runs the very function the service path runs ([`apply`]), so a
//! trace ends where [`super::process`] and [`super::relabel`] end.

use super::apply::{WorkingSet, apply};
use super::config::CompiledRule;
use super::target::{ADDRESS_LABEL, ScrapeSettings, Target, output, run_rules_seeded_set};
use crate::labels::{Labels, LabelsBuilder};

/// What one rule did to a target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The rule's position in `relabel_configs`.
    pub rule: usize,
    /// The labels after the rule; empty once the target is dropped (as Prometheus
    /// reports them).
    pub output: Labels,
    /// False from the rule that dropped the target on.
    pub keep: bool,
}

/// A scrape target's whole relabelling, as [`super::process`] does it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The discovered labels with the job's scrape settings seeded, as Prometheus
    /// shows a target's `discoveredLabels`.
    pub discovered: Labels,
    /// One step per rule, every rule listed (after a drop, with `keep` false).
    pub steps: Vec<Step>,
    /// What became of the target: what [`super::process`] returns.
    pub target: Target,
}

impl Trace {
    /// The position of the rule that dropped the target, if one did.
    pub fn dropped_by(&self) -> Option<usize> {
        self.steps.iter().find(|s| !s.keep).map(|s| s.rule)
    }
}

/// Prometheus' `relabel_steps`: `rules` applied to `labels` one by one (the raw
/// relabelling, no seeding), each step's output and whether the target is still kept.
pub fn relabel_steps(labels: &Labels, rules: &[CompiledRule]) -> Vec<Step> {
    let mut set = WorkingSet::new(labels);
    steps_of(&mut set, rules)
}

/// `labels`, a discovered target, through a job's `rules` as [`super::process`] runs
/// them, with every step recorded.
pub fn trace(labels: &Labels, scrape: &ScrapeSettings, rules: &[CompiledRule]) -> Trace {
    let mut set = run_rules_seeded_set(labels, scrape);
    let discovered = set.finish();
    let steps = steps_of(&mut set, rules);
    let kept = steps.last().is_none_or(|s| s.keep);
    let target = if !kept {
        Target::Dropped
    } else if !set.contains(ADDRESS_LABEL) {
        Target::NoAddress
    } else {
        Target::Keep(output(&mut set, scrape))
    };
    Trace {
        discovered,
        steps,
        target,
    }
}

/// A discovered label set with a job's scrape settings seeded (each unless the set
/// has it), as Prometheus lists a target's `discoveredLabels`; empty values left out.
pub fn seeded(labels: &Labels, scrape: &ScrapeSettings) -> Labels {
    run_rules_seeded_set(labels, scrape).finish()
}

/// Applies `rules` to `set` in order, recording each one's output.
fn steps_of(set: &mut WorkingSet<'_>, rules: &[CompiledRule]) -> Vec<Step> {
    let mut steps = Vec::with_capacity(rules.len());
    let mut keep = true;
    for (rule, compiled) in rules.iter().enumerate() {
        keep = keep && apply(compiled, set, None);
        let output = if keep {
            set.finish()
        } else {
            LabelsBuilder::new().finish()
        };
        steps.push(Step { rule, output, keep });
    }
    steps
}
