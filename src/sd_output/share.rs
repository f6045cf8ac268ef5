//! What a body holds of one object, a [`Share`]: the object's serialized groups whole
//! (the job's body, and a view the object lands in with all its targets), or some of
//! its addresses, cut from the object's own bytes as the body is sent (each group
//! written with the addresses held, a group left without one left out). Two more
//! kinds: the groups together with what assigning their targets reads
//! ([`PlacedGroups`], the body's entry while member views are served), and some of an
//! object's discovered label sets (a collector's share: by a mask of the placed
//! object's, or listed, [`DiscoveredShare`]), serialized only as the body is sent.
//!
//! A share is three words, what it is of and a mask of the addresses it holds, so
//! that a view keeps an object's part in a bucket without an allocation of its own,
//! and a change of the object's labels that keeps its addresses keeps the masks. An
//! object of more than [`MAX_PICKED`] addresses has its held addresses listed apart
//! ([`Share::cut`]).

use std::sync::Arc;

use super::discovered::write_label_sets;
use super::object_groups::GroupSpan;
use super::{DiscoveredShare, Fnv, ObjectGroups, PlacedGroups, Pruner};

/// The most addresses an object may have for shares to hold some of them by a mask
/// (one bit each); a larger one's are listed ([`Share::cut`]).
pub const MAX_PICKED: usize = 64;

/// One object's part of a body: its groups, whole or some of their addresses; or some
/// of its discovered label sets, serialized only when sent.
#[derive(Clone, Debug)]
pub struct Share {
    of: Of,
    /// Bit `i` set: the address at place `i` is held (of a placed object's discovered
    /// label sets: the set at index `i`). Zero: the whole object (and always zero for
    /// the other kinds).
    picks: u64,
}

/// What a share is of.
#[derive(Clone, Debug)]
enum Of {
    Groups(Arc<ObjectGroups>),
    Placed(Arc<PlacedGroups>),
    Cut(Arc<Cut>),
    /// Some of a placed object's discovered label sets, by `picks`.
    Collected(Arc<PlacedGroups>),
    Discovered(Arc<DiscoveredShare>),
}

/// Some addresses of an object's groups, by place, ascending.
#[derive(Debug)]
struct Cut {
    groups: Arc<ObjectGroups>,
    places: Box<[u32]>,
}

/// Equal when they are the very same share (the same object's bytes or label sets, by
/// pointer, the same addresses): what tells a body's changed objects from the others
/// (see [`super::KeyedGroups::diff`]).
impl PartialEq for Share {
    fn eq(&self, other: &Share) -> bool {
        self.same(other)
    }
}

impl Share {
    /// The whole of `groups`.
    pub fn whole(groups: &Arc<ObjectGroups>) -> Share {
        Share {
            of: Of::Groups(Arc::clone(groups)),
            picks: 0,
        }
    }

    /// The whole of `placed`'s groups, with what assigning their targets reads.
    pub fn placed(placed: &Arc<PlacedGroups>) -> Share {
        Share {
            of: Of::Placed(Arc::clone(placed)),
            picks: 0,
        }
    }

    /// The addresses of `groups` (an object of at most [`MAX_PICKED`] addresses'
    /// places, see [`ObjectGroups::address_places`]) whose bits are set in `picks`;
    /// `None` when `picks` is empty or names a place the groups do not have.
    pub fn picked(groups: &Arc<ObjectGroups>, picks: u64) -> Option<Share> {
        let count = groups.address_places();
        let fits = count == MAX_PICKED || picks >> count == 0;
        (picks != 0 && count > 0 && count <= MAX_PICKED && fits).then(|| Share {
            of: Of::Groups(Arc::clone(groups)),
            picks,
        })
    }

    /// The addresses of `groups` at `places` (ascending, each once), for an object of
    /// any number of addresses; `None` when there is none, or one the groups do not
    /// have.
    pub fn cut(groups: &Arc<ObjectGroups>, places: Vec<u32>) -> Option<Share> {
        let count = groups.address_places();
        let valid = places.windows(2).all(|w| w[0] < w[1])
            && places.last().is_some_and(|&p| (p as usize) < count);
        valid.then(|| Share {
            of: Of::Cut(Arc::new(Cut {
                groups: Arc::clone(groups),
                places: places.into(),
            })),
            picks: 0,
        })
    }

