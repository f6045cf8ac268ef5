//! Serde helpers that give kubesd the tolerance of Go's `encoding/json`, which the API
//! server's clients (and VictoriaMetrics, whose semantics the corpus encodes) rely on:
//! an explicit `null` is the zero value, and a string map keeps its pairs without a
//! hash map per object.

use arcstr::ArcStr;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// Deserializes `null` as `T::default()`.
///
/// Kubernetes omits empty fields, but hand-written objects and some proxies send
/// `"ports": null` or `"conditions": null`; Go decodes those as empty, so must we.
/// Use as `#[serde(default, deserialize_with = "null_default")]`.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Deserializes a list (`null` as empty) into a boxed slice of exactly its length.
///
/// Serde's own `Vec` grows as elements arrive (JSON gives no length up front), to 4 and
/// then by doubling, so a cached object's short lists (a pod's containers, their ports,
/// its owners) would each keep spare capacity for as long as the object is cached.
/// Elements are
/// gathered in a per-thread scratch vector of their type instead, and moved once into
/// an exact allocation (no extra allocation: the scratch is reused, and keeps the
/// capacity of the longest list of its type seen on its thread). A boxed slice rather
/// than a `Vec`: 16 bytes in the object instead of 24 (with the string maps likewise, a
/// cached pod is 192 bytes, not 264). Use as
/// `#[serde(default, deserialize_with = "exact_slice")]`.
pub(crate) fn exact_slice<'de, D, T>(deserializer: D) -> Result<Box<[T]>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + ScratchElement,
{
    struct SeqVisitor<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de> + ScratchElement> Visitor<'de> for SeqVisitor<T> {
        type Value = Box<[T]>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list, or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Box<[T]>, E> {
            Ok(Box::default())
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Box<[T]>, E> {
            Ok(Box::default())
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Box<[T]>, D::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Box<[T]>, A::Error> {
            collect_exact(|| seq.next_element())
        }
    }
    deserializer.deserialize_option(SeqVisitor(std::marker::PhantomData))
}

/// The items `next` yields until `None`, in an allocation of exactly their number:
/// gathered in `T`'s per-thread scratch vector (JSON gives no length up front), then
/// moved once. Behind [`exact_slice`] and [`StringMap`].
pub(crate) fn collect_exact<T: ScratchElement, E>(
    mut next: impl FnMut() -> Result<Option<T>, E>,
) -> Result<Box<[T]>, E> {
    T::scratch().with(|scratch| {
        // Busy when a list of this type nests in itself: then a plain vector.
        let Ok(mut items) = scratch.try_borrow_mut() else {
            let mut items = Vec::new();
            while let Some(item) = next()? {
                items.push(item);
            }
            return Ok(items.into_boxed_slice());
        };
        items.clear();
        let filled = (|| {
            while let Some(item) = next()? {
                items.push(item);
            }
            Ok(())
        })();
        // `drain(..).collect()` allocates exactly (it cannot reuse the scratch).
        let result = filled.map(|()| items.drain(..).collect());
        items.clear();
        result
    })
}

/// A list element type with a per-thread scratch vector, for `collect_exact`.
pub(crate) trait ScratchElement: Sized + 'static {
    /// This type's scratch vector.
    fn scratch() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Self>>>;
}

/// Gives each listed type its own scratch vector.
macro_rules! scratch_elements {
    ($($t:ty),* $(,)?) => {
        $(
            impl $crate::model::json::ScratchElement for $t {
                fn scratch() -> &'static std::thread::LocalKey<std::cell::RefCell<Vec<Self>>> {
                    thread_local! {
                        static SCRATCH: std::cell::RefCell<Vec<$t>> =
                            const { std::cell::RefCell::new(Vec::new()) };
                    }
                    &SCRATCH
                }
            }
        )*
    };
}

pub(crate) use scratch_elements;

// The kinds give their own element types theirs, each in its file.
scratch_elements!(ArcStr, (ArcStr, ArcStr));

/// A string-to-string map (labels, annotations, topology) in the order the API sent it.
///
/// Kept as a slice of shared-string pairs, not a hash map: discovery only iterates it to
/// make labels, the pairs cost one allocation per string and one for the slice (of
/// exactly their number), and label values are then shared by reference count instead
/// of copied into every target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StringMap(pub Box<[(ArcStr, ArcStr)]>);

