//! Targets in the form Prometheus reads them from HTTP SD and file SD: a JSON array of
//! `{"targets": ["host:port", ...], "labels": {"name": "value", ...}}` groups.
//!
//! The same bytes serve both: `http_sd_config` reads them from kubesd's endpoint
//! (answered with `Content-Type: application/json`, `[]` when there are none), and
//! `file_sd_config` from a file [`write_file_atomically`] replaces. The output is
//! deterministic, so equal target sets give equal bytes and equal [`etag`]s, and an
//! unchanged list can be answered with `304 Not Modified`.

use arcstr::ArcStr;
use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::labels::{Label, Labels};

mod body;
mod discovered;
mod object_groups;
mod placed;
mod share;
pub use body::{BODY_CHUNK, Change, CutObjects, Digest, KeyedGroups, ObjectDigest, SdBody};
pub use discovered::{DiscoveredShare, Pruner};
pub use object_groups::ObjectGroups;
pub use placed::{KeptTarget, PlacedGroups};
pub use share::{MAX_PICKED, Share};

/// The label whose value is a target's address (defined once, in [`crate::relabel`]).
pub use crate::relabel::ADDRESS_LABEL;

/// The `Content-Type` HTTP SD requires.
pub const CONTENT_TYPE: &str = "application/json";

/// Targets that share every label but `__address__`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TargetGroup {
    /// The shared labels, sorted by name, without `__address__` and empty values.
    pub labels: Vec<Label>,
    /// The targets' addresses, sorted, each once.
    pub targets: Vec<ArcStr>,
}

/// Groups `targets` (each one's labels, with `__address__`) by their other labels.
///
/// Deterministic whatever the input order: groups are sorted by their labels (name,
/// then value, label by label), addresses within a group are sorted, and a target that
/// appears twice is listed once (its two copies cannot be told apart). Labels with
/// empty values are left out, as Prometheus treats them as absent. A label set without
/// `__address__` (or with an empty one) is not a target and is skipped.
pub fn group_targets<'a>(targets: impl IntoIterator<Item = &'a Labels>) -> Vec<TargetGroup> {
    group_placed(targets, &mut Vec::new())
}

/// [`group_targets`], telling in `places` (cleared first) where each label set's
/// address went: per label set in order, the place of its address among the groups'
/// addresses, group after group; `u32::MAX` for one that is no target.
fn group_placed<'a>(
    targets: impl IntoIterator<Item = &'a Labels>,
    places: &mut Vec<u32>,
) -> Vec<TargetGroup> {
    places.clear();
    let mut all: Vec<(Vec<Label>, ArcStr, u32)> = Vec::new();
    for (i, labels) in targets.into_iter().enumerate() {
        places.push(u32::MAX);
        let mut address = None;
        let mut rest = Vec::with_capacity(labels.len());
        for label in labels {
            if &*label.name == ADDRESS_LABEL {
                address = Some(ArcStr::clone(&label.value));
            } else if !label.value.is_empty() {
                rest.push(label.clone());
            }
        }
        let Some(address) = address.filter(|a| !a.is_empty()) else {
            continue;
        };
        all.push((rest, address, u32::try_from(i).unwrap_or(u32::MAX)));
    }
    // One sort instead of a tree of label vectors: targets share most of their labels
    // by pointer (a pod's targets its shared part, every pod its node's), so comparing
    // two label sets runs at pointer speed until the first label that differs; a tree
    // of label vectors would compare, and allocate, label by label.
    all.sort_unstable_by(|(la, aa, _), (lb, ab, _)| {
        cmp_label_sets(la, lb).then_with(|| cmp_shared(aa, ab))
    });
    let mut groups: Vec<TargetGroup> = Vec::new();
    let mut place = 0u32;
    for (labels, address, i) in all {
        match groups.last_mut() {
            Some(g) if cmp_label_sets(&g.labels, &labels).is_eq() => {
                // Sorted: a repeated target is next to its twin.
                if g.targets
                    .last()
                    .is_none_or(|last| !cmp_shared(last, &address).is_eq())
                {
                    g.targets.push(address);
                    place += 1;
                }
            }
            last => {
                place += u32::from(last.is_some());
                groups.push(TargetGroup {
                    labels,
                    targets: vec![address],
                });
            }
        }
        if let Some(at) = places.get_mut(i as usize) {
            *at = place;
        }
    }
    groups
}

