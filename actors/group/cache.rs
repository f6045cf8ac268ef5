//! The group's authoritative cache: every object of every watched URL, the targets
//! computed from each (once, for all subscribers), and the dependency index that says
//! which objects' targets read which other objects.
//!
//! Dependencies are not guessed from the role: label generation runs against a
//! `RecordingView` that notes every look-up it makes, hits and misses alike. A miss
//! matters: an endpoint whose pod is not cached yet must be recomputed when the pod
//! arrives. So when an object changes, exactly the objects whose labels looked it up are
//! marked dirty, and a flush recomputes only those.
//!
//! Targets are kept per [`VariantId`]: jobs that attach different metadata share the
//! objects, and each variant of a role has its own targets and its own look-ups (a
//! pod's node is a dependency only of the variant that attaches it), so a change
//! re-labels exactly the variants that read it. With one variant, the usual case, an
//! entry holds it inline.

use arcstr::ArcStr;
use std::cell::RefCell;
// foldhash: every event hashes its key into these maps several times, and SipHash's
// flooding resistance buys nothing for keys the API server already made unique.
use foldhash::{HashMap, HashSet};
use smallvec::SmallVec;
use std::sync::Arc;

use super::variant::VariantId;

use crate::messages::{ObjectSlot, ObjectTargets, TargetChange, UrlId};
use crate::metrics::ApiServerMetrics;
use crate::model::{
    Gateway, Job, Namespace, Node, Object, ObjectKey, Pod, ReplicaSet, Role, Service,
};
use crate::targets::{CacheView, TargetContext, TargetOptions, target_labels_after};

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

/// What [`GroupCache::upsert`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upserted {
    /// The object was new.
    Inserted,
    /// The object replaced a different one.
    Replaced,
    /// The object equals the cached one (resourceVersion aside): nothing to do.
    Unchanged,
}

/// The group's cache.
#[derive(Default, Debug)]
pub struct GroupCache {
    roles: HashMap<Role, RoleCache>,
    /// Who read whom: object → the objects' variants whose labels looked it up.
    dependents: HashMap<DepKey, HashSet<Dependent>>,
    /// Objects' variants whose dependencies changed since their targets were computed.
    dirty: HashSet<Dependent>,
    /// The discovery metrics of the group's API server (`kubesd_objects`).
    metrics: Arc<ApiServerMetrics>,
}

impl GroupCache {
    /// An empty cache that counts its objects in `metrics`.
    pub fn new(metrics: Arc<ApiServerMetrics>) -> GroupCache {
        GroupCache {
            metrics,
            ..GroupCache::default()
        }
    }

