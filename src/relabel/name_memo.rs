//! What `labelmap`, `labeldrop` and `labelkeep` decided for each label name: their
//! verdict depends only on the rule and the name, so it is computed once per name.

use std::collections::HashMap;

use arcstr::ArcStr;

use super::by_address::{ByAddress, MAX_NAMES};
use super::config::{Action, CompiledRule};
use super::template::expand;

/// What a name-only rule decided for one label name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct NameDecision {
    /// The rule's regex matches the name.
    pub(super) matches: bool,
    /// `labelmap`: the name the label is copied to, when the regex matched and the
    /// expansion is a label name the rule may write.
    pub(super) renamed: Option<ArcStr>,
}

impl NameDecision {
    /// `rule`'s decision for `name`, computed.
    pub(super) fn compute(rule: &CompiledRule, name: &str) -> NameDecision {
        match rule.action {
            Action::LabelMap => match rule.regex.captures(name) {
                Some(caps) => {
                    let new_name = expand(&rule.replacement, &caps);
                    // Prometheus writes whatever name comes out; kubesd skips one that
                    // is not a label name, as `replace` does, so its output stays valid.
                    NameDecision {
                        matches: true,
                        renamed: rule
                            .names
                            .is_valid(&new_name)
                            .then(|| ArcStr::from(new_name)),
                    }
                }
                None => NameDecision::default(),
            },
            _ => NameDecision {
                matches: rule.regex.is_match(name),
                renamed: None,
            },
        }
    }
}

/// One rule's remembered decisions.
#[derive(Default)]
pub(super) struct NameMemo {
    /// By the address of the name's bytes.
    by_address: ByAddress<NameDecision>,
    /// By content: the same name in another allocation.
    by_content: HashMap<ArcStr, NameDecision, foldhash::fast::RandomState>,
}

impl NameMemo {
    /// `rule`'s decision for `name`, remembered.
    pub(super) fn decide(&mut self, rule: &CompiledRule, name: &ArcStr) -> NameDecision {
        let by_content = &mut self.by_content;
        self.by_address.get_or_decide(name, |name| {
            if by_content.len() >= MAX_NAMES {
                by_content.clear();
            }
            match by_content.get(name.as_str()) {
                Some(d) => d.clone(),
                None => {
                    let d = NameDecision::compute(rule, name);
                    by_content.insert(ArcStr::clone(name), d.clone());
                    d
                }
            }
        })
    }

    /// Names remembered (by address).
    pub(super) fn len(&self) -> usize {
        self.by_address.len()
    }
}
