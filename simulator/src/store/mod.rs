//! The simulator's in-memory object store: every object of every resource,
//! one global resourceVersion counter, a bounded history of changes, and the
//! registry of open watches that changes are pushed to.
//!
//! It mirrors what etcd plus the API server's watch cache give clients:
//! writes are totally ordered by resourceVersion; a watch can resume from any
//! resourceVersion still in the history window and gets `410 Expired` beyond
//! it; a list can be served at an older resourceVersion (for `Exact` and for
//! continue tokens) by rolling the history back. All state sits behind one
//! mutex, which keeps the ordering trivially correct; watchers get changes
//! through unbounded channels so a slow client never blocks a writer.
//!
//! Beside the objects it keeps, under the same lock, the indexes the controllers and
//! the churn look objects up by ([`pairs`]: labels, selectors, owners; [`sampler`]: a
//! random object), so their writes cost the same in a cluster of any size.

mod key;
mod pairs;
mod sampler;

use super::json_pointer::at;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::error::ApiError;
use super::faults::WatchFault;
use super::resource::Resource;
use super::selector::Selector;
use super::timestamp;
pub use key::ObjectKey;
pub use pairs::Field;
use pairs::PairIndex;
use sampler::Sampler;

/// The resourceVersion history starts over from here after [`Store::restart`]:
/// deliberately lower than anything a long-running store has handed out.
const RESTART_BASE: u64 = 1;

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    /// The object was created.
    Added,
    /// The object was replaced or patched.
    Modified,
    /// The object was deleted.
    Deleted,
}

/// One write, as retained in the history and pushed to watches.
#[derive(Debug, Clone)]
pub struct Change {
    /// The resourceVersion this write produced.
    pub rv: u64,
    /// The resource written.
    pub resource: Resource,
    /// The object's key.
    pub key: ObjectKey,
    /// Create, update or delete.
    pub change_type: ChangeType,
    /// The object after the write; for a delete, its last state stamped with
    /// the delete's resourceVersion (what the API server sends in DELETED).
    pub object: Arc<Value>,
    /// The object before the write; `None` for a create.
    pub previous: Option<Arc<Value>>,
}

/// What a watch's channel carries, in order with respect to writes.
#[derive(Debug, Clone)]
pub enum WatchMessage {
    /// A write to the watched resource.
    Change(Arc<Change>),
    /// A bookmark at this resourceVersion (requested via [`Store::bookmark`]).
    Bookmark(u64),
    /// End the stream cleanly (restart, server stop).
    End,
    /// An injected fault to act out.
    Fault(WatchFault),
}

/// A newly opened watch: what to send first, then the live channel.
#[derive(Debug)]
pub struct Subscription {
    /// Registry id, for [`Store::bookmark`] and [`Store::unwatch`].
    pub id: u64,
    /// Events to send before anything from `rx`: history replay or, for a
    /// watch without a resourceVersion, synthetic ADDED events of the current state.
    pub initial: Vec<Arc<Change>>,
    /// Live messages, starting right after `initial`.
    pub rx: mpsc::UnboundedReceiver<WatchMessage>,
    /// The store's resourceVersion when the watch opened: `initial` and `rx` together
    /// cover every change after it (for `sendInitialEvents`' closing bookmark).
    pub rv: u64,
}

/// The result of a successful write.
#[derive(Debug, Clone)]
pub struct Written {
    /// The new resourceVersion.
    pub rv: u64,
    /// Whether the write created, replaced or deleted the object.
    pub change_type: ChangeType,
    /// The object as stored (for a delete: its final state).
    pub object: Arc<Value>,
    /// The state before the write, if any.
    pub previous: Option<Arc<Value>>,
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct Page {
    /// The resourceVersion the list was served at.
    pub rv: u64,
    /// The epoch (restart count) the list was served in, for continue tokens.
    pub epoch: u64,
    /// The matching objects, in key order.
    pub items: Vec<Arc<Value>>,
    /// When more items match: the key of the last item of this page.
    pub next: Option<ObjectKey>,
}

/// How a write treats an existing (or missing) object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Fail with 409 if the object exists.
    Create,
    /// Fail with 404 if it does not; 409 if `metadata.resourceVersion` is set and stale.
    Update,
    /// Create or replace, whichever applies.
    Upsert,
}

