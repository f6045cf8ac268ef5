//! Target label sets: what discovery hands to a scrape job for each target.

use arcstr::ArcStr;
use std::cell::RefCell;
use std::fmt;

use triomphe::ThinArc;

/// One label of a target: a name and a value, both shared strings.
///
/// Shared because most values repeat: every target of a pod carries the pod's labels,
/// and every pod on a node the node's. Cloning a label costs two reference counts.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label {
    /// The label name, e.g. `__meta_kubernetes_pod_name`.
    pub name: ArcStr,
    /// The value; empty is equivalent to absent, as in Prometheus.
    pub value: ArcStr,
}

impl fmt::Debug for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?}", self.name, self.value)
    }
}

/// The label set of one target: sorted by name, each name once.
///
/// Immutable and shared: cloning a label set (the group's cache, every subscriber, the
/// agent's own targets) costs two reference counts, not a copy of ~50 labels.
///
/// Stored in two sorted parts: `base`, the labels an object's targets share (a pod's
/// ~50 metadata labels, built once per pod), and `own`, the target's few own labels (a
/// container's port, its address), which win over `base` where a name is in both.
/// Iteration and look-up see the merged set; equality, order and hashing are those of
/// the merged sequence, whatever the split.
#[derive(Clone)]
pub struct Labels {
    base: Part,
    own: Part,
    /// Labels of the merged set.
    len: u32,
}

/// One sorted part of a [`Labels`]: a shared slice behind a one-pointer handle (the
/// length lives in the allocation), so that a label set is 24 bytes, not 40. The
/// group's cache, every subscriber and every snapshot hold one per target.
#[derive(Clone)]
struct Part(ThinArc<(), Label>);

impl Part {
    fn new(labels: Vec<Label>) -> Part {
        if labels.is_empty() {
            return Part::empty();
        }
        Part(ThinArc::from_header_and_iter((), labels.into_iter()))
    }

    /// The shared empty part (one per thread): most label sets built flat have no own
    /// labels.
    fn empty() -> Part {
        thread_local! {
            static EMPTY: Part = Part(ThinArc::from_header_and_iter((), std::iter::empty()));
        }
        EMPTY.with(Part::clone)
    }

    fn ptr_eq(&self, other: &Part) -> bool {
        std::ptr::eq(self.0.ptr(), other.0.ptr())
    }
}

impl std::ops::Deref for Part {
    type Target = [Label];
    fn deref(&self) -> &[Label] {
        &self.0.slice
    }
}

impl Default for Labels {
    fn default() -> Self {
        Labels::from_sorted(Vec::new())
    }
}

impl PartialEq for Labels {
    fn eq(&self, other: &Labels) -> bool {
        if self.ptr_eq(other) {
            return true;
        }
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl Eq for Labels {}

impl PartialOrd for Labels {
    fn partial_cmp(&self, other: &Labels) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Labels {
    fn cmp(&self, other: &Labels) -> std::cmp::Ordering {
        self.iter().cmp(other.iter())
    }
}

impl std::hash::Hash for Labels {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_usize(self.len as usize);
        for l in self.iter() {
            l.hash(state);
        }
    }
}

impl Labels {
    fn from_sorted(labels: Vec<Label>) -> Labels {
        Labels {
            len: labels.len() as u32,
            base: Part::new(labels),
            own: Part::empty(),
        }
    }

    /// The value of label `name`, if set.
    pub fn get(&self, name: &str) -> Option<&str> {
        let find = |part: &[Label]| part.binary_search_by(|l| (*l.name).cmp(name)).ok();
        // A target's own part is a handful of labels whose names share long prefixes: a
        // scan that compares lengths first is cheaper than a binary search that compares
        // `__meta_kubernetes_pod_container_` at every step.
        let own = if self.own.len() <= 16 {
            self.own
                .iter()
                .position(|l| l.name.len() == name.len() && *l.name == *name)
        } else {
            find(&self.own)
        };
        if let Some(i) = own {
            return Some(&self.own[i].value);
        }
        find(&self.base).map(|i| &*self.base[i].value)
    }

    /// The labels in name order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            base: &self.base,
            own: &self.own,
            left: self.len as usize,
        }
    }