/// [`group_targets`] of targets that share one base and have only their address of
/// their own (a pod's port targets, relabelled by rules that leave their own labels
/// alone): one group, found without copying each target's labels, `places` told as
/// [`group_placed`] tells them. `None` for other targets (`places` then untouched).
fn one_group_by_address(targets: &[Labels], places: &mut Vec<u32>) -> Option<Vec<TargetGroup>> {
    let first = targets.first()?;
    if targets.len() < 2 {
        return None;
    }
    let mut addresses: Vec<(ArcStr, u32)> = Vec::with_capacity(targets.len());
    for (i, target) in targets.iter().enumerate() {
        let [own] = target.own_labels() else {
            return None;
        };
        if &*own.name != ADDRESS_LABEL || !target.same_base(first) {
            return None;
        }
        if !own.value.is_empty() {
            let i = u32::try_from(i).unwrap_or(u32::MAX);
            addresses.push((ArcStr::clone(&own.value), i));
        }
    }
    places.clear();
    places.resize(targets.len(), u32::MAX);
    if addresses.is_empty() {
        return Some(Vec::new());
    }
    addresses.sort_unstable_by(|(a, _), (b, _)| cmp_shared(a, b));
    let mut unique: Vec<ArcStr> = Vec::with_capacity(addresses.len());
    for (address, i) in addresses {
        if unique
            .last()
            .is_none_or(|last| !cmp_shared(last, &address).is_eq())
        {
            unique.push(address);
        }
        places[i as usize] = u32::try_from(unique.len() - 1).unwrap_or(u32::MAX);
    }
    let labels = first
        .iter()
        .filter(|l| &*l.name != ADDRESS_LABEL && !l.value.is_empty())
        .cloned()
        .collect();
    Some(vec![TargetGroup {
        labels,
        targets: unique,
    }])
}

/// String order, settled without reading the strings when both are one shared string.
fn cmp_shared(a: &ArcStr, b: &ArcStr) -> std::cmp::Ordering {
    if ArcStr::ptr_eq(a, b) {
        std::cmp::Ordering::Equal
    } else {
        a.cmp(b)
    }
}

/// The order of `Vec<Label>` (label by label: name, then value), with shared strings
/// compared by pointer first.
fn cmp_label_sets(a: &[Label], b: &[Label]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = cmp_shared(&x.name, &y.name).then_with(|| cmp_shared(&x.value, &y.value));
        if o.is_ne() {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

impl Serialize for TargetGroup {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(2))?;
        map.serialize_entry("targets", &self.targets)?;
        map.serialize_entry("labels", &LabelMap(&self.labels))?;
        map.end()
    }
}

/// Labels as a JSON object, in name order.
struct LabelMap<'a>(&'a [Label]);

impl Serialize for LabelMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for label in self.0 {
            map.serialize_entry(&*label.name, &*label.value)?;
        }
        map.end()
    }
}

/// The HTTP SD / file SD JSON for `targets` (see [`group_targets`]): compact, `[]`
/// when empty, strings escaped by serde_json.
pub fn sd_json<'a>(targets: impl IntoIterator<Item = &'a Labels>) -> Vec<u8> {
    groups_json(&group_targets(targets))
}

/// The JSON for already grouped targets.
pub fn groups_json(groups: &[TargetGroup]) -> Vec<u8> {
    // Serializing strings and maps of strings into a Vec cannot fail; an empty array is
    // still a correct answer should it ever.
    serde_json::to_vec(groups).unwrap_or_else(|_| b"[]".to_vec())
}

/// The label whose placeholder value [`ObjectGroups`] leaves as a hole.
const JOB_LABEL: &str = "job";

/// `s` as a JSON string (quoted and escaped), appended to `out`.
fn write_json_str(out: &mut Vec<u8>, s: &str) {
    // What needs no escape is copied as it is.
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        return;
    }
    // Writing a string into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// True when `bytes` hold one that JSON escapes (and serde_json with it): a control