    /// The discovery metrics of the group's API server.
    pub fn metrics(&self) -> &ApiServerMetrics {
        &self.metrics
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

    /// How many objects are marked dirty.
    pub fn dirty_len(&self) -> usize {
        self.dirty.len()
    }

    /// Stores `object` from `url`. Marks the objects that depend on it dirty, unless it
    /// equals the cached object.
    pub fn upsert(&mut self, url: UrlId, object: Object) -> Upserted {
        self.upsert_with_previous(url, object).0
    }

    /// [`GroupCache::upsert`], also handing back what it replaced, so that
    /// [`GroupCache::compute_targets_after`] can reuse what did not change. The entry
    /// keeps no targets after a replacement: they were the old object's, and are
    /// computed again (for the new one) when someone needs them.
    pub fn upsert_with_previous(
        &mut self,
        url: UrlId,
        mut object: Object,
    ) -> (Upserted, Option<Replaced>) {
        let role = object.role();
        let key = object.key();
        let rc = self.roles.entry(role).or_default();
        if let Some(entry) = rc.get_mut(&key.namespace, &key.name) {
            // Sharing first compares the strings once: the equality test then finds
            // the shared ones equal by pointer.
            object.share_strings_of(&entry.object);
            if *entry.object == object {
                entry.url = url;
                return (Upserted::Unchanged, None);
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
            self.mark_dependents_dirty(&(role, key));
            return (Upserted::Replaced, Some(previous));
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
        self.mark_dependents_dirty(&(role, key));
        (Upserted::Inserted, None)
    }

    /// Removes an object; returns its entry. Marks its dependents dirty.
    pub fn remove(&mut self, role: Role, key: &ObjectKey) -> Option<Entry> {
        let entry = self
            .roles
            .get_mut(&role)?
            .remove(&key.namespace, &key.name)?;
        self.metrics.role(role).objects.dec();
        for v in &entry.variants {
            let me = (role, key.clone(), v.variant);
            self.unlink(&me, &v.deps);
            self.dirty.remove(&me);
        }
        self.mark_dependents_dirty(&(role, key.clone()));
        Some(entry)
    }

    /// Recomputes the targets of `role`'s object at `key` for `variant` (labelled by
    /// `options`); returns the change when they differ from the ones computed before
    /// (or were never computed).
    pub fn compute_targets(
        &mut self,
        role: Role,
        key: &ObjectKey,
        variant: VariantId,
        options: TargetOptions,
    ) -> Option<TargetChange> {
        self.compute_targets_after(role, key, variant, options, None)
    }

    /// [`GroupCache::compute_targets`] for an object that just replaced `previous`: the
    /// parts of its old targets that only depend on unchanged fields are reused, and
    /// the change is reported against those old targets.
    pub fn compute_targets_after(
        &mut self,
        role: Role,
        key: &ObjectKey,
        variant: VariantId,
        options: TargetOptions,
        previous: Option<&Replaced>,
    ) -> Option<TargetChange> {
        let entry = self.get(role, &key.namespace, &key.name)?;
        let object = Arc::clone(&entry.object);
        let old_targets = match previous {
            Some(p) => p.targets(variant).cloned(),
            None => entry.targets(variant).cloned(),
        };
        let reusable = previous.and_then(|p| Some((&*p.object, &**p.targets(variant)?)));
        let view = RecordingView {
            cache: self,
            seen: RefCell::new(Vec::new()),
        };
        let ctx = TargetContext::new(options, &view);
        let targets: ObjectTargets = target_labels_after(&object, &ctx, reusable).into();
        let deps = view.seen.into_inner();
        let me = (role, key.clone(), variant);
        self.dirty.remove(&me);
        self.store_targets(me, targets, old_targets, deps)
    }

    /// Keeps an object's newly computed targets for a variant and what they looked up;
    /// returns the change when they differ from `old_targets`.
    fn store_targets(
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
    /// targets and look-ups for it, and its place in the dirty set.
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
        self.dirty
            .retain(|(r, _, v)| !(*r == role && *v == variant));
    }

    /// Takes the dirty set (for a flush).
    pub fn take_dirty(&mut self) -> Vec<Dependent> {
        self.dirty.drain().collect()
    }

    /// Puts back objects a flush took but did not recompute, for a later flush (an
    /// object removed meanwhile is not put back).
    pub fn keep_dirty(&mut self, keys: Vec<Dependent>) {
        for (role, key, variant) in keys {
            if self.get(role, &key.namespace, &key.name).is_some() {
                self.dirty.insert((role, key, variant));
            }
        }
    }

    /// Forgets every object (the group stops): keeps the metrics right.
    pub fn clear(&mut self) {
        for (role, rc) in &self.roles {
            self.metrics.role(*role).objects.add(-(rc.len as i64));
        }
        self.roles.clear();
        self.dependents.clear();
        self.dirty.clear();
    }

    fn mark_dependents_dirty(&mut self, changed: &DepKey) {
        if let Some(dependents) = self.dependents.get(changed) {
            self.dirty.extend(dependents.iter().cloned());
        }
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

/// A [`CacheView`] over the group cache that records each look-up.
struct RecordingView<'a> {
    cache: &'a GroupCache,
    seen: RefCell<Vec<DepKey>>,
}

impl RecordingView<'_> {
    fn lookup(&self, role: Role, namespace: &str, name: &str) -> Option<&Object> {
        let entry = self.cache.get(role, namespace, name);
        // A hit shares the cached key's strings; only a miss allocates.
        let key = match entry {
            Some(e) => e.object.key(),
            None => ObjectKey {
                namespace: ArcStr::from(namespace),
                name: ArcStr::from(name),
            },
        };
        let mut seen = self.seen.borrow_mut();
        if !seen.iter().any(|(r, k)| *r == role && *k == key) {
            seen.push((role, key));
        }
        entry.map(|e| &*e.object)
    }
}

impl CacheView for RecordingView<'_> {
    fn node(&self, name: &str) -> Option<&Node> {
        match self.lookup(Role::Node, "", name)? {
            Object::Node(n) => Some(n),
            _ => None,
        }
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<&Pod> {
        match self.lookup(Role::Pod, namespace, name)? {
            Object::Pod(p) => Some(p),
            _ => None,
        }
    }
    fn service(&self, namespace: &str, name: &str) -> Option<&Service> {
        match self.lookup(Role::Service, namespace, name)? {
            Object::Service(s) => Some(s),
            _ => None,
        }
    }
    fn namespace(&self, name: &str) -> Option<&Namespace> {
        match self.lookup(Role::Namespace, "", name)? {
            Object::Namespace(n) => Some(n),
            _ => None,
        }
    }
    fn replica_set(&self, namespace: &str, name: &str) -> Option<&ReplicaSet> {
        match self.lookup(Role::ReplicaSet, namespace, name)? {
            Object::ReplicaSet(r) => Some(r),
            _ => None,
        }
    }
    fn job(&self, namespace: &str, name: &str) -> Option<&Job> {
        match self.lookup(Role::Job, namespace, name)? {
            Object::Job(j) => Some(j),
            _ => None,
        }
    }
    fn gateway(&self, namespace: &str, name: &str) -> Option<&Gateway> {
        match self.lookup(Role::Gateway, namespace, name)? {
            Object::Gateway(g) => Some(g),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(role: Role, json: &str) -> Object {
        Object::decode(role, json.as_bytes()).expect("object decodes")
    }

    fn pod(name: &str, ip: &str, node: &str) -> Object {
        obj(
            Role::Pod,
            &format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","ports":[{{"containerPort":80}}]}}]}},"status":{{"podIP":"{ip}","phase":"Running"}}}}"#
            ),
        )
    }

    fn endpoints(name: &str, pods: &[(&str, &str)]) -> Object {
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

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(&"ns".into(), &name.into())
    }

    const V0: VariantId = VariantId(0);

    const ATTACH: TargetOptions = TargetOptions {
        attach: crate::targets::AttachMetadata {
            node: false,
            namespace: false,
            deployment: false,
            job: false,
            cronjob: false,
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
        let ids = |c: &GroupCache| -> Vec<ArcStr> {
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
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), pod("Pending", "containerd://2"));
        let before = ids(&c);
        assert_eq!(
            c.upsert(UrlId(0), pod("Running", "containerd://3")),
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
            |port| match crate::watch::decode_event(Role::Service, service(port).as_bytes()) {
                Ok(crate::watch::WatchEvent::Modified(o)) => o,
                other => panic!("{other:?}"),
            };
        let strings = |c: &GroupCache| -> Vec<ArcStr> {
            let cached = c.get(Role::Service, "ns", "s").expect("cached");
            let m = cached.object.metadata();
            m.labels
                .iter()
                .chain(m.annotations.iter())
                .flat_map(|(k, v)| [ArcStr::clone(k), ArcStr::clone(v)])
                .chain([ArcStr::clone(&m.namespace)])
                .collect()
        };
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), decoded(80));
        let before = strings(&c);
        assert_eq!(c.upsert(UrlId(0), decoded(81)), Upserted::Replaced);
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
        let decoded = |phase| match crate::watch::decode_event(Role::Pod, event(phase).as_bytes()) {
            Ok(crate::watch::WatchEvent::Modified(o)) => o,
            other => panic!("{other:?}"),
        };
        let strings = |c: &GroupCache| -> Vec<ArcStr> {
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
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), decoded("Pending"));
        let before = strings(&c);
        assert_eq!(c.upsert(UrlId(0), decoded("Running")), Upserted::Replaced);
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
        let mut c = GroupCache::default();
        assert_eq!(
            c.upsert(UrlId(0), pod("p", "10.0.0.1", "n1")),
            Upserted::Inserted
        );
        let mut same = pod("p", "10.0.0.1", "n1");
        if let Object::Pod(p) = &mut same {
            p.metadata.resource_version = "99".into();
        }
        assert_eq!(c.upsert(UrlId(0), same), Upserted::Unchanged);
        assert_eq!(
            c.upsert(UrlId(0), pod("p", "10.0.0.2", "n1")),
            Upserted::Replaced
        );
        c.clear();
    }

    #[test]
    fn a_pod_change_dirties_exactly_the_endpoints_that_read_it() {
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), pod("a", "10.0.0.1", "n1"));
        c.upsert(UrlId(0), pod("b", "10.0.0.2", "n1"));
        c.upsert(UrlId(1), endpoints("ea", &[("a", "10.0.0.1")]));
        c.upsert(UrlId(1), endpoints("eb", &[("b", "10.0.0.2")]));
        // Endpoints "ec" references a pod that is not cached yet: a recorded miss.
        c.upsert(UrlId(1), endpoints("ec", &[("c", "10.0.0.3")]));
        for name in ["ea", "eb", "ec"] {
            assert!(
                c.compute_targets(Role::Endpoints, &key(name), V0, ATTACH)
                    .is_some()
            );
        }
        assert_eq!(c.dirty_len(), 0);

        c.upsert(UrlId(0), pod("a", "10.0.0.1", "n2"));
        assert_eq!(c.take_dirty(), [(Role::Endpoints, key("ea"), V0)]);

        c.upsert(UrlId(0), pod("c", "10.0.0.3", "n1"));
        assert_eq!(c.take_dirty(), [(Role::Endpoints, key("ec"), V0)]);
        let change = c
            .compute_targets(Role::Endpoints, &key("ec"), V0, ATTACH)
            .expect("pod labels appear");
        let targets = change.targets.expect("targets");
        assert_eq!(targets[0].get("__meta_kubernetes_pod_name"), Some("c"));

        // Recomputing without a real change reports nothing.
        assert!(
            c.compute_targets(Role::Endpoints, &key("ec"), V0, ATTACH)
                .is_none()
        );

        c.remove(Role::Pod, &key("b"));
        assert_eq!(c.take_dirty(), [(Role::Endpoints, key("eb"), V0)]);
        c.remove(Role::Endpoints, &key("ea"));
        c.upsert(UrlId(0), pod("a", "10.0.0.9", "n2"));
        assert!(
            c.take_dirty().is_empty(),
            "a removed endpoints object depends on nothing"
        );
        c.clear();
    }

