//! The group's labeller: computes an object's targets for each variant asked for, and
//! re-labels the objects whose dependencies changed.
//!
//! Dependencies are not guessed from the role: label generation runs against a
//! `RecordingView` of the [`Store`] that notes every look-up it makes, hits and misses
//! alike. A miss matters: an endpoint whose pod is not cached yet must be recomputed
//! when the pod arrives. So when an object changes, exactly the objects' variants whose
//! labels looked it up are marked dirty, and a flush recomputes only those, for the
//! variants that are ready.

use arcstr::ArcStr;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use foldhash::HashSet;
use smallvec::SmallVec;

use super::store::{DepKey, Dependent, Entry, Replaced, Store, Upserted};
use super::variant::{Audience, TargetVariant, VariantId, Variants};
use crate::messages::{ObjectTargets, TargetChange, UrlId};
use crate::model::{
    Gateway, Job, Namespace, Node, Object, ObjectKey, Pod, ReplicaSet, Role, Service,
};
use crate::targets::{CacheView, Semantics, TargetContext, TargetOptions, target_labels_after};
use crate::wire::json::WatchEvent;

/// What a flush recomputed: the changes per role and variant, and how many objects'
/// variants it recomputed.
#[derive(Debug, Default)]
pub struct Flushed {
    /// The changed targets, per role and variant, to push.
    pub changes: HashMap<(Role, VariantId), Vec<TargetChange>>,
    /// How many objects' variants were recomputed.
    pub recomputed: usize,
}

/// One batch's changes to a role's objects: the variants they are computed for, and
/// each one's changes so far, in the same order.
#[derive(Debug)]
pub struct Changes {
    /// The role.
    pub role: Role,
    /// Its variants with subscribers.
    pub audience: Audience,
    /// The changes of each, in `audience`'s order.
    pub per_variant: SmallVec<[Vec<TargetChange>; 1]>,
    /// Whether each waits for other roles (in `audience`'s order): a new object of
    /// such a variant is marked dirty, not labelled, as the flush that completes the
    /// variant's sync labels it once its dependencies are all there.
    pub waits: SmallVec<[bool; 1]>,
}

/// A batch for one variant: to whom, its changes, and whether it goes even if empty.
pub type Batch = ((Role, VariantId), Vec<TargetChange>, bool);

impl Changes {
    /// Each variant's changes, in order; none goes if empty.
    pub fn into_batches(self) -> impl Iterator<Item = Batch> {
        let role = self.role;
        let variants = self.audience.into_iter().map(move |(v, _)| (role, v));
        variants
            .zip(self.per_variant)
            .map(|(to, changes)| (to, changes, false))
    }

    /// The batches at the end of a LIST that made the variants `newly` synced: each
    /// variant's changes, sent even if empty when it synced now (its subscribers learn
    /// so); then an empty batch for each other variant that synced now.
    pub fn with_synced(self, newly: Vec<(Role, VariantId)>) -> Vec<Batch> {
        let mine = |to: &(Role, VariantId)| {
            to.0 == self.role && self.audience.iter().any(|(v, _)| *v == to.1)
        };
        let others: Vec<Batch> = (newly.iter())
            .filter(|to| !mine(to))
            .map(|to| (*to, Vec::new(), true))
            .collect();
        let own = self.into_batches();
        let own = own.map(|(to, changes, _)| (to, changes, newly.contains(&to)));
        own.chain(others).collect()
    }
}

/// The group's labeller. See the module documentation.
#[derive(Debug, Default)]
pub struct Labeller {
    /// How targets are labelled.
    semantics: Semantics,
    /// The variants the subscribers ask for, and whether each has synced.
    variants: Variants,
    /// Objects' variants whose dependencies changed since their targets were computed.
    dirty: HashSet<Dependent>,
}

impl Labeller {
    /// A labeller under `semantics`, with no variant yet.
    pub fn new(semantics: Semantics) -> Labeller {
        Labeller {
            semantics,
            ..Labeller::default()
        }
    }

