//! The configuration the monitors' watches read, decoded into the monitors' model:
//! monitors, Namespaces' labels, and the Secrets and ConfigMaps selected monitors
//! name (any other is dropped as it arrives). A LIST is applied whole when it ends, so
//! a list that fails midway leaves the last complete one.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::actors::messages::{UrlId, WatcherOutput};
use crate::model::{ConfigObject, Object, Role};
use crate::monitors::model::{
    ConfigMapObject, MonitorMeta, PodMonitor, Probe, ScrapeConfig, SecretObject, ServiceMonitor,
};
use crate::monitors::{CredentialStore, Monitor, NamespaceLabels};
use crate::wire::json::WatchEvent;

/// Where an object is kept: its role, namespace and name.
pub type CacheKey = (Role, String, String);

/// A kept object, decoded.
#[derive(Clone, Debug)]
pub enum Decoded {
    /// A monitor, or why its JSON is not one (boxed: a monitor is large).
    Monitor(Box<Result<Monitor, Undecodable>>),
    /// A Namespace's labels.
    Namespace(BTreeMap<String, String>),
    /// A Secret a monitor names.
    Secret(SecretObject),
    /// A ConfigMap a monitor names.
    ConfigMap(ConfigMapObject),
}

/// A monitor whose JSON is not of its kind's shape.
#[derive(Clone, Debug)]
pub struct Undecodable {
    /// The monitor with its metadata only (which selection reads).
    pub shell: Monitor,
    /// Why, in a sentence.
    pub message: String,
}

/// One kept object.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The watch it came from.
    pub url: UrlId,
    /// Its `uid` and `resourceVersion`: a new one means a new input.
    pub version: String,
    /// What it says.
    pub decoded: Decoded,
}

/// The objects of every watch, and the LISTs still arriving.
#[derive(Default)]
pub struct ConfigCache {
    entries: BTreeMap<CacheKey, Entry>,
    /// Parts of LISTs not complete yet, by watch.
    held: HashMap<UrlId, Vec<Object>>,
    /// The Secrets and ConfigMaps to keep: those selected monitors name.
    wanted: BTreeSet<CacheKey>,
}

impl ConfigCache {
    /// Applies one output of watch `url`; true when the kept objects changed.
    pub fn apply(&mut self, url: UrlId, output: WatcherOutput) -> bool {
        match output {
            WatcherOutput::ListPart { objects, first, .. } => {
                let held = self.held.entry(url).or_default();
                if first {
                    held.clear();
                }
                held.extend(objects);
                false
            }
            WatcherOutput::ListAbandoned { .. } => {
                self.held.remove(&url);
                false
            }
            WatcherOutput::Relisted { objects, .. } => {
                let mut all = self.held.remove(&url).unwrap_or_default();
                all.extend(objects);
                self.listed(url, all)
            }
            WatcherOutput::Deltas { deltas, .. } => {
                let mut changed = false;
                for event in deltas {
                    changed |= match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => self.upsert(url, o),
                        WatchEvent::Deleted(o) => self.remove(&key_of(&o)),
                        WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => false,
                    };
                }
                changed
            }
            WatcherOutput::Status { .. } => false,
        }
    }

    /// A complete LIST of `url`: its objects are exactly `objects`.
    fn listed(&mut self, url: UrlId, objects: Vec<Object>) -> bool {
        let listed: BTreeSet<CacheKey> = objects.iter().map(key_of).collect();
        let vanished: Vec<CacheKey> = (self.entries.iter())
            .filter(|(k, e)| e.url == url && !listed.contains(*k))
            .map(|(k, _)| k.clone())
            .collect();
        let mut changed = !vanished.is_empty();
        for key in vanished {
            self.entries.remove(&key);
        }
        for object in objects {
            changed |= self.upsert(url, object);
        }
        changed
    }

    /// Keeps `object` (a Secret or ConfigMap only if wanted); true if it is news.
    fn upsert(&mut self, url: UrlId, object: Object) -> bool {
        let key = key_of(&object);
        let meta = object.metadata();
        let version = format!("{}/{}", meta.uid, meta.resource_version);
        let is_credential = matches!(key.0, Role::Secret | Role::ConfigMap);
        if is_credential && !self.wanted.contains(&key) {
            return self.remove(&key);
        }
        if self.entries.get(&key).is_some_and(|e| e.version == version) {
            return false;
        }
        let decoded = match object {
            Object::Namespace(ns) => Decoded::Namespace(
                (ns.metadata.labels.iter())
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            Object::Config(c) => match decode(&c) {
                Some(decoded) => decoded,
                None => return false,
            },
            // The monitors' watches read no other kind.
            _ => return false,
        };
        self.entries.insert(
            key,
            Entry {
                url,
                version,
                decoded,
            },
        );
        true
    }

    fn remove(&mut self, key: &CacheKey) -> bool {
        self.entries.remove(key).is_some()
    }

    /// Keeps only the Secrets and ConfigMaps in `wanted` from now on, dropping the
    /// others kept.
    pub fn set_wanted(&mut self, wanted: BTreeSet<CacheKey>) {
        self.entries
            .retain(|k, _| !matches!(k.0, Role::Secret | Role::ConfigMap) || wanted.contains(k));
        self.wanted = wanted;
    }

    /// Drops what watch `url` brought (it stopped).
    pub fn forget_url(&mut self, url: UrlId) {
        self.held.remove(&url);
        self.entries.retain(|_, e| e.url != url);
    }

    /// Every monitor kept, with its version, or why its JSON is not one.
    pub fn monitors(&self) -> impl Iterator<Item = (&CacheKey, &Entry)> {
        self.entries
            .iter()
            .filter(|(_, e)| matches!(e.decoded, Decoded::Monitor(_)))
    }

    /// The Namespaces' labels, by name.
    pub fn namespace_labels(&self) -> NamespaceLabels {
        let namespaces = self
            .entries
            .iter()
            .filter_map(|((_, _, name), e)| match &e.decoded {
                Decoded::Namespace(labels) => Some((name.clone(), labels.clone())),
                _ => None,
            });
        namespaces.collect()
    }

    /// How many objects of `role` are kept.
    pub fn count(&self, role: Role) -> usize {
        self.entries.keys().filter(|k| k.0 == role).count()
    }

    /// The version of a kept object, `None` if it is not kept.
    pub fn version(&self, key: &CacheKey) -> Option<&str> {
        self.entries.get(key).map(|e| e.version.as_str())
    }
}

