//! `ObjectCache`: a [`CacheView`] over objects in plain maps, for tools and tests that
//! have the objects in hand (`kubesd labels`, the conformance suite) rather than in a
//! group's cache.

use std::collections::HashMap;

use super::cache_view::CacheView;
use crate::model::{Gateway, Job, Namespace, Node, Object, Pod, ReplicaSet, Service};

/// Objects other roles' labels look up, by name (nodes, namespaces) or
/// `(namespace, name)` (pods, services, ReplicaSets, Jobs, Gateways).
#[derive(Clone, Debug, Default)]
pub struct ObjectCache {
    nodes: HashMap<String, Node>,
    pods: HashMap<(String, String), Pod>,
    services: HashMap<(String, String), Service>,
    namespaces: HashMap<String, Namespace>,
    replica_sets: HashMap<(String, String), ReplicaSet>,
    jobs: HashMap<(String, String), Job>,
    gateways: HashMap<(String, String), Gateway>,
}

impl ObjectCache {
    /// A cache holding copies of `objects` (those of kinds labels look up).
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = &'a Object>) -> ObjectCache {
        let mut cache = ObjectCache::default();
        for o in objects {
            cache.insert(o.clone());
        }
        cache
    }

    /// Stores `object` if it is of a kind labels look up; other kinds are ignored.
    pub fn insert(&mut self, object: Object) {
        let key = object.key();
        let (ns, name) = (key.namespace.to_string(), key.name.to_string());
        match object {
            Object::Node(n) => drop(self.nodes.insert(name, n)),
            Object::Pod(p) => drop(self.pods.insert((ns, name), p)),
            Object::Service(s) => drop(self.services.insert((ns, name), s)),
            Object::Namespace(n) => drop(self.namespaces.insert(name, n)),
            Object::ReplicaSet(r) => drop(self.replica_sets.insert((ns, name), r)),
            Object::Job(j) => drop(self.jobs.insert((ns, name), j)),
            Object::Gateway(g) => drop(self.gateways.insert((ns, name), g)),
            Object::Endpoints(_)
            | Object::EndpointSlice(_)
            | Object::Ingress(_)
            | Object::HttpRoute(_)
            | Object::GrpcRoute(_)
            | Object::Config(_) => {}
        }
    }
}

impl CacheView for ObjectCache {
    fn node(&self, name: &str) -> Option<&Node> {
        self.nodes.get(name)
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        self.pods.get(&(namespace.to_string(), name.to_string()))
    }
    fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        self.services
            .get(&(namespace.to_string(), name.to_string()))
    }
    fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.get(name)
    }
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet> {
        self.replica_sets
            .get(&(namespace.to_string(), name.to_string()))
    }
    fn job(&self, namespace: &str, name: &str) -> Option<&Job> {
        self.jobs.get(&(namespace.to_string(), name.to_string()))
    }
    fn gateway(&self, namespace: &str, name: &str) -> Option<&Gateway> {
        self.gateways
            .get(&(namespace.to_string(), name.to_string()))
    }
}