impl StringMap {
    /// Points this map's keys and values at `previous`'s equal ones, pair by pair while
    /// the keys line up (the API server sends maps sorted by key, so an update's keys
    /// line up with the old ones up to the first key added or removed).
    pub(crate) fn share_strings_of(&mut self, previous: &StringMap) {
        for ((key, value), (old_key, old_value)) in self.0.iter_mut().zip(previous.0.iter()) {
            if key != old_key {
                break;
            }
            // Equal, just tested: only the pointer is left to check.
            if !ArcStr::ptr_eq(key, old_key) {
                *key = ArcStr::clone(old_key);
            }
            share_str(value, old_value);
        }
    }

    /// The value for `key`, if present. Linear: these maps are small and read rarely.
    pub fn get(&self, key: &str) -> Option<&ArcStr> {
        self.0.iter().find(|(k, _)| &**k == key).map(|(_, v)| v)
    }

    /// How many pairs there are.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Iterates the pairs in the order they were decoded.
    pub fn iter(&self) -> impl Iterator<Item = (&ArcStr, &ArcStr)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
}

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor;
        impl<'de> Visitor<'de> for MapVisitor {
            type Value = StringMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of strings to strings, or null")
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<StringMap, E> {
                Ok(StringMap::default())
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<StringMap, E> {
                Ok(StringMap::default())
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<StringMap, D::Error> {
                d.deserialize_map(self)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringMap, A::Error> {
                collect_exact(|| {
                    let entry = map.next_entry::<MapKey, MapValue>()?;
                    Ok(entry.map(|(k, v)| (k.0, v.0)))
                })
                .map(StringMap)
            }
        }
        deserializer.deserialize_option(MapVisitor)
    }
}

/// A string that may be sent as `null` (Go decodes that as `""`).
///
/// Built straight from the parser's slice: one allocation per string (serde's own
/// `ArcStr` goes through a `Box<str>`, two allocations and a copy), none for `""`.
struct NullableString(ArcStr);

impl<'de> Deserialize<'de> for NullableString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        map_str(deserializer, |v| shared_str(v, InternRule::Never)).map(NullableString)
    }
}

/// A value of a string map: short ones are interned (`app=shop`, `tier=backend`,
/// `prometheus.io/scrape=true` repeat on thousands of pods); long ones (a
/// last-applied-configuration blob) are rarely shared and would make the table hold
/// memory, so they are not.
struct MapValue(ArcStr);

/// Map values up to this many bytes are interned.
const INTERNED_VALUE_MAX_LEN: usize = 64;

impl<'de> Deserialize<'de> for MapValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        map_str(deserializer, |v| {
            shared_str(v, InternRule::UpTo(INTERNED_VALUE_MAX_LEN))
        })
        .map(MapValue)
    }
}

thread_local! {
    /// False while [`without_interning`] runs on this thread.
    static INTERNING: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Runs `decode` without looking strings up in the intern table: a string this thread
/// interned recently comes from a small direct-mapped cache in front of the table
/// ([`recently_interned`]: one probe, nothing inserted), any other is copied.
///
/// For the object of a `MODIFIED` event: the cache holds its previous version, whose
/// strings are already the shared ones, and the group points the new object at the
/// equal ones (`Object::share_strings_of`). A look-up in the watcher thread's intern
/// table misses the CPU cache on the table and on the string, and takes the string's
/// reference count back from the group's thread, which clones and drops the same
/// strings for targets; copying every string instead costs an allocation here and, once
/// shared away, a comparison and a free on the group's thread. The cache in front
/// gives back the very strings the cached object holds for those that repeat across
/// objects (keys, namespaces, images, short label values) without either cost.
pub(crate) fn without_interning<T>(decode: impl FnOnce() -> T) -> T {
    /// Restores the flag however `decode` ends.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            INTERNING.with(|flag| flag.set(self.0));
        }
    }
    let _restore = Restore(INTERNING.with(|flag| flag.replace(false)));
    decode()
}

/// Points `new` at `old` when they are equal: for an update of a cached object, whose
/// strings are the shared ones. Nothing to do when they are already one string (a
/// listed or re-added object, decoded through the intern table; a static enum value):
/// re-pointing would cost two reference-count writes per string for nothing.
pub(crate) fn share_str(new: &mut ArcStr, old: &ArcStr) {
    if !ArcStr::ptr_eq(new, old) && new.as_str() == old.as_str() {
        *new = ArcStr::clone(old);
    }
}

/// A key of a string map: label and annotation keys repeat on every object of a
/// cluster, so they are interned per thread and shared (memory, and equality checks
/// that stop at the pointer).
struct MapKey(ArcStr);

impl<'de> Deserialize<'de> for MapKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A key is never `null`: a plain string visit.
        deserializer
            .deserialize_str(StrVisitor(|v: &str| shared_str(v, InternRule::Always)))
            .map(MapKey)
    }
}

