//! Relabelling an object's targets once for the labels they share.
//!
//! A pod's targets (one per container port) carry the same ~45 pod labels and differ
//! in a handful of their own: the address and the container's and port's labels. Rules
//! that never touch those own labels give each target the shared labels' result with
//! its own labels laid over it. So the rules run once per object on the shared labels,
//! and each target costs only the check that its own labels are left alone:
//!
//! - no rule reads the name ([`reads_label`](super::CompiledRule::reads_label): sources, selectors,
//!   templates, `labelmap`), and no `labeldrop` or `labelkeep` removes it;
//! - no rule wrote it while running on the shared labels (recorded as they ran: what a
//!   rule writes depends only on what it reads, and it reads only shared labels);
//! - it is not one of the labels the job seeds (`job`, `__scheme__`, ...);
//! - it does not empty a shared label of the same name (an empty value is an absent
//!   label, which the shared run did not see).
//!
//! A target that fails a check is relabelled whole, as [`super::process`] does. The
//! result is the same either way (tested against every relabelling case).

use arcstr::ArcStr;

use super::memo::Relabeller;
use super::target::{
    ADDRESS_LABEL, META_PREFIX, ScrapeSettings, TMP_PREFIX, Target, output, run_rules,
};
use crate::labels::{Label, Labels, LabelsBuilder, same_names};

/// The rules' result on one object's shared labels.
enum SharedResult {
    /// A rule dropped them: every target whose own labels the rules neither read nor
    /// remove is dropped too (what the rules wrote before does not matter: the
    /// target is gone either way).
    Dropped,
    /// The shared part of each target, as the output has it.
    Kept {
        /// The output labels, before each target's own are laid over them.
        output: Labels,
        /// Whether `__address__` was there after the rules (else only a target's own
        /// address gives it one).
        has_address: bool,
        /// Every name the rules wrote or removed by name.
        written: Vec<ArcStr>,
    },
}

impl SharedResult {
    /// The names the rules wrote (none recorded for a dropped target: they do not
    /// matter then).
    fn written(&self) -> &[ArcStr] {
        match self {
            SharedResult::Dropped => &[],
            SharedResult::Kept { written, .. } => written,
        }
    }
}

impl Relabeller {
    /// [`Relabeller::process`] of each of one object's `targets`, in order, given to
    /// `each`: the rules run once for the labels the targets share (see the module
    /// documentation).
    pub fn process_object(
        &mut self,
        targets: &[Labels],
        scrape: &ScrapeSettings,
        mut each: impl FnMut(Target),
    ) {
        // The shared labels' result, for the base of the target it was computed from.
        let mut shared: Option<(Labels, SharedResult)> = None;
        // The last own part whose names were checked against that result, and the
        // verdict: an object's targets carry the same own names (interned strings), so
        // the next one with the very same names is not checked again.
        let mut names_checked: Option<(&[Label], bool)> = None;
        for target in targets {
            let own = target.own_labels();
            if targets.len() < 2 || own.is_empty() {
                each(self.process(target, scrape));
                continue;
            }
            if !shared.as_ref().is_some_and(|(b, _)| b.same_base(target)) {
                let base = target.without_own();
                let result = self.run_shared(&base, scrape);
                shared = Some((base, result));
                names_checked = None;
            }
            let Some((base, result)) = &shared else {
                continue;
            };
            let names_alone = match names_checked {
                Some((checked, alone)) if same_names(checked, own) => alone,
                _ => {
                    let alone = self.names_left_alone(result, own);
                    names_checked = Some((own, alone));
                    alone
                }
            };
            match names_alone.then(|| with_own(base, result, own)).flatten() {
                Some(t) => {
                    self.from_shared += 1;
                    each(t)
                }
                None => each(self.process(target, scrape)),
            }
        }
    }

    /// True when the rules neither read nor remove any of `own`'s names, and did not
    /// write one while running on the shared labels (`result`).
    fn names_left_alone(&mut self, result: &SharedResult, own: &[Label]) -> bool {
        own.iter().all(|label| {
            self.left_alone.decide(&self.rules, &label.name)
                && !result.written().contains(&label.name)
        })
    }

