//! [`PairIndex`]: objects by a `key=value` pair they carry, per namespace, as the
//! controllers' informers index them: pods and EndpointSlices by label, services by
//! selector, pods by owner. The endpoints controllers look up a pod's services and a
//! service's pods and slices through it, so a write costs the same in a namespace of
//! any size.

use crate::json_pointer::at;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::key::ObjectKey;
use crate::resource::Resource;

/// Which pairs of an object are indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `metadata.labels` (pods and EndpointSlices).
    Label,
    /// `spec.selector` (services).
    Selector,
    /// The first owner reference, as `kind=name` (pods): their controller, as the
    /// generator and the churn write it.
    Owner,
}

/// (resource, field, namespace, key, value).
type PairKey = (Resource, Field, String, String, String);

/// The names of the objects carrying each indexed pair, in name order.
#[derive(Debug, Default)]
pub(super) struct PairIndex {
    names: HashMap<PairKey, BTreeSet<Arc<str>>>,
}

impl PairIndex {
    /// Follows a write of the object at `key`: `before` is its previous state (none
    /// for a create), `after` its new one (none for a delete).
    pub(super) fn update(
        &mut self,
        resource: Resource,
        key: &ObjectKey,
        before: Option<&Value>,
        after: Option<&Value>,
    ) {
        let old = before.map_or_else(Vec::new, |o| pairs_of(resource, o));
        let new = after.map_or_else(Vec::new, |o| pairs_of(resource, o));
        let (namespace, name) = key;
        for (field, k, v) in old.iter().filter(|p| !new.contains(p)) {
            let pair = (
                resource,
                *field,
                namespace.clone(),
                k.to_string(),
                v.to_string(),
            );
            if let Some(names) = self.names.get_mut(&pair) {
                names.remove(name.as_str());
                if names.is_empty() {
                    self.names.remove(&pair);
                }
            }
        }
        let shared: Arc<str> = Arc::from(name.as_str());
        for (field, k, v) in new.iter().filter(|p| !old.contains(p)) {
            let pair = (
                resource,
                *field,
                namespace.clone(),
                k.to_string(),
                v.to_string(),
            );
            self.names.entry(pair).or_default().insert(shared.clone());
        }
    }

    /// The names of the objects of `resource` in `namespace` whose `field` holds
    /// `key=value`, in name order.
    pub(super) fn names(
        &self,
        resource: Resource,
        field: Field,
        namespace: &str,
        key: &str,
        value: &str,
    ) -> impl Iterator<Item = &str> {
        let pair = (
            resource,
            field,
            namespace.to_string(),
            key.to_string(),
            value.to_string(),
        );
        self.names
            .get(&pair)
            .into_iter()
            .flatten()
            .map(|name| &**name)
    }
}

/// The indexed pairs of an object of `resource`; string values only (a selector or
/// label that is not a string matches nothing).
fn pairs_of(resource: Resource, object: &Value) -> Vec<(Field, &str, &str)> {
    let mut pairs = Vec::new();
    let mut add = |field: Field, pointer: &str| {
        let map = at(object, pointer).and_then(Value::as_object);
        for (k, v) in map.into_iter().flatten() {
            if let Some(v) = v.as_str() {
                pairs.push((field, k.as_str(), v));
            }
        }
    };
    match resource {
        Resource::Pods => {
            add(Field::Label, "/metadata/labels");
            let owner = at(object, "/metadata/ownerReferences/0");
            let text = |f: &str| owner.and_then(|o| o.get(f)).and_then(Value::as_str);
            if let (Some(kind), Some(name)) = (text("kind"), text("name")) {
                pairs.push((Field::Owner, kind, name));
            }
        }
        Resource::EndpointSlices => add(Field::Label, "/metadata/labels"),
        Resource::Services => add(Field::Selector, "/spec/selector"),
        _ => {}
    }
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(index: &PairIndex, field: Field, key: &str, value: &str) -> Vec<String> {
        index
            .names(Resource::Pods, field, "ns", key, value)
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn follows_labels_and_owners_through_writes() {
        let mut index = PairIndex::default();
        let pod = |app: &str, rs: &str| {
            json!({"metadata": {"labels": {"app": app, "n": 1},
                   "ownerReferences": [{"kind": "ReplicaSet", "name": rs}]}})
        };
        let (b, a) = (
            ("ns".to_string(), "b".to_string()),
            ("ns".to_string(), "a".to_string()),
        );
        index.update(Resource::Pods, &b, None, Some(&pod("web", "web-1")));
        index.update(Resource::Pods, &a, None, Some(&pod("web", "web-1")));
        assert_eq!(names(&index, Field::Label, "app", "web"), ["a", "b"]);
        assert_eq!(
            names(&index, Field::Owner, "ReplicaSet", "web-1"),
            ["a", "b"]
        );
        // A number is no label value.
        assert!(names(&index, Field::Label, "n", "1").is_empty());
        let (before, after) = (pod("web", "web-1"), pod("api", "web-2"));
        index.update(Resource::Pods, &a, Some(&before), Some(&after));
        assert_eq!(names(&index, Field::Label, "app", "web"), ["b"]);
        assert_eq!(names(&index, Field::Label, "app", "api"), ["a"]);
        assert_eq!(names(&index, Field::Owner, "ReplicaSet", "web-2"), ["a"]);
        index.update(Resource::Pods, &b, Some(&pod("web", "web-1")), None);
        assert!(names(&index, Field::Label, "app", "web").is_empty());
        assert!(index.names.keys().all(|k| k.4 != "web" && k.4 != "web-1"));
        // Another namespace and another resource are other entries.
        assert_eq!(
            index
                .names(Resource::EndpointSlices, Field::Label, "ns", "app", "api")
                .count(),
            0
        );
        assert_eq!(
            index
                .names(Resource::Pods, Field::Label, "other", "app", "api")
                .count(),
            0
        );
    }

    #[test]
    fn indexes_a_services_selector() {
        let mut index = PairIndex::default();
        let key = ("ns".to_string(), "web".to_string());
        let svc =
            json!({"metadata": {"labels": {"team": "a"}}, "spec": {"selector": {"app": "web"}}});
        index.update(Resource::Services, &key, None, Some(&svc));
        let found: Vec<&str> = index
            .names(Resource::Services, Field::Selector, "ns", "app", "web")
            .collect();
        assert_eq!(found, ["web"]);
        assert_eq!(
            index
                .names(Resource::Services, Field::Label, "ns", "team", "a")
                .count(),
            0
        );
    }
}
