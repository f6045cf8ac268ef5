//! A job's rules with a memory of what their name-only rules decided, for a caller that
//! relabels many targets with the same rules (a service pipeline).
//!
//! `labelmap`, `labeldrop` and `labelkeep` look only at a label's *name*: whether the
//! regex matches it and, for `labelmap`, the name it maps to. That decision is a pure
//! function of the rule and the name, and label names repeat across every target of a
//! cluster (a pod's targets share theirs, and discovery interns them), so the
//! [`Relabeller`] runs each such rule's regex once per distinct name and remembers the
//! outcome. Results are exactly those of [`super::process`].
//!
//! Identity: a [`Relabeller`] owns its rules, so its memory can never be applied to
//! other rules; new rules mean a new `Relabeller`. Names are looked up by their
//! allocation's address first (the entry holds the name, so that address cannot be
//! reused for another string while it is remembered), then by content (the same name
//! in another allocation). Label names come from the cluster, so the memory is bounded:
//! past [`MAX_NAMES`] names per rule it starts over.

use std::sync::Arc;

use super::config::CompiledRule;
use super::left_alone::LeftAlone;
use super::name_memo::NameMemo;
use super::target::{ScrapeSettings, Target, process_with};
use super::visibility::Visibility;
use crate::labels::Labels;

/// A job's rules and what their name-only rules decided so far. See the module
/// documentation.
pub struct Relabeller {
    pub(super) rules: Arc<Vec<CompiledRule>>,
    /// One per rule, at the rule's index; used by name-only rules.
    pub(super) memos: Vec<NameMemo>,
    /// Which label names the rules cannot see.
    visibility: Visibility,
    /// Which label names the rules leave alone (see [`super::shared`]).
    pub(super) left_alone: LeftAlone,
    /// Targets given their object's shared result rather than relabelled whole.
    pub(super) from_shared: u64,
}

impl Relabeller {
    /// `rules`, with nothing remembered yet.
    pub fn new(rules: Arc<Vec<CompiledRule>>) -> Relabeller {
        let memos = rules.iter().map(|_| NameMemo::default()).collect();
        Relabeller {
            visibility: Visibility::new(Arc::clone(&rules)),
            left_alone: LeftAlone::default(),
            from_shared: 0,
            rules,
            memos,
        }
    }

    /// The rules.
    pub fn rules(&self) -> &Arc<Vec<CompiledRule>> {
        &self.rules
    }

    /// [`super::process`] of `labels` with these rules.
    pub fn process(&mut self, labels: &Labels, scrape: &ScrapeSettings) -> Target {
        process_with(labels, scrape, &self.rules, Some(&mut self.memos))
    }

    /// True when `new` (an object's discovered targets) gives the same targets as `old`:
    /// they differ only in values the rules cannot see (see [`Visibility`]), so `new`
    /// need not be relabelled.
    pub fn same_targets(&mut self, old: &[Labels], new: &[Labels]) -> bool {
        self.visibility.same_targets(old, new)
    }

    /// Targets that [`Relabeller::process_object`] gave their object's shared result
    /// instead of relabelling them whole (work counted, for tests and benchmarks).
    pub fn targets_from_shared(&self) -> u64 {
        self.from_shared
    }

    /// Names remembered, over all rules (for tests).
    pub fn remembered(&self) -> usize {
        self.memos.iter().map(NameMemo::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relabel::by_address::MAX_NAMES;
    use crate::relabel::{RelabelConfig, compile_all, process};

    fn rules(yaml: &str) -> Arc<Vec<CompiledRule>> {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
        Arc::new(compile_all(&configs).expect("rules are valid"))
    }

    /// Past the bound the memory starts over, and answers stay right.
    #[test]
    fn memory_is_bounded_and_stays_exact() {
        let rules = rules(
            r#"
- {regex: "l_(.*)", replacement: "m_$1", action: labelmap}
- {regex: "l_.*", action: labeldrop}
"#,
        );
        let scrape = ScrapeSettings::new("job");
        let mut relabeller = Relabeller::new(Arc::clone(&rules));
        for i in 0..MAX_NAMES + 10 {
            let name = format!("l_{i}");
            let labels = Labels::from_pairs([("__address__", "h:1"), (name.as_str(), "v")]);
            let want = process(&labels, &scrape, &rules);
            assert_eq!(relabeller.process(&labels, &scrape), want, "{name}");
            // Two rules, each remembering the name and `__address__` (the seeded
            // labels are literals: remembered too).
            assert!(relabeller.remembered() <= 2 * MAX_NAMES, "{name}");
        }
        let Target::Keep(last) = relabeller.process(
            &Labels::from_pairs([("__address__", "h:1"), ("l_x", "v")]),
            &scrape,
        ) else {
            panic!("kept");
        };
        assert_eq!(last.get("m_x"), Some("v"));
        assert_eq!(last.get("l_x"), None);
    }

    /// A name is decided once by content and once per allocation, whatever the number
    /// of targets carrying it.
    #[test]
    fn names_are_decided_once() {
        let rules = rules(r#"[{regex: "l_(.*)", replacement: "m_$1", action: labelmap}]"#);
        let scrape = ScrapeSettings::new("job");
        let mut relabeller = Relabeller::new(rules);
        let labels = Labels::from_pairs([("__address__", "h:1"), ("l_a", "v")]);
        for _ in 0..3 {
            relabeller.process(&labels, &scrape);
        }
        // `__address__`, `l_a` and the five seeded labels of one job.
        assert_eq!(relabeller.remembered(), 7);
    }
}
