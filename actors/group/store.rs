//! The group's store: every object of every watched URL, each entry's targets per
//! variant once computed, and the dependency index that says which objects' targets
//! looked up which other objects. It applies an object event (upsert, delete) and keeps
//! the index consistent; what a change makes dirty and how targets are computed is the
//! [`Labeller`](super::labeller::Labeller)'s.
//!
//! Targets are kept per [`VariantId`]: jobs that attach different metadata share the
//! objects, and each variant of a role has its own targets and its own look-ups (a
//! pod's node is a dependency only of the variant that attaches it). With one variant,
//! the usual case, an entry holds it inline.

use arcstr::ArcStr;
// foldhash: every event hashes its key into these maps several times, and SipHash's
// flooding resistance buys nothing for keys the API server already made unique.
use foldhash::{HashMap, HashSet};
use smallvec::SmallVec;
use std::sync::Arc;

use super::variant::VariantId;

use crate::messages::{ObjectSlot, ObjectTargets, TargetChange, UrlId};
use crate::metrics::ApiServerMetrics;
use crate::model::{Object, ObjectKey, Role};

/// An object of some role, as the dependency index names it.
pub type DepKey = (Role, ObjectKey);

/// One variant's targets of an object, as the dirty set and the dependency index name
/// them.
pub type Dependent = (Role, ObjectKey, VariantId);

/// An object's targets for one variant, and what computing them looked up.
#[derive(Debug)]
pub struct VariantTargets {
    /// The variant.
    pub variant: VariantId,
    /// Its targets, once computed (none again after the object changed, until a
    /// subscriber needs them).
    pub targets: Option<ObjectTargets>,
    /// What its labels looked up when they were computed.
    pub deps: Vec<DepKey>,
}

/// One cached object.
#[derive(Debug)]
pub struct Entry {
    /// Its slot for subscribers, kept across updates.
    pub slot: ObjectSlot,
    /// Its namespace and name as first cached: the same shared strings in every change
    /// of the object, so a subscriber tells "same object" by pointer.
    pub key: ObjectKey,
    /// The object.
    pub object: Arc<Object>,
    /// The URL watcher it came from.
    pub url: UrlId,
    /// Its targets per variant asked for (only for roles with subscribers).
    pub variants: SmallVec<[VariantTargets; 1]>,
}

impl Entry {
    /// Its targets for `variant`, if computed.
    pub fn targets(&self, variant: VariantId) -> Option<&ObjectTargets> {
        self.variants
            .iter()
            .find(|v| v.variant == variant)?
            .targets
            .as_ref()
    }
}

/// The objects of one role, by namespace then name, so that look-ups by `&str` need no
/// allocation.
#[derive(Default, Debug)]
struct RoleCache {
    by_namespace: HashMap<ArcStr, HashMap<ArcStr, Entry>>,
    len: usize,
    /// Slots of deleted objects, given to the next new ones.
    free_slots: Vec<u32>,
    /// The next never-used slot.
    next_slot: u32,
}

impl RoleCache {
    fn get(&self, namespace: &str, name: &str) -> Option<&Entry> {
        self.by_namespace.get(namespace)?.get(name)
    }
    fn get_mut(&mut self, namespace: &str, name: &str) -> Option<&mut Entry> {
        self.by_namespace.get_mut(namespace)?.get_mut(name)
    }
    /// A slot for a new object: a deleted object's, or a new one.
    fn allocate_slot(&mut self) -> ObjectSlot {
        ObjectSlot(self.free_slots.pop().unwrap_or_else(|| {
            self.next_slot += 1;
            self.next_slot - 1
        }))
    }

    fn insert(&mut self, key: &ObjectKey, entry: Entry) -> Option<Entry> {
        let old = self
            .by_namespace
            .entry(ArcStr::clone(&key.namespace))
            .or_default()
            .insert(ArcStr::clone(&key.name), entry);
        if old.is_none() {
            self.len += 1;
        }
        old
    }
    fn remove(&mut self, namespace: &str, name: &str) -> Option<Entry> {
        let names = self.by_namespace.get_mut(namespace)?;
        let old = names.remove(name);
        if names.is_empty() {
            self.by_namespace.remove(namespace);
        }
        if let Some(entry) = &old {
            self.len -= 1;
            self.free_slots.push(entry.slot.0);
        }
        old
    }
    fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.by_namespace.values().flat_map(|m| m.values())
    }
}

