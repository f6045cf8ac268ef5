//! One object's target groups in HTTP SD JSON ([`ObjectGroups`]), serialized once and
//! kept, with where each address is in the bytes, so that a view can serve some of an
//! object's addresses by cutting its bytes instead of serializing its labels again.

use arcstr::ArcStr;

use super::{Fnv, JOB_LABEL, group_placed, one_group_by_address, write_json_str};
use crate::labels::Labels;

/// One object's target groups in HTTP SD JSON, serialized once and kept, so that a
/// job's body is assembled from its objects' parts instead of rebuilt from every
/// target, and a change to one object costs one object's serialization.
///
/// The groups are those of [`super::group_targets`] over the object's targets, written
/// as [`super::groups_json`] writes them, without the enclosing brackets. The value of
/// a `job` label that is the caller's placeholder string (recognised by pointer: in
/// `kubesd run`, the job actor's `scrape.job_name` when jobs share it) is left out, as
/// a *hole*: each job that shares these bytes writes its own name there when the body
/// is assembled.
#[derive(Debug, PartialEq, Eq)]
pub struct ObjectGroups {
    /// The groups, comma-separated; empty when the object has no target.
    pub(super) bytes: Box<[u8]>,
    /// Offsets in `bytes` where a job's name (as a JSON string) goes, ascending.
    pub(super) holes: Box<[u32]>,
    /// Targets in the groups.
    targets: u32,
    /// FNV-1a of `bytes` and `holes`: what the body's ETag is computed from.
    pub(super) hash: u64,
    /// For an object of two addresses or more: where each address (as a JSON string,
    /// quotes included) starts and ends in `bytes`, group after group, so that a view
    /// can take some of them without serializing the labels again
    /// ([`super::Share::picked`]). Its places are the addresses' places.
    pub(super) addresses: Box<[(u32, u32)]>,
    /// With `addresses`, for an object of more than one group: where each group after
    /// the first starts in `bytes`, and the place of its first address.
    groups: Box<[(u32, u32)]>,
}

/// One group of an object's bytes, as [`ObjectGroups::group_spans`] tells it.
#[derive(Clone, Copy, Debug)]
pub(super) struct GroupSpan {
    /// Where it starts and ends in the bytes.
    pub bytes: (usize, usize),
    /// The places of its addresses.
    pub addresses: (usize, usize),
}

impl ObjectGroups {
    /// The groups of `targets` (one object's, after relabelling), with a hole wherever
    /// a `job` label's value is `job_placeholder` itself.
    pub fn new(targets: &[Labels], job_placeholder: &ArcStr) -> ObjectGroups {
        ObjectGroups::placed(targets, job_placeholder, &mut Vec::new())
    }

    /// [`ObjectGroups::new`], telling in `places` where each target's address is: per
    /// target in order, its place among the addresses (group after group; 0 for an
    /// object of one address), `u32::MAX` for a label set that is no target (no
    /// address). Two targets with the same labels and address share a place.
    pub fn placed(
        targets: &[Labels],
        job_placeholder: &ArcStr,
        places: &mut Vec<u32>,
    ) -> ObjectGroups {
        places.clear();
        let groups =
            one_group_by_address(targets, places).unwrap_or_else(|| group_placed(targets, places));
        let mut bytes = Vec::new();
        let mut holes = Vec::new();
        let mut addresses = Vec::new();
        let mut starts = Vec::new();
        let count: usize = groups.iter().map(|g| g.targets.len()).sum();
        for (i, group) in groups.iter().enumerate() {
            if i > 0 {
                bytes.push(b',');
                starts.push((offset(bytes.len()), offset(addresses.len())));
            }
            bytes.extend_from_slice(b"{\"targets\":[");
            for (j, target) in group.targets.iter().enumerate() {
                if j > 0 {
                    bytes.push(b',');
                }
                let start = bytes.len();
                write_json_str(&mut bytes, target);
                addresses.push((offset(start), offset(bytes.len())));
            }
            bytes.extend_from_slice(b"],\"labels\":{");
            for (j, label) in group.labels.iter().enumerate() {
                if j > 0 {
                    bytes.push(b',');
                }
                write_json_str(&mut bytes, &label.name);
                bytes.push(b':');
                if &*label.name == JOB_LABEL && ArcStr::ptr_eq(&label.value, job_placeholder) {
                    holes.push(offset(bytes.len()));
                } else {
                    write_json_str(&mut bytes, &label.value);
                }
            }
            bytes.extend_from_slice(b"}}");
        }
        if count < 2 {
            // One address: nothing to cut.
            addresses.clear();
            starts.clear();
        }
        let mut hash = Fnv::default();
        hash.write(&bytes);
        for h in &holes {
            hash.write(&h.to_le_bytes());
        }
        ObjectGroups {
            bytes: bytes.into(),
            holes: holes.into(),
            targets: u32::try_from(count).unwrap_or(u32::MAX),
            hash: hash.0,
            addresses: addresses.into(),
            groups: starts.into(),
        }
    }

