//! An object's share served as its *discovered* label sets (the OpenTelemetry target
//! allocator's answer, see [`crate::service::fleet::target_allocator`]): the object's
//! discovered label sets, shared with the group's cache, and which of them the share
//! holds. Nothing is serialized until a body that holds it is sent, so a partition of
//! discovered labels costs a few words per object, not the labels' bytes again.

use std::sync::Arc;

use super::{ADDRESS_LABEL, Fnv, write_json_str};
use crate::labels::Labels;

/// Some of one object's discovered label sets, each written as a group of its own
/// when a body is sent.
#[derive(Debug)]
pub struct DiscoveredShare {
    /// The object's discovered label sets (the group's `Arc`).
    discovered: Arc<[Labels]>,
    /// The ones held, by index, ascending.
    picked: Box<[u32]>,
    /// What the body's digest adds: unique to this share's making (`stamp`) and what it
    /// picks, so that a body's ETag changes whenever one of its shares is made anew.
    hash: u64,
}

impl DiscoveredShare {
    /// The label sets of `discovered` at `picked` (ascending indices); `stamp` must
    /// differ from every other share's of the same job actor, since the labels' bytes
    /// are not read to make the digest.
    pub fn new(discovered: &Arc<[Labels]>, picked: Vec<u32>, stamp: u64) -> DiscoveredShare {
        let mut hash = Fnv::default();
        hash.write(&stamp.to_le_bytes());
        for i in &picked {
            hash.write(&i.to_le_bytes());
        }
        DiscoveredShare {
            discovered: Arc::clone(discovered),
            picked: picked.into(),
            hash: hash.0,
        }
    }

    /// The same picks of `discovered`, the object's label sets after a change that
    /// kept their number and addresses.
    pub fn of(&self, discovered: &Arc<[Labels]>, stamp: u64) -> DiscoveredShare {
        DiscoveredShare::new(discovered, self.picked.to_vec(), stamp)
    }

    /// True when `other` picks the same label sets of the very same object's.
    pub fn same_targets(&self, other: &DiscoveredShare) -> bool {
        Arc::ptr_eq(&self.discovered, &other.discovered) && self.picked == other.picked
    }

    /// The indices of the label sets held.
    pub fn picked(&self) -> &[u32] {
        &self.picked
    }

    /// Its digest hash.
    pub(super) fn hash(&self) -> u64 {
        self.hash
    }

    /// Label sets held.
    pub fn targets(&self) -> usize {
        self.picked.len()
    }

    /// Appends its label sets, one group each (in HTTP SD's form: the address, then
    /// every other label with a value). Written straight from the shared labels:
    /// nothing is copied or sorted (label sets iterate in name order). Discovered
    /// labels hold no job name, so there is no hole to fill.
    pub(super) fn write(&self, out: &mut Vec<u8>) {
        let mut first = true;
        for labels in (self.picked.iter()).filter_map(|&i| self.discovered.get(i as usize)) {
            let Some(address) = labels.get(ADDRESS_LABEL).filter(|a| !a.is_empty()) else {
                continue;
            };
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(b"{\"targets\":[");
            write_json_str(out, address);
            out.extend_from_slice(b"],\"labels\":{");
            let mut comma = false;
            for label in labels {
                if &*label.name == ADDRESS_LABEL || label.value.is_empty() {
                    continue;
                }
                if comma {
                    out.push(b',');
                }
                comma = true;
                write_json_str(out, &label.name);
                out.push(b':');
                write_json_str(out, &label.value);
            }
            out.extend_from_slice(b"}}");
        }
    }
}