    /// The discovered label sets of `placed` whose bits are set in `picks` (an object
    /// of at most [`MAX_PICKED`] sets), written when the body is sent; `None` when
    /// `picks` is empty or names a set the object does not have.
    pub fn collected(placed: &Arc<PlacedGroups>, picks: u64) -> Option<Share> {
        let count = placed.discovered.len();
        let fits = count == MAX_PICKED || picks >> count == 0;
        (picks != 0 && count <= MAX_PICKED && fits).then(|| Share {
            of: Of::Collected(Arc::clone(placed)),
            picks,
        })
    }

    /// Discovered label sets listed, written when the body is sent.
    pub fn discovered(share: DiscoveredShare) -> Share {
        Share {
            of: Of::Discovered(Arc::new(share)),
            picks: 0,
        }
    }

    /// The same addresses of `groups`, an object whose groups have the very addresses
    /// of this share's (see [`ObjectGroups::same_addresses`]: a change of its labels
    /// alone).
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
            Of::Placed(p) => Some(&p.groups),
            Of::Cut(c) => Some(&c.groups),
            Of::Collected(_) | Of::Discovered(_) => None,
        }
    }

    /// The groups with what assigning their targets reads, if this is such an entry.
    pub fn placed_groups(&self) -> Option<&Arc<PlacedGroups>> {
        match &self.of {
            Of::Placed(p) => Some(p),
            _ => None,
        }
    }

    /// The discovered label sets this is a share of, if it is.
    pub fn discovered_share(&self) -> Option<&DiscoveredShare> {
        match &self.of {
            Of::Discovered(d) => Some(d),
            _ => None,
        }
    }

    /// True when `other` holds the very same bytes (the same object's groups, the same
    /// addresses).
    pub fn same(&self, other: &Share) -> bool {
        let same_of = match (&self.of, &other.of) {
            (Of::Groups(a), Of::Groups(b)) => Arc::ptr_eq(a, b),
            (Of::Placed(a), Of::Placed(b)) => Arc::ptr_eq(a, b),
            (Of::Cut(a), Of::Cut(b)) => {
                Arc::ptr_eq(a, b) || (Arc::ptr_eq(&a.groups, &b.groups) && a.places == b.places)
            }
            (Of::Collected(a), Of::Collected(b)) => Arc::ptr_eq(a, b),
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
        self.targets() == 0
    }

    /// The hash its body's digest adds: the groups' own for the whole object.
    pub(super) fn hash(&self) -> u64 {
        let mut hash = Fnv::default();
        match &self.of {
            Of::Groups(g) if self.picks == 0 => return g.hash,
            Of::Placed(p) => return p.groups.hash,
            Of::Discovered(d) => return d.hash(),
            Of::Collected(p) => {
                hash.write(&p.stamp.to_le_bytes());
                hash.write(&self.picks.to_le_bytes());
            }
            Of::Groups(g) => {
                hash.write(&g.hash.to_le_bytes());
                hash.write(&self.picks.to_le_bytes());
            }
            Of::Cut(c) => {
                hash.write(&c.groups.hash.to_le_bytes());
                for p in c.places.iter() {
                    hash.write(&p.to_le_bytes());
                }
            }
        }
        hash.0
    }

    /// Targets held.
    pub fn targets(&self) -> usize {
        match (&self.of, self.picks) {
            (Of::Discovered(d), _) => d.targets(),
            (Of::Groups(g), 0) => g.targets(),
            (Of::Placed(p), _) => p.groups.targets(),
            (Of::Cut(c), _) => c.places.len(),
            (Of::Groups(_) | Of::Collected(_), picks) => picks.count_ones() as usize,
        }
    }

    /// The places held when only some addresses are, ascending; `None` for a whole
    /// object and discovered label sets.
    fn places(&self) -> Option<(&ObjectGroups, Places<'_>)> {
        match &self.of {
            Of::Groups(g) if self.picks != 0 => Some((g, Places::Mask(self.picks))),
            Of::Cut(c) => Some((&c.groups, Places::List(c.places.iter()))),
            _ => None,
        }
    }

    /// Its bytes (holes left out) and its holes; `None` for discovered label sets,
    /// whose length is known once they are written.
    pub(super) fn sizes(&self) -> Option<(usize, usize)> {
        if let Of::Collected(_) = &self.of {
            return None;
        }
        if let Some((g, places)) = self.places() {
            return Some(picked_sizes(g, places));
        }
        let g = self.groups()?;
        Some((g.bytes.len(), g.holes.len()))
    }

    /// The bytes' length once `job_json` fills the holes, as a body's length counts
    /// it; `None` as [`Share::sizes`].
    #[cfg(test)]
    pub(super) fn len_with(&self, job_json: &[u8]) -> Option<usize> {
        let (bytes, holes) = self.sizes()?;
        Some(bytes + holes * job_json.len())
    }

    /// Appends its bytes with `job_json` in the holes; discovered label sets leave
    /// out what `pruner` prunes.
    pub(super) fn write(&self, job_json: &[u8], pruner: &mut Pruner, out: &mut Vec<u8>) {
        match &self.of {
            Of::Discovered(d) => return d.write(pruner, out),
            Of::Collected(p) => {
                let picked = Places::Mask(self.picks).filter_map(|i| p.discovered.get(i));
                return write_label_sets(picked, pruner, out);
            }
            _ => {}
        }
        if let Some((g, places)) = self.places() {
            return write_picked(g, places, job_json, out);
        }
        if let Some(g) = self.groups() {
            g.write_from(0, job_json, out);
        }
    }
}

