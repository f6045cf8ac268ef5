//! Target label sets: what discovery hands to a scrape job for each target.

use arcstr::ArcStr;
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
/// Stored in up to three sorted parts: `base`, the labels an object's targets share (a
/// pod's ~40 metadata labels, built once per pod); the part `base` inherits, if any (a
/// node's ~20 labels, built once per node and shared by every pod on it, see
/// `LabelsBuilder::inherit`); and `own`, the target's few own labels (a container's
/// port, its address). Where a name is in more than one, `own` wins over `base`, and
/// `base` over what it inherits. Iteration and look-up see the merged set; equality,
/// order and hashing are those of the merged sequence, whatever the split.
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
///
/// The header is the part this one inherits (only a base part has one, and an
/// inherited part has none itself: at most three parts to merge).
#[derive(Clone)]
struct Part(ThinArc<Option<Part>, Label>);

impl Part {
    fn new(labels: Vec<Label>) -> Part {
        if labels.is_empty() {
            return Part::empty();
        }
        Part(ThinArc::from_header_and_iter(None, labels.into_iter()))
    }

    /// A base part of `labels` that inherits `inherited` (which inherits nothing).
    fn inheriting(labels: Vec<Label>, inherited: Part) -> Part {
        debug_assert!(inherited.inherited().is_empty());
        Part(ThinArc::from_header_and_iter(
            Some(inherited),
            labels.into_iter(),
        ))
    }

    /// The shared empty part (one per thread): most label sets built flat have no own
    /// labels.
    fn empty() -> Part {
        thread_local! {
            static EMPTY: Part = Part(ThinArc::from_header_and_iter(None, std::iter::empty()));
        }
        EMPTY.with(Part::clone)
    }

    /// The labels this part inherits (empty for most).
    fn inherited(&self) -> &[Label] {
        match &self.0.header.header {
            Some(part) => part,
            None => &[],
        }
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

impl fmt::Debug for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Part")
            .field("labels", &&**self)
            .field("inherited", &self.inherited())
            .finish()
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
        self.find(name).map(|l| &*l.value)
    }

