//! A [`CacheView`] over a plain list of decoded objects, for tests that compute target
//! labels without the engine (property tests, huge-object tests).

#![allow(dead_code)]

use std::collections::HashMap;

use kubesd::CacheView;
use kubesd::model::{Namespace, Node, Object, Pod, Service};

/// Objects by kind and name; a later object of the same key replaces an earlier one.
#[derive(Default)]
pub struct MapCache {
    nodes: HashMap<String, Node>,
    pods: HashMap<(String, String), Pod>,
    services: HashMap<(String, String), Service>,
    namespaces: HashMap<String, Namespace>,
}

impl MapCache {
    /// A cache holding the nodes, pods, services and namespaces among `objects`.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = &'a Object>) -> MapCache {
        let mut cache = MapCache::default();
        for o in objects {
            cache.insert(o.clone());
        }
        cache
    }

    /// Adds one object (objects of roles no label reads are ignored).
    pub fn insert(&mut self, object: Object) {
        let key = object.key();
        let (ns, name) = (key.namespace.to_string(), key.name.to_string());
        match object {
            Object::Node(n) => drop(self.nodes.insert(name, n)),
            Object::Pod(p) => drop(self.pods.insert((ns, name), p)),
            Object::Service(s) => drop(self.services.insert((ns, name), s)),
            Object::Namespace(n) => drop(self.namespaces.insert(name, n)),
            _ => {}
        }
    }
}

impl CacheView for MapCache {
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
}