struct Watcher {
    id: u64,
    resource: Resource,
    namespace: Option<String>,
    tx: mpsc::UnboundedSender<WatchMessage>,
}

impl Watcher {
    fn wants(&self, resource: Resource, key: &ObjectKey) -> bool {
        self.resource == resource && self.namespace.as_ref().is_none_or(|ns| *ns == key.0)
    }
}

struct Inner {
    objects: [BTreeMap<ObjectKey, Arc<Value>>; Resource::ALL.len()],
    /// Each resource's keys, for a random pick.
    samplers: [Sampler; Resource::ALL.len()],
    /// Objects by label, selector and owner.
    pairs: PairIndex,
    rv: u64,
    /// Bumped by every restart, so continue tokens from before one expire.
    epoch: u64,
    history: VecDeque<Arc<Change>>,
    /// Every change with `rv > history_start` is in `history`.
    history_start: u64,
    history_limit: usize,
    watchers: Vec<Watcher>,
    next_watch_id: u64,
    rng: fastrand::Rng,
}

/// The in-memory object store. Cheap to share behind an `Arc`.
pub struct Store {
    inner: Mutex<Inner>,
}

fn slot(resource: Resource) -> usize {
    resource as usize
}

impl Store {
    /// A new, empty store retaining at most `history_limit` changes for watches;
    /// `seed` makes generated uids reproducible.
    pub fn new(history_limit: usize, seed: u64) -> Store {
        Store {
            inner: Mutex::new(Inner {
                objects: Default::default(),
                samplers: Default::default(),
                pairs: PairIndex::default(),
                rv: 0,
                epoch: 0,
                history: VecDeque::new(),
                history_start: 0,
                history_limit: history_limit.max(1),
                watchers: Vec::new(),
                next_watch_id: 1,
                rng: fastrand::Rng::with_seed(seed),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every
        // mutation is completed before anything can panic), so keep going.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The most recent resourceVersion handed out.
    pub fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// The oldest resourceVersion a watch can still start from.
    pub fn history_start(&self) -> u64 {
        self.lock().history_start
    }

    /// How many restarts the store has been through.
    pub fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// How many watches are currently registered.
    pub fn open_watches(&self) -> usize {
        self.lock().watchers.len()
    }

    /// Number of objects of `resource` (all namespaces).
    pub fn count(&self, resource: Resource) -> usize {
        self.lock().objects[slot(resource)].len()
    }

    /// One object, as stored (without `kind`/`apiVersion`).
    pub fn get(&self, resource: Resource, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let key = (scoped_namespace(resource, namespace), name.to_string());
        self.lock().objects[slot(resource)].get(&key).cloned()
    }

    /// All current objects of `resource`, optionally in one namespace, in key order.
    pub fn list(&self, resource: Resource, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let inner = self.lock();
        scan(&inner.objects[slot(resource)], namespace, None)
            .map(|(_, obj)| obj.clone())
            .collect()
    }

    /// The objects of `resource` in `namespace` whose `field` holds `key=value`, in name
    /// order: pods and EndpointSlices by label, services by selector, pods by owner
    /// (`key` its kind, `value` its name). Other resources index nothing.
    pub fn find(
        &self,
        resource: Resource,
        field: Field,
        namespace: &str,
        key: &str,
        value: &str,
    ) -> Vec<Arc<Value>> {
        let inner = self.lock();
        let objects = &inner.objects[slot(resource)];
        inner
            .pairs
            .names(resource, field, namespace, key, value)
            .filter_map(|name| objects.get(&(namespace.to_string(), name.to_string())))
            .cloned()
            .collect()
    }

    /// A uniformly random object of `resource`, `None` when there is none.
    pub fn sample(&self, resource: Resource, rng: &mut fastrand::Rng) -> Option<Arc<Value>> {
        let inner = self.lock();
        let key = inner.samplers[slot(resource)].pick(rng)?;
        inner.objects[slot(resource)].get(key).cloned()
    }

    /// Creates, replaces or upserts `object` (see [`WriteMode`]), stamping
    /// `resourceVersion` and, on create, `uid` and `creationTimestamp`.
    pub fn write(
        &self,
        resource: Resource,
        mode: WriteMode,
        object: Value,
    ) -> Result<Written, ApiError> {
        let mut inner = self.lock();
        let (key, mut object) = normalize(resource, object, &mut inner.rng)?;
        let previous = inner.objects[slot(resource)].get(&key).cloned();
        let expected_rv = at(&object, "/metadata/resourceVersion")
            .and_then(Value::as_str)
            .filter(|rv| !rv.is_empty())
            .map(str::to_string);
        let change_type = change_type(previous.is_some(), mode, resource, &key.1)?;
        let meta = metadata_mut(&mut object)?;
        match &previous {
            Some(prev) => {
                // Optimistic concurrency, as the API server does on update.
                if mode == WriteMode::Update && is_stale(expected_rv.as_deref(), prev) {
                    return Err(ApiError::conflict(resource.plural(), &key.1));
                }
                keep_server_fields(meta, prev);
            }
            None => stamp_server_fields(meta, &mut inner.rng),
        }
        inner.rv += 1;
        let rv = inner.rv;
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        let object = Arc::new(object);
        inner.objects[slot(resource)].insert(key.clone(), object.clone());
        inner.samplers[slot(resource)].insert(&key);
        inner
            .pairs
            .update(resource, &key, previous.as_deref(), Some(&object));
        inner.record(Change {
            rv,
            resource,
            key,
            change_type,
            object: object.clone(),
            previous: previous.clone(),
        });
        Ok(Written {
            rv,
            change_type,
            object,
            previous,
        })
    }

    /// Deletes one object; 404 if it does not exist.
    pub fn delete(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Written, ApiError> {
        let mut inner = self.lock();
        let key = (scoped_namespace(resource, namespace), name.to_string());
        let Some(previous) = inner.objects[slot(resource)].remove(&key) else {
            return Err(ApiError::not_found(resource.plural(), name));
        };
        inner.samplers[slot(resource)].remove(&key);
        inner.pairs.update(resource, &key, Some(&previous), None);
        inner.rv += 1;
        let rv = inner.rv;
        let mut last = (*previous).clone();
        if let Ok(meta) = metadata_mut(&mut last) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let object = Arc::new(last);
        inner.record(Change {
            rv,
            resource,
            key,
            change_type: ChangeType::Deleted,
            object: object.clone(),
            previous: Some(previous.clone()),
        });
        Ok(Written {
            rv,
            change_type: ChangeType::Deleted,
            object,
            previous: Some(previous),
        })
    }

    /// One page of matching objects, at resourceVersion `at` (`None` = now),
    /// starting after key `after`, at most `limit` items (`None` = all).
    /// Fails with 410 if `at` is older than the history window (or from before
    /// a restart, per `epoch`) and 504 if it is newer than the store.
    pub fn list_page(
        &self,
        resource: Resource,
        namespace: Option<&str>,
        at: Option<(u64, u64)>,
        selector: &Selector,
        after: Option<&ObjectKey>,
        limit: Option<usize>,
    ) -> Result<Page, ApiError> {
        let inner = self.lock();
        let live = &inner.objects[slot(resource)];
        let rolled_back;
        let (rv, objects) = match at {
            None => (inner.rv, live),
            Some((_, epoch)) if epoch != inner.epoch => {
                return Err(ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list \
                     result. You can start a new list without the continue parameter.",
                ));
            }
            Some((rv, _)) if rv == inner.rv => (rv, live),
            Some((rv, _)) if rv > inner.rv => {
                return Err(ApiError::too_large_resource_version(rv, inner.rv));
            }
            Some((rv, _)) if rv < inner.history_start => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    inner.history_start
                )));
            }
            Some((rv, _)) => {
                rolled_back = inner.rolled_back(resource, rv);
                (rv, &rolled_back)
            }
        };
        let matching = scan(objects, namespace, after).filter(|(_, obj)| selector.matches(obj));
        let mut items = Vec::new();
        let mut last_key = None;
        let mut more = false;
        for (key, obj) in matching {
            if limit.is_some_and(|l| items.len() >= l) {
                // One more match past the page: the client must continue.
                more = true;
                break;
            }
            items.push(obj.clone());
            last_key = Some(key.clone());
        }
        Ok(Page {
            rv,
            epoch: inner.epoch,
            items,
            next: if more { last_key } else { None },
        })
    }

