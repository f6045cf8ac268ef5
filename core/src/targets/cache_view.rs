//! `CacheView`: the read-only view of the group's cache through which a role's labels
//! read other objects (a pod's node, an endpoint's pod, a route's Gateway).

use crate::model::{Gateway, Job, Namespace, Node, Pod, ReplicaSet, Service};

/// Read-only access to the cached objects that other roles' labels depend on.
///
/// The engine's implementation also records each look-up, hits and misses alike, which
/// is how it learns which targets to recompute when a dependency changes.
pub trait CacheView {
    /// The node called `name`.
    fn node(&self, name: &str) -> Option<&Node>;
    /// The pod `namespace/name`.
    fn pod(&self, namespace: &str, name: &str) -> Option<&Pod>;
    /// The service `namespace/name`.
    fn service(&self, namespace: &str, name: &str) -> Option<&Service>;
    /// The namespace called `name`.
    fn namespace(&self, name: &str) -> Option<&Namespace>;
    /// The ReplicaSet `namespace/name` (cached for `attach_metadata.deployment`).
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet>;
    /// The Job `namespace/name` (cached for `attach_metadata.cronjob`).
    fn job(&self, namespace: &str, name: &str) -> Option<&Job>;
    /// The Gateway `namespace/name` (cached for the routes that attach to it).
    fn gateway(&self, namespace: &str, name: &str) -> Option<&Gateway>;
}

/// A cache with nothing in it: for roles and tests that need no look-ups.
#[derive(Clone, Copy, Debug, Default)]
pub struct EmptyCache;

impl CacheView for EmptyCache {
    fn node(&self, _: &str) -> Option<&Node> {
        None
    }
    fn pod(&self, _: &str, _: &str) -> Option<&Pod> {
        None
    }
    fn service(&self, _: &str, _: &str) -> Option<&Service> {
        None
    }
    fn namespace(&self, _: &str) -> Option<&Namespace> {
        None
    }
    fn replica_set(&self, _: &str, _: &str) -> Option<&ReplicaSet> {
        None
    }
    fn job(&self, _: &str, _: &str) -> Option<&Job> {
        None
    }
    fn gateway(&self, _: &str, _: &str) -> Option<&Gateway> {
        None
    }
}
