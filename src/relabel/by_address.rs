//! A decision per label name, remembered by the address of the name's bytes: the
//! memory every per-name cache of the relabelling shares.

use std::collections::HashMap;

use arcstr::ArcStr;

/// Distinct names a rule remembers before it forgets them all. A cluster's pod label
/// keys number in the hundreds; this bounds a cluster whose keys never repeat.
pub const MAX_NAMES: usize = 1 << 14;

/// Something decided per label name, remembered by the address of the name's bytes
/// (the entry holds the name, so that address cannot be reused for another string
/// while it is remembered). Label names come from the cluster, so it is bounded: past
/// [`MAX_NAMES`] names it starts over.
pub(crate) struct ByAddress<V>(HashMap<usize, (ArcStr, V), foldhash::fast::RandomState>);

impl<V> Default for ByAddress<V> {
    fn default() -> Self {
        ByAddress(HashMap::default())
    }
}

impl<V: Clone> ByAddress<V> {
    /// What was decided for `name`, or `decide(name)`, remembered.
    pub(crate) fn get_or_decide(&mut self, name: &ArcStr, decide: impl FnOnce(&ArcStr) -> V) -> V {
        self.decided(name, decide).clone()
    }

    /// What was decided for `name`, or `decide(name)`, remembered; by reference, for a
    /// decision that is costly to clone.
    pub(crate) fn decided(&mut self, name: &ArcStr, decide: impl FnOnce(&ArcStr) -> V) -> &V {
        let address = name.as_ptr() as usize;
        if self.0.len() >= MAX_NAMES && !self.0.contains_key(&address) {
            self.0.clear();
        }
        let (_, value) =
            (self.0.entry(address)).or_insert_with(|| (ArcStr::clone(name), decide(name)));
        value
    }

    /// Names remembered.
    pub(super) fn len(&self) -> usize {
        self.0.len()
    }
}
