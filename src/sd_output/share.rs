//! What a body holds of one object, a [`Share`]: the object's serialized groups whole
//! (the job's body, and a view the object lands in with all its targets), or the share
//! of an object of one group whose addresses land in several buckets of a view: that
//! group written with some of its addresses, cut from the object's own bytes as the
//! body is sent. A third kind, some of an object's discovered label sets
//! ([`DiscoveredShare`]), is serialized only as the body is sent.
//!
//! A share is three words, what it is of and a mask of the addresses it holds, so
//! that a view keeps an object's part in a bucket without an allocation of its own,
//! and a change of the object's labels that keeps its addresses keeps the masks.

use std::sync::Arc;

use super::{DiscoveredShare, Fnv, ObjectGroups};

/// The most addresses an object of one group may have for shares to be cut from its
/// bytes (one bit each); a view serializes the shares of a larger one apart.
pub const MAX_PICKED: usize = 64;

/// One object's part of a body: its groups, whole or some addresses of its one group;
/// or some of its discovered label sets, serialized only when sent.
#[derive(Clone, Debug)]
pub struct Share {
    of: Of,
    /// Bit `i` set: the group's address `i` is held. Zero: the whole object (and
    /// always zero for discovered label sets).
    picks: u64,
}

/// What a share is of.
#[derive(Clone, Debug)]
enum Of {
    Groups(Arc<ObjectGroups>),
    Discovered(Arc<DiscoveredShare>),
}

impl Share {
    /// The whole of `groups`.
    pub fn whole(groups: &Arc<ObjectGroups>) -> Share {
        Share {
            of: Of::Groups(Arc::clone(groups)),
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
            of: Of::Groups(Arc::clone(groups)),
            picks,
        })
    }

    /// Discovered label sets, written when the body is sent.
    pub fn discovered(share: DiscoveredShare) -> Share {
        Share {
            of: Of::Discovered(Arc::new(share)),
            picks: 0,
        }
    }

    /// The same addresses of `groups`, an object whose one group has the very
    /// addresses of this share's (a change of its labels alone).
    pub fn of(&self, groups: &Arc<ObjectGroups>) -> Share {
        Share {
            of: Of::Groups(Arc::clone(groups)),
            picks: self.picks,
        }
    }

    /// The object's groups this is a share of; `None` for discovered label sets.
    pub fn groups(&self) -> Option<&Arc<ObjectGroups>> {
        match &self.of {
            Of::Groups(g) => Some(g),
            Of::Discovered(_) => None,
        }
    }

    /// The discovered label sets this is a share of, if it is.
    pub fn discovered_share(&self) -> Option<&DiscoveredShare> {
        match &self.of {
            Of::Groups(_) => None,
            Of::Discovered(d) => Some(d),
        }
    }

    /// True when `other` holds the very same bytes (the same object's groups, the same
    /// addresses).
    pub fn same(&self, other: &Share) -> bool {
        let same_of = match (&self.of, &other.of) {
            (Of::Groups(a), Of::Groups(b)) => Arc::ptr_eq(a, b),
            (Of::Discovered(a), Of::Discovered(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
        same_of && self.picks == other.picks
    }

    /// True when `other` holds the same targets with the same labels: the very same
    /// bytes, or the same picks of the very same discovered label sets.
    pub fn same_targets(&self, other: &Share) -> bool {
        match (&self.of, &other.of) {
            (Of::Discovered(a), Of::Discovered(b)) => a.same_targets(b),
            _ => self.same(other),
        }
    }

    /// True when it holds no target.
    pub fn is_empty(&self) -> bool {
        match &self.of {
            Of::Groups(g) => g.is_empty(),
            Of::Discovered(d) => d.targets() == 0,
        }
    }

    /// The hash its body's digest adds: the groups' own for the whole object.
    pub(super) fn hash(&self) -> u64 {
        let g = match &self.of {
            Of::Groups(g) => g,
            Of::Discovered(d) => return d.hash(),
        };
        if self.picks == 0 {
            return g.hash;
        }
        let mut hash = Fnv::default();
        hash.write(&g.hash.to_le_bytes());
        hash.write(&self.picks.to_le_bytes());
        hash.0
    }

    /// Targets held.
    pub fn targets(&self) -> usize {
        match (&self.of, self.picks) {
            (Of::Discovered(d), _) => d.targets(),
            (Of::Groups(g), 0) => g.targets(),
            (Of::Groups(_), picks) => picks.count_ones() as usize,
        }
    }

    /// Its bytes, holes left out; `None` for discovered label sets, whose length is
    /// known once they are written.
    pub(super) fn byte_len(&self) -> Option<usize> {
        let Of::Groups(g) = &self.of else {
            return None;
        };
        if self.picks == 0 {
            return Some(g.bytes.len());
        }
        let a = &g.addresses;
        let (first, last) = (a[0].0 as usize, a[a.len() - 1].1 as usize);
        let picked: usize = self.picked_spans(g).map(|(s, e)| (e - s) as usize).sum();
        let commas = self.picks.count_ones() as usize - 1;
        Some(first + picked + commas + (g.bytes.len() - last))
    }

    /// Its holes (none known before a discovered share is written).
    pub(super) fn hole_count(&self) -> usize {
        match &self.of {
            Of::Groups(g) => g.holes.len(),
            Of::Discovered(_) => 0,
        }
    }

    /// The bytes' length once `job_json` fills the holes; `None` as
    /// [`Share::byte_len`].
    pub(super) fn len_with(&self, job_json: &[u8]) -> Option<usize> {
        Some(self.byte_len()? + self.hole_count() * job_json.len())
    }

    /// Appends its bytes with `job_json` in the holes.
    pub(super) fn write(&self, job_json: &[u8], out: &mut Vec<u8>) {
        let g = match &self.of {
            Of::Groups(g) => g,
            Of::Discovered(d) => return d.write(out),
        };
        if self.picks == 0 {
            g.write_from(0, job_json, out);
            return;
        }
        // The group's start, the picked addresses, then from the list's closing
        // bracket on (where the holes are: they are all in the labels).
        let a = &g.addresses;
        out.extend_from_slice(&g.bytes[..a[0].0 as usize]);
        for (n, (start, end)) in self.picked_spans(g).enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(&g.bytes[start as usize..end as usize]);
        }
        g.write_from(a[a.len() - 1].1 as usize, job_json, out);
    }

    /// Where each held address is in `g`'s bytes (this share's groups), in order.
    fn picked_spans<'a>(&self, g: &'a ObjectGroups) -> impl Iterator<Item = (u32, u32)> + 'a {
        let picks = self.picks;
        g.addresses
            .iter()
            .enumerate()
            .filter(move |(i, _)| picks >> i & 1 == 1)
            .map(|(_, &span)| span)
    }
}