/// What an upsert replaced: the old object and the targets computed from it, if any.
#[derive(Debug)]
pub struct Replaced {
    /// The object before the update.
    pub object: Arc<Object>,
    /// Its targets per variant, taken out of the entry.
    pub targets: SmallVec<[(VariantId, ObjectTargets); 1]>,
}

impl Replaced {
    /// Its targets for `variant`, if they had been computed.
    pub fn targets(&self, variant: VariantId) -> Option<&ObjectTargets> {
        self.targets
            .iter()
            .find(|(v, _)| *v == variant)
            .map(|(_, t)| t)
    }
}

/// What [`Store::upsert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upserted {
    /// The object was new.
    Inserted,
    /// The object replaced a different one.
    Replaced,
    /// The object equals the cached one (resourceVersion aside): nothing to do.
    Unchanged,
}

/// What [`Store::upsert`] stored, and what its dependents need to know.
#[derive(Debug)]
pub struct Stored {
    /// Whether the object was new, replaced another, or equal to the cached one.
    pub upserted: Upserted,
    /// What it replaced, so that its targets can be recomputed reusing what did not
    /// change.
    pub previous: Option<Replaced>,
    /// The object, as the dependency index names it.
    pub key: DepKey,
}

/// The group's store. See the module documentation.
#[derive(Default, Debug)]
pub struct Store {
    roles: HashMap<Role, RoleCache>,
    /// Who read whom: object → the objects' variants whose labels looked it up.
    dependents: HashMap<DepKey, HashSet<Dependent>>,
    /// The discovery metrics of the group's API server (`kubesd_objects`).
    metrics: Arc<ApiServerMetrics>,
}

impl Store {
    /// An empty store that counts its objects in `metrics`.
    pub fn new(metrics: Arc<ApiServerMetrics>) -> Store {
        Store {
            metrics,
            ..Store::default()
        }
    }

    /// The cached entry of `role` at `namespace/name`.
    pub fn get(&self, role: Role, namespace: &str, name: &str) -> Option<&Entry> {
        self.roles.get(&role)?.get(namespace, name)
    }

    /// How many objects of `role` are cached.
    pub fn len(&self, role: Role) -> usize {
        self.roles.get(&role).map_or(0, |r| r.len)
    }

    /// True when no object of any role is cached.
    pub fn is_empty(&self) -> bool {
        self.roles.values().all(|r| r.len == 0)
    }

    /// The entries of `role`.
    pub fn entries(&self, role: Role) -> impl Iterator<Item = &Entry> {
        self.roles.get(&role).into_iter().flat_map(|r| r.iter())
    }

    /// The keys of `role`'s objects that came from `url`.
    pub fn keys_of_url(&self, role: Role, url: UrlId) -> Vec<ObjectKey> {
        self.entries(role)
            .filter(|e| e.url == url)
            .map(|e| e.object.key())
            .collect()
    }

    /// Stores `object` from `url`, handing back what it replaced. The entry keeps no
    /// targets after a replacement: they were the old object's, and are computed again
    /// (for the new one) when someone needs them. Unless the object equals the cached
    /// one, the objects that depend on it ([`Store::dependents`]) are to be marked dirty.
    pub fn upsert(&mut self, url: UrlId, mut object: Object) -> Stored {
        let role = object.role();
        let key = object.key();
        let rc = self.roles.entry(role).or_default();
        if let Some(entry) = rc.get_mut(&key.namespace, &key.name) {
            // Sharing first compares the strings once: the equality test then finds
            // the shared ones equal by pointer.
            object.share_strings_of(&entry.object);
            if *entry.object == object {
                entry.url = url;
                let (upserted, previous) = (Upserted::Unchanged, None);
                return Stored {
                    upserted,
                    previous,
                    key: (role, key),
                };
            }
            let previous = Replaced {
                object: std::mem::replace(&mut entry.object, Arc::new(object)),
                targets: entry
                    .variants
                    .iter_mut()
                    .filter_map(|v| Some((v.variant, v.targets.take()?)))
                    .collect(),
            };
            entry.url = url;
            let (upserted, previous) = (Upserted::Replaced, Some(previous));
            return Stored {
                upserted,
                previous,
                key: (role, key),
            };
        }
        let slot = rc.allocate_slot();
        rc.insert(
            &key,
            Entry {
                slot,
                key: key.clone(),
                object: Arc::new(object),
                url,
                variants: SmallVec::new(),
            },
        );
        self.metrics.role(role).objects.inc();
        let (upserted, previous) = (Upserted::Inserted, None);
        Stored {
            upserted,
            previous,
            key: (role, key),
        }
    }