    /// The label `name`, if set.
    fn find(&self, name: &str) -> Option<&Label> {
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
            return Some(&self.own[i]);
        }
        if let Some(i) = find(&self.base) {
            return Some(&self.base[i]);
        }
        let inherited = self.base.inherited();
        find(inherited).map(|i| &inherited[i])
    }

    /// The value of label `name`, if set, as the shared string the set holds (a clone
    /// is a reference count, not a copy).
    pub fn get_shared(&self, name: &str) -> Option<ArcStr> {
        self.find(name).map(|l| ArcStr::clone(&l.value))
    }

    /// The labels in name order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inherited: self.base.inherited(),
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

    /// True when both are the same shared label set (a cheap test before comparing).
    /// (A base part carries what it inherits, so two bases are the same only if that is.)
    pub(crate) fn ptr_eq(&self, other: &Labels) -> bool {
        self.base.ptr_eq(&other.base) && self.own.ptr_eq(&other.own)
    }

    /// The target's own labels (sorted by name): what it does not share with the other
    /// targets of its object. Empty for a set built flat.
    pub fn own_labels(&self) -> &[Label] {
        &self.own
    }

    /// The labels this target shares with the other targets of its object: this set
    /// without its own part (what the base inherits stays).
    pub fn without_own(&self) -> Labels {
        let shadowed = self.shadowed_by_base(&self.own);
        Labels {
            base: self.base.clone(),
            own: Part::empty(),
            len: (self.len as usize + shadowed - self.own.len()) as u32,
        }
    }

    /// True when both share the same base (and what it inherits): targets of one object.
    pub fn same_base(&self, other: &Labels) -> bool {
        self.base.ptr_eq(&other.base)
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
    /// reuses it: counting per target would be a large share of a pod's label work.
    pub(crate) fn merged_each(
        &self,
        overrides: impl IntoIterator<Item = LabelsBuilder>,
    ) -> Vec<Labels> {
        self.flat()
            .merged_parts(overrides.into_iter().map(|o| Part::new(o.sorted_unique())))
    }

    /// Each of an object's `targets` with its own labels laid over `base` instead of the
    /// base they were merged with: how a changed object's targets keep their unchanged
    /// own parts (shared, not rebuilt). Each equals `base` merged with that target's own
    /// labels; the base's names are counted once for targets with the same own names.
    pub fn rebased_each(targets: &[Labels], base: &Labels) -> Vec<Labels> {
        base.flat()
            .merged_parts(targets.iter().map(|t| t.own.clone()))
    }

    /// This set with no own part (itself if it has none; what its base inherits stays
    /// shared).
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
                    let count = self.shadowed_by_base(&own);
                    last = Some((own.clone(), count));
                    count
                }
            };
            self.with_own(own, shadowed)
        })
        .collect()
    }

    /// `own` over this set's base.
    fn over(&self, own: Part) -> Labels {
        let shadowed = self.shadowed_by_base(&own);
        self.with_own(own, shadowed)
    }

    /// `own` over this set's base, `shadowed` of whose names are also in it.
    fn with_own(&self, own: Part, shadowed: usize) -> Labels {
        debug_assert!(self.own.is_empty(), "callers flatten first");
        Labels {
            base: self.base.clone(),
            // Without an own part, `len` is the base's (with what it inherits).
            len: (self.len as usize + own.len() - shadowed) as u32,
            own,
        }
    }

    /// How many names of `own` this set's base has, itself or by inheritance.
    fn shadowed_by_base(&self, own: &[Label]) -> usize {
        let inherited = self.base.inherited();
        if inherited.is_empty() {
            return shadowed_names(&self.base, own);
        }
        let (mut in_base, mut in_inherited) = (Gallop::new(&self.base), Gallop::new(inherited));
        own.iter()
            // Both searches run for every name: each moves its cursor forward.
            .filter(|o| in_base.contains(&o.name) | in_inherited.contains(&o.name))
            .count()
    }

    /// True when each of `new` is the label set at its index in `old` but for labels
    /// whose names `ignorable` accepts: those may differ in value, or be in one and not
    /// the other. Every other label is in both with the same value.
    ///
    /// How a consumer tells that an object's change cannot reach it (a pod whose only
    /// change is an annotation no rule reads). Targets of one object share their base,
    /// so each distinct pair of bases is compared once, and each target's own part on
    /// its own: parts equal but for ignorable labels merge into sets equal but for
    /// ignorable labels, whatever overrides what.
    pub fn same_except_each(
        old: &[Labels],
        new: &[Labels],
        mut ignorable: impl FnMut(&ArcStr) -> bool,
    ) -> bool {
        if old.len() != new.len() {
            return false;
        }
        let mut bases_compared: Option<(&Part, &Part)> = None;
        for (o, n) in old.iter().zip(new) {
            if o.ptr_eq(n) {
                continue;
            }
            let split_alike = o.own.is_empty() == n.own.is_empty()
                && o.base.inherited().is_empty() == n.base.inherited().is_empty();
            if !split_alike {
                if !same_except(o.iter(), n.iter(), &mut ignorable) {
                    return false;
                }
                continue;
            }
            let known =
                bases_compared.is_some_and(|(ob, nb)| ob.ptr_eq(&o.base) && nb.ptr_eq(&n.base));
            if !known && !o.base.ptr_eq(&n.base) {
                let (oi, ni) = (o.base.inherited(), n.base.inherited());
                if !same_except(o.base.iter(), n.base.iter(), &mut ignorable)
                    || !same_except(oi.iter(), ni.iter(), &mut ignorable)
                {
                    return false;
                }
                bases_compared = Some((&o.base, &n.base));
            }
            if !same_except(o.own.iter(), n.own.iter(), &mut ignorable) {
                return false;
            }
        }
        true
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

/// True when both name-sorted sequences hold the same labels but for those whose names
/// `ignorable` accepts (in either, with any value). Labels that are alike are passed
/// over without asking.
fn same_except<'a>(
    a: impl Iterator<Item = &'a Label>,
    b: impl Iterator<Item = &'a Label>,
    ignorable: &mut impl FnMut(&ArcStr) -> bool,
) -> bool {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    loop {
        match (a.peek(), b.peek()) {
            (None, None) => return true,
            (Some(x), Some(y))
                if (ArcStr::ptr_eq(&x.name, &y.name) || x.name == y.name) && x.value == y.value =>
            {
                a.next();
                b.next();
            }
            (Some(x), _) if ignorable(&x.name) => {
                a.next();
            }
            (_, Some(y)) if ignorable(&y.name) => {
                b.next();
            }
            _ => return false,
        }
    }
}

/// True when both hold the very same name strings, in the same order: the own parts of
/// an object's targets usually do (names are interned), which lets a caller reuse what
/// it worked out for the previous target's names.
pub fn same_names(a: &[Label], b: &[Label]) -> bool {
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
    let mut base = Gallop::new(base);
    own.iter().filter(|o| base.contains(&o.name)).count()
}

/// The labels of `labels` whose names lie between the first and last of `range`'s (both
/// sorted): the only ones that can be in `range`. A pod's ~40 labels over its node's ~20
/// (`__meta_kubernetes_node_*`, of which the pod has none) then cost two binary searches
/// to count, not forty searches.
fn within_names_of<'a>(labels: &'a [Label], range: &[Label]) -> &'a [Label] {
    let (Some(first), Some(last)) = (range.first(), range.last()) else {
        return &[];
    };
    let from = labels.partition_point(|l| l.name < first.name);
    let to = labels.partition_point(|l| l.name <= last.name);
    &labels[from..to.max(from)]
}