    /// How many labels there are.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The labels as a vector, in name order.
    pub fn into_vec(self) -> Vec<Label> {
        self.iter().cloned().collect()
    }

    /// True when both are the same shared label set (a cheap test before comparing).
    pub fn ptr_eq(&self, other: &Labels) -> bool {
        self.base.ptr_eq(&other.base) && self.own.ptr_eq(&other.own)
    }

    /// This set with `overrides` laid over it: a name in both takes the override's value.
    ///
    /// How a pod's targets are built: the labels all its targets share are sorted once
    /// and shared by every target (one reference count), and each target keeps only its
    /// few own labels, instead of copying ~50 labels per target.
    pub fn merged(&self, overrides: LabelsBuilder) -> Labels {
        self.flat().over(Part::new(overrides.sorted_unique()))
    }

    /// [`Labels::merged`] for each of an object's targets over this shared base.
    ///
    /// Targets of one object usually have the same own names (a pod's port targets all
    /// carry the same eight), so how many base names they override is worked out once,
    /// and the next target with the same names (told by pointer: names are interned)
    /// reuses it. That count took a quarter of a pod's label instructions (callgrind).
    pub fn merged_each(&self, overrides: impl IntoIterator<Item = LabelsBuilder>) -> Vec<Labels> {
        self.flat()
            .merged_parts(overrides.into_iter().map(|o| Part::new(o.sorted_unique())))
    }

    /// This target's own labels laid over `base` instead of the base they were merged
    /// with: how a changed object's targets keep their unchanged own parts (shared, not
    /// rebuilt). Equal to `base.merged(<this target's own labels>)`.
    pub fn rebased(&self, base: &Labels) -> Labels {
        base.flat().over(self.own.clone())
    }

    /// [`Labels::rebased`] for each of an object's targets, as [`Labels::merged_each`].
    pub fn rebased_each(targets: &[Labels], base: &Labels) -> Vec<Labels> {
        base.flat()
            .merged_parts(targets.iter().map(|t| t.own.clone()))
    }

    /// This set with its labels in one part (itself if they already are).
    fn flat(&self) -> std::borrow::Cow<'_, Labels> {
        if self.own.is_empty() {
            std::borrow::Cow::Borrowed(self)
        } else {
            std::borrow::Cow::Owned(Labels::from_sorted(self.iter().cloned().collect()))
        }
    }

    /// Each own part over this set's single part; the count of overridden names is
    /// reused while consecutive parts have the same names.
    fn merged_parts(&self, owns: impl Iterator<Item = Part>) -> Vec<Labels> {
        let mut last: Option<(Part, usize)> = None;
        owns.map(|own| {
            let shadowed = match &last {
                Some((previous, count)) if same_names(previous, &own) => *count,
                _ => {
                    let count = shadowed_names(&self.base, &own);
                    last = Some((own.clone(), count));
                    count
                }
            };
            self.with_own(own, shadowed)
        })
        .collect()
    }

    /// `own` over this set's single part.
    fn over(&self, own: Part) -> Labels {
        let shadowed = shadowed_names(&self.base, &own);
        self.with_own(own, shadowed)
    }

    /// `own` over this set's single part, `shadowed` of whose names are also in it.
    fn with_own(&self, own: Part, shadowed: usize) -> Labels {
        debug_assert!(self.own.is_empty(), "callers flatten first");
        Labels {
            base: self.base.clone(),
            len: (self.base.len() + own.len() - shadowed) as u32,
            own,
        }
    }

    /// Builds a label set from pairs; a later pair wins over an earlier one of the same
    /// name.
    pub fn from_pairs<N, V>(pairs: impl IntoIterator<Item = (N, V)>) -> Labels
    where
        N: Into<ArcStr>,
        V: Into<ArcStr>,
    {
        let mut b = LabelsBuilder::new();
        for (n, v) in pairs {
            b.add(n.into(), v.into());
        }
        b.finish()
    }
}

/// True when both hold the very same name strings, in the same order.
fn same_names(a: &[Label], b: &[Label]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| ArcStr::ptr_eq(&x.name, &y.name))
}

