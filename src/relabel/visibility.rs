//! Which discovered labels a job's rules can see, so that a change they cannot see is
//! not relabelled at all.
//!
//! Most changes to a Kubernetes object move values that no scrape job reads: a pod's
//! `resourceVersion`-like annotations, a deployment tool's bookkeeping, the time its
//! status last changed. A label whose value can change a job's targets is one a rule
//! reads (its sources, an `if` selector, a `labelmap` that copies it, ...) or one the
//! job's output keeps. Every other label is *unseen*: a `__meta_*` or `__tmp_*` label
//! (removed after relabelling) that no rule reads. Two label sets that differ only in
//! unseen labels (their values, or whether they are there at all) relabel to the same
//! target: nothing reads them, and the output drops them. (A `labeldrop` or `labelkeep`
//! may remove one; that changes nothing either.)
//!
//! The decision is per name, against [`CompiledRule::reads_label`] (conservative: a
//! rule with an `if` selector or a `{{label}}` template reads every label), and
//! remembered per name as the relabeller remembers its name-only rules' decisions.
//!
//! The same reading decides which `__meta_*` labels a collector that relabels its
//! targets itself needs at all ([`ReadableMeta`]).

use std::sync::Arc;

use arcstr::ArcStr;

use super::by_address::ByAddress;
use super::config::CompiledRule;
use super::target::{META_PREFIX, TMP_PREFIX};
use crate::labels::Labels;

/// A job's rules and which label names they cannot see, remembered.
pub struct Visibility {
    rules: Arc<Vec<CompiledRule>>,
    /// Per name: unseen or not.
    unseen: ByAddress<bool>,
}

impl Visibility {
    /// Nothing remembered yet about `rules`.
    pub fn new(rules: Arc<Vec<CompiledRule>>) -> Visibility {
        Visibility {
            rules,
            unseen: ByAddress::default(),
        }
    }

    /// True when no rule reads `name` and the output drops it: its value cannot change
    /// a target.
    pub fn unseen(&mut self, name: &ArcStr) -> bool {
        let rules = &self.rules;
        self.unseen.get_or_decide(name, |name| {
            (name.starts_with(META_PREFIX) || name.starts_with(TMP_PREFIX))
                && !rules.iter().any(|r| r.reads_label(name))
        })
    }

    /// True when `new` (an object's discovered targets) relabels to exactly what `old`
    /// does: the same label sets but for unseen labels.
    pub fn same_targets(&mut self, old: &[Labels], new: &[Labels]) -> bool {
        Labels::same_except_each(old, new, |name| self.unseen(name))
    }
}

/// Which `__meta_*` labels a job's rules may read (by [`CompiledRule::reads_label`],
/// as [`Visibility`] decides): the rules' sources, the names a `labelmap` regex
/// matches, the `target_label` of `keepequal`/`dropequal`; every label for a rule with
/// an `if` selector or a template. Every `__`-prefixed label is gone after relabelling,
/// so a `__meta_*` label no rule reads changes nothing the rules compute: a collector
/// that relabels a target itself (the OpenTelemetry target allocator's protocol)
/// computes the same target without it. Made once per job's rules; each body written
/// remembers its answers by name while it is written.
#[derive(Clone, Debug)]
pub struct ReadableMeta {
    rules: Arc<Vec<CompiledRule>>,
}

impl ReadableMeta {
    /// The labels `rules` may read.
    pub fn new(rules: Arc<Vec<CompiledRule>>) -> ReadableMeta {
        ReadableMeta { rules }
    }

