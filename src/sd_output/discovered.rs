//! An object's share served as its *discovered* label sets (the OpenTelemetry target
//! allocator's answer, see `service::api::allocator`): the object's
//! discovered label sets, shared with the group's cache, and which of them the share
//! holds. Nothing is serialized until a body that holds it is sent, so a partition of
//! discovered labels costs a few words per object, not the labels' bytes again. The
//! `__meta_*` labels no rule of the job reads are left out as they are written, unless
//! the body is made to serve them all ([`Pruner`], [`ReadableMeta`]).

use std::sync::Arc;

use arcstr::ArcStr;

use super::{ADDRESS_LABEL, Fnv, write_json_str};
use crate::labels::{Label, Labels};
use crate::relabel::ReadableMeta;
use crate::relabel::by_address::ByAddress;

/// Some of one object's discovered label sets, each written as a group of its own
/// when a body is sent (any number of them; an object's first 64 are held by a mask,
/// see [`super::Share::collected`]).
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

    /// Appends its label sets ([`write_label_sets`]).
    pub(super) fn write(&self, pruner: &mut Pruner, out: &mut Vec<u8>) {
        let sets = (self.picked.iter()).filter_map(|&i| self.discovered.get(i as usize));
        write_label_sets(sets, pruner, out);
    }
}

/// Appends `sets` (an object's discovered label sets), one group each (in HTTP SD's
/// form: the address, then every other label with a value that `pruner` keeps),
/// written straight from the shared labels; a set without an address is passed over.
/// Discovered labels hold no job name, so there is no hole to fill. The labels an
/// object's targets share (their base, see [`Labels::merged`]) are written once and
/// copied into each target's group after its own labels: a pod's targets differ in a
/// few port labels among dozens they share. A JSON object's keys have no order for its
/// readers, and the bytes are the same on every replica.
pub(super) fn write_label_sets<'a>(
    sets: impl Iterator<Item = &'a Labels>,
    pruner: &mut Pruner,
    out: &mut Vec<u8>,
) {
    let mut first = true;
    let mut base = SharedBase::default();
    for labels in sets {
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
        match base.bytes_for(labels, pruner) {
            Some(shared) => {
                let wrote = write_labels(out, labels.own_labels(), pruner);
                if wrote && !shared.is_empty() {
                    out.push(b',');
                }
                out.extend_from_slice(shared);
            }
            None => {
                write_labels(out, labels, pruner);
            }
        }
        out.extend_from_slice(b"}}");
    }
}

/// The labels of an object's targets' base, serialized once (see
/// [`write_label_sets`]).
#[derive(Default)]
struct SharedBase {
    /// A label set whose base `bytes` are.
    of: Option<Labels>,
    /// That base's labels, as a group's labels are written.
    bytes: Vec<u8>,
}

impl SharedBase {
    /// The base labels of `labels`, serialized, when its own labels are written
    /// beside them: it has own labels, none of which replaces one of the base's.
    /// `None` when `labels` must be written label by label.
    fn bytes_for(&mut self, labels: &Labels, pruner: &mut Pruner) -> Option<&[u8]> {
        if labels.own_labels().is_empty() {
            return None;
        }
        if !self.of.as_ref().is_some_and(|of| of.same_base(labels)) {
            let base = labels.without_own();
            self.bytes.clear();
            write_labels(&mut self.bytes, &base, pruner);
            self.of = Some(base);
        }
        let base = self.of.as_ref()?;
        // An own label that replaces one of the base's is counted once in the merged
        // set: none does when the set has as many labels as its parts together.
        let shadows = labels.len() != base.len() + labels.own_labels().len();
        (!shadows).then_some(&self.bytes[..])
    }
}

/// Which discovered labels a body serves, and how each one's name is written,
/// remembered by name while it is written: every label, or those its job's rules may
/// read and those that are not `__meta_*` labels ([`ReadableMeta`]); never the
/// address, which a group holds apart.
#[derive(Default)]
pub struct Pruner {
    readable: Option<Arc<ReadableMeta>>,
    /// Each name met: its key as written (`"name":`), `None` when it is left out.
    keys: ByAddress<Option<Box<[u8]>>>,
}

impl Pruner {
    /// Keeping the labels `readable` keeps (every label when `None`).
    pub fn new(readable: Option<&Arc<ReadableMeta>>) -> Pruner {
        Pruner {
            readable: readable.cloned(),
            keys: ByAddress::default(),
        }
    }