/// How many names of `own` `base` also has; both sorted.
///
/// A target's own names sit together in its base's order (a pod target's seven
/// `__meta_kubernetes_pod_container_*` names fall between the same two base labels), so
/// each search starts where the previous one ended and gallops forward: ~3 comparisons
/// per name instead of a binary search's ~6 over the whole base (names share long
/// prefixes, so each comparison is a `memcmp`).
fn shadowed_names(base: &[Label], own: &[Label]) -> usize {
    let mut from = 0;
    let mut count = 0;
    for o in own {
        let rest = &base[from..];
        // rest[..lo] < o; widen the window until its last element is >= o.
        let (mut lo, mut step) = (0, 1);
        while step <= rest.len() && rest[step - 1].name < o.name {
            lo = step;
            step *= 2;
        }
        let hi = step.min(rest.len());
        let at = lo + rest[lo..hi].partition_point(|b| b.name < o.name);
        if rest.get(at).is_some_and(|b| b.name == o.name) {
            count += 1;
            from += at + 1;
        } else {
            from += at;
        }
    }
    count
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Labels {
    type Item = &'a Label;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// The labels of a [`Labels`] in name order: its two parts merged, own labels winning.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    base: &'a [Label],
    own: &'a [Label],
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Label;

    fn next(&mut self) -> Option<&'a Label> {
        let next = match (self.base.first(), self.own.first()) {
            (Some(b), Some(o)) => match b.name.cmp(&o.name) {
                std::cmp::Ordering::Less => {
                    self.base = &self.base[1..];
                    b
                }
                std::cmp::Ordering::Equal => {
                    self.base = &self.base[1..];
                    self.own = &self.own[1..];
                    o
                }
                std::cmp::Ordering::Greater => {
                    self.own = &self.own[1..];
                    o
                }
            },
            (Some(b), None) => {
                self.base = &self.base[1..];
                b
            }
            (None, Some(o)) => {
                self.own = &self.own[1..];
                o
            }
            (None, None) => return None,
        };
        self.left -= 1;
        Some(next)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Collects labels in any order, then sorts them into a [`Labels`].
///
/// A name added twice keeps the value added last. That is VictoriaMetrics' rule
/// (`RemoveDuplicates` keeps the last): an endpoint whose pod lives in another namespace
/// gets `__meta_kubernetes_namespace` from the pod, which is added after the endpoint's.
#[derive(Clone, Debug, Default)]
pub struct LabelsBuilder(Vec<Label>);

impl LabelsBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        LabelsBuilder(Vec::with_capacity(32))
    }

    /// An empty builder with room for `n` labels.
    pub fn with_capacity(n: usize) -> Self {
        LabelsBuilder(Vec::with_capacity(n))
    }

    /// A builder that starts with `labels`.
    pub fn from_labels(labels: &Labels) -> Self {
        let mut v = Vec::with_capacity(labels.len() + 16);
        v.extend(labels.iter().cloned());
        LabelsBuilder(v)
    }

    /// Adds a label.
    ///
    /// The fixed `__meta_kubernetes_*` names are best given as `arcstr::literal!`: a
    /// static string, never allocated, cloned and dropped without a reference count
    /// (label code names ~60 fixed labels per pod event). A `&'static str` name is
    /// interned per thread instead, which costs a hash look-up per call.
    pub fn add(&mut self, name: impl LabelName, value: impl Into<ArcStr>) {
        self.0.push(Label {
            name: name.into_label_name(),
            value: value.into(),
        });
    }

    /// Adds a label whose value is already shared.
    pub fn add_shared(&mut self, name: &ArcStr, value: &ArcStr) {
        self.0.push(Label {
            name: ArcStr::clone(name),
            value: ArcStr::clone(value),
        });
    }

    /// How many labels have been added.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when none has been added.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Puts the labels added since the first `start` in name order (stably: a repeated
    /// name keeps its order, so the last still wins). Label code that adds a block of
    /// names which may arrive out of order sorts just that block, so that the builder
    /// usually finds the whole set in order and skips its own sort.
    pub fn sort_from(&mut self, start: usize) {
        let start = start.min(self.0.len());
        let block = &mut self.0[start..];
        if !block.is_sorted_by(|a, b| a.name <= b.name) {
            block.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }

    /// Drops the labels whose names `labels` has: what a builder whose labels would
    /// lose to `labels` (added later) keeps, when the two are merged as parts.
    pub fn remove_names_in(&mut self, labels: &Labels) {
        self.0.retain(|l| labels.get(&l.name).is_none());
    }

    /// Sorts by name and drops all but the last value of each name.
    pub fn finish(self) -> Labels {
        Labels::from_sorted(self.sorted_unique())
    }

    fn sorted_unique(self) -> Vec<Label> {
        let mut v = self.0;
        // Label code adds names in order where it can (a pod's ~50 labels come from maps
        // the API server sorts by key): checking costs one comparison per label, a sort
        // of ~50 names with long common prefixes ~six (the standard sort does not look
        // for a sorted input below 64 elements). Strictly ascending also means no name
        // is repeated.
        if v.is_sorted_by(|a, b| a.name < b.name) {
            return v;
        }
        // Stable sort keeps the insertion order of equal names, so "last" is well defined.
        v.sort_by(|a, b| a.name.cmp(&b.name));
        // In place: the kept prefix is `v[..w]`; a repeated name replaces its kept label.
        let mut w = 0;
        for r in 0..v.len() {
            if w > 0 && v[w - 1].name == v[r].name {
                v.swap(w - 1, r);
            } else {
                v.swap(w, r);
                w += 1;
            }
        }
        v.truncate(w);
        v
    }
}

/// What [`LabelsBuilder::add`] accepts as a label name.
pub trait LabelName {
    /// The name as a shared string.
    fn into_label_name(self) -> ArcStr;
}

impl LabelName for &'static str {
    /// Interned: the same static name is one shared string per thread.
    fn into_label_name(self) -> ArcStr {
        static_name(self)
    }
}

