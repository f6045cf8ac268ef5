//! Which label names a job's rules leave alone but for what they write: a target's own
//! label of such a name can be laid over its object's shared result (see
//! [`super::shared`]).

use arcstr::ArcStr;

use super::by_address::ByAddress;
use super::config::{Action, CompiledRule};
use super::target::{PARAM_PREFIX, SEED_NAMES};

/// Per label name: whether the rules leave it alone but for what they write (see the
/// module documentation).
#[derive(Default)]
pub(super) struct LeftAlone(ByAddress<bool>);

impl LeftAlone {
    /// Whether `rules` leave `name` alone but for what they write, remembered.
    pub(super) fn decide(&mut self, rules: &[CompiledRule], name: &ArcStr) -> bool {
        self.0.get_or_decide(name, |name| {
            let seeded = SEED_NAMES.contains(name) || name.starts_with(PARAM_PREFIX);
            !seeded
                && rules.iter().all(|rule| {
                    !rule.reads_label(name)
                        && match rule.action {
                            Action::LabelDrop => !rule.regex.is_match(name),
                            Action::LabelKeep => rule.regex.is_match(name),
                            _ => true,
                        }
                })
        })
    }
}