    /// The variants asked for.
    pub fn variants(&self) -> &Variants {
        &self.variants
    }

    /// The variants asked for, to add, remove or mark synced.
    pub fn variants_mut(&mut self) -> &mut Variants {
        &mut self.variants
    }

    /// The variants of `role` with subscribers, to compute its objects' targets for.
    pub fn audience(&self, role: Role) -> Audience {
        self.variants.audience(role, self.semantics)
    }

    /// How many objects' variants are marked dirty.
    pub fn dirty_len(&self) -> usize {
        self.dirty.len()
    }

    /// Stores `object` from `url` in `store`, handing back what it replaced (see
    /// [`Store::upsert`]). Marks the objects that depend on it dirty, unless it equals
    /// the cached object.
    pub fn upsert(
        &mut self,
        store: &mut Store,
        url: UrlId,
        object: Object,
    ) -> (Upserted, Option<Replaced>) {
        let stored = store.upsert(url, object);
        if stored.upserted != Upserted::Unchanged {
            self.mark_dirty(store, &stored.key);
        }
        (stored.upserted, stored.previous)
    }

    /// Removes an object from `store`; returns its entry. Its own dirty marks go, and
    /// its dependents are marked dirty.
    pub fn remove(&mut self, store: &mut Store, role: Role, key: &ObjectKey) -> Option<Entry> {
        let entry = store.remove(role, key, |me| {
            self.dirty.remove(me);
        })?;
        self.mark_dirty(store, &(role, key.clone()));
        Some(entry)
    }

    /// Marks the objects' variants whose labels looked `changed` up dirty.
    fn mark_dirty(&mut self, store: &Store, changed: &DepKey) {
        if let Some(dependents) = store.dependents(changed) {
            self.dirty.extend(dependents.iter().cloned());
        }
    }

    /// Recomputes the targets of `role`'s object at `key` for `variant` (labelled by
    /// `options`); returns the change when they differ from the ones computed before
    /// (or were never computed).
    pub fn compute_targets(
        &mut self,
        store: &mut Store,
        role: Role,
        key: &ObjectKey,
        variant: VariantId,
        options: TargetOptions,
    ) -> Option<TargetChange> {
        self.compute_targets_after(store, role, key, variant, options, None)
    }

    /// [`Labeller::compute_targets`] for an object that just replaced `previous`: the
    /// parts of its old targets that only depend on unchanged fields are reused, and
    /// the change is reported against those old targets.
    pub fn compute_targets_after(
        &mut self,
        store: &mut Store,
        role: Role,
        key: &ObjectKey,
        variant: VariantId,
        options: TargetOptions,
        previous: Option<&Replaced>,
    ) -> Option<TargetChange> {
        let entry = store.get(role, &key.namespace, &key.name)?;
        let object = Arc::clone(&entry.object);
        let old_targets = match previous {
            Some(p) => p.targets(variant).cloned(),
            None => entry.targets(variant).cloned(),
        };
        let reusable = previous.and_then(|p| Some((&*p.object, &**p.targets(variant)?)));
        let view = RecordingView {
            store: &*store,
            seen: RefCell::new(Vec::new()),
        };
        let ctx = TargetContext::new(options, &view);
        let targets: ObjectTargets = target_labels_after(&object, &ctx, reusable).into();
        let deps = view.seen.into_inner();
        let me = (role, key.clone(), variant);
        self.dirty.remove(&me);
        store.store_targets(me, targets, old_targets, deps)
    }

    /// Takes the dirty set (for a flush).
    pub fn take_dirty(&mut self) -> Vec<Dependent> {
        self.dirty.drain().collect()
    }

    /// Puts back objects a flush took but did not recompute, for a later flush (an
    /// object removed meanwhile is not put back).
    pub fn keep_dirty(&mut self, store: &Store, keys: Vec<Dependent>) {
        for (role, key, variant) in keys {
            if store.get(role, &key.namespace, &key.name).is_some() {
                self.dirty.insert((role, key, variant));
            }
        }
    }