    /// Removes an object; returns its entry. Each of its variants' look-ups leaves the
    /// index, and `unlinked` is told of each (to drop it from the dirty set). Its
    /// dependents ([`Store::dependents`]) are to be marked dirty.
    pub fn remove(
        &mut self,
        role: Role,
        key: &ObjectKey,
        mut unlinked: impl FnMut(&Dependent),
    ) -> Option<Entry> {
        let entry = self
            .roles
            .get_mut(&role)?
            .remove(&key.namespace, &key.name)?;
        self.metrics.role(role).objects.dec();
        for v in &entry.variants {
            let me = (role, key.clone(), v.variant);
            self.unlink(&me, &v.deps);
            unlinked(&me);
        }
        Some(entry)
    }

    /// The objects' variants whose labels looked `changed` up.
    pub fn dependents(&self, changed: &DepKey) -> Option<&HashSet<Dependent>> {
        self.dependents.get(changed)
    }

    /// Keeps an object's newly computed targets for a variant and what they looked up
    /// (`deps`, indexed); returns the change when they differ from `old_targets`.
    pub fn store_targets(
        &mut self,
        me: Dependent,
        targets: ObjectTargets,
        old_targets: Option<ObjectTargets>,
        deps: Vec<DepKey>,
    ) -> Option<TargetChange> {
        let (role, key, variant) = &me;
        let entry = self
            .roles
            .get_mut(role)?
            .get_mut(&key.namespace, &key.name)?;
        let at = match entry.variants.iter().position(|v| v.variant == *variant) {
            Some(at) => at,
            None => {
                entry.variants.push(VariantTargets {
                    variant: *variant,
                    targets: None,
                    deps: Vec::new(),
                });
                entry.variants.len() - 1
            }
        };
        let own = &mut entry.variants[at];
        // Usually the same look-ups as last time: then the index is left alone.
        let old_deps = (own.deps != deps).then(|| std::mem::replace(&mut own.deps, deps.clone()));
        let changed = old_targets.as_deref() != Some(&*targets);
        // Unchanged: keep the targets the subscribers already share, not an equal copy.
        own.targets = if changed {
            Some(Arc::clone(&targets))
        } else {
            old_targets
        };
        let change = changed.then(|| TargetChange {
            slot: entry.slot,
            key: entry.key.clone(),
            targets: Some(targets),
        });
        if let Some(old_deps) = old_deps {
            self.unlink(&me, &old_deps);
            for dep in deps {
                self.dependents.entry(dep).or_default().insert(me.clone());
            }
        }
        change
    }

    /// Drops the computed targets of `role`'s object at `key` for `variant` (they no
    /// longer match it): the next snapshot computes them again.
    pub fn forget_targets(&mut self, role: Role, key: &ObjectKey, variant: VariantId) {
        if let Some(own) = self
            .roles
            .get_mut(&role)
            .and_then(|rc| rc.get_mut(&key.namespace, &key.name))
            .and_then(|e| e.variants.iter_mut().find(|v| v.variant == variant))
        {
            own.targets = None;
        }
    }

    /// Forgets `variant` of `role` (nobody asks for it any more): every object's
    /// targets and look-ups for it.
    pub fn drop_variant(&mut self, role: Role, variant: VariantId) {
        let mut unlinked = Vec::new();
        if let Some(rc) = self.roles.get_mut(&role) {
            for names in rc.by_namespace.values_mut() {
                for entry in names.values_mut() {
                    if let Some(at) = entry.variants.iter().position(|v| v.variant == variant) {
                        let own = entry.variants.swap_remove(at);
                        unlinked.push(((role, entry.key.clone(), variant), own.deps));
                    }
                }
            }
        }
        for (me, deps) in unlinked {
            self.unlink(&me, &deps);
        }
    }

    /// Forgets every object (the group stops): keeps the metrics right.
    pub fn clear(&mut self) {
        for (role, rc) in &self.roles {
            self.metrics.role(*role).objects.add(-(rc.len as i64));
        }
        self.roles.clear();
        self.dependents.clear();
    }