/// The places a share holds, ascending.
enum Places<'a> {
    Mask(u64),
    List(std::slice::Iter<'a, u32>),
}

impl Iterator for Places<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            Places::Mask(0) => None,
            Places::Mask(mask) => {
                let at = mask.trailing_zeros() as usize;
                *mask &= *mask - 1;
                Some(at)
            }
            Places::List(list) => list.next().map(|&p| p as usize),
        }
    }
}

/// Calls `f` with each group of `g` that holds one of `places` (ascending), and the
/// places of it held.
fn each_picked_group(
    g: &ObjectGroups,
    places: Places<'_>,
    mut f: impl FnMut(GroupSpan, &mut dyn Iterator<Item = usize>),
) {
    let mut places = places.peekable();
    for span in g.group_spans() {
        let (_, end) = span.addresses;
        if places.peek().is_none_or(|&p| p >= end) {
            continue;
        }
        let mut mine = std::iter::from_fn(|| places.next_if(|&p| p < end));
        f(span, &mut mine);
        // Whatever `f` left of this group's places is passed over.
        for _ in mine {}
    }
}

/// The bytes (holes left out) and holes of `places` of `g`.
fn picked_sizes(g: &ObjectGroups, places: Places<'_>) -> (usize, usize) {
    let (mut bytes, mut holes, mut groups) = (0, 0, 0usize);
    each_picked_group(g, places, |span, mine| {
        let (first, last) = (span.addresses.0, span.addresses.1 - 1);
        let head = g.addresses[first].0 as usize - span.bytes.0;
        let tail_from = g.addresses[last].1 as usize;
        let (mut picked, mut count) = (0, 0);
        for p in mine {
            let (start, end) = g.addresses[p];
            picked += (end - start) as usize;
            count += 1;
        }
        bytes += head + picked + count - 1 + (span.bytes.1 - tail_from);
        holes += g.holes_in(tail_from, span.bytes.1);
        groups += 1;
    });
    (bytes + groups.saturating_sub(1), holes)
}

/// Appends `places` of `g`: each group that holds one, with the addresses held (the
/// group's start, the picked addresses, then from the list's closing bracket on,
/// where its holes are), `job_json` in the holes.
fn write_picked(g: &ObjectGroups, places: Places<'_>, job_json: &[u8], out: &mut Vec<u8>) {
    let mut wrote_group = false;
    each_picked_group(g, places, |span, mine| {
        if wrote_group {
            out.push(b',');
        }
        wrote_group = true;
        let (first, last) = (span.addresses.0, span.addresses.1 - 1);
        out.extend_from_slice(&g.bytes[span.bytes.0..g.addresses[first].0 as usize]);
        for (n, p) in mine.enumerate() {
            if n > 0 {
                out.push(b',');
            }
            let (start, end) = g.addresses[p];
            out.extend_from_slice(&g.bytes[start as usize..end as usize]);
        }
        g.write_range(g.addresses[last].1 as usize, span.bytes.1, job_json, out);
    });
}