    /// Forgets `variant` of `role` (nobody asks for it any more): its targets and
    /// look-ups in `store`, and its dirty marks. (Its place among the variants is the
    /// caller's.)
    pub fn drop_variant(&mut self, store: &mut Store, role: Role, variant: VariantId) {
        store.drop_variant(role, variant);
        self.dirty
            .retain(|(r, _, v)| !(*r == role && *v == variant));
    }

    /// An empty batch of changes to `role`'s objects, for each of its variants;
    /// those not synced whose other roles are not all `listed` yet wait for them.
    ///
    /// Labelling an endpoint before the pods it names are listed is work thrown away:
    /// each pod that arrives marks it dirty again, and the flush that completes its
    /// sync labels it anew (and pushes it to its subscribers once more).
    pub fn changes(&self, role: Role, listed: impl Fn(&TargetVariant) -> bool) -> Changes {
        let audience = self.audience(role);
        let per_variant = audience.iter().map(|_| Vec::new()).collect();
        let waits = (audience.iter())
            .map(|(id, _)| {
                self.variants
                    .get(*id)
                    .is_some_and(|v| !v.synced && !listed(&v.wants))
            })
            .collect();
        Changes {
            role,
            audience,
            per_variant,
            waits,
        }
    }

    /// Stores an object from `url` and computes its targets for each variant of
    /// `changes`, adding what changed to that variant's changes.
    pub fn apply_upsert(
        &mut self,
        store: &mut Store,
        url: UrlId,
        object: Object,
        changes: &mut Changes,
    ) {
        let role = object.role();
        let key = object.key();
        // A replaced object leaves its entry without targets: with no subscriber to
        // compute them for now, a later one's snapshot computes them afresh.
        let (upserted, previous) = self.upsert(store, url, object);
        if upserted == Upserted::Unchanged {
            return;
        }
        let per_variant = changes.audience.iter().zip(&mut changes.per_variant);
        for (((variant, options), changes), waits) in per_variant.zip(&changes.waits) {
            if *waits && previous.is_none() {
                self.dirty.insert((role, key.clone(), *variant));
                continue;
            }
            if let Some(change) =
                self.compute_targets_after(store, role, &key, *variant, *options, previous.as_ref())
            {
                changes.push(change);
            }
        }
    }

    /// Applies a watch event to the store, adding what it changed to `changes`.
    pub fn apply_event(
        &mut self,
        store: &mut Store,
        url: UrlId,
        event: WatchEvent,
        changes: &mut Changes,
    ) {
        match event {
            WatchEvent::Added(object) | WatchEvent::Modified(object) => {
                self.apply_upsert(store, url, object, changes)
            }
            WatchEvent::Deleted(object) => self.apply_delete(store, object.key(), changes),
            // The watcher acts on these itself and never hands them on.
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {}
        }
    }

    /// Removes the object of `changes`' role at `key`, adding its removal to the
    /// changes of each variant it had targets for.
    pub fn apply_delete(&mut self, store: &mut Store, key: ObjectKey, changes: &mut Changes) {
        let Some(entry) = self.remove(store, changes.role, &key) else {
            return;
        };
        let per_variant = changes.audience.iter().zip(&mut changes.per_variant);
        for ((variant, _), changes) in per_variant {
            if entry.targets(*variant).is_some_and(|t| !t.is_empty()) {
                changes.push(TargetChange {
                    slot: entry.slot,
                    key: key.clone(),
                    targets: None,
                });
            }
        }
    }

    /// The variants whose dirty objects a flush recomputes: those synced, or whose
    /// every URL has been `listed`. Until then a variant's dependencies are still
    /// arriving (a 100k-pod list comes in parts), and recomputing its objects at every
    /// tick would redo them once per tick; the flush that completes its sync computes
    /// them once.
    pub fn ready(&self, listed: impl Fn(&TargetVariant) -> bool) -> Vec<VariantId> {
        (self.variants.iter())
            .filter(|v| v.synced || listed(&v.wants))
            .map(|v| v.id)
            .collect()
    }