    /// How label `name` is written as a group's key, or `None` if it is left out.
    fn key(&mut self, name: &ArcStr) -> Option<&[u8]> {
        let readable = &self.readable;
        let key = self.keys.decided(name, |name| {
            let kept = &**name != ADDRESS_LABEL && readable.as_ref().is_none_or(|r| r.keeps(name));
            kept.then(|| {
                let mut key = Vec::with_capacity(name.len() + 3);
                write_json_str(&mut key, name);
                key.push(b':');
                key.into()
            })
        });
        key.as_deref()
    }
}

/// Writes `labels` as a group's labels (`"name":"value"`, comma-separated): all but
/// the address, those without a value and those `pruner` leaves out. True if it wrote
/// one.
fn write_labels<'a>(
    out: &mut Vec<u8>,
    labels: impl IntoIterator<Item = &'a Label>,
    pruner: &mut Pruner,
) -> bool {
    let mut wrote = false;
    for label in labels {
        // The name first: names are few and shared, a value is read only if it is kept.
        let Some(key) = pruner.key(&label.name) else {
            continue;
        };
        if label.value.is_empty() {
            continue;
        }
        if wrote {
            out.push(b',');
        }
        wrote = true;
        out.extend_from_slice(key);
        write_json_str(out, &label.value);
    }
    wrote
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::labels::LabelsBuilder;

    /// A target over `base` with `own` labels laid over it, as a pod's targets are built.
    fn target(base: &Labels, own: &[(&str, &str)]) -> Labels {
        let mut b = LabelsBuilder::new();
        for (name, value) in own {
            b.add(name.to_string(), value.to_string());
        }
        base.merged(b)
    }

    /// Each group's address and labels, as a reader decodes them.
    fn read(bytes: &[u8]) -> Vec<(String, BTreeMap<String, String>)> {
        let groups: Vec<serde_json::Value> = serde_json::from_slice(bytes).expect("JSON");
        groups
            .iter()
            .map(|g| {
                let address = g["targets"][0].as_str().expect("an address").to_string();
                let labels = serde_json::from_value(g["labels"].clone()).expect("labels");
                (address, labels)
            })
            .collect()
    }

    /// What a label set must be served as: its labels with a value, but the address.
    fn expected(labels: &Labels) -> (String, BTreeMap<String, String>) {
        let address = labels.get(ADDRESS_LABEL).unwrap_or_default().to_string();
        let rest = (labels.iter())
            .filter(|l| &*l.name != ADDRESS_LABEL && !l.value.is_empty())
            .map(|l| (l.name.to_string(), l.value.to_string()))
            .collect();
        (address, rest)
    }

    #[test]
    fn targets_that_share_a_base_are_served_with_every_label_they_have() {
        let pod = Labels::from_pairs([("app", "web"), ("pod", "a"), ("zone", "east")]);
        let other = Labels::from_pairs([("app", "db"), ("pod", "b")]);
        let empty = Labels::from_pairs([("gone", "")]);
        let discovered: Arc<[Labels]> = Arc::from(vec![
            target(&pod, &[("__address__", "10.0.0.1:80"), ("port", "80")]),
            target(&pod, &[("__address__", "10.0.0.1:81"), ("port", "81")]),
            // Own labels that replace the base's: one with a value, one without.
            target(&pod, &[("__address__", "10.0.0.1:82"), ("app", "side")]),
            target(&pod, &[("__address__", "10.0.0.1:83"), ("zone", "")]),
            target(&other, &[("__address__", "10.0.0.2:80")]),
            Labels::from_pairs([("__address__", "10.0.0.3:80"), ("flat", "yes")]),
            // A base with no label of value: nothing to copy after the own labels.
            target(&empty, &[("__address__", "10.0.0.4:80"), ("port", "80")]),
            target(&empty, &[("__address__", "10.0.0.4:81"), ("port", "81")]),
            // No address: not a target for a collector.
            target(&pod, &[("port", "90")]),
        ]);
        let share = DiscoveredShare::new(&discovered, (0..9).collect(), 1);
        let mut out = vec![b'['];
        share.write(&mut Pruner::default(), &mut out);
        out.push(b']');
        let want: Vec<_> = discovered[..8].iter().map(expected).collect();
        assert_eq!(read(&out), want);
    }
}