impl CredentialStore for ConfigCache {
    fn secret(&self, namespace: &str, name: &str) -> Option<&SecretObject> {
        let key = (Role::Secret, namespace.to_string(), name.to_string());
        match self.entries.get(&key).map(|e| &e.decoded) {
            Some(Decoded::Secret(s)) => Some(s),
            _ => None,
        }
    }

    fn config_map(&self, namespace: &str, name: &str) -> Option<&ConfigMapObject> {
        let key = (Role::ConfigMap, namespace.to_string(), name.to_string());
        match self.entries.get(&key).map(|e| &e.decoded) {
            Some(Decoded::ConfigMap(m)) => Some(m),
            _ => None,
        }
    }
}

fn key_of(object: &Object) -> CacheKey {
    let meta = object.metadata();
    (
        object.role(),
        meta.namespace.to_string(),
        meta.name.to_string(),
    )
}

/// A configuration object in the monitors' model; `None` for a kind they do not read.
fn decode(object: &ConfigObject) -> Option<Decoded> {
    let json = object.json.as_bytes();
    let monitor = match object.role {
        Role::ServiceMonitor => serde_json::from_slice(json).map(Monitor::ServiceMonitor),
        Role::PodMonitor => serde_json::from_slice(json).map(Monitor::PodMonitor),
        Role::Probe => serde_json::from_slice(json).map(Monitor::Probe),
        Role::ScrapeConfig => serde_json::from_slice(json).map(Monitor::ScrapeConfig),
        // A Secret or ConfigMap that does not decode is left out: the monitors naming
        // it are rejected as if it did not exist, and nothing of it is logged.
        Role::Secret => return serde_json::from_slice(json).ok().map(Decoded::Secret),
        Role::ConfigMap => return serde_json::from_slice(json).ok().map(Decoded::ConfigMap),
        _ => return None,
    };
    let monitor = monitor.map_err(|e| Undecodable {
        shell: shell(object),
        message: format!(
            "the object does not decode as a {}: {e}",
            object.role.kind()
        ),
    });
    Some(Decoded::Monitor(Box::new(monitor)))
}