/// character, `"` or `\\`. Eight bytes at a time, as one word: every label of every
/// target written passes here.
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte of `word` below `n` (`n` ≤ 0x80) sets its high bit here.
    let below = |word: u64, n: u8| word.wrapping_sub(ONES * u64::from(n)) & !word & HIGH;
    let zero = |word: u64| below(word, 1);
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let Ok(eight) = <[u8; 8]>::try_from(chunk) else {
            return true;
        };
        let word = u64::from_ne_bytes(eight);
        let quote = zero(word ^ (ONES * u64::from(b'"')));
        let backslash = zero(word ^ (ONES * u64::from(b'\\')));
        if below(word, 0x20) | quote | backslash != 0 {
            return true;
        }
    }
    (words.remainder().iter()).any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// FNV-1a, 64 bits: fixed by its definition, so equal bodies get equal ETags on every
/// replica and after restarts.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// A strong HTTP `ETag` for `body`, quoted as HTTP requires: the FNV-1a 64-bit hash of
/// the bytes in hex, e.g. `"cbf29ce484222325"`. FNV because it is fixed by its
/// definition (std's hasher may change between Rust releases), so kubesd replicas and
/// restarts give the same tag for the same list.
pub fn etag(body: &[u8]) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut hash = OFFSET;
    for &b in body {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(PRIME);
    }
    format!("\"{hash:016x}\"")
}

/// True if an `If-None-Match` header value names `etag` (so the answer may be
/// `304 Not Modified`): `*`, or a comma-separated list of tags, weak (`W/`) or not,
/// compared weakly as RFC 9110 says for `If-None-Match`.
pub fn etag_matches(if_none_match: &str, etag: &str) -> bool {
    let strip = |t: &str| t.trim().trim_start_matches("W/").to_string();
    let want = strip(etag);
    if_none_match
        .split(',')
        .any(|tag| tag.trim() == "*" || strip(tag) == want)
}