    /// Opens a watch on `resource` (optionally one namespace). `from = None`
    /// starts with synthetic ADDED events for the current state; `Some(rv)`
    /// replays retained changes after `rv`, or fails with 410 if they are gone.
    pub fn watch(
        &self,
        resource: Resource,
        namespace: Option<&str>,
        from: Option<u64>,
    ) -> Result<Subscription, ApiError> {
        let mut inner = self.lock();
        let initial: Vec<Arc<Change>> = match from {
            None => {
                let rv = inner.rv;
                scan(&inner.objects[slot(resource)], namespace, None)
                    .map(|(key, obj)| {
                        Arc::new(Change {
                            rv,
                            resource,
                            key: key.clone(),
                            change_type: ChangeType::Added,
                            object: obj.clone(),
                            previous: None,
                        })
                    })
                    .collect()
            }
            // A resourceVersion beyond the store can only come from before a
            // restart: it is as unusable as a compacted one.
            Some(rv) if rv < inner.history_start || rv > inner.rv => {
                return Err(ApiError::expired(format!(
                    "too old resource version: {rv} ({})",
                    inner.history_start + 1
                )));
            }
            Some(rv) => inner
                .history
                .iter()
                .filter(|c| c.rv > rv && c.resource == resource)
                .filter(|c| namespace.is_none_or(|ns| c.key.0 == ns))
                .cloned()
                .collect(),
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let id = inner.next_watch_id;
        inner.next_watch_id += 1;
        inner.watchers.push(Watcher {
            id,
            resource,
            namespace: namespace.map(str::to_string),
            tx,
        });
        let rv = inner.rv;
        Ok(Subscription {
            id,
            initial,
            rx,
            rv,
        })
    }

    /// Removes a watch from the registry (its stream ended).
    pub fn unwatch(&self, id: u64) {
        self.lock().watchers.retain(|w| w.id != id);
    }

    /// Queues a bookmark at the current resourceVersion on watch `id`. Queued
    /// under the lock, so it is ordered after every change it covers.
    pub fn bookmark(&self, id: u64) {
        let inner = self.lock();
        let rv = inner.rv;
        if let Some(w) = inner.watchers.iter().find(|w| w.id == id) {
            let _ = w.tx.send(WatchMessage::Bookmark(rv));
        }
    }

    /// Sends a fault to every open watch.
    pub fn signal_watches(&self, fault: WatchFault) {
        let mut inner = self.lock();
        inner
            .watchers
            .retain(|w| w.tx.send(WatchMessage::Fault(fault)).is_ok());
    }

    /// Ends every open watch cleanly and forgets them.
    pub fn end_watches(&self) {
        let mut inner = self.lock();
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(WatchMessage::End);
        }
    }