/// A monitor of `object`'s kind with its metadata only, for selection.
fn shell(object: &ConfigObject) -> Monitor {
    let meta = &object.metadata;
    let metadata = MonitorMeta {
        name: meta.name.to_string(),
        namespace: meta.namespace.to_string(),
        labels: (meta.labels.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        resource_version: meta.resource_version.to_string(),
    };
    match object.role {
        Role::PodMonitor => Monitor::PodMonitor(PodMonitor {
            metadata,
            ..PodMonitor::default()
        }),
        Role::Probe => Monitor::Probe(Probe {
            metadata,
            ..Probe::default()
        }),
        Role::ScrapeConfig => Monitor::ScrapeConfig(ScrapeConfig {
            metadata,
            ..ScrapeConfig::default()
        }),
        _ => Monitor::ServiceMonitor(ServiceMonitor {
            metadata,
            ..ServiceMonitor::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(role: Role, name: &str, version: u32) -> Object {
        let json = format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"ns","uid":"{name}","resourceVersion":"{version}"}},"data":{{"k":"dg=="}},"spec":{{}}}}"#
        );
        Object::decode(role, json.as_bytes()).expect("decodes")
    }

    fn part(objects: Vec<Object>, first: bool) -> WatcherOutput {
        WatcherOutput::ListPart {
            url: UrlId(0),
            objects,
            first,
        }
    }

    fn end(objects: Vec<Object>) -> WatcherOutput {
        WatcherOutput::Relisted {
            url: UrlId(0),
            objects,
        }
    }

    fn names(cache: &ConfigCache) -> Vec<String> {
        cache.monitors().map(|(k, _)| k.2.clone()).collect()
    }

    #[test]
    fn a_list_is_applied_whole_at_its_end_and_names_what_vanished() {
        let mut cache = ConfigCache::default();
        let m = |n: &str| object(Role::PodMonitor, n, 1);
        assert!(!cache.apply(UrlId(0), part(vec![m("a")], true)));
        assert!(names(&cache).is_empty(), "held until the list ends");
        assert!(cache.apply(UrlId(0), end(vec![m("b")])));
        assert_eq!(names(&cache), ["a", "b"]);
        // A relist that fails midway changes nothing.
        cache.apply(UrlId(0), part(vec![m("c")], true));
        cache.apply(UrlId(0), WatcherOutput::ListAbandoned { url: UrlId(0) });
        assert!(cache.apply(UrlId(0), end(vec![m("b")])), "a vanished");
        assert_eq!(names(&cache), ["b"], "a vanished; c's list was abandoned");
        // The same version again is no news.
        assert!(!cache.apply(UrlId(0), end(vec![m("b")])));
    }

    #[test]
    fn only_wanted_secrets_are_kept() {
        let mut cache = ConfigCache::default();
        let wanted = (Role::Secret, "ns".to_string(), "wanted".to_string());
        cache.set_wanted([wanted].into());
        let secrets = vec![
            object(Role::Secret, "wanted", 1),
            object(Role::Secret, "other", 1),
        ];
        assert!(cache.apply(UrlId(0), end(secrets)));
        assert!(cache.secret("ns", "wanted").is_some());
        assert!(
            cache.secret("ns", "other").is_none(),
            "dropped as it arrives"
        );
        assert_eq!(cache.count(Role::Secret), 1);
        cache.set_wanted(BTreeSet::new());
        assert_eq!(
            cache.count(Role::Secret),
            0,
            "no longer named, no longer kept"
        );
    }

    #[test]
    fn a_monitor_that_is_not_of_its_shape_is_kept_with_why() {
        let mut cache = ConfigCache::default();
        let json = r#"{"metadata":{"name":"bad","namespace":"ns","labels":{"a":"b"}},"spec":{"podMetricsEndpoints":"not a list"}}"#;
        let bad = Object::decode(Role::PodMonitor, json.as_bytes()).expect("metadata decodes");
        cache.apply(UrlId(0), end(vec![bad]));
        let (_, entry) = cache.monitors().next().expect("kept");
        let Decoded::Monitor(decoded) = &entry.decoded else {
            panic!("a monitor")
        };
        let undecodable = decoded.as_ref().as_ref().expect_err("not its shape");
        assert!(
            undecodable.message.contains("PodMonitor"),
            "{}",
            undecodable.message
        );
        let (ns, name) = undecodable.shell.namespace_and_name();
        assert_eq!((ns, name), ("ns", "bad"));
    }
}