/// Which strings [`shared_str`] interns.
#[derive(Clone, Copy)]
enum InternRule {
    /// Unique per object (names, uids, IPs): interning would only fill the table.
    Never,
    /// Repeats across objects (keys, namespaces, images, node names).
    Always,
    /// Strings up to this many bytes.
    UpTo(usize),
}

/// A string field's text as a decoder holds it: serde_json's parser gives a `&str`,
/// already checked; protobuf gives the message's bytes, which are checked as UTF-8
/// only when copied. A string found in the intern table or its recent cache is equal,
/// byte for byte, to one checked when it was first kept, so it needs no check.
pub(crate) trait Text: Copy {
    /// Why the text is not a string: `Infallible` for a `&str`.
    type Error;
    /// The text's bytes.
    fn bytes(&self) -> &[u8];
    /// The text as a string, checked if it is not one yet.
    fn text(&self) -> Result<&str, Self::Error>;
}

impl Text for &str {
    type Error = std::convert::Infallible;
    fn bytes(&self) -> &[u8] {
        self.as_bytes()
    }
    fn text(&self) -> Result<&str, Self::Error> {
        Ok(self)
    }
}

impl Text for &[u8] {
    type Error = std::str::Utf8Error;
    fn bytes(&self) -> &[u8] {
        self
    }
    fn text(&self) -> Result<&str, Self::Error> {
        std::str::from_utf8(self)
    }
}

/// A decoded string as a shared string: `""` static, interned by `intern`'s rule
/// (inside [`without_interning`]: reused if interned recently), or copied once from the
/// parser's buffer.
fn shared_str(v: &str, intern: InternRule) -> ArcStr {
    let Ok(s) = shared_text(v, intern);
    s
}

/// [`shared_str`] for either kind of [`Text`]: checked only when copied.
fn shared_text<T: Text>(v: T, intern: InternRule) -> Result<ArcStr, T::Error> {
    let bytes = v.bytes();
    let intern = match intern {
        InternRule::Never => false,
        InternRule::Always => true,
        InternRule::UpTo(max) => bytes.len() <= max,
    };
    Ok(if bytes.is_empty() {
        empty_str()
    } else if !intern {
        ArcStr::from(v.text()?)
    } else if INTERNING.with(std::cell::Cell::get) {
        intern_text(v)?
    } else {
        match recently_interned(bytes) {
            Some(s) => s,
            None => ArcStr::from(v.text()?),
        }
    })
}

/// A string unique to its object (a name, a uid, an IP), as `nullable_str` keeps it:
/// for decoders of other encodings (protobuf), so both build the same model.
pub(crate) fn unique_string<T: Text>(v: T) -> Result<ArcStr, T::Error> {
    shared_text(v, InternRule::Never)
}

/// A string that repeats across objects (a namespace, an image, a label key), as
/// `interned_str` keeps it.
pub(crate) fn repeated_string<T: Text>(v: T) -> Result<ArcStr, T::Error> {
    shared_text(v, InternRule::Always)
}

/// A value of a string map (labels, annotations), as [`StringMap`] keeps it.
pub(crate) fn map_value_string<T: Text>(v: T) -> Result<ArcStr, T::Error> {
    shared_text(v, InternRule::UpTo(INTERNED_VALUE_MAX_LEN))
}

/// A value of a Kubernetes enum, as `enum_str` keeps it.
pub(crate) fn enum_string<T: Text>(v: T) -> Result<ArcStr, T::Error> {
    match well_known_str(v.bytes()) {
        Some(s) => Ok(s),
        None => shared_text(v, InternRule::Always),
    }
}

/// The one string visitor behind kubesd's string fields: the function sees the string
/// where the parser holds it (`null` as `""`) and builds what the field keeps, so no
/// field pays for a `String` it does not keep.
struct StrVisitor<F>(F);

impl<'de, T, F: FnOnce(&str) -> T> Visitor<'de> for StrVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string or null")
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<T, E> {
        Ok((self.0)(""))
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<T, E> {
        Ok((self.0)(""))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_str(self)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(v))
    }
}

/// Deserializes a string (`null` as `""`) through `f`, which sees it in the parser's
/// buffer: for fields that keep something other than the string itself.
pub(crate) fn map_str<'de, D, T>(deserializer: D, f: impl FnOnce(&str) -> T) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_option(StrVisitor(f))
}

/// The most ordinary (not permanent) strings [`intern_str`] keeps per thread before
/// starting over, so a stream of unique strings cannot grow memory (at most ~50k short
/// strings are held, besides the permanent ones).
const INTERNED_STRINGS_LIMIT: usize = 50_000;

