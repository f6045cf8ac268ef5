//! [`Sampler`]: the keys of one resource in an order that allows a uniformly random
//! pick in constant time, kept beside the store's ordered map (which cannot pick by
//! position without walking to it).

use std::collections::HashMap;
use std::sync::Arc;

use super::key::ObjectKey;

/// Every key of one resource, each once; `insert`, `remove` and `pick` take
/// constant time whatever the number of keys.
#[derive(Debug, Default)]
pub(super) struct Sampler {
    /// The keys, in no meaningful order (a removal moves the last one into the gap).
    keys: Vec<Arc<ObjectKey>>,
    /// Each key's position in `keys`.
    positions: HashMap<Arc<ObjectKey>, usize>,
}

impl Sampler {
    /// Adds `key`, unless it is there already.
    pub(super) fn insert(&mut self, key: &ObjectKey) {
        if self.positions.contains_key(key) {
            return;
        }
        let key = Arc::new(key.clone());
        self.positions.insert(key.clone(), self.keys.len());
        self.keys.push(key);
    }

    /// Removes `key`, if it is there.
    pub(super) fn remove(&mut self, key: &ObjectKey) {
        let Some(position) = self.positions.remove(key) else {
            return;
        };
        self.keys.swap_remove(position);
        if let Some(moved) = self.keys.get(position)
            && let Some(slot) = self.positions.get_mut(moved)
        {
            *slot = position;
        }
    }

    /// A uniformly random key, `None` when there is none.
    pub(super) fn pick(&self, rng: &mut fastrand::Rng) -> Option<&ObjectKey> {
        if self.keys.is_empty() {
            return None;
        }
        Some(&self.keys[rng.usize(..self.keys.len())])
    }

    /// How many keys there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn key(name: &str) -> ObjectKey {
        ("ns".to_string(), name.to_string())
    }

    #[test]
    fn keeps_each_key_once_and_picks_only_present_ones() {
        let mut sampler = Sampler::default();
        let mut rng = fastrand::Rng::with_seed(1);
        assert_eq!(sampler.pick(&mut rng), None);
        for name in ["a", "b", "c", "d", "a"] {
            sampler.insert(&key(name));
        }
        assert_eq!(sampler.len(), 4);
        // Removing the first moves the last into its place; removing an absent key is
        // nothing.
        sampler.remove(&key("a"));
        sampler.remove(&key("zz"));
        sampler.remove(&key("c"));
        assert_eq!(sampler.len(), 2);
        let picked: BTreeSet<ObjectKey> = (0..200)
            .filter_map(|_| sampler.pick(&mut rng).cloned())
            .collect();
        assert_eq!(picked, BTreeSet::from([key("b"), key("d")]));
        sampler.remove(&key("d"));
        sampler.remove(&key("b"));
        assert_eq!(sampler.pick(&mut rng), None);
        sampler.insert(&key("e"));
        assert_eq!(sampler.pick(&mut rng), Some(&key("e")));
    }
}
