//! The registry: which group serves which [`GroupKey`], across every subscriber of the
//! process. Subscribing looks a group up here or starts it; a group removes itself when
//! its last subscriber leaves.

use actix::Addr;
use dashmap::DashMap;
use dashmap::mapref::entry::Entry;

use crate::group::{GroupDirectory, GroupKey, GroupWatcher};

/// A running group.
#[derive(Clone)]
pub struct GroupEntry {
    /// Unique per group started, so a stopping group never removes its successor.
    pub id: u64,
    /// The group.
    pub addr: Addr<GroupWatcher>,
}

/// Running groups by key.
#[derive(Default)]
pub struct Registry {
    groups: DashMap<GroupKey, GroupEntry>,
}

impl Registry {
    /// The group for `key`, starting one with `start` if there is none (or it stopped).
    pub fn get_or_start(&self, key: &GroupKey, start: impl FnOnce() -> GroupEntry) -> GroupEntry {
        // The map's shard lock is held while starting, so two subscribers racing for a
        // new key get the same group.
        match self.groups.entry(key.clone()) {
            Entry::Occupied(mut slot) => {
                if !slot.get().addr.connected() {
                    slot.insert(start());
                }
                slot.get().clone()
            }
            Entry::Vacant(slot) => slot.insert(start()).clone(),
        }
    }

    /// Forgets group `id` of `key`, unless another group has taken the key since.
    pub fn remove(&self, key: &GroupKey, id: u64) {
        self.groups.remove_if(key, |_, entry| entry.id == id);
    }

    /// How many groups are registered.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    /// True when no group runs.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

impl GroupDirectory for Registry {
    fn remove(&self, key: &GroupKey, id: u64) {
        Registry::remove(self, key, id);
    }
}