/// Membership tests of ascending names in a sorted label slice, each search starting
/// where the previous one ended and galloping forward.
struct Gallop<'a> {
    rest: &'a [Label],
}

impl<'a> Gallop<'a> {
    fn new(sorted: &'a [Label]) -> Gallop<'a> {
        Gallop { rest: sorted }
    }

    /// True when the slice has `name`; `name` must not sort before the previous one.
    fn contains(&mut self, name: &ArcStr) -> bool {
        let rest = self.rest;
        // rest[..lo] < name; widen the window until its last element is >= name.
        let (mut lo, mut step) = (0, 1);
        while step <= rest.len() && rest[step - 1].name < *name {
            lo = step;
            step *= 2;
        }
        let hi = step.min(rest.len());
        let at = lo + rest[lo..hi].partition_point(|b| b.name < *name);
        let found = rest.get(at).is_some_and(|b| b.name == *name);
        self.rest = &rest[at + usize::from(found)..];
        found
    }
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

/// The labels of a [`Labels`] in name order: its parts merged, own labels winning over
/// base ones, base ones over inherited ones.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    inherited: &'a [Label],
    base: &'a [Label],
    own: &'a [Label],
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Label;

    fn next(&mut self) -> Option<&'a Label> {
        // The inherited labels that sort before the base's next one (all of them once
        // the base is done) merge in as if they were the base's; a name the base has
        // too is skipped.
        if let Some(i) = self.inherited.first() {
            let before_base = match self.base.first() {
                Some(b) => match i.name.cmp(&b.name) {
                    std::cmp::Ordering::Less => true,
                    std::cmp::Ordering::Equal => {
                        self.inherited = &self.inherited[1..];
                        false
                    }
                    std::cmp::Ordering::Greater => false,
                },
                None => true,
            };
            if before_base {
                return self.next_over(i, true);
            }
        }
        match self.base.first() {
            Some(b) => self.next_over(b, false),
            None => self.next_own(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a> Iter<'a> {
    /// The next label when `candidate` (the inherited part's head when `inherited`, else
    /// the base's) is the lowest name below the own part: it, or the own label that
    /// sorts first or overrides it.
    fn next_over(&mut self, candidate: &'a Label, inherited: bool) -> Option<&'a Label> {
        let take_candidate = |it: &mut Self| {
            if inherited {
                it.inherited = &it.inherited[1..];
            } else {
                it.base = &it.base[1..];
            }
        };
        let next = match self.own.first() {
            Some(o) => match candidate.name.cmp(&o.name) {
                std::cmp::Ordering::Less => {
                    take_candidate(self);
                    candidate
                }
                std::cmp::Ordering::Equal => {
                    take_candidate(self);
                    self.own = &self.own[1..];
                    o
                }
                std::cmp::Ordering::Greater => {
                    self.own = &self.own[1..];
                    o
                }
            },
            None => {
                take_candidate(self);
                candidate
            }
        };
        self.left -= 1;
        Some(next)
    }

    /// The next own label, once the other parts are done.
    fn next_own(&mut self) -> Option<&'a Label> {
        let (o, rest) = self.own.split_first()?;
        self.own = rest;
        self.left -= 1;
        Some(o)
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// Collects labels in any order, then sorts them into a [`Labels`].
///
/// A name added twice keeps the value added last. That is VictoriaMetrics' rule
/// (`RemoveDuplicates` keeps the last): an endpoint whose pod lives in another namespace
/// gets `__meta_kubernetes_namespace` from the pod, which is added after the endpoint's.
#[derive(Clone, Debug, Default)]
pub struct LabelsBuilder {
    labels: Vec<Label>,
    /// Labels the finished set shares rather than copies ([`LabelsBuilder::inherit`]).
    inherited: Option<Part>,
}

impl LabelsBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        LabelsBuilder::with_capacity(32)
    }

    /// An empty builder with room for `n` labels.
    pub(crate) fn with_capacity(n: usize) -> Self {
        LabelsBuilder {
            labels: Vec::with_capacity(n),
            inherited: None,
        }
    }

    /// A builder that starts with `labels`.
    pub(crate) fn from_labels(labels: &Labels) -> Self {
        let mut b = LabelsBuilder::with_capacity(labels.len() + 16);
        b.add_all(labels);
        b
    }

    /// Adds a label.
    ///
    /// The fixed `__meta_kubernetes_*` names are best given as `arcstr::literal!`: a
    /// static string, never allocated, cloned and dropped without a reference count
    /// (label code names ~60 fixed labels per pod event). A `&'static str` name is
    /// interned per thread instead, which costs a hash look-up per call.
    pub fn add(&mut self, name: impl LabelName, value: impl Into<ArcStr>) {
        self.labels.push(Label {
            name: name.into_label_name(),
            value: value.into(),
        });
    }

    /// Adds a label whose value is already shared.
    pub fn add_shared(&mut self, name: &ArcStr, value: &ArcStr) {
        self.labels.push(Label {
            name: ArcStr::clone(name),
            value: ArcStr::clone(value),
        });
    }

    /// How many labels have been added.
    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when none has been added.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// Puts the labels added since the first `start` in name order (stably: a repeated
    /// name keeps its order, so the last still wins). Label code that adds a block of
    /// names which may arrive out of order sorts just that block, so that the builder
    /// usually finds the whole set in order and skips its own sort.
    pub(crate) fn sort_from(&mut self, start: usize) {
        let start = start.min(self.labels.len());
        let block = &mut self.labels[start..];
        if !block.is_sorted_by(|a, b| a.name <= b.name) {
            block.sort_by(|a, b| a.name.cmp(&b.name));
        }
    }

    /// Makes the finished set share `labels` instead of holding copies: they lose to
    /// every label added to this builder, before or after, and many sets inheriting the
    /// same `labels` keep one copy between them.
    ///
    /// How a pod's targets hold its node's ~20 labels: built once per node (see
    /// `targets::meta::metadata_labels`), one reference count per pod. A builder shares
    /// one set; `labels` is copied in instead when this builder already inherits one
    /// (it then wins over that one), or when `labels` has more than one part. Copied,
    /// they still lose to every label added.
    pub(crate) fn inherit(&mut self, labels: &Labels) {
        let shareable = labels.own.is_empty() && labels.base.inherited().is_empty();
        if shareable && self.inherited.is_none() {
            self.inherited = Some(labels.base.clone());
        } else {
            // First in the vector, so that every added label, earlier ones included,
            // comes later and wins (the builder sorts if this breaks its order).
            self.labels.splice(0..0, labels.iter().cloned());
        }
    }

    /// Adds every label of `labels` (in name order, so a builder that is in order stays
    /// so when they sort after what it has).
    pub(crate) fn add_all(&mut self, labels: &Labels) {
        self.labels.extend(labels.iter().cloned());
    }

    /// Drops the labels whose names `labels` has: what a builder whose labels would
    /// lose to `labels` (added later) keeps, when the two are merged as parts.
    pub(crate) fn remove_names_in(&mut self, labels: &Labels) {
        self.copy_inherited();
        self.labels.retain(|l| labels.get(&l.name).is_none());
    }

    /// Sorts by name and drops all but the last value of each name.
    pub fn finish(mut self) -> Labels {
        let Some(inherited) = self.inherited.take() else {
            return Labels::from_sorted(self.sorted_unique());
        };
        let own = self.sorted_unique();
        if own.is_empty() {
            let len = inherited.len() as u32;
            return Labels {
                base: inherited,
                own: Part::empty(),
                len,
            };
        }
        let shadowed = shadowed_names(&inherited, within_names_of(&own, &inherited));
        let len = own.len() + inherited.len() - shadowed;
        Labels {
            base: Part::inheriting(own, inherited),
            own: Part::empty(),
            len: len as u32,
        }
    }

    /// Turns the inherited labels into copies (those no added label overrides), for
    /// uses that need every label in the builder itself.
    fn copy_inherited(&mut self) {
        if let Some(inherited) = self.inherited.take() {
            // Added first, so that every label added to the builder wins.
            let added = std::mem::replace(&mut self.labels, inherited.to_vec());
            self.labels.extend(added);
        }
    }

    /// Sorts by name and drops all but the last value of each name (inherited labels
    /// copied in).
    fn sorted_unique(mut self) -> Vec<Label> {
        self.copy_inherited();
        let mut v = self.labels;
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

/// A label set computed from an object once, on first use, and kept with it: a node's
/// metadata labels, which every pod on the node carries.
///
/// Not part of the object's identity: equal objects are equal whatever their memos
/// hold, and a decoded object starts with an empty one.
#[derive(Clone, Debug, Default)]
pub(crate) struct LabelsMemo(std::sync::OnceLock<Labels>);

impl LabelsMemo {
    /// The memoised set, computed by `build` the first time.
    pub(crate) fn get_or_init(&self, build: impl FnOnce() -> Labels) -> &Labels {
        self.0.get_or_init(build)
    }
}

impl PartialEq for LabelsMemo {
    fn eq(&self, _: &LabelsMemo) -> bool {
        true
    }
}

impl Eq for LabelsMemo {}

mod names;
#[cfg(test)]
mod tests;

pub use names::{LabelName, sanitize_label_name};
pub(crate) use names::{port_string, prefixed_label_name, prefixed_label_names};