/// An interned string is made permanent ([`make_permanent`]) once its thread's table
/// has found it this many times and it has at least [`PERMANENT_MIN_HOLDERS`] holders:
/// it repeats across the objects cached now (a namespace, a node name, an image, a
/// label key).
const PERMANENT_AFTER_HITS: u32 = 8;

/// The reference count that makes a string found often enough permanent. A string
/// unique to one object (a pod's name in a label value) is found again each time its
/// object is decoded again, on every relist, but only that object and its labels (and
/// the table and its cache) hold it: without this test, every relist would make more
/// such strings permanent, and memory would grow with the number of relists.
const PERMANENT_MIN_HOLDERS: usize = 32;

/// The most bytes all threads together may make permanent. Permanent strings are never
/// freed, so this bounds what strings that stop being used (node names of nodes long
/// gone, a rolled-out deployment's `pod-template-hash`) can hold for the life of the
/// process; once it is spent, interned strings stay reference-counted. A cluster's
/// repeating strings (namespaces, node names, images, label keys) take a small fraction
/// of it.
pub(crate) const PERMANENT_STRING_BYTES_LIMIT: u64 = 16 << 20;

/// Bytes made permanent so far, by every thread's interner: process-wide, as the
/// budget it is held to (the interners are per thread, their budget is not).
static PERMANENT_STRING_BYTES: AtomicU64 = AtomicU64::new(0);

/// Bytes of interned strings made permanent so far, process-wide
/// (`kubesd_permanent_string_bytes`; at most `PERMANENT_STRING_BYTES_LIMIT`).
pub fn permanent_string_bytes() -> u64 {
    PERMANENT_STRING_BYTES.load(Ordering::Relaxed)
}

/// What one permanent string is charged against [`PERMANENT_STRING_BYTES_LIMIT`]: its
/// bytes and `ArcStr`'s 16-byte header.
fn permanent_cost(s: &str) -> u64 {
    s.len() as u64 + 16
}

/// Makes `s` permanent if `used` (bytes made permanent so far, process-wide) stays
/// within `limit`; true if it did.
///
/// A permanent `ArcStr` (`ArcStr::leak`) is never freed and its clones and drops do not
/// touch its reference count: they read a flag and stop. That is the point. The strings
/// that repeat across objects are the ones the watcher's thread hands out (decoding) and
/// the group's thread clones into labels and drops with old targets at once; each
/// count change takes the string's cache line from the other core, and the watcher's
/// read of the string behind the next clone waits for it. Read-only, the line stays in
/// both cores' caches.
fn make_permanent(s: &ArcStr, used: &AtomicU64, limit: u64) -> bool {
    // The budget is shared by threads: the check and the add are one atomic step.
    let charged = used
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            v.checked_add(permanent_cost(s))
                .filter(|&total| total <= limit)
        })
        .is_ok();
    if charged {
        s.leak();
    }
    charged
}

/// An entry of an [`Interner`]'s table.
struct Interned {
    s: ArcStr,
    /// Times the string was found since it was put in the table.
    hits: u32,
}

/// Slots of an [`Interner`]'s front cache (a power of two).
const RECENTLY_INTERNED_SLOTS: usize = 4096;

/// A thread's intern table, and a small direct-mapped cache in front of it of the
/// strings it interned last, one per slot of their hash. Both use one hash, computed
/// once per string.
struct Interner {
    /// foldhash, not SipHash: this look-up runs for every label and annotation key of
    /// every decoded object; seeded per thread, so colliding keys cannot be prepared
    /// (and the table is bounded: flooding it costs at most a reset).
    hasher: foldhash::fast::RandomState,
    table: hashbrown::HashTable<Interned>,
    /// Entries of `table` that are not permanent: when they reach
    /// [`INTERNED_STRINGS_LIMIT`] the table starts over, keeping the permanent ones
    /// (dropping them would only make new copies of strings that are never freed).
    ordinary: usize,
    recent: Vec<Option<ArcStr>>,
    /// Beside each slot of `recent`, the top half of its string's hash: a probe for a
    /// string the cache does not hold (most strings unique to a pod, in a big cluster)
    /// stops here instead of reading the header of the slot's string, which is most
    /// likely out of the CPU cache by then.
    recent_tags: Vec<u32>,
}

thread_local! {
    static INTERNER: std::cell::RefCell<Interner> = std::cell::RefCell::new(Interner {
        hasher: foldhash::fast::RandomState::default(),
        table: hashbrown::HashTable::new(),
        ordinary: 0,
        recent: vec![None; RECENTLY_INTERNED_SLOTS],
        recent_tags: vec![0; RECENTLY_INTERNED_SLOTS],
    });
}