    /// Marks synced the variants whose URLs have all been `listed`, and logs each with
    /// its objects in `store` (in `span`); returns them, so that their subscribers can
    /// be told.
    pub fn mark_synced(
        &mut self,
        store: &Store,
        listed: impl Fn(&TargetVariant) -> bool,
        span: &tracing::Span,
    ) -> Vec<(Role, VariantId)> {
        let newly: Vec<(Role, VariantId)> = (self.variants.iter())
            .filter(|v| !v.synced && listed(&v.wants))
            .map(|v| (v.wants.role, v.id))
            .collect();
        for (role, id) in &newly {
            if let Some(v) = self.variants.get_mut(*id) {
                v.synced = true;
                let (attach, objects) = (v.wants.attach, store.len(*role));
                tracing::info!(parent: span, %role, ?attach, objects, "synced");
            }
        }
        newly
    }

    /// Forgets the variants that no subscriber is `wanted` for any more, and their
    /// targets in `store` (the memory comes back); returns them.
    pub fn drop_unwanted(
        &mut self,
        store: &mut Store,
        wanted: impl Fn(Role, VariantId) -> bool,
    ) -> Vec<(Role, VariantId)> {
        let unwanted: Vec<(Role, VariantId)> = (self.variants.iter())
            .filter(|v| !wanted(v.wants.role, v.id))
            .map(|v| (v.wants.role, v.id))
            .collect();
        for (role, variant) in &unwanted {
            self.variants.remove(*variant);
            self.drop_variant(store, *role, *variant);
        }
        unwanted
    }

    /// Registers a subscriber's `wants`: returns its variant (added if new), the
    /// snapshot it starts from (one per variant in a registration pass, kept in
    /// `snapshots`) and whether the variant has synced, which it has once every URL it
    /// needs is `listed` (perhaps for other variants).
    pub fn admit(
        &mut self,
        store: &mut Store,
        wants: TargetVariant,
        listed: bool,
        snapshots: &mut HashMap<VariantId, Arc<[TargetChange]>>,
    ) -> (VariantId, Arc<[TargetChange]>, bool) {
        let variant = self.variants.add(wants);
        let snapshot = match snapshots.get(&variant) {
            Some(s) => Arc::clone(s),
            None => {
                let options = wants.target_options(self.semantics);
                let s = self.snapshot(store, wants.role, variant, options);
                snapshots.insert(variant, Arc::clone(&s));
                s
            }
        };
        let synced = match self.variants.get_mut(variant) {
            Some(v) => {
                v.synced |= listed;
                v.synced
            }
            None => false,
        };
        (variant, snapshot, synced)
    }

    /// Recomputes the dirty objects of the `ready` variants; the others' stay dirty.
    /// Targets of a variant nobody asks for any more are forgotten.
    pub fn flush(&mut self, store: &mut Store, ready: &[VariantId]) -> Flushed {
        let mut flushed = Flushed::default();
        let mut waiting = Vec::new();
        for (role, key, variant) in self.take_dirty() {
            let Some(wants) = self.variants.get(variant).map(|v| v.wants) else {
                // Nobody asks for these targets now and they are out of date.
                store.forget_targets(role, &key, variant);
                continue;
            };
            if !ready.contains(&variant) {
                waiting.push((role, key, variant));
                continue;
            }
            flushed.recomputed += 1;
            let options = wants.target_options(self.semantics);
            if let Some(change) = self.compute_targets(store, role, &key, variant, options) {
                let changes = flushed.changes.entry((role, variant)).or_default();
                changes.push(change);
            }
        }
        self.keep_dirty(store, waiting);
        flushed
    }