    /// True when `name` is kept: not a `__meta_*` label, or one a rule may read.
    pub fn keeps(&self, name: &str) -> bool {
        !name.starts_with(META_PREFIX) || self.rules.iter().any(|r| r.reads_label(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relabel::{RelabelConfig, ScrapeSettings, compile_all, process};

    fn visibility(yaml: &str) -> (Visibility, Arc<Vec<CompiledRule>>) {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
        let rules = Arc::new(compile_all(&configs).expect("rules are valid"));
        (Visibility::new(Arc::clone(&rules)), rules)
    }

    fn pod(annotation: &str, label: &str, phase: &str) -> Labels {
        Labels::from_pairs([
            ("__address__", "10.0.0.1:80"),
            ("__meta_kubernetes_pod_annotation_seq", annotation),
            ("__meta_kubernetes_pod_label_app", label),
            ("__meta_kubernetes_pod_phase", phase),
        ])
    }

    const RULES: &str = r#"
- {action: labelmap, regex: __meta_kubernetes_pod_label_(.+)}
- {source_labels: [__meta_kubernetes_pod_phase], regex: Unknown, action: drop}
"#;

    /// Whenever it says two sets relabel alike, they do: over rule sets that read,
    /// copy, drop and keep labels by name and by value, and changes to every kind of
    /// label.
    #[test]
    fn a_change_called_unseen_relabels_to_the_same_target() {
        let rule_sets = [
            RULES,
            "[{action: labeldrop, regex: __meta_kubernetes_pod_annotation_.*}]",
            "[{action: labelkeep, regex: __address__|__meta_kubernetes_pod_label_app}]",
            "[{action: labelmap, regex: __meta_kubernetes_pod_(.+)}]",
            "[{source_labels: [__meta_kubernetes_pod_annotation_seq], target_label: seq}]",
            "[{source_labels: [__address__], modulus: 4, target_label: __tmp_hash, action: hashmod},
              {source_labels: [__tmp_hash], regex: '1', action: drop}]",
            "[{source_labels: [__meta_kubernetes_pod_label_app], target_label: __meta_kubernetes_pod_annotation_x},
              {source_labels: [__meta_kubernetes_pod_annotation_x], target_label: app}]",
        ];
        let with = |extra: Option<(&str, &str)>, seq: &str, app: &str, phase: &str| {
            let mut pairs = vec![
                ("__address__", "10.0.0.1:80"),
                ("__meta_kubernetes_pod_annotation_seq", seq),
                ("__meta_kubernetes_pod_label_app", app),
                ("__meta_kubernetes_pod_phase", phase),
            ];
            pairs.extend(extra);
            Labels::from_pairs(pairs)
        };
        let variants = [
            with(None, "1", "web", "Running"),
            with(None, "2", "web", "Running"),
            with(None, "", "web", "Running"),
            with(None, "1", "api", "Running"),
            with(None, "1", "", "Running"),
            with(None, "1", "web", "Unknown"),
            with(
                Some(("__meta_kubernetes_pod_annotation_new", "x")),
                "1",
                "web",
                "Running",
            ),
            with(
                Some(("__meta_kubernetes_pod_label_new", "x")),
                "1",
                "web",
                "Running",
            ),
            with(Some(("__tmp_hash", "1")), "1", "web", "Running"),
        ];
        let scrape = ScrapeSettings::new("job");
        let mut unseen_pairs = 0;
        for yaml in rule_sets {
            let (mut v, rules) = visibility(yaml);
            for old in &variants {
                for new in &variants {
                    let same = v.same_targets(std::slice::from_ref(old), std::slice::from_ref(new));
                    unseen_pairs += usize::from(same && old != new);
                    assert!(
                        !same || process(old, &scrape, &rules) == process(new, &scrape, &rules),
                        "rules {yaml}: {old:?} -> {new:?}"
                    );
                }
            }
        }
        assert!(
            unseen_pairs > 20,
            "the test exercises unseen changes: {unseen_pairs}"
        );
    }

    /// An annotation no rule reads is unseen, whatever its value or if it is gone; a
    /// mapped label, a label a rule reads and a label the output keeps are seen.
    #[test]
    fn only_values_no_rule_reads_and_the_output_drops_are_unseen() {
        let (mut v, _) = visibility(RULES);
        let old = [pod("1", "web", "Running")];
        assert!(v.same_targets(&old, &[pod("2", "web", "Running")]));
        assert!(
            v.same_targets(&old, &[pod("", "web", "Running")]),
            "emptied"
        );
        assert!(
            !v.same_targets(&old, &[pod("1", "", "Running")]),
            "mapped, emptied"
        );
        assert!(
            !v.same_targets(&old, &[pod("1", "api", "Running")]),
            "mapped"
        );
        assert!(
            !v.same_targets(&old, &[pod("1", "web", "Failed")]),
            "read by drop"
        );
        let moved = Labels::from_pairs([
            ("__address__", "10.0.0.2:80"),
            ("__meta_kubernetes_pod_annotation_seq", "1"),
            ("__meta_kubernetes_pod_label_app", "web"),
            ("__meta_kubernetes_pod_phase", "Running"),
        ]);
        assert!(!v.same_targets(&old, &[moved]), "kept in the output");
        assert!(!v.same_targets(&old, &[]), "a target fewer");
    }

    /// A rule with an `if` selector may read any label: nothing is unseen.
    #[test]
    fn a_selector_sees_every_label() {
        let (mut v, _) =
            visibility(r#"[{action: keep, if: '{__meta_kubernetes_pod_annotation_seq="1"}'}]"#);
        let old = [pod("1", "web", "Running")];
        assert!(!v.same_targets(&old, &[pod("2", "web", "Running")]));
    }

    /// Targets built over a shared base compare alike however the base is split.
    #[test]
    fn shared_bases_compare_by_their_labels() {
        let (mut v, _) = visibility(RULES);
        let base = |seq: &str| {
            Labels::from_pairs([
                ("__meta_kubernetes_pod_annotation_seq", seq),
                ("__meta_kubernetes_pod_label_app", "web"),
            ])
        };
        let targets = |seq: &str| {
            let base = base(seq);
            (1..=3)
                .map(|port| {
                    let mut own = crate::labels::LabelsBuilder::new();
                    own.add("__address__", format!("10.0.0.1:{port}"));
                    base.merged(own)
                })
                .collect::<Vec<_>>()
        };
        assert!(v.same_targets(&targets("1"), &targets("2")));
        let mut other_port = targets("2");
        let mut own = crate::labels::LabelsBuilder::new();
        own.add("__address__", "10.0.0.1:9");
        other_port[2] = base("2").merged(own);
        assert!(!v.same_targets(&targets("1"), &other_port));
    }

    /// Leaving out the `__meta_*` labels no rule reads changes nothing the rules
    /// compute, for every kind of rule (each rule set below relabelled over random
    /// label sets, with and without them), and leaves out some in most rule sets.
    #[test]
    fn labels_no_rule_reads_change_no_target() {
        let rule_sets = [
            RULES,
            "[{source_labels: [__meta_kubernetes_pod_label_app, __meta_kubernetes_pod_label_tier],
               separator: '/', regex: '(.*)/(.*)', replacement: '$2-$1', target_label: role}]",
            "[{source_labels: [__meta_kubernetes_pod_label_app, __meta_kubernetes_namespace],
               regex: 'web;.*|db;prod', action: keep},
              {source_labels: [__meta_kubernetes_pod_annotation_a], regex: 'x.*', action: drop}]",
            "[{action: labelmap, regex: __meta_kubernetes_pod_(label|annotation)_(.+), replacement: '${1}_$2'}]",
            "[{action: labeldrop, regex: __meta_kubernetes_pod_annotation_.*},
              {action: labelmap, regex: __meta_kubernetes_pod_(.+)}]",
            "[{action: labelkeep, regex: __address__|__meta_kubernetes_pod_label_.*},
              {action: labelmap, regex: __meta_kubernetes_(.+)}]",
            "[{source_labels: [__address__], modulus: 3, target_label: __tmp_hash, action: hashmod},
              {source_labels: [__tmp_hash], regex: '1', action: drop}]",
            "[{source_labels: [__meta_kubernetes_pod_label_app], target_label: __meta_kubernetes_pod_label_tier, action: keepequal}]",
            "[{source_labels: [__meta_kubernetes_pod_label_app], target_label: __meta_kubernetes_pod_label_tier, action: dropequal}]",
            "[{source_labels: [__meta_kubernetes_pod_name], target_label: pod, action: lowercase},
              {source_labels: [__meta_kubernetes_namespace], target_label: ns, action: uppercase}]",
            "[{source_labels: [__meta_kubernetes_pod_label_app], target_label: __meta_kubernetes_pod_annotation_b},
              {source_labels: [__meta_kubernetes_pod_annotation_b], target_label: copied}]",
        ];
        let names = [
            "__meta_kubernetes_pod_label_app",
            "__meta_kubernetes_pod_label_tier",
            "__meta_kubernetes_pod_annotation_a",
            "__meta_kubernetes_pod_annotation_b",
            "__meta_kubernetes_pod_name",
            "__meta_kubernetes_namespace",
            "__meta_kubernetes_pod_container_port_number",
            "__scheme__",
        ];
        let values = ["web", "db", "prod", "Web", "x1", ""];
        let scrape = ScrapeSettings::new("job");
        let mut rng = fastrand::Rng::with_seed(5);
        let mut pruning = 0;
        for yaml in rule_sets {
            let (_, rules) = visibility(yaml);
            let readable = ReadableMeta::new(Arc::clone(&rules));
            let mut pruned_any = false;
            for _ in 0..300 {
                let mut pairs = vec![(
                    "__address__".to_string(),
                    format!("10.0.0.{}:80", rng.u8(..9)),
                )];
                for name in names {
                    if rng.bool() {
                        pairs.push((
                            name.to_string(),
                            values[rng.usize(..values.len())].to_string(),
                        ));
                    }
                }
                let full = Labels::from_pairs(pairs);
                let kept: Vec<(ArcStr, ArcStr)> = (full.iter())
                    .filter(|l| readable.keeps(&l.name))
                    .map(|l| (l.name.clone(), l.value.clone()))
                    .collect();
                pruned_any |= kept.len() < full.len();
                let pruned = Labels::from_pairs(kept);
                assert_eq!(
                    process(&pruned, &scrape, &rules),
                    process(&full, &scrape, &rules),
                    "rules {yaml}: {full:?}"
                );
            }
            pruning += usize::from(pruned_any);
        }
        assert!(pruning >= 8, "labels left out in {pruning} rule sets");
    }
}