    /// The rules on `base` (a target's shared labels), recording what they write.
    fn run_shared(&mut self, base: &Labels, scrape: &ScrapeSettings) -> SharedResult {
        match run_rules(base, scrape, &self.rules, Some(&mut self.memos), true) {
            None => SharedResult::Dropped,
            Some(mut set) => {
                let written = set.take_written();
                let has_address = set.contains(ADDRESS_LABEL);
                SharedResult::Kept {
                    output: output(&mut set, scrape),
                    has_address,
                    written,
                }
            }
        }
    }
}

/// A target with these `own` labels (whose names the rules leave alone) over `base`,
/// from the shared result; `None` when an own label empties a shared one of its name
/// (an absent label the shared run saw).
fn with_own(base: &Labels, result: &SharedResult, own: &[Label]) -> Option<Target> {
    if own
        .iter()
        .any(|label| label.value.is_empty() && base.get(&label.name).is_some())
    {
        return None;
    }
    match result {
        SharedResult::Dropped => Some(Target::Dropped),
        SharedResult::Kept {
            output,
            has_address,
            ..
        } => {
            let mut kept = LabelsBuilder::new();
            let mut own_address = false;
            for label in own {
                if label.value.is_empty()
                    || label.name.starts_with(META_PREFIX)
                    || label.name.starts_with(TMP_PREFIX)
                {
                    continue;
                }
                own_address |= &*label.name == ADDRESS_LABEL;
                kept.add_shared(&label.name, &label.value);
            }
            if !has_address && !own_address {
                return Some(Target::NoAddress);
            }
            Some(Target::Keep(if kept.is_empty() {
                output.clone()
            } else {
                output.merged(kept)
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::relabel::{RelabelConfig, compile_all, process};

    fn relabeller(yaml: &str) -> Relabeller {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
        Relabeller::new(Arc::new(compile_all(&configs).expect("rules are valid")))
    }

    /// Three port targets over one pod's labels.
    fn pod_targets() -> Vec<Labels> {
        let base = Labels::from_pairs([
            ("__meta_kubernetes_namespace", "default"),
            ("__meta_kubernetes_pod_label_app", "web"),
            ("__meta_kubernetes_pod_name", "web-1"),
        ]);
        (1..=3)
            .map(|port| {
                let mut own = LabelsBuilder::new();
                own.add("__address__", format!("10.0.0.1:{port}"));
                own.add(
                    "__meta_kubernetes_pod_container_port_number",
                    port.to_string(),
                );
                base.merged(own)
            })
            .collect()
    }

    fn both(relabeller: &mut Relabeller, targets: &[Labels]) -> (Vec<Target>, Vec<Target>) {
        let scrape = ScrapeSettings::new("job");
        let want = targets
            .iter()
            .map(|t| process(t, &scrape, relabeller.rules()))
            .collect();
        let mut got = Vec::new();
        relabeller.process_object(targets, &scrape, |t| got.push(t));
        (got, want)
    }

    /// Rules that read only the pod's labels run once for its targets.
    #[test]
    fn rules_on_shared_labels_serve_every_target_of_the_object() {
        let mut r = relabeller(
            r#"
- {action: labelmap, regex: __meta_kubernetes_pod_label_(.+)}
- {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
- {source_labels: [__meta_kubernetes_pod_name], target_label: pod}
"#,
        );
        let (got, want) = both(&mut r, &pod_targets());
        assert_eq!(got, want);
        assert_eq!(r.targets_from_shared(), 3);
    }

    /// A rule that reads or writes a target's own label makes it relabelled whole.
    #[test]
    fn rules_that_touch_own_labels_relabel_each_target_whole() {
        for yaml in [
            "[{source_labels: [__address__], regex: '.*:1', action: drop}]",
            "[{source_labels: [__meta_kubernetes_pod_name], target_label: __address__}]",
            "[{action: labeldrop, regex: __meta_kubernetes_pod_container_port_number}]",
        ] {
            let mut r = relabeller(yaml);
            let (got, want) = both(&mut r, &pod_targets());
            assert_eq!(got, want, "{yaml}");
            assert_eq!(r.targets_from_shared(), 0, "{yaml}");
        }
    }
}