    /// Every target of `role`'s objects for `variant` (labelled by `options`), to
    /// replace what a new subscriber has: computed where they are not yet.
    pub fn snapshot(
        &mut self,
        store: &mut Store,
        role: Role,
        variant: VariantId,
        options: TargetOptions,
    ) -> Arc<[TargetChange]> {
        // An object marked dirty without targets waits for the lists of the roles it
        // reads: the flush that syncs the variant labels it for every subscriber at
        // once. Labelled here, the subscribers before this one would never hear of it.
        let missing: Vec<ObjectKey> = store
            .entries(role)
            .filter(|e| e.targets(variant).is_none())
            .map(|e| e.object.key())
            .filter(|key| !self.dirty.contains(&(role, key.clone(), variant)))
            .collect();
        for key in missing {
            self.compute_targets(store, role, &key, variant, options);
        }
        store
            .entries(role)
            .filter_map(|e| {
                let targets = e.targets(variant)?;
                (!targets.is_empty()).then(|| TargetChange {
                    slot: e.slot,
                    key: e.key.clone(),
                    targets: Some(Arc::clone(targets)),
                })
            })
            .collect()
    }
}

/// A [`CacheView`] over the store that records each look-up.
struct RecordingView<'a> {
    store: &'a Store,
    seen: RefCell<Vec<DepKey>>,
}

impl RecordingView<'_> {
    fn lookup(&self, role: Role, namespace: &str, name: &str) -> Option<&Object> {
        let entry = self.store.get(role, namespace, name);
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
    use crate::group::store::tests::{ATTACH, V0, endpoints, key, obj, pod};

    /// A store and its labeller, as the group holds them, under the names the tests
    /// read.
    #[derive(Default)]
    struct Cache {
        store: Store,
        labeller: Labeller,
    }

    impl Cache {
        fn upsert(&mut self, url: UrlId, object: Object) -> Upserted {
            self.labeller.upsert(&mut self.store, url, object).0
        }
        fn remove(&mut self, role: Role, key: &ObjectKey) {
            self.labeller.remove(&mut self.store, role, key);
        }
        fn compute_targets(
            &mut self,
            role: Role,
            key: &ObjectKey,
            variant: VariantId,
            options: TargetOptions,
        ) -> Option<TargetChange> {
            (self.labeller).compute_targets(&mut self.store, role, key, variant, options)
        }
        fn take_dirty(&mut self) -> Vec<Dependent> {
            self.labeller.take_dirty()
        }
        fn dirty_len(&self) -> usize {
            self.labeller.dirty_len()
        }
        fn get(&self, role: Role, namespace: &str, name: &str) -> Option<&Entry> {
            self.store.get(role, namespace, name)
        }
        fn drop_variant(&mut self, role: Role, variant: VariantId) {
            self.labeller.drop_variant(&mut self.store, role, variant);
        }
        fn clear(&mut self) {
            self.store.clear();
        }
    }

    #[test]
    fn a_pod_change_dirties_exactly_the_endpoints_that_read_it() {
        let mut c = Cache::default();
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

    #[test]
    fn a_lists_end_tells_the_variants_it_synced_even_without_changes() {
        let mut labeller = Labeller::default();
        let with_node = TargetVariant::new(Role::Pod, with_node().attach);
        let plain = labeller
            .variants_mut()
            .add(TargetVariant::new(Role::Pod, ATTACH.attach));
        let node = labeller.variants_mut().add(with_node);
        let nodes = labeller
            .variants_mut()
            .add(TargetVariant::new(Role::Node, ATTACH.attach));
        let mut changes = labeller.changes(Role::Pod, |_| true);
        let removed = TargetChange {
            slot: crate::messages::ObjectSlot(0),
            key: key("p"),
            targets: None,
        };
        changes.per_variant[0].push(removed);
        let batches = changes.with_synced(vec![(Role::Pod, node), (Role::Node, nodes)]);
        let sent: Vec<_> = (batches.iter())
            .map(|(to, changes, force)| (*to, changes.len(), *force))
            .collect();
        assert_eq!(
            sent,
            [
                ((Role::Pod, plain), 1, false),
                ((Role::Pod, node), 0, true),
                ((Role::Node, nodes), 0, true),
            ]
        );
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
        let mut c = Cache::default();
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
        let mut c = Cache::default();
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
        let mut c = Cache::default();
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
        assert_eq!(c.store.looked_up(), 0);
        c.clear();
    }
}