impl Interner {
    fn hash(&self, v: &[u8]) -> u64 {
        Self::hash_with(&self.hasher, v)
    }

    /// [`Interner::hash`] with the hasher alone, for when the table is borrowed.
    fn hash_with(hasher: &foldhash::fast::RandomState, v: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        hasher.hash_one(v)
    }

    fn recent_slot(hash: u64) -> usize {
        (hash as usize) & (RECENTLY_INTERNED_SLOTS - 1)
    }

    /// The tag kept beside a slot: bits of the hash that the slot's index does not use.
    fn recent_tag(hash: u64) -> u32 {
        (hash >> 32) as u32
    }

    /// Keeps `s` in its slot of the front cache, unless it is there already (the usual
    /// case for a string that repeats: no reference-count writes then).
    fn remember(&mut self, hash: u64, s: &ArcStr) {
        let i = Self::recent_slot(hash);
        let slot = &mut self.recent[i];
        if !slot.as_ref().is_some_and(|held| ArcStr::ptr_eq(held, s)) {
            *slot = Some(ArcStr::clone(s));
            self.recent_tags[i] = Self::recent_tag(hash);
        }
    }

    /// The interned string equal to `key`, which is checked as UTF-8 only if it is
    /// new to the table.
    fn intern<T: Text>(&mut self, key: T) -> Result<ArcStr, T::Error> {
        let bytes = key.bytes();
        let hash = self.hash(bytes);
        if let Some(entry) = self.table.find_mut(hash, |e| e.s.as_bytes() == bytes) {
            entry.hits = entry.hits.saturating_add(1);
            // `strong_count` is `None` once permanent. Tested at every later find, as
            // the holders grow; once the budget is spent, `make_permanent` fails on a
            // read of the shared counter, without a write.
            if entry.hits >= PERMANENT_AFTER_HITS
                && ArcStr::strong_count(&entry.s).is_some_and(|n| n >= PERMANENT_MIN_HOLDERS)
                && make_permanent(
                    &entry.s,
                    &PERMANENT_STRING_BYTES,
                    PERMANENT_STRING_BYTES_LIMIT,
                )
            {
                self.ordinary -= 1;
            }
            let k = ArcStr::clone(&entry.s);
            self.remember(hash, &k);
            return Ok(k);
        }
        if self.ordinary >= INTERNED_STRINGS_LIMIT {
            self.table.retain(|e| ArcStr::is_static(&e.s));
            self.ordinary = 0;
        }
        let k: ArcStr = ArcStr::from(key.text()?);
        let hasher = &self.hasher;
        let entry = Interned {
            s: ArcStr::clone(&k),
            hits: 0,
        };
        self.table
            .insert_unique(hash, entry, |e| Self::hash_with(hasher, e.s.as_bytes()));
        self.ordinary += 1;
        self.remember(hash, &k);
        Ok(k)
    }

    fn recently_interned(&self, v: &[u8]) -> Option<ArcStr> {
        let hash = self.hash(v);
        let i = Self::recent_slot(hash);
        if self.recent_tags[i] != Self::recent_tag(hash) {
            return None;
        }
        match &self.recent[i] {
            // A collision costs a copy, not a wrong answer.
            Some(s) if s.as_bytes() == v => Some(ArcStr::clone(s)),
            _ => None,
        }
    }
}

/// The shared copy of a string that repeats across objects (per thread: decoding runs
/// on the watcher arbiter). Sharing saves memory (a cluster's pods repeat the same
/// namespaces, images, node names and label values) and makes equality checks of
/// unchanged fields stop at the pointer.
fn intern_text<T: Text>(key: T) -> Result<ArcStr, T::Error> {
    INTERNER.with(|interner| interner.borrow_mut().intern(key))
}

/// The interned string equal to `v`, if this thread interned it recently; for decoding
/// [`without_interning`]: a string the cached object holds, found without a look-up in
/// the intern table, then needs neither a copy on this thread nor, at the group,
/// a comparison, a swap and a free on the other one.
fn recently_interned(v: &[u8]) -> Option<ArcStr> {
    INTERNER.with(|interner| interner.borrow().recently_interned(v))
}

/// The empty string: static, so absent string fields cost no allocation at all.
pub(crate) fn empty_str() -> ArcStr {
    ArcStr::new()
}

/// Deserializes a string that may be `null` or absent into a shared string.
/// Use as `#[serde(default = "empty_str", deserialize_with = "nullable_str")]`.
pub(crate) fn nullable_str<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ArcStr, D::Error> {
    Ok(NullableString::deserialize(deserializer)?.0)
}