    /// How many objects some label looked up (hits and misses).
    #[cfg(test)]
    pub(super) fn looked_up(&self) -> usize {
        self.dependents.len()
    }

    fn unlink(&mut self, me: &Dependent, deps: &[DepKey]) {
        for dep in deps {
            if let Some(set) = self.dependents.get_mut(dep) {
                set.remove(me);
                if set.is_empty() {
                    self.dependents.remove(dep);
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::targets::TargetOptions;

    pub(crate) fn obj(role: Role, json: &str) -> Object {
        Object::decode(role, json.as_bytes()).expect("object decodes")
    }

    pub(crate) fn pod(name: &str, ip: &str, node: &str) -> Object {
        obj(
            Role::Pod,
            &format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","ports":[{{"containerPort":80}}]}}]}},"status":{{"podIP":"{ip}","phase":"Running"}}}}"#
            ),
        )
    }

    pub(crate) fn endpoints(name: &str, pods: &[(&str, &str)]) -> Object {
        let addrs: Vec<String> = pods
            .iter()
            .map(|(p, ip)| {
                format!(
                    r#"{{"ip":"{ip}","targetRef":{{"kind":"Pod","name":"{p}","namespace":"ns"}}}}"#
                )
            })
            .collect();
        obj(
            Role::Endpoints,
            &format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"subsets":[{{"addresses":[{}],"ports":[{{"port":80}}]}}]}}"#,
                addrs.join(",")
            ),
        )
    }

    pub(crate) fn key(name: &str) -> ObjectKey {
        ObjectKey::new(&"ns".into(), &name.into())
    }

    pub(crate) const V0: VariantId = VariantId(0);

    pub(crate) const ATTACH: TargetOptions = TargetOptions {
        attach: crate::targets::AttachMetadata {
            node: false,
            namespace: false,
            deployment: false,
            job: false,
            cronjob: false,
            cpu_request: false,
        },
        semantics: crate::targets::Semantics::VictoriaMetrics,
    };

    #[test]
    fn an_update_shares_the_equal_container_ids_of_the_object_it_replaces() {
        let pod = |phase: &str, id: &str| {
            obj(
                Role::Pod,
                &format!(
                    r#"{{"metadata":{{"name":"p","namespace":"ns"}},"spec":{{"containers":[{{"name":"a"}},{{"name":"b"}}]}},"status":{{"podIP":"10.0.0.1","phase":"{phase}","containerStatuses":[{{"name":"a","containerID":"containerd://1"}},{{"name":"b","containerID":"{id}"}}]}}}}"#
                ),
            )
        };
        let ids = |c: &Store| -> Vec<ArcStr> {
            match &*c.get(Role::Pod, "ns", "p").expect("cached").object {
                Object::Pod(p) => p
                    .status
                    .container_statuses
                    .iter()
                    .map(|s| ArcStr::clone(&s.container_id))
                    .collect(),
                _ => Vec::new(),
            }
        };
        let mut c = Store::default();
        c.upsert(UrlId(0), pod("Pending", "containerd://2"));
        let before = ids(&c);
        assert_eq!(
            c.upsert(UrlId(0), pod("Running", "containerd://3"))
                .upserted,
            Upserted::Replaced
        );
        let after = ids(&c);
        // The equal one is the old string itself; the changed one is the new value.
        assert!(ArcStr::ptr_eq(&before[0], &after[0]));
        assert_eq!(&*after[1], "containerd://3");
        c.clear();
    }

    #[test]
    fn an_update_shares_the_equal_label_and_annotation_strings_of_the_object_it_replaces() {
        let service = |port: u16| {
            format!(
                r#"{{"type":"MODIFIED","object":{{"metadata":{{"name":"s","namespace":"ns","labels":{{"app":"shop","tier":"web"}},"annotations":{{"note":"kept"}}}},"spec":{{"ports":[{{"port":{port}}}]}}}}}}"#
            )
        };
        let decoded =
            |port| match crate::wire::json::decode_event(Role::Service, service(port).as_bytes()) {
                Ok(crate::wire::json::WatchEvent::Modified(o)) => o,
                other => panic!("{other:?}"),
            };
        let strings = |c: &Store| -> Vec<ArcStr> {
            let cached = c.get(Role::Service, "ns", "s").expect("cached");
            let m = cached.object.metadata();
            m.labels
                .iter()
                .chain(m.annotations.iter())
                .flat_map(|(k, v)| [ArcStr::clone(k), ArcStr::clone(v)])
                .chain([ArcStr::clone(&m.namespace)])
                .collect()
        };
        let mut c = Store::default();
        c.upsert(UrlId(0), decoded(80));
        let before = strings(&c);
        assert_eq!(c.upsert(UrlId(0), decoded(81)).upserted, Upserted::Replaced);
        let after = strings(&c);
        // The update was decoded without interning; the cache pointed its keys, values
        // and namespace at the equal ones it held.
        assert_eq!(before.len(), 7);
        for (old, new) in before.iter().zip(&after) {
            assert!(ArcStr::ptr_eq(old, new), "{new}");
        }
        c.clear();
    }