    /// Drops all retained history: any watch or list at an older
    /// resourceVersion now gets 410. Open watches are unaffected.
    pub fn compact(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.history_start = inner.rv;
    }

    /// Simulates an API-server restart with reset resourceVersions: history is
    /// cleared, the counter restarts at a low base, every object is re-stamped,
    /// open watches are ended and old continue tokens expire.
    pub fn restart(&self) {
        let mut inner = self.lock();
        inner.rv = RESTART_BASE;
        inner.epoch += 1;
        let mut rv = inner.rv;
        for map in inner.objects.iter_mut() {
            for obj in map.values_mut() {
                rv += 1;
                if let Ok(meta) = metadata_mut(Arc::make_mut(obj)) {
                    meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
                }
            }
        }
        inner.rv = rv;
        inner.history.clear();
        inner.history_start = rv;
        for w in inner.watchers.drain(..) {
            let _ = w.tx.send(WatchMessage::End);
        }
    }
}

impl Inner {
    /// Appends to the history (trimming it to the window) and fans out.
    fn record(&mut self, change: Change) {
        let change = Arc::new(change);
        self.history.push_back(change.clone());
        while self.history.len() > self.history_limit {
            if let Some(old) = self.history.pop_front() {
                self.history_start = old.rv;
            }
        }
        self.watchers.retain(|w| {
            !w.wants(change.resource, &change.key)
                || w.tx.send(WatchMessage::Change(change.clone())).is_ok()
        });
    }