/// Deserializes a string that repeats across objects (a namespace, an image, a node
/// name), possibly `null`, into a shared, interned string.
/// Use as `#[serde(default = "empty_str", deserialize_with = "interned_str")]`.
pub(crate) fn interned_str<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ArcStr, D::Error> {
    map_str(deserializer, |v| shared_str(v, InternRule::Always))
}

/// Deserializes a string that takes one of a Kubernetes enum's values (a protocol, a
/// pod's phase, a condition's status, a restart policy, an owner's or target's kind, a
/// service's type, an address type), possibly `null`: the usual values are static
/// strings, so they cost no allocation, no look-up and no reference count (every
/// target clones its port's protocol); others are interned.
/// Use as `#[serde(default = "empty_str", deserialize_with = "enum_str")]`.
pub(crate) fn enum_str<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ArcStr, D::Error> {
    map_str(deserializer, |v| {
        well_known_str(v.as_bytes()).unwrap_or_else(|| shared_str(v, InternRule::Always))
    })
}

/// The static copy of a usual enum value, if `v` is one.
fn well_known_str(v: &[u8]) -> Option<ArcStr> {
    Some(match v {
        b"TCP" => arcstr::literal!("TCP"),
        b"UDP" => arcstr::literal!("UDP"),
        b"SCTP" => arcstr::literal!("SCTP"),
        b"Pending" => arcstr::literal!("Pending"),
        b"Running" => arcstr::literal!("Running"),
        b"Succeeded" => arcstr::literal!("Succeeded"),
        b"Failed" => arcstr::literal!("Failed"),
        b"Unknown" => arcstr::literal!("Unknown"),
        b"True" => arcstr::literal!("True"),
        b"False" => arcstr::literal!("False"),
        b"Always" => arcstr::literal!("Always"),
        b"OnFailure" => arcstr::literal!("OnFailure"),
        b"Never" => arcstr::literal!("Never"),
        b"ReplicaSet" => arcstr::literal!("ReplicaSet"),
        b"StatefulSet" => arcstr::literal!("StatefulSet"),
        b"DaemonSet" => arcstr::literal!("DaemonSet"),
        b"Job" => arcstr::literal!("Job"),
        b"Node" => arcstr::literal!("Node"),
        b"Pod" => arcstr::literal!("Pod"),
        b"ClusterIP" => arcstr::literal!("ClusterIP"),
        b"NodePort" => arcstr::literal!("NodePort"),
        b"LoadBalancer" => arcstr::literal!("LoadBalancer"),
        b"ExternalName" => arcstr::literal!("ExternalName"),
        b"InternalIP" => arcstr::literal!("InternalIP"),
        b"ExternalIP" => arcstr::literal!("ExternalIP"),
        b"Hostname" => arcstr::literal!("Hostname"),
        b"InternalDNS" => arcstr::literal!("InternalDNS"),
        b"ExternalDNS" => arcstr::literal!("ExternalDNS"),
        b"IPv4" => arcstr::literal!("IPv4"),
        b"IPv6" => arcstr::literal!("IPv6"),
        b"FQDN" => arcstr::literal!("FQDN"),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intern_str(key: &str) -> ArcStr {
        let Ok(k) = intern_text(key);
        k
    }

    #[derive(serde::Deserialize, Default, Debug)]
    struct Holder {
        #[serde(default, deserialize_with = "null_default")]
        list: Vec<u32>,
        #[serde(default)]
        map: StringMap,
        #[serde(default = "empty_str", deserialize_with = "nullable_str")]
        text: ArcStr,
    }

    #[test]
    fn null_is_the_zero_value() {
        let h: Holder = serde_json::from_str(r#"{"list":null,"map":null,"text":null}"#).unwrap();
        assert!(h.list.is_empty());
        assert_eq!(h.map.len(), 0);
        assert_eq!(&*h.text, "");
    }

    #[test]
    fn string_map_keeps_order_and_null_values() {
        let h: Holder = serde_json::from_str(r#"{"map":{"b":"1","a":null}}"#).unwrap();
        let keys: Vec<&str> = h.map.iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(h.map.get("a").map(|v| &**v), Some(""));
    }

    #[test]
    fn lists_decode_whole_and_null_as_empty() {
        #[derive(serde::Deserialize)]
        struct Ports {
            #[serde(default, deserialize_with = "exact_slice")]
            ports: Box<[crate::model::ContainerPort]>,
        }
        for n in [0, 1, 2, 3, 5, 17] {
            let list: Vec<String> = (0..n)
                .map(|i| format!(r#"{{"containerPort":{i}}}"#))
                .collect();
            let json = format!(r#"{{"ports":[{}]}}"#, list.join(","));
            let p: Ports = serde_json::from_str(&json).unwrap();
            assert_eq!(p.ports.len(), n);
            assert_eq!(
                p.ports.last().map(|p| p.container_port),
                n.checked_sub(1).map(|i| i as i64)
            );
        }
        let p: Ports = serde_json::from_str(r#"{"ports":null}"#).unwrap();
        assert!(p.ports.is_empty());
        assert!(serde_json::from_str::<Ports>(r#"{"ports":{}}"#).is_err());
        // A bad element fails the list, and leaves the scratch clean for the next one.
        assert!(
            serde_json::from_str::<Ports>(
                r#"{"ports":[{"containerPort":1},{"containerPort":"x"}]}"#
            )
            .is_err()
        );
        let p: Ports = serde_json::from_str(r#"{"ports":[{"containerPort":7}]}"#).unwrap();
        assert_eq!(p.ports.len(), 1);
        assert_eq!(p.ports[0].container_port, 7);
    }

    #[test]
    fn usual_enum_values_are_static_and_others_interned() {
        #[derive(serde::Deserialize)]
        struct Port {
            #[serde(default = "empty_str", deserialize_with = "enum_str")]
            protocol: ArcStr,
        }
        let decode = |json: &str| serde_json::from_str::<Port>(json).unwrap().protocol;
        let tcp = decode(r#"{"protocol":"TCP"}"#);
        assert_eq!(&*tcp, "TCP");
        assert!(ArcStr::is_static(&tcp), "a usual value costs no allocation");
        let odd = decode(r#"{"protocol":"QUIC"}"#);
        assert!(!ArcStr::is_static(&odd));
        assert!(
            ArcStr::ptr_eq(&odd, &decode(r#"{"protocol":"QUIC"}"#)),
            "interned"
        );
        let reused = without_interning(|| decode(r#"{"protocol":"QUIC"}"#));
        assert!(ArcStr::ptr_eq(&odd, &reused), "recently interned: reused");
        let copied = without_interning(|| decode(r#"{"protocol":"XTP"}"#));
        assert!(
            !ArcStr::ptr_eq(&decode(r#"{"protocol":"XTP"}"#), &copied),
            "never interned: copied while not interning"
        );
        assert!(ArcStr::is_static(&without_interning(|| decode(
            r#"{"protocol":"UDP"}"#
        ))));
        assert_eq!(&*decode(r#"{"protocol":null}"#), "");
        assert_eq!(&*decode("{}"), "");
    }

    /// Interns `s` until it is held `holders` times (by the returned clones, the table
    /// and its front cache), so that it counts as shared by that many objects.
    fn held(s: &str, holders: usize) -> Vec<ArcStr> {
        let mut clones = vec![intern_str(s)];
        while ArcStr::strong_count(&clones[0]).is_some_and(|n| n < holders) {
            clones.push(intern_str(s));
        }
        clones
    }

    #[test]
    fn a_string_found_often_and_widely_held_is_made_permanent_and_stays_the_same_string() {
        let first = intern_str("often-found");
        let mut clones = Vec::new();
        for _ in 1..PERMANENT_AFTER_HITS {
            let again = intern_str("often-found");
            assert!(ArcStr::ptr_eq(&first, &again));
            assert!(!ArcStr::is_static(&again), "not yet found often enough");
            clones.push(again);
        }
        // Held that many times after the find that made the last clone: the next find
        // is the first to see enough holders.
        let more = held("often-found", PERMANENT_MIN_HOLDERS);
        assert!(!ArcStr::is_static(&first), "not yet held widely enough");
        let last = intern_str("often-found");
        assert!(ArcStr::ptr_eq(&first, &last));
        assert!(
            ArcStr::is_static(&first),
            "permanent, and so are earlier clones"
        );
        assert!(permanent_string_bytes() >= 11 + 16);
        drop((clones, more));
    }

    #[test]
    fn a_string_found_often_but_held_by_one_object_stays_reference_counted() {
        // As a pod's own label value is, relist after relist.
        let object = intern_str("unique-to-one-object");
        for _ in 0..10 * PERMANENT_AFTER_HITS {
            intern_str("unique-to-one-object");
        }
        assert!(!ArcStr::is_static(&object));
    }

    #[test]
    fn permanent_strings_stop_at_the_byte_limit() {
        let used = AtomicU64::new(0);
        let fits = ArcStr::from("x".repeat(50));
        assert!(make_permanent(&fits, &used, 100));
        assert!(ArcStr::is_static(&fits));
        assert_eq!(used.load(Ordering::Relaxed), 66, "bytes and header");
        let over = ArcStr::from("y".repeat(50));
        assert!(!make_permanent(&over, &used, 100));
        assert!(!ArcStr::is_static(&over), "left reference-counted");
        assert_eq!(used.load(Ordering::Relaxed), 66);
    }

    #[test]
    fn the_intern_table_starts_over_keeping_its_permanent_strings() {
        let holders = held(
            "kept-over-restarts",
            PERMANENT_MIN_HOLDERS + PERMANENT_AFTER_HITS as usize,
        );
        let permanent = intern_str("kept-over-restarts");
        assert!(ArcStr::is_static(&permanent));
        drop(holders);
        let ordinary = intern_str("dropped-at-restart");
        // Unique strings until the table holds its limit of ordinary ones, and one more
        // to start it over.
        for i in 0..=INTERNED_STRINGS_LIMIT {
            intern_str(&format!("unique-{i}"));
        }
        assert!(ArcStr::ptr_eq(
            &permanent,
            &intern_str("kept-over-restarts")
        ));
        assert!(
            !ArcStr::ptr_eq(&ordinary, &intern_str("dropped-at-restart")),
            "a new copy: the old one left the table"
        );
    }

    #[test]
    fn string_map_rejects_non_string_values() {
        assert!(serde_json::from_str::<Holder>(r#"{"map":[1]}"#).is_err());
        assert!(serde_json::from_str::<Holder>(r#"{"map":{"a":1}}"#).is_err());
    }
    #[test]
    fn without_interning_recently_interned_strings_are_reused_others_copied() {
        let json = r#"{"map":{"app":"shop","tier":"web"}}"#;
        let interned: Holder = serde_json::from_str(json).unwrap();
        let reused: Holder = without_interning(|| serde_json::from_str(json)).unwrap();
        for ((k1, v1), (k2, v2)) in interned.map.iter().zip(reused.map.iter()) {
            assert!(ArcStr::ptr_eq(k1, k2), "{k2}: the interned string");
            assert!(ArcStr::ptr_eq(v1, v2), "{v2}: the interned string");
        }
        // Never interned on this thread: copied, and not put in the table either. The
        // strings are this test's own, since other tests may run on this thread first.
        let fresh = r#"{"map":{"app":"cart-of-the-interning-test","zone-of-the-interning-test":"b-of-the-interning-test"}}"#;
        let copied: Holder = without_interning(|| serde_json::from_str(fresh)).unwrap();
        let interned: Holder = serde_json::from_str(fresh).unwrap();
        let again: Holder = serde_json::from_str(fresh).unwrap();
        for ((k1, v1), ((k2, v2), (k3, v3))) in copied
            .map
            .iter()
            .zip(interned.map.iter().zip(again.map.iter()))
        {
            assert_eq!((k1, v1), (k2, v2));
            assert!(!ArcStr::ptr_eq(v1, v2), "{v1}: a copy");
            // "app" was interned by the first map: only the new key is a copy.
            assert_eq!(ArcStr::ptr_eq(k1, k2), &**k1 == "app", "{k1}");
            assert!(ArcStr::ptr_eq(v2, v3), "{v3}: interning resumed after");
            assert!(ArcStr::ptr_eq(k2, k3), "{k3}: interning resumed after");
        }
    }

    #[test]
    fn an_update_shares_the_equal_strings_of_the_map_it_replaces_while_keys_line_up() {
        let decode = |json: &str| -> StringMap {
            without_interning(|| serde_json::from_str::<Holder>(json))
                .unwrap()
                .map
        };
        let old = decode(r#"{"map":{"a":"1","b":"2","d":"4"}}"#);
        let mut new = decode(r#"{"map":{"a":"1","b":"changed","c":"3","d":"4"}}"#);
        new.share_strings_of(&old);
        let pairs: Vec<(&ArcStr, &ArcStr)> = new.iter().collect();
        assert!(ArcStr::ptr_eq(pairs[0].0, &old.0[0].0), "equal key: shared");
        assert!(
            ArcStr::ptr_eq(pairs[0].1, &old.0[0].1),
            "equal value: shared"
        );
        assert!(
            ArcStr::ptr_eq(pairs[1].0, &old.0[1].0),
            "key of a changed value"
        );
        assert_eq!(&**pairs[1].1, "changed");
        // From the added key on, keys no longer line up: `d` keeps its own copies.
        assert!(!ArcStr::ptr_eq(pairs[3].0, &old.0[2].0));
        assert!(!ArcStr::ptr_eq(pairs[3].1, &old.0[2].1));
        assert_eq!(
            new,
            decode(r#"{"map":{"a":"1","b":"changed","c":"3","d":"4"}}"#)
        );
    }
}