impl LabelName for ArcStr {
    fn into_label_name(self) -> ArcStr {
        self
    }
}

impl LabelName for &ArcStr {
    fn into_label_name(self) -> ArcStr {
        ArcStr::clone(self)
    }
}

impl LabelName for String {
    fn into_label_name(self) -> ArcStr {
        self.into()
    }
}

/// The interning tables below are keyed by a static string's address (or a port
/// number): foldhash, as the engine's other per-event maps, not SipHash.
type AddressMap<K, V> = foldhash::HashMap<K, V>;

/// The shared string for a static label name (interned per thread, keyed by address:
/// there are only as many as the source code has).
pub fn static_name(name: &'static str) -> ArcStr {
    thread_local! {
        static NAMES: RefCell<AddressMap<(usize, usize), ArcStr>> = RefCell::default();
    }
    NAMES.with(|names| {
        ArcStr::clone(
            names
                .borrow_mut()
                .entry((name.as_ptr() as usize, name.len()))
                .or_insert_with(|| ArcStr::from(name)),
        )
    })
}

/// The shared decimal string of a port number (interned per thread for 0..=65535, the
/// only valid ports; anything else is formatted each time).
pub fn port_string(port: i64) -> ArcStr {
    thread_local! {
        static PORTS: RefCell<AddressMap<i64, ArcStr>> = RefCell::default();
    }
    if !(0..=65535).contains(&port) {
        return ArcStr::from(port.to_string());
    }
    PORTS.with(|ports| {
        ArcStr::clone(
            ports
                .borrow_mut()
                .entry(port)
                .or_insert_with(|| ArcStr::from(port.to_string())),
        )
    })
}

/// Replaces every character that may not appear in a Prometheus label name with `_`.
///
/// Prometheus' rule (`[^a-zA-Z0-9_]` → `_`, per character, so a multi-byte character
/// becomes one `_`).
pub fn sanitize_label_name(name: &str) -> String {
    name.chars().map(sanitize_char).collect()
}