    /// The objects of `resource` as they were at `rv` (which must be within
    /// the history window), by undoing newer changes.
    fn rolled_back(&self, resource: Resource, rv: u64) -> BTreeMap<ObjectKey, Arc<Value>> {
        let mut objects = self.objects[slot(resource)].clone();
        for change in self.history.iter().rev().take_while(|c| c.rv > rv) {
            if change.resource != resource {
                continue;
            }
            match &change.previous {
                Some(prev) => objects.insert(change.key.clone(), prev.clone()),
                None => objects.remove(&change.key),
            };
        }
        objects
    }
}

/// The entries of `map` in `namespace` (all when `None`) after key `after`,
/// in key order. Keys sort by namespace first, so this is a range scan:
/// per-namespace lists and the controllers stay cheap in large clusters.
fn scan<'a>(
    map: &'a BTreeMap<ObjectKey, Arc<Value>>,
    namespace: Option<&'a str>,
    after: Option<&ObjectKey>,
) -> impl Iterator<Item = (&'a ObjectKey, &'a Arc<Value>)> + 'a {
    let namespace_start = namespace.map(|ns| (ns.to_string(), String::new()));
    let start = match (after, namespace_start) {
        (Some(a), Some(ns_start)) if *a < ns_start => Bound::Included(ns_start),
        (Some(a), _) => Bound::Excluded(a.clone()),
        (None, Some(ns_start)) => Bound::Included(ns_start),
        (None, None) => Bound::Unbounded,
    };
    map.range((start, Bound::Unbounded))
        .take_while(move |(key, _)| namespace.is_none_or(|ns| key.0 == ns))
}

/// The key namespace for `resource`: ignored for cluster-scoped ones.
fn scoped_namespace(resource: Resource, namespace: &str) -> String {
    if resource.namespaced() {
        namespace.to_string()
    } else {
        String::new()
    }
}

/// What a write of `mode` makes of an object that exists or not: 409 for creating one
/// that exists, 404 for updating one that does not.
fn change_type(
    exists: bool,
    mode: WriteMode,
    resource: Resource,
    name: &str,
) -> Result<ChangeType, ApiError> {
    match (exists, mode) {
        (true, WriteMode::Create) => Err(ApiError::already_exists(resource.plural(), name)),
        (false, WriteMode::Update) => Err(ApiError::not_found(resource.plural(), name)),
        (false, _) => Ok(ChangeType::Added),
        (true, _) => Ok(ChangeType::Modified),
    }
}

/// True if the client expected a resourceVersion other than the stored object's.
fn is_stale(expected_rv: Option<&str>, stored: &Value) -> bool {
    let current_rv = at(stored, "/metadata/resourceVersion").and_then(Value::as_str);
    expected_rv.is_some() && expected_rv != current_rv
}

/// Server-owned fields survive a replace whatever the client sent.
fn keep_server_fields(meta: &mut Map<String, Value>, stored: &Value) {
    for field in ["uid", "creationTimestamp"] {
        if let Some(v) = at(stored, &format!("/metadata/{field}")) {
            meta.insert(field.to_string(), v.clone());
        }
    }
}

/// The server-owned fields of a new object: its uid and creation time.
fn stamp_server_fields(meta: &mut Map<String, Value>, rng: &mut fastrand::Rng) {
    let uid = new_uid(rng);
    meta.insert("uid".into(), Value::String(uid));
    meta.insert(
        "creationTimestamp".into(),
        Value::String(timestamp::now_rfc3339()),
    );
}

fn metadata_mut(object: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    object
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| ApiError::invalid("metadata: Required value"))
}

