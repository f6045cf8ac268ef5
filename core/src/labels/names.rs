//! Label names: what a builder accepts as one, the names kubesd makes (static,
//! sanitized, prefixed with a meta label's prefix) and the bounded table that interns
//! them, and decimal ports as shared strings.

use arcstr::ArcStr;
use std::cell::RefCell;

/// What [`LabelsBuilder::add`](super::LabelsBuilder::add) accepts as a label name.
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
pub(crate) fn static_name(name: &'static str) -> ArcStr {
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
pub(crate) fn port_string(port: i64) -> ArcStr {
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
pub(crate) fn prefixed_label_name(prefix: &'static str, key: &str) -> ArcStr {
    thread_local! {
        static NAMES: RefCell<InternedNames<ArcStr>> = RefCell::default();
    }
    NAMES.with(|names| {
        names
            .borrow_mut()
            .get_or_insert(prefix_id(prefix), key, || prefixed(prefix, key))
    })
}

/// The two names of a label or annotation key at once: `prefix` and `present` each
/// followed by `key` sanitized, e.g. `__meta_kubernetes_pod_label_app` and
/// `__meta_kubernetes_pod_labelpresent_app`.
///
/// Every key of an object's labels and annotations needs both, so one look-up serves
/// the two (hashing the key twice would be a noticeable part of a pod's labels).
/// Interned as [`prefixed_label_name`] is.
pub(crate) fn prefixed_label_names(
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
            .get_or_insert(prefix_id(prefix), key, || {
                (prefixed(prefix, key), prefixed(present, key))
            })
    })
}

/// A static prefix's identity for the intern tables: its address and length (two
/// literals may share an address, never both).
fn prefix_id(prefix: &'static str) -> (usize, usize) {
    (prefix.as_ptr() as usize, prefix.len())
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
pub(crate) const INTERNED_NAMES_LIMIT: usize = 200_000;

/// Interned names: prefix (by address: prefixes are static), then the unsanitized key,
/// to the full sanitized name (or names).
struct InternedNames<V> {
    // foldhash: ~30 look-ups per pod event (every label and annotation key).
    by_prefix: AddressMap<(usize, usize), foldhash::HashMap<ArcStr, V>>,
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
    fn get_or_insert(&mut self, prefix: (usize, usize), key: &str, build: impl FnOnce() -> V) -> V {
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
