//! One partition of a job's targets (a shard count, or the nodes) as a job
//! actor keeps it: per bucket, that bucket's objects' parts in body order with their
//! digest ([`KeyedGroups`]). Buckets sit in a persistent ordered map, so the job's
//! snapshot takes the whole partition as one pointer, a change copies the paths it
//! touches, and an object's move between buckets is O(log n). A view's ETag comes from
//! its bucket's digest: it changes only when one of its own objects does.

use std::collections::BTreeMap;

use imbl::OrdMap;

use crate::model::ObjectKey;
use crate::sd_output::{KeyedGroups, Share};
use crate::service::views::{Bucket, ObjectParts, ViewKind};

/// A partition's buckets, as a snapshot holds them.
pub type Partition = OrdMap<Bucket, KeyedGroups>;

/// One partition of a job actor's objects, kept up to date object by object.
pub struct ViewIndex {
    /// The partition.
    pub kind: ViewKind,
    /// Its buckets that hold objects.
    pub buckets: Partition,
}

impl ViewIndex {
    /// An empty partition of `kind`.
    pub fn new(kind: ViewKind) -> ViewIndex {
        ViewIndex {
            kind,
            buckets: OrdMap::new(),
        }
    }

    /// Adds object `key`'s `parts`.
    pub fn insert(&mut self, key: &ObjectKey, parts: &ObjectParts) {
        for (bucket, share) in parts.iter() {
            self.insert_one(key, bucket, share);
        }
    }

    fn insert_one(&mut self, key: &ObjectKey, bucket: &Bucket, share: &Share) {
        match self.buckets.get_mut(bucket) {
            Some(objects) => objects.insert(key, share),
            None => {
                let mut objects = KeyedGroups::default();
                objects.insert(key, share);
                self.buckets.insert(bucket.clone(), objects);
            }
        }
    }

    /// Removes object `key`'s `parts` (as they were inserted); a bucket left empty goes.
    pub fn remove(&mut self, key: &ObjectKey, parts: &ObjectParts) {
        for (bucket, share) in parts.iter() {
            self.remove_one(key, bucket, share);
        }
    }

    /// Replaces object `key`'s parts `old` (as they were inserted) by `new`: a bucket in
    /// both has its entry replaced in one step, or kept when it holds the same targets
    /// (a membership change moves some of an object's targets, not all: `new` then
    /// takes the share held, so that it names what the index holds); one only in `old`
    /// loses it.
    pub fn replace(&mut self, key: &ObjectKey, old: &ObjectParts, new: &mut ObjectParts) {
        for (bucket, share) in old.iter() {
            if !new.iter().any(|(b, _)| b == bucket) {
                self.remove_one(key, bucket, share);
            }
        }
        for (bucket, share) in new.iter_mut() {
            let held = old.iter().find(|(b, _)| b == bucket);
            match held {
                Some((_, s)) if s.same_targets(share) => *share = s.clone(),
                _ => self.insert_one(key, bucket, share),
            }
        }
    }

    fn remove_one(&mut self, key: &ObjectKey, bucket: &Bucket, share: &Share) {
        let Some(objects) = self.buckets.get_mut(bucket) else {
            return;
        };
        objects.remove(key, share);
        if objects.is_empty() {
            self.buckets.remove(bucket);
        }
    }

    /// Forgets every object (before its objects are split into it anew).
    pub fn clear(&mut self) {
        self.buckets = OrdMap::new();
    }
}

/// Targets per bucket of a partition.
pub fn counts(partition: &Partition) -> BTreeMap<Bucket, usize> {
    partition
        .iter()
        .map(|(b, objects)| (b.clone(), objects.targets()))
        .collect()
}