/// Validates an incoming object and puts it in stored form: `kind` and
/// `apiVersion` stripped (the server adds them back when serving), the
/// namespace defaulted or removed per scope, `generateName` resolved.
fn normalize(
    resource: Resource,
    mut object: Value,
    rng: &mut fastrand::Rng,
) -> Result<(ObjectKey, Value), ApiError> {
    let Some(top) = object.as_object_mut() else {
        return Err(ApiError::bad_request("the body must be a JSON object"));
    };
    if let Some(kind) = top.remove("kind")
        && kind.as_str() != Some(resource.kind())
    {
        return Err(ApiError::bad_request(format!(
            "the kind {kind} does not match the expected kind {}",
            resource.kind()
        )));
    }
    top.remove("apiVersion");
    let meta = top
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| ApiError::invalid("metadata: must be an object"))?;
    let name = match meta.get("name").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => match meta.get("generateName").and_then(Value::as_str) {
            Some(prefix) if !prefix.is_empty() => {
                let suffix: String = (0..5)
                    .map(|_| {
                        rng.choice(b"bcdfghjklmnpqrstvwxz2456789".iter())
                            .map_or('x', |&c| c as char)
                    })
                    .collect();
                let name = format!("{prefix}{suffix}");
                meta.insert("name".into(), Value::String(name.clone()));
                name
            }
            _ => {
                return Err(ApiError::invalid(
                    "metadata.name: Required value: name or generateName is required",
                ));
            }
        },
    };
    let namespace = if resource.namespaced() {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() => ns.to_string(),
            _ => {
                meta.insert("namespace".into(), Value::String("default".into()));
                "default".to_string()
            }
        }
    } else {
        meta.remove("namespace");
        String::new()
    };
    Ok(((namespace, name), object))
}

/// A random RFC 4122 version-4 style uid.
fn new_uid(rng: &mut fastrand::Rng) -> String {
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        rng.u32(..),
        rng.u16(..),
        rng.u16(..0x1000),
        rng.u16(0x8000..0xc000),
        rng.u64(..1 << 48)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}})
    }

    #[test]
    fn writes_stamp_and_history_rolls_back() {
        let store = Store::new(100, 1);
        let a = store
            .write(Resource::Pods, WriteMode::Create, pod("a"))
            .map(|w| w.rv);
        assert_eq!(a, Ok(1));
        let obj = store.get(Resource::Pods, "ns", "a").map(|o| (*o).clone());
        let obj = obj.unwrap_or_default();
        assert_eq!(obj["metadata"]["resourceVersion"], "1");
        assert!(
            obj["metadata"]["uid"]
                .as_str()
                .is_some_and(|u| u.len() == 36)
        );
        assert!(
            store
                .write(Resource::Pods, WriteMode::Create, pod("a"))
                .is_err()
        );
        assert!(
            store
                .write(Resource::Pods, WriteMode::Create, pod("b"))
                .is_ok()
        );
        assert!(store.delete(Resource::Pods, "ns", "a").is_ok());
        let all = Selector::default();
        let at = |rv| store.list_page(Resource::Pods, None, Some((rv, 0)), &all, None, None);
        assert_eq!(at(1).map(|p| p.items.len()), Ok(1));
        assert_eq!(at(2).map(|p| p.items.len()), Ok(2));
        assert_eq!(at(3).map(|p| p.items.len()), Ok(1));
        assert_eq!(at(9).map_err(|e| e.code).err(), Some(504));
        store.compact();
        assert_eq!(at(2).map_err(|e| e.code).err(), Some(410));
    }

    #[test]
    fn history_window_bounds_watch_start() {
        let store = Store::new(2, 1);
        for name in ["a", "b", "c"] {
            assert!(
                store
                    .write(Resource::Pods, WriteMode::Create, pod(name))
                    .is_ok()
            );
        }
        // Window of two: changes 2 and 3 retained, so watching from 1 works, 0 does not.
        assert_eq!(
            store
                .watch(Resource::Pods, None, Some(1))
                .map(|s| s.initial.len())
                .ok(),
            Some(2)
        );
        assert_eq!(
            store
                .watch(Resource::Pods, None, Some(0))
                .map_err(|e| e.code)
                .err(),
            Some(410)
        );
    }

    #[test]
    fn restart_restamps_low_and_ends_watches() {
        let store = Store::new(100, 1);
        for i in 0..10 {
            assert!(
                store
                    .write(Resource::Pods, WriteMode::Create, pod(&format!("p{i}")))
                    .is_ok()
            );
        }
        let mut sub = store.watch(Resource::Pods, None, Some(10)).expect("watch");
        store.restart();
        assert!(matches!(sub.rx.try_recv(), Ok(WatchMessage::End)));
        assert_eq!(store.current_rv(), RESTART_BASE + 10);
        assert!(store.watch(Resource::Pods, None, Some(5)).is_err());
    }
}