    #[test]
    fn a_modified_pod_shares_every_equal_string_that_decoding_would_intern() {
        let event = |phase: &str| {
            format!(
                r#"{{"type":"MODIFIED","object":{{"metadata":{{"name":"p","namespace":"ns","ownerReferences":[{{"kind":"ReplicaSet","name":"rs","controller":true}}]}},"spec":{{"nodeName":"n1","containers":[{{"name":"app","image":"img:1","ports":[{{"name":"http","containerPort":80,"protocol":"TCP"}}]}}],"initContainers":[{{"name":"side","image":"img:2","restartPolicy":"Always"}}]}},"status":{{"phase":"{phase}","podIP":"10.0.0.1","hostIP":"192.168.0.1","containerStatuses":[{{"name":"app","containerID":"containerd://1"}}]}}}}}}"#
            )
        };
        let decoded =
            |phase| match crate::wire::json::decode_event(Role::Pod, event(phase).as_bytes()) {
                Ok(crate::wire::json::WatchEvent::Modified(o)) => o,
                other => panic!("{other:?}"),
            };
        let strings = |c: &Store| -> Vec<ArcStr> {
            let Object::Pod(p) = &*c.get(Role::Pod, "ns", "p").expect("cached").object else {
                panic!("not a pod");
            };
            let owner = &p.metadata.owner_references[0];
            let (app, side) = (&p.spec.containers[0], &p.spec.init_containers[0]);
            let port = &app.ports[0];
            let status = &p.status.container_statuses[0];
            [
                &p.metadata.namespace,
                &owner.kind,
                &owner.name,
                &p.spec.node_name,
                &app.name,
                &app.image,
                &port.name,
                &port.protocol,
                &side.name,
                &side.image,
                &side.restart_policy,
                &p.status.host_ip,
                &status.name,
                &status.container_id,
            ]
            .into_iter()
            .cloned()
            .collect()
        };
        let mut c = Store::default();
        c.upsert(UrlId(0), decoded("Pending"));
        let before = strings(&c);
        assert_eq!(
            c.upsert(UrlId(0), decoded("Running")).upserted,
            Upserted::Replaced
        );
        let after = strings(&c);
        for (old, new) in before.iter().zip(&after) {
            assert!(ArcStr::ptr_eq(old, new), "{new}: not shared");
        }
        let Object::Pod(p) = &*c.get(Role::Pod, "ns", "p").expect("cached").object else {
            panic!("not a pod");
        };
        assert_eq!(&*p.status.phase, "Running");
        c.clear();
    }

    #[test]
    fn equal_objects_are_unchanged_whatever_their_resource_version() {
        let mut c = Store::default();
        assert_eq!(
            c.upsert(UrlId(0), pod("p", "10.0.0.1", "n1")).upserted,
            Upserted::Inserted
        );
        let mut same = pod("p", "10.0.0.1", "n1");
        if let Object::Pod(p) = &mut same {
            p.metadata.resource_version = "99".into();
        }
        assert_eq!(c.upsert(UrlId(0), same).upserted, Upserted::Unchanged);
        assert_eq!(
            c.upsert(UrlId(0), pod("p", "10.0.0.2", "n1")).upserted,
            Upserted::Replaced
        );
        c.clear();
    }

    #[test]
    fn keys_by_url() {
        let mut c = Store::default();
        c.upsert(UrlId(0), pod("a", "10.0.0.1", "n1"));
        c.upsert(UrlId(2), pod("b", "10.0.0.2", "n1"));
        assert_eq!(c.keys_of_url(Role::Pod, UrlId(2)), [key("b")]);
        assert_eq!(c.len(Role::Pod), 2);
        c.clear();
        assert!(c.is_empty());
    }
}