/// `prefix` followed by `key` sanitized, e.g. `__meta_kubernetes_pod_label_` +
/// `app.kubernetes.io/name`.
///
/// Names are interned per thread: the same few hundred label keys recur on every object
/// of a cluster, so after warm-up this is a hash look-up and a reference count, not a
/// string build and an allocation. The table is dropped if it ever grows past
/// [`INTERNED_NAMES_LIMIT`], so a stream of unique annotation keys cannot grow memory.
pub fn prefixed_label_name(prefix: &'static str, key: &str) -> ArcStr {
    thread_local! {
        static NAMES: RefCell<InternedNames<ArcStr>> = RefCell::default();
    }
    NAMES.with(|names| {
        names
            .borrow_mut()
            .get_or_insert(prefix.as_ptr() as usize, key, || prefixed(prefix, key))
    })
}

/// The two names of a label or annotation key at once: `prefix` and `present` each
/// followed by `key` sanitized, e.g. `__meta_kubernetes_pod_label_app` and
/// `__meta_kubernetes_pod_labelpresent_app`.
///
/// Every key of an object's labels and annotations needs both, so one look-up serves
/// the two (the key's hash was a tenth of a pod's label instructions, callgrind).
/// Interned as [`prefixed_label_name`] is.
pub fn prefixed_label_names(
    prefix: &'static str,
    present: &'static str,
    key: &str,
) -> (ArcStr, ArcStr) {
    thread_local! {
        static NAMES: RefCell<InternedNames<(ArcStr, ArcStr)>> = RefCell::default();
    }
    NAMES.with(|names| {
        // The label prefix stands for the pair: each has its own presence prefix.
        names
            .borrow_mut()
            .get_or_insert(prefix.as_ptr() as usize, key, || {
                (prefixed(prefix, key), prefixed(present, key))
            })
    })
}

/// `prefix` + `key` sanitized, built.
fn prefixed(prefix: &str, key: &str) -> ArcStr {
    let mut s = String::with_capacity(prefix.len() + key.len());
    s.push_str(prefix);
    s.extend(key.chars().map(sanitize_char));
    ArcStr::from(s)
}

/// The most label names (or name pairs) [`prefixed_label_name`] and
/// [`prefixed_label_names`] each keep per thread.
pub const INTERNED_NAMES_LIMIT: usize = 200_000;

/// Interned names: prefix (by address: prefixes are static), then the unsanitized key,
/// to the full sanitized name (or names).
struct InternedNames<V> {
    // foldhash: ~30 look-ups per pod event (every label and annotation key).
    by_prefix: AddressMap<usize, foldhash::HashMap<ArcStr, V>>,
    len: usize,
}

impl<V> Default for InternedNames<V> {
    fn default() -> Self {
        InternedNames {
            by_prefix: AddressMap::default(),
            len: 0,
        }
    }
}

impl<V: Clone> InternedNames<V> {
    fn get_or_insert(&mut self, prefix: usize, key: &str, build: impl FnOnce() -> V) -> V {
        if let Some(names) = self.by_prefix.get(&prefix).and_then(|m| m.get(key)) {
            return names.clone();
        }
        if self.len >= INTERNED_NAMES_LIMIT {
            *self = InternedNames::default();
        }
        let names = build();
        self.len += 1;
        self.by_prefix
            .entry(prefix)
            .or_default()
            .insert(ArcStr::from(key), names.clone());
        names
    }
}