    fn gateway(protocol_of_b: &str) -> Object {
        obj(
            Role::Gateway,
            &format!(
                r#"{{"metadata":{{"name":"gw","namespace":"ns"}},"spec":{{"listeners":[
                    {{"name":"a","hostname":"*.example.com","port":80,"protocol":"HTTP"}},
                    {{"name":"b","hostname":"*.example.com","port":443,"protocol":"{protocol_of_b}"}}]}}}}"#
            ),
        )
    }

    fn route(name: &str, section: &str) -> Object {
        obj(
            Role::HttpRoute,
            &format!(
                r#"{{"metadata":{{"name":"{name}","namespace":"ns"}},"spec":{{
                    "parentRefs":[{{"name":"gw","sectionName":"{section}"}}],
                    "hostnames":["{name}.example.com"],"rules":[{{}}]}}}}"#
            ),
        )
    }

    #[test]
    fn a_listener_change_dirties_the_routes_of_its_gateway_and_changes_those_on_it() {
        // ATTACH is in VictoriaMetrics' semantics, where routes look their parents up.
        let vm = ATTACH;
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), gateway("HTTPS"));
        c.upsert(UrlId(1), route("on-a", "a"));
        c.upsert(UrlId(1), route("on-b", "b"));
        // A route whose Gateway is not cached: a recorded miss.
        c.upsert(UrlId(1), obj(Role::HttpRoute, r#"{"metadata":{"name":"elsewhere","namespace":"ns"},"spec":{"parentRefs":[{"name":"other"}],"hostnames":["x.example.com"]}}"#));
        for name in ["on-a", "on-b", "elsewhere"] {
            c.compute_targets(Role::HttpRoute, &key(name), V0, vm);
        }
        assert_eq!(c.dirty_len(), 0);

        c.upsert(UrlId(0), gateway("TLS"));
        let mut dirty = c.take_dirty();
        dirty.sort();
        assert_eq!(
            dirty,
            [
                (Role::HttpRoute, key("on-a"), V0),
                (Role::HttpRoute, key("on-b"), V0)
            ]
        );
        // Both are recomputed; only the one on the changed listener has new targets.
        assert!(
            c.compute_targets(Role::HttpRoute, &key("on-a"), V0, vm)
                .is_none()
        );
        let change = c
            .compute_targets(Role::HttpRoute, &key("on-b"), V0, vm)
            .expect("re-labelled");
        let targets = change.targets.expect("targets");
        assert_eq!(
            targets[0].get("__meta_kubernetes_httproute_scheme"),
            Some("tls")
        );
        // The Gateway a route missed arrives: that route, and it alone, is dirty.
        let other = obj(
            Role::Gateway,
            r#"{"metadata":{"name":"other","namespace":"ns"},"spec":{"listeners":[{"name":"x","port":80,"protocol":"HTTP"}]}}"#,
        );
        c.upsert(UrlId(0), other);
        assert_eq!(c.take_dirty(), [(Role::HttpRoute, key("elsewhere"), V0)]);
    }

    fn node(name: &str, zone: &str) -> Object {
        obj(
            Role::Node,
            &format!(
                r#"{{"metadata":{{"name":"{name}","labels":{{"zone":"{zone}"}}}},"status":{{"addresses":[{{"type":"InternalIP","address":"10.1.0.1"}}]}}}}"#
            ),
        )
    }

    /// The two variants of role pod: without and with the node attached.
    const PLAIN: VariantId = VariantId(0);
    const WITH_NODE: VariantId = VariantId(1);

    fn with_node() -> TargetOptions {
        let mut options = ATTACH;
        options.attach.node = true;
        options
    }

    fn zone(change: Option<TargetChange>) -> Option<String> {
        let targets = change?.targets?;
        targets[0]
            .get("__meta_kubernetes_node_label_zone")
            .map(str::to_string)
    }

    #[test]
    fn a_node_change_re_labels_only_the_variant_that_attached_it() {
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), node("n1", "a"));
        c.upsert(UrlId(1), pod("p", "10.0.0.1", "n1"));
        let plain = c.compute_targets(Role::Pod, &key("p"), PLAIN, ATTACH);
        assert!(plain.is_some(), "first computation is a change");
        let first = c.compute_targets(Role::Pod, &key("p"), WITH_NODE, with_node());
        assert_eq!(zone(first).as_deref(), Some("a"));
        let entry = c.get(Role::Pod, "ns", "p").expect("cached");
        assert_eq!(entry.variants.len(), 2);
        let plain_targets = entry.targets(PLAIN).expect("computed");
        assert!(
            plain_targets[0]
                .get("__meta_kubernetes_node_name")
                .is_none()
        );

        c.upsert(UrlId(0), node("n1", "b"));
        assert_eq!(c.take_dirty(), [(Role::Pod, key("p"), WITH_NODE)]);
        let relabelled = c.compute_targets(Role::Pod, &key("p"), WITH_NODE, with_node());
        assert_eq!(zone(relabelled).as_deref(), Some("b"));

        // A change of the pod itself changes both variants' targets.
        c.upsert(UrlId(1), pod("p", "10.0.0.2", "n1"));
        assert!(c.take_dirty().is_empty(), "nothing read the pod");
        assert!(
            c.get(Role::Pod, "ns", "p")
                .expect("cached")
                .targets(PLAIN)
                .is_none()
        );
        c.clear();
    }

    #[test]
    fn a_dropped_variant_leaves_no_targets_or_dependencies() {
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), node("n1", "a"));
        c.upsert(UrlId(1), pod("p", "10.0.0.1", "n1"));
        c.compute_targets(Role::Pod, &key("p"), PLAIN, ATTACH);
        c.compute_targets(Role::Pod, &key("p"), WITH_NODE, with_node());
        c.upsert(UrlId(0), node("n1", "b"));
        c.drop_variant(Role::Pod, WITH_NODE);
        assert_eq!(c.dirty_len(), 0, "its dirty mark goes with it");
        let entry = c.get(Role::Pod, "ns", "p").expect("cached");
        assert_eq!(entry.variants.len(), 1);
        assert!(entry.targets(PLAIN).is_some());
        c.upsert(UrlId(0), node("n1", "c"));
        assert_eq!(c.dirty_len(), 0, "no look-up of the node is left");
        assert!(c.dependents.is_empty());
        c.clear();
    }

    #[test]
    fn keys_by_url() {
        let mut c = GroupCache::default();
        c.upsert(UrlId(0), pod("a", "10.0.0.1", "n1"));
        c.upsert(UrlId(2), pod("b", "10.0.0.2", "n1"));
        assert_eq!(c.keys_of_url(Role::Pod, UrlId(2)), [key("b")]);
        assert_eq!(c.len(Role::Pod), 2);
        c.clear();
        assert!(c.is_empty());
    }
}
