//! What a body holds of one object, a [`Share`]: the object's serialized groups whole
//! (the job's body, and a view the object lands in with all its targets), or the share
//! of an object of one group whose addresses land in several buckets of a view: that
//! group written with some of its addresses, cut from the object's own bytes as the
//! body is sent.
//!
//! A share is two words, the object's groups and a mask of the addresses it holds, so
//! that a view keeps an object's part in a bucket without an allocation of its own,
//! and a change of the object's labels that keeps its addresses keeps the masks.

use std::sync::Arc;

use super::{Fnv, ObjectGroups};

/// The most addresses an object of one group may have for shares to be cut from its
/// bytes (one bit each); a view serializes the shares of a larger one apart.
pub const MAX_PICKED: usize = 64;

/// One object's part of a body: its groups, whole or some addresses of its one group.
#[derive(Clone, Debug)]
pub struct Share {
    groups: Arc<ObjectGroups>,
    /// Bit `i` set: the group's address `i` is held. Zero: the whole object.
    picks: u64,
}

impl Share {
    /// The whole of `groups`.
    pub fn whole(groups: &Arc<ObjectGroups>) -> Share {
        Share {
            groups: Arc::clone(groups),
            picks: 0,
        }
    }

    /// The addresses of `groups` (an object of one group, see
    /// [`ObjectGroups::one_group_addresses`]) whose bits are set in `picks`; `None`
    /// when `picks` is empty or names an address the group does not have.
    pub fn picked(groups: &Arc<ObjectGroups>, picks: u64) -> Option<Share> {
        let count = groups.addresses.len();
        let fits = count == MAX_PICKED || picks >> count == 0;
        (picks != 0 && count > 0 && count <= MAX_PICKED && fits).then(|| Share {
            groups: Arc::clone(groups),
            picks,
        })
    }

    /// The same addresses of `groups`, an object whose one group has the very
    /// addresses of this share's (a change of its labels alone).
    pub fn of(&self, groups: &Arc<ObjectGroups>) -> Share {
        Share {
            groups: Arc::clone(groups),
            picks: self.picks,
        }
    }

    /// The object's groups this is a share of.
    pub fn groups(&self) -> &Arc<ObjectGroups> {
        &self.groups
    }

    /// True when `other` holds the very same bytes (the same object's groups, the same
    /// addresses).
    pub fn same(&self, other: &Share) -> bool {
        Arc::ptr_eq(&self.groups, &other.groups) && self.picks == other.picks
    }

    /// True when it holds no target.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The hash its body's digest adds: the groups' own for the whole object.
    pub(super) fn hash(&self) -> u64 {
        if self.picks == 0 {
            return self.groups.hash;
        }
        let mut hash = Fnv::default();
        hash.write(&self.groups.hash.to_le_bytes());
        hash.write(&self.picks.to_le_bytes());
        hash.0
    }

    /// Targets held.
    pub fn targets(&self) -> usize {
        match self.picks {
            0 => self.groups.targets(),
            picks => picks.count_ones() as usize,
        }
    }

    /// Its bytes, holes left out.
    pub(super) fn byte_len(&self) -> usize {
        let g = &self.groups;
        if self.picks == 0 {
            return g.bytes.len();
        }
        let a = &g.addresses;
        let (first, last) = (a[0].0 as usize, a[a.len() - 1].1 as usize);
        let picked: usize = self.picked_spans().map(|(s, e)| (e - s) as usize).sum();
        let commas = self.picks.count_ones() as usize - 1;
        first + picked + commas + (g.bytes.len() - last)
    }

    /// Its holes.
    pub(super) fn hole_count(&self) -> usize {
        self.groups.holes.len()
    }

    /// The bytes' length once `job_json` fills the holes.
    pub(super) fn len_with(&self, job_json: &[u8]) -> usize {
        self.byte_len() + self.hole_count() * job_json.len()
    }

    /// Appends its bytes with `job_json` in the holes.
    pub(super) fn write(&self, job_json: &[u8], out: &mut Vec<u8>) {
        let g = &self.groups;
        if self.picks == 0 {
            g.write_from(0, job_json, out);
            return;
        }
        // The group's start, the picked addresses, then from the list's closing
        // bracket on (where the holes are: they are all in the labels).
        let a = &g.addresses;
        out.extend_from_slice(&g.bytes[..a[0].0 as usize]);
        for (n, (start, end)) in self.picked_spans().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&g.bytes[start as usize..end as usize]);
        }
        g.write_from(a[a.len() - 1].1 as usize, job_json, out);
    }

    /// Where each held address is in the groups' bytes, in order.
    fn picked_spans(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        let picks = self.picks;
        self.groups
            .addresses
            .iter()
            .enumerate()
            .filter(move |(i, _)| picks >> i & 1 == 1)
            .map(|(_, &span)| span)
    }
}