fn sanitize_char(c: char) -> char {
    if c.is_ascii_alphanumeric() || c == '_' {
        c
    } else {
        '_'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sorts_and_keeps_the_last_duplicate() {
        let labels = Labels::from_pairs([("b", "1"), ("a", "2"), ("b", "3")]);
        let pairs: Vec<(&str, &str)> = labels.iter().map(|l| (&*l.name, &*l.value)).collect();
        assert_eq!(pairs, [("a", "2"), ("b", "3")]);
        assert_eq!(labels.get("b"), Some("3"));
        assert_eq!(labels.get("c"), None);
    }

    #[test]
    fn merged_overrides_and_interleaves() {
        let base = Labels::from_pairs([("a", "1"), ("c", "2"), ("e", "3")]);
        let mut o = LabelsBuilder::new();
        o.add("d", "x");
        o.add("c", "y");
        o.add("f", "z");
        let m = base.merged(o);
        let pairs: Vec<(&str, &str)> = m.iter().map(|l| (&*l.name, &*l.value)).collect();
        assert_eq!(
            pairs,
            [("a", "1"), ("c", "y"), ("d", "x"), ("e", "3"), ("f", "z")]
        );
        assert_eq!(m.len(), 5);
        assert_eq!(m.iter().len(), 5);
        assert_eq!(m.get("c"), Some("y"));
        assert_eq!(m.get("a"), Some("1"));
        // The split is invisible: equal to the same set built flat, and hashed alike.
        let flat = Labels::from_pairs(pairs.clone());
        assert_eq!(m, flat);
        assert_eq!(m.cmp(&flat), std::cmp::Ordering::Equal);
        use std::hash::BuildHasher;
        let rs = std::hash::RandomState::new();
        assert_eq!(rs.hash_one(&m), rs.hash_one(&flat));
        // Merging into a split set flattens first.
        let mut o = LabelsBuilder::new();
        o.add("a", "w");
        let m2 = m.merged(o);
        let pairs: Vec<(&str, &str)> = m2.iter().map(|l| (&*l.name, &*l.value)).collect();
        assert_eq!(
            pairs,
            [("a", "w"), ("c", "y"), ("d", "x"), ("e", "3"), ("f", "z")]
        );
    }

    #[test]
    fn shadowed_names_counts_as_a_search_per_name_does() {
        // Random sorted, duplicate-free name sets over a small alphabet, so that
        // overlaps, clusters and both ends all occur.
        let mut rng = fastrand::Rng::with_seed(7);
        let mut set = |n: usize| -> Vec<Label> {
            let mut names: Vec<String> = (0..n)
                .map(|_| (0..rng.usize(1..4)).map(|_| rng.alphabetic()).collect())
                .collect();
            names.sort();
            names.dedup();
            names
                .into_iter()
                .map(|n| Label {
                    name: n.into(),
                    value: ArcStr::new(),
                })
                .collect()
        };
        for _ in 0..2000 {
            let (base, own) = (set(40), set(8));
            let naive = own
                .iter()
                .filter(|o| base.binary_search_by(|b| b.name.cmp(&o.name)).is_ok())
                .count();
            assert_eq!(shadowed_names(&base, &own), naive, "{base:?} / {own:?}");
        }
    }

    #[test]
    fn blocks_sorted_in_place_give_the_same_set_and_the_last_duplicate_wins() {
        let mut b = LabelsBuilder::new();
        b.add("a", "1");
        let start = b.len();
        for (n, v) in [("d", "1"), ("c", "2"), ("d", "3"), ("b", "4")] {
            b.add(n, v);
        }
        b.sort_from(start);
        b.add("e", "5");
        let labels = b.finish();
        let pairs: Vec<(&str, &str)> = labels.iter().map(|l| (&*l.name, &*l.value)).collect();
        assert_eq!(
            pairs,
            [("a", "1"), ("b", "4"), ("c", "2"), ("d", "3"), ("e", "5")]
        );
    }

    #[test]
    fn interned_names_are_shared() {
        let a = prefixed_label_name("__p_", "x.y");
        let b = prefixed_label_name("__p_", "x.y");
        assert!(ArcStr::ptr_eq(&a, &b));
        assert_eq!(&*a, "__p_x_y");
        assert_eq!(&*prefixed_label_name("__q_", "x.y"), "__q_x_y");
        let (name, present) = prefixed_label_names("__p_label_", "__p_labelpresent_", "x.y");
        assert_eq!(
            (&*name, &*present),
            ("__p_label_x_y", "__p_labelpresent_x_y")
        );
        let (again, _) = prefixed_label_names("__p_label_", "__p_labelpresent_", "x.y");
        assert!(ArcStr::ptr_eq(&name, &again));
        let (other, _) = prefixed_label_names("__q_label_", "__q_labelpresent_", "x.y");
        assert_eq!(&*other, "__q_label_x_y");
    }

    #[test]
    fn sanitize_replaces_each_character() {
        assert_eq!(
            sanitize_label_name("app.kubernetes.io/name"),
            "app_kubernetes_io_name"
        );
        assert_eq!(sanitize_label_name("ünï-code"), "_n__code");
        assert_eq!(&*prefixed_label_name("__x_", "a-b"), "__x_a_b");
    }
}