    /// For an object of two addresses or more, its addresses in order (group after
    /// group); `None` for others, and when an address is escaped in JSON (then it is
    /// not written as it reads).
    pub fn addresses(&self) -> Option<Vec<&str>> {
        if self.addresses.is_empty() {
            return None;
        }
        self.addresses
            .iter()
            .map(|&(start, end)| {
                let quoted = self
                    .bytes
                    .get(start as usize + 1..(end as usize).checked_sub(1)?)?;
                std::str::from_utf8(quoted)
                    .ok()
                    .filter(|a| !a.contains('\\'))
            })
            .collect()
    }

    /// How many places its addresses have: 0 for an object of one address or none.
    pub fn address_places(&self) -> usize {
        self.addresses.len()
    }

    /// True when both have the very same addresses in the same places, and the same
    /// bytes up to the last: a [`super::Share`] of one is then the same targets of the
    /// other.
    pub fn same_addresses(&self, other: &ObjectGroups) -> bool {
        let Some(&(_, end)) = self.addresses.last() else {
            return false;
        };
        let end = end as usize;
        self.addresses == other.addresses
            && self.groups == other.groups
            && self.bytes.get(..end) == other.bytes.get(..end)
    }

    /// True when the object has no target.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Targets in the groups.
    pub fn targets(&self) -> usize {
        self.targets as usize
    }

    /// Each group's bytes and addresses' places, in order (for an object with
    /// `addresses`).
    pub(super) fn group_spans(&self) -> impl Iterator<Item = GroupSpan> + '_ {
        let starts = std::iter::once((0, 0))
            .chain(self.groups.iter().map(|&(b, a)| (b as usize, a as usize)));
        let ends = (self.groups.iter())
            .map(|&(b, a)| (b as usize - 1, a as usize))
            .chain(std::iter::once((self.bytes.len(), self.addresses.len())));
        starts.zip(ends).map(|((b0, a0), (b1, a1))| GroupSpan {
            bytes: (b0, b1),
            addresses: (a0, a1),
        })
    }

    /// Appends the bytes from `from` on (no hole before it) with `job_json` in the
    /// holes.
    pub(super) fn write_from(&self, from: usize, job_json: &[u8], out: &mut Vec<u8>) {
        self.write_range(from, self.bytes.len(), job_json, out);
    }

    /// Appends the bytes from `from` to `to` with `job_json` in the holes between.
    pub(super) fn write_range(&self, from: usize, to: usize, job_json: &[u8], out: &mut Vec<u8>) {
        let mut at = from;
        let holes = self.holes.iter().map(|&h| h as usize);
        for hole in holes.filter(|&h| h >= from && h < to) {
            out.extend_from_slice(&self.bytes[at..hole]);
            out.extend_from_slice(job_json);
            at = hole;
        }
        out.extend_from_slice(&self.bytes[at..to]);
    }

    /// Holes between `from` and `to`.
    pub(super) fn holes_in(&self, from: usize, to: usize) -> usize {
        (self.holes.iter())
            .filter(|&&h| (h as usize) >= from && (h as usize) < to)
            .count()
    }
}

/// A position in an object's bytes (which never reach 4 GiB).
fn offset(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}
