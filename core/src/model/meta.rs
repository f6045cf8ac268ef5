//! `metadata`: the part every Kubernetes object shares.

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{
    StringMap, empty_str, enum_str, exact_slice, interned_str, null_default, nullable_str,
    scratch_elements, share_str,
};

/// The fields of `metadata` that discovery uses. `managedFields` and the rest are
/// skipped while parsing, never materialised.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// `metadata.name`. Required: an object without one is rejected at decode time.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub name: ArcStr,
    /// `metadata.namespace`; empty for cluster-scoped objects (nodes, namespaces).
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub namespace: ArcStr,
    /// `metadata.uid`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub uid: ArcStr,
    /// `metadata.resourceVersion`: where a watch resumes. Not part of equality (below).
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub resource_version: ArcStr,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: StringMap,
    /// `metadata.annotations` (including `last-applied-configuration`: it is a label).
    #[serde(default)]
    pub annotations: StringMap,
    /// `metadata.ownerReferences`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub owner_references: Box<[OwnerReference]>,
}

impl ObjectMeta {
    /// Points this metadata's namespace, label and annotation keys and values, and
    /// owners at `previous`'s equal strings (it is an update of `previous`).
    pub(crate) fn share_strings_of(&mut self, previous: &ObjectMeta) {
        share_str(&mut self.namespace, &previous.namespace);
        self.labels.share_strings_of(&previous.labels);
        self.annotations.share_strings_of(&previous.annotations);
        for (new, old) in self
            .owner_references
            .iter_mut()
            .zip(previous.owner_references.iter())
        {
            share_str(&mut new.kind, &old.kind);
            share_str(&mut new.name, &old.name);
        }
    }
}

/// Equality ignores `resourceVersion`: every write bumps it, and an object whose
/// discovery-relevant fields are unchanged must push nothing to subscribers.
impl PartialEq for ObjectMeta {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.namespace == other.namespace
            && self.uid == other.uid
            && self.labels == other.labels
            && self.annotations == other.annotations
            && self.owner_references == other.owner_references
    }
}

impl Eq for ObjectMeta {}

/// One entry of `metadata.ownerReferences`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's kind, e.g. `ReplicaSet`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub kind: ArcStr,
    /// The owner's name.
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub name: ArcStr,
    /// True for the managing controller; the first such owner names the pod's controller.
    #[serde(default, deserialize_with = "null_default")]
    pub controller: bool,
}

impl ObjectMeta {
    /// The cache key of the object: `namespace/name` (`/name` for cluster-scoped ones).
    pub(crate) fn key(&self) -> ObjectKey {
        ObjectKey::new(&self.namespace, &self.name)
    }
}

/// The identity of an object within one role: namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Empty for cluster-scoped objects.
    pub namespace: ArcStr,
    /// The object's name.
    pub name: ArcStr,
}

impl ObjectKey {
    /// True when both keys hold the very same shared strings (so they are equal; equal
    /// keys built apart are not the same strings).
    pub fn same_strings(&self, other: &ObjectKey) -> bool {
        ArcStr::ptr_eq(&self.namespace, &other.namespace) && ArcStr::ptr_eq(&self.name, &other.name)
    }

    /// A key from its parts.
    pub fn new(namespace: &ArcStr, name: &ArcStr) -> Self {
        ObjectKey {
            namespace: ArcStr::clone(namespace),
            name: ArcStr::clone(name),
        }
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// The object's `kind`, when the API sent one (watch events do; list items usually do
/// not). Checked against the watched role, so a Service that turns up in a pod watch is
/// rejected instead of cached as a strange pod. Not part of equality: a listed object
/// and the same object from a watch event compare equal.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Kind(pub Option<ArcStr>);

impl PartialEq for Kind {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for Kind {}

scratch_elements!(OwnerReference);