/// Replaces the file at `path` with `contents` so that a reader (Prometheus' file SD
/// watching the directory) sees the old file or the new one, never a partial one:
/// written to a temporary file in the same directory (whose name does not end in
/// `.json` or `.yml`, so file SD patterns skip it), flushed to disk, then renamed over
/// `path`, and the directory flushed so the rename survives a crash.
pub fn write_file_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other(format!("{}: not a file name", path.display())))?;
    let tmp = dir.join(format!(
        ".{}.{}-{:x}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        fastrand::u64(..)
    ));
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        file.write_all(contents)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        // Leave no temporary file behind; the original error is the one to report.
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    // Flushing a directory is how POSIX makes a rename durable; elsewhere it may not
    // be possible, and the rename itself is already atomic.
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn target(pairs: &[(&str, &str)]) -> Labels {
        Labels::from_pairs(pairs.iter().copied())
    }

    fn json(targets: &[Labels]) -> String {
        String::from_utf8(sd_json(targets)).expect("utf-8")
    }

    #[test]
    fn needs_escape_finds_every_byte_json_escapes_wherever_it_is() {
        let naive = |bytes: &[u8]| bytes.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        // Every byte at every place of strings up to 17 long, among plain ASCII and
        // among bytes with the high bit set (UTF-8's), so that every lane is tried.
        for fill in [b'a', 0x80, 0xff, b' ', b'!', b'#', b'[', b']'] {
            for len in 1..=17 {
                for at in 0..len {
                    for b in 0..=255u8 {
                        let mut bytes = vec![fill; len];
                        bytes[at] = b;
                        assert_eq!(needs_escape(&bytes), naive(&bytes), "{bytes:?}");
                    }
                }
            }
        }
        assert!(!needs_escape(b""));
    }

    #[test]
    fn a_string_is_written_as_serde_json_writes_it() {
        for s in [
            "",
            "plain",
            "a \"quoted\" word",
            "back\\slash",
            "tab\there",
            "\u{7f}é😀",
            "0123456789abcdef\n",
        ] {
            let mut out = Vec::new();
            write_json_str(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).expect("a string"), "{s:?}");
        }
    }

    #[test]
    fn empty_is_an_empty_array() {
        assert_eq!(json(&[]), "[]");
        // Label sets without an address are not targets.
        assert_eq!(json(&[target(&[("job", "x")])]), "[]");
    }

    #[test]
    fn groups_by_labels_other_than_the_address() {
        let targets = [
            target(&[("__address__", "10.0.0.2:80"), ("app", "web"), ("ns", "a")]),
            target(&[("__address__", "10.0.0.9:80"), ("app", "db"), ("ns", "a")]),
            target(&[("__address__", "10.0.0.1:80"), ("ns", "a"), ("app", "web")]),
            // Same target twice: listed once.
            target(&[("__address__", "10.0.0.1:80"), ("app", "web"), ("ns", "a")]),
            // An empty value is the same as no label.
            target(&[
                ("__address__", "10.0.0.3:80"),
                ("app", "web"),
                ("ns", "a"),
                ("x", ""),
            ]),
        ];
        assert_eq!(
            json(&targets),
            r#"[{"targets":["10.0.0.9:80"],"labels":{"app":"db","ns":"a"}},{"targets":["10.0.0.1:80","10.0.0.2:80","10.0.0.3:80"],"labels":{"app":"web","ns":"a"}}]"#
        );
        // Input order does not matter.
        let mut reversed = targets.to_vec();
        reversed.reverse();
        assert_eq!(json(&reversed), json(&targets));
        // A target with no other labels gets an empty object.
        assert_eq!(
            json(&[target(&[("__address__", "h:1")])]),
            r#"[{"targets":["h:1"],"labels":{}}]"#
        );
    }

    /// The sort-based grouping gives exactly what a tree of label vectors gives (the
    /// definition), whether equal strings are shared or separate copies.
    #[test]
    fn grouping_matches_a_tree_of_label_vectors() {
        use std::collections::{BTreeMap, BTreeSet};
        let mut rng = fastrand::Rng::with_seed(7);
        let shared: Vec<ArcStr> = ["a", "b", "c", "", "10.0.0.1:80", "10.0.0.2:80"]
            .iter()
            .map(|s| ArcStr::from(*s))
            .collect();
        for _ in 0..200 {
            let targets: Vec<Labels> = (0..rng.usize(0..30))
                .map(|_| {
                    let pick = |rng: &mut fastrand::Rng| -> ArcStr {
                        let s = &shared[rng.usize(..shared.len())];
                        // Half the time an equal but separate string.
                        if rng.bool() {
                            ArcStr::clone(s)
                        } else {
                            ArcStr::from(&**s)
                        }
                    };
                    let mut pairs: Vec<(ArcStr, ArcStr)> = Vec::new();
                    if rng.u8(..10) > 0 {
                        pairs.push((ArcStr::from(ADDRESS_LABEL), pick(&mut rng)));
                    }
                    for name in ["n1", "n2", "n3"] {
                        if rng.bool() {
                            pairs.push((ArcStr::from(name), pick(&mut rng)));
                        }
                    }
                    Labels::from_pairs(pairs)
                })
                .collect();
            let mut tree: BTreeMap<Vec<Label>, BTreeSet<ArcStr>> = BTreeMap::new();
            for t in &targets {
                let Some(address) = t.get(ADDRESS_LABEL).filter(|a| !a.is_empty()) else {
                    continue;
                };
                let rest: Vec<Label> = t
                    .iter()
                    .filter(|l| &*l.name != ADDRESS_LABEL && !l.value.is_empty())
                    .cloned()
                    .collect();
                tree.entry(rest).or_default().insert(ArcStr::from(address));
            }
            let want: Vec<TargetGroup> = tree
                .into_iter()
                .map(|(labels, targets)| TargetGroup {
                    labels,
                    targets: targets.into_iter().collect(),
                })
                .collect();
            assert_eq!(group_targets(&targets), want);
        }
    }

    #[test]
    fn values_are_escaped_and_round_trip() {
        let value = "quote\" backslash\\ newline\n tab\t ctrl\u{1} ünï €";
        let body = sd_json(&[target(&[("__address__", "h:1"), ("__meta_x", value)])]);
        let parsed: serde_json::Value = serde_json::from_slice(&body).expect("valid JSON");
        assert_eq!(parsed[0]["labels"]["__meta_x"], value);
        assert_eq!(parsed[0]["targets"][0], "h:1");
        let text = String::from_utf8(body).expect("utf-8");
        assert!(
            text.contains(r#"quote\" backslash\\ newline\n tab\t ctrl\u0001"#),
            "{text}"
        );
    }

    /// Objects `objects[range]` under keys that sort as their indexes.
    fn keyed(objects: &[Arc<ObjectGroups>], range: std::ops::Range<usize>) -> KeyedGroups {
        let mut map = KeyedGroups::default();
        for i in range {
            let key = crate::model::ObjectKey::new(
                &ArcStr::from("ns"),
                &ArcStr::from(format!("pod-{i:03}")),
            );
            map.insert(&key, &Share::whole(&objects[i]));
        }
        map
    }

    /// Streamed pieces join into the whole body; each ends with the object that brings
    /// it to the piece size; empty objects and parts are passed over.
    #[test]
    fn pieces_join_into_the_body_and_keep_to_their_size() {
        let placeholder = ArcStr::from("placeholder");
        let objects: Vec<Arc<ObjectGroups>> = (0..50)
            .map(|i| {
                let labels: Vec<Labels> = (0..i % 4)
                    .map(|p| {
                        target(&[
                            ("__address__", &format!("10.0.{i}.{p}:80")),
                            ("pod", &"p".repeat(i * 7)),
                        ])
                    })
                    .collect();
                Arc::new(ObjectGroups::new(&labels, &placeholder))
            })
            .collect();
        let parts = vec![
            keyed(&objects, 0..20),
            KeyedGroups::default(),
            keyed(&objects, 20..50),
        ];
        let body = SdBody::new("job", parts);
        let whole = body.to_vec();
        assert_eq!(whole.len(), body.len());
        serde_json::from_slice::<serde_json::Value>(&whole).expect("the body is JSON");
        for size in [1, 64, 300, 1000, 1 << 20] {
            let pieces: Vec<bytes::Bytes> = body.chunks_of(size).collect();
            assert_eq!(pieces.concat(), whole, "size {size}");
            let largest = objects
                .iter()
                .map(|o| Share::whole(o).len_with(b"\"job\"").unwrap_or(0) + 2)
                .max()
                .unwrap_or(0);
            // A piece ends with the object that brings it to `size`.
            for piece in &pieces {
                assert!(
                    piece.len() < size + largest + 1,
                    "size {size}: {}",
                    piece.len()
                );
            }
        }
    }

    /// Objects handed out one by one, as a member's view is cut from placements.
    #[derive(Debug)]
    struct Handed(KeyedGroups);

    impl CutObjects for Handed {
        fn each_from(
            &self,
            from: Option<&crate::model::ObjectKey>,
            f: &mut dyn FnMut(&crate::model::ObjectKey, &Share) -> bool,
        ) {
            let skipped = self
                .0
                .iter()
                .skip_while(|(key, _)| from.is_some_and(|k| *key < k));
            for (key, share) in skipped {
                if !f(key, share) {
                    return;
                }
            }
        }

        fn digest(&self) -> Digest {
            let mut digest = Digest::default();
            for (key, share) in self.0.iter() {
                digest.add_object(&ObjectDigest::of(key, share));
            }
            digest
        }
    }

    /// A body cut from its objects as it is written has the bytes, length and ETag of
    /// the same objects kept in maps, in pieces of any size.
    #[test]
    fn a_body_cut_as_written_is_the_body_of_its_objects_kept() {
        let placeholder = ArcStr::from("placeholder");
        let objects: Vec<Arc<ObjectGroups>> = (0..50)
            .map(|i| {
                let labels: Vec<Labels> = (0..1 + i % 3)
                    .map(|p| target(&[("__address__", &format!("10.0.{i}.{p}:80"))]))
                    .collect();
                Arc::new(ObjectGroups::new(&labels, &placeholder))
            })
            .collect();
        let parts = [
            keyed(&objects, 0..20),
            KeyedGroups::default(),
            keyed(&objects, 20..50),
        ];
        let kept = SdBody::new("job", parts.to_vec());
        let handed: Vec<Arc<dyn CutObjects>> = (parts.iter())
            .map(|p| Arc::new(Handed(p.clone())) as Arc<dyn CutObjects>)
            .collect();
        let cut = SdBody::cut("job", handed);
        assert_eq!(cut.etag, kept.etag);
        assert_eq!(cut.len(), kept.len());
        assert_eq!(cut.targets, kept.targets);
        let whole = kept.to_vec();
        for size in [1, 64, 300, 1 << 20] {
            let pieces: Vec<bytes::Bytes> = cut.chunks_of(size).collect();
            assert_eq!(pieces.concat(), whole, "size {size}");
            assert!(size > 1000 || pieces.len() > 2, "size {size}: one piece");
        }
    }

    /// Discovered label sets, written only as the body is sent, give the bytes their
    /// groups would, mixed with serialized objects and cut in pieces of any size.
    #[test]
    fn discovered_shares_are_written_as_their_groups_in_pieces_of_any_size() {
        let placeholder = ArcStr::from("placeholder");
        let mut map = KeyedGroups::default();
        let mut expected: Vec<Vec<u8>> = Vec::new();
        for i in 0..30usize {
            let labels: Arc<[Labels]> = (0..3)
                .map(|p| {
                    target(&[
                        ("__address__", &format!("10.0.{i}.{p}:80")),
                        ("port", &p.to_string()),
                        ("pod", &"p".repeat(i * 5)),
                        ("quoted", &format!("say \"{i}\"\n")),
                    ])
                })
                .collect();
            let picked: Vec<u32> = (0..3u32)
                .filter(|&p| (i + p as usize).is_multiple_of(2))
                .collect();
            let held: Vec<Labels> = picked.iter().map(|&p| labels[p as usize].clone()).collect();
            let groups = Arc::new(ObjectGroups::new(&held, &placeholder));
            let key = crate::model::ObjectKey::new(
                &ArcStr::from("ns"),
                &ArcStr::from(format!("pod-{i:03}")),
            );
            let share = match i % 3 {
                0 => Share::whole(&groups),
                _ => Share::discovered(DiscoveredShare::new(&labels, picked, i as u64)),
            };
            map.insert(&key, &share);
            let mut bytes = Vec::new();
            groups.write_from(0, b"\"job\"", &mut bytes);
            expected.push(bytes);
        }
        let body = SdBody::new("job", vec![map]);
        assert_eq!(body.known_len(), None);
        let whole = body.to_vec();
        let mut want = b"[".to_vec();
        want.extend_from_slice(&expected.join(&b',')[..]);
        want.push(b']');
        assert_eq!(
            String::from_utf8_lossy(&whole),
            String::from_utf8_lossy(&want)
        );
        for size in [1, 64, 300, 1000, 1 << 20] {
            let pieces: Vec<bytes::Bytes> = body.chunks_of(size).collect();
            assert_eq!(pieces.concat(), whole, "size {size}");
        }
    }

    /// A body's length and ETag, kept from its parts' digests, are those of its bytes:
    /// equal sets give equal tags whatever order their objects came and went in, and
    /// a removed object takes its share away.
    #[test]
    fn digests_follow_the_objects_whatever_their_order() {
        let placeholder = ArcStr::from("placeholder");
        let objects: Vec<Arc<ObjectGroups>> = (0..12)
            .map(|i| {
                let labels: Vec<Labels> = (0..i % 3)
                    .map(|p| target(&[("__address__", &format!("10.0.{i}.{p}:80")), ("job", "x")]))
                    .collect();
                Arc::new(ObjectGroups::new(&labels, &placeholder))
            })
            .collect();
        let forward = SdBody::new("job", vec![keyed(&objects, 0..5), keyed(&objects, 5..12)]);
        assert_eq!(forward.len(), forward.to_vec().len());
        let mut backward = KeyedGroups::default();
        let mut extra = keyed(&objects, 5..12);
        for i in (0..5).rev() {
            let key = crate::model::ObjectKey::new(
                &ArcStr::from("ns"),
                &ArcStr::from(format!("pod-{i:03}")),
            );
            backward.insert(&key, &Share::whole(&objects[i]));
        }
        let key = crate::model::ObjectKey::new(&ArcStr::from("ns"), &ArcStr::from("pod-999"));
        let stray = Share::whole(&Arc::new(ObjectGroups::new(
            &[target(&[("__address__", "10.9.9.9:80")])],
            &placeholder,
        )));
        extra.insert(&key, &stray);
        let with_stray = SdBody::new("job", vec![backward.clone(), extra.clone()]);
        assert_ne!(with_stray.etag, forward.etag);
        assert!(extra.remove(&key, &stray));
        let again = SdBody::new("job", vec![backward, extra]);
        assert_eq!(again.to_vec(), forward.to_vec());
        assert_eq!(
            (again.len(), again.targets),
            (forward.len(), forward.targets)
        );
        assert_eq!(again.etag, forward.etag);
        assert_eq!(SdBody::new("job", Vec::new()).to_vec(), b"[]");
    }

    /// A share of an object of one group is that group written with only the picked
    /// addresses, holes filled, its length as counted.
    #[test]
    fn a_picked_share_is_the_group_with_those_addresses() {
        let placeholder = ArcStr::from("placeholder");
        let with_job = |a: &str| {
            Labels::from_pairs([
                ("__address__", ArcStr::from(a)),
                ("app", ArcStr::from("web")),
                ("job", placeholder.clone()),
            ])
        };
        let addresses = ["10.0.0.1:80", "10.0.0.1:81", "10.0.0.1:82", "10.0.0.1:83"];
        let targets: Vec<Labels> = addresses.iter().map(|a| with_job(a)).collect();
        let whole = Arc::new(ObjectGroups::new(&targets, &placeholder));
        assert_eq!(whole.addresses(), Some(addresses.to_vec()));
        for picks in [vec![0], vec![1, 3], vec![0, 1, 2, 3], vec![3]] {
            let mask = picks.iter().fold(0u64, |m, &i| m | 1 << i);
            let share = Share::picked(&whole, mask).expect("addresses of the group");
            let mut got = Vec::new();
            share.write(b"\"pods\"", &mut Pruner::default(), &mut got);
            let subset: Vec<Labels> = picks
                .iter()
                .map(|&i| {
                    target(&[
                        ("__address__", addresses[i as usize]),
                        ("app", "web"),
                        ("job", "pods"),
                    ])
                })
                .collect();
            let want = groups_json(&group_targets(&subset));
            assert_eq!(got, want[1..want.len() - 1], "{picks:?}");
            assert_eq!(share.len_with(b"\"pods\""), Some(got.len()), "{picks:?}");
            assert_eq!(share.targets(), picks.len());
        }
        assert!(Share::picked(&whole, 0).is_none(), "no address");
        assert!(
            Share::picked(&whole, 1 << 4).is_none(),
            "an address it has not"
        );
        let one = ObjectGroups::new(&targets[..1], &placeholder);
        assert_eq!(one.addresses(), None, "one address: nothing to share");
    }

    /// Any subset of an object's addresses, cut from its bytes (by mask, or listed),
    /// is what serializing the targets at those addresses gives, byte for byte, over
    /// objects of several groups, repeated targets, targets without an address and
    /// holes; each target's place names its own address.
    #[test]
    fn cut_addresses_are_the_groups_of_their_targets() {
        let placeholder = ArcStr::from("placeholder");
        let mut rng = fastrand::Rng::with_seed(11);
        for _ in 0..300 {
            let targets: Vec<Labels> = (0..rng.usize(1..12))
                .map(|_| {
                    let mut pairs: Vec<(&str, ArcStr)> = vec![
                        ("app", ArcStr::from(["web", "db"][rng.usize(..2)])),
                        ("job", placeholder.clone()),
                    ];
                    if rng.u8(..8) > 0 {
                        let address = format!("10.0.0.{}:80", rng.u8(..6));
                        pairs.push(("__address__", ArcStr::from(address)));
                    }
                    if rng.bool() {
                        pairs.push(("port", ArcStr::from(["a", "b", ""][rng.usize(..3)])));
                    }
                    Labels::from_pairs(pairs)
                })
                .collect();
            let mut places = Vec::new();
            let whole = Arc::new(ObjectGroups::placed(&targets, &placeholder, &mut places));
            assert_eq!(places.len(), targets.len());
            let count = whole.address_places();
            let named = whole.addresses().unwrap_or_default();
            for (target, &place) in targets.iter().zip(&places) {
                let address = target.get("__address__").unwrap_or("");
                match (address.is_empty(), count) {
                    (true, _) => assert_eq!(place, u32::MAX),
                    (false, 0) => assert_eq!(place, 0),
                    (false, _) => assert_eq!(named[place as usize], address),
                }
            }
            if count == 0 {
                continue;
            }
            let picks: Vec<u32> = (0..count as u32).filter(|_| rng.bool()).collect();
            let subset: Vec<Labels> = (targets.iter().zip(&places))
                .filter(|(_, p)| picks.contains(p))
                .map(|(t, _)| t.clone())
                .collect();
            let want = ObjectGroups::new(&subset, &placeholder);
            let mut want_bytes = Vec::new();
            want.write_from(0, b"\"pods\"", &mut want_bytes);
            let mask = picks.iter().fold(0u64, |m, &p| m | 1 << p);
            let shares = [
                Share::picked(&whole, mask),
                Share::cut(&whole, picks.clone()),
            ];
            for share in shares.into_iter().flatten() {
                let mut got = Vec::new();
                share.write(b"\"pods\"", &mut Pruner::default(), &mut got);
                assert_eq!(
                    String::from_utf8_lossy(&got),
                    String::from_utf8_lossy(&want_bytes),
                    "{picks:?} of {targets:?}"
                );
                assert_eq!(share.len_with(b"\"pods\""), Some(got.len()));
                assert_eq!(share.targets(), picks.len());
            }
            assert_eq!(picks.is_empty(), Share::cut(&whole, picks).is_none());
        }
    }

    /// Targets over one base that differ only in their address come out as
    /// [`group_targets`] groups them: one group, addresses sorted, each once, empty
    /// ones left out.
    #[test]
    fn targets_differing_only_in_address_form_the_same_group_either_way() {
        let base = target(&[("app", "web"), ("empty", ""), ("ns", "a")]);
        let with_address = |a: &str| {
            let mut own = crate::labels::LabelsBuilder::new();
            own.add("__address__", a.to_string());
            base.merged(own)
        };
        let placeholder = ArcStr::from("placeholder");
        for addresses in [
            vec!["10.0.0.2:80", "10.0.0.1:80", "10.0.0.2:80", ""],
            vec!["10.0.0.3:80", "10.0.0.1:81"],
            vec!["", ""],
        ] {
            let targets: Vec<Labels> = addresses.iter().map(|a| with_address(a)).collect();
            assert!(
                one_group_by_address(&targets, &mut Vec::new()).is_some(),
                "{addresses:?}"
            );
            let fast = Share::whole(&Arc::new(ObjectGroups::new(&targets, &placeholder)));
            let general = groups_json(&group_targets(&targets));
            let mut bytes = b"[".to_vec();
            fast.write(b"\"job\"", &mut Pruner::default(), &mut bytes);
            bytes.push(b']');
            assert_eq!(
                String::from_utf8_lossy(&bytes),
                String::from_utf8_lossy(&general),
                "{addresses:?}"
            );
        }
        // A target with another own label is not such a target.
        let mut own = crate::labels::LabelsBuilder::new();
        own.add("__address__", "10.0.0.1:80");
        own.add("port", "80");
        let other = [with_address("10.0.0.2:80"), base.merged(own)];
        assert!(one_group_by_address(&other, &mut Vec::new()).is_none());
    }

    #[test]
    fn etags_are_stable_and_quoted() {
        assert_eq!(etag(b""), "\"cbf29ce484222325\"");
        assert_eq!(etag(b"a"), "\"af63dc4c8601ec8c\"");
        assert_ne!(etag(b"[]"), etag(b"[ ]"));
        let tag = etag(b"[]");
        assert!(etag_matches(&tag, &tag));
        assert!(etag_matches(&format!("\"x\", W/{tag}"), &tag));
        assert!(etag_matches("*", &tag));
        assert!(!etag_matches("\"other\"", &tag));
    }

    #[test]
    fn file_is_replaced_whole() {
        let dir = std::env::temp_dir().join(format!(
            "kubesd-sd-output-{}-{:x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("targets.json");
        write_file_atomically(&path, b"[1]").expect("first write");
        write_file_atomically(&path, b"[]").expect("replace");
        assert_eq!(std::fs::read(&path).expect("read"), b"[]");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["targets.json"], "no temporary file left");
        assert!(write_file_atomically(&dir.join("missing/t.json"), b"[]").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
