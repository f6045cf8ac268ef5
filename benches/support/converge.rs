//! What a subscription's targets must be, computed straight from the simulator's state
//! (not through any watch). A copy of `tests/support/mod.rs`' `expected()`: benches
//! cannot import the tests' modules.

use std::collections::{BTreeMap, HashMap};

use kubesd::api::selectors_for_role;
use kubesd::model::{Namespace, Node, Object, Pod, Role, Service};
use kubesd::simulator::selector::{FieldSelector, LabelSelector};
use kubesd::simulator::{Resource, Simulator};
use kubesd::targets::{CacheView, TargetContext, target_labels};
use kubesd::{Labels, SdConfig, Subscription};

/// A target as a sorted map, for comparison.
pub type Target = BTreeMap<String, String>;

/// The simulator resource that serves `role`.
pub fn resource(role: Role) -> Resource {
    match role {
        Role::Node => Resource::Nodes,
        Role::Pod => Resource::Pods,
        Role::Service => Resource::Services,
        Role::Endpoints => Resource::Endpoints,
        Role::EndpointSlice => Resource::EndpointSlices,
        Role::Ingress => Resource::Ingresses,
        Role::Namespace => Resource::Namespaces,
    }
}

#[derive(Default)]
struct Cache {
    nodes: HashMap<String, Node>,
    pods: HashMap<(String, String), Pod>,
    services: HashMap<(String, String), Service>,
    namespaces: HashMap<String, Namespace>,
}

impl CacheView for Cache {
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

/// The objects of `role` a job of `config` sees: namespaces and selectors applied.
fn visible(sim: &Simulator, config: &SdConfig, role: Role) -> Vec<Object> {
    let (label, field) = selectors_for_role(role, &config.selectors);
    let label = LabelSelector::parse(&label).expect("label selector parses");
    let field = FieldSelector::parse(&field, resource(role)).expect("field selector parses");
    let names = &config.namespaces.names;
    sim.list(resource(role), None)
        .into_iter()
        .filter(|o| {
            let ns = o
                .pointer("/metadata/namespace")
                .and_then(|v| v.as_str())
                .unwrap_or("");
            !role.is_namespaced() || names.is_empty() || names.iter().any(|n| n == ns)
        })
        .filter(|o| label.matches(o) && field.matches(o))
        .map(|o| Object::decode(role, o.to_string().as_bytes()).expect("simulator object decodes"))
        .collect()
}

/// Every target a job of `config` must have, from the simulator's current state.
pub fn expected(sim: &Simulator, config: &SdConfig) -> Vec<Target> {
    let mut cache = Cache::default();
    let mut subjects = Vec::new();
    for role in config.watched_roles() {
        for object in visible(sim, config, role) {
            let key = object.key();
            let (ns, name) = (key.namespace.to_string(), key.name.to_string());
            if role == config.role {
                subjects.push(object.clone());
            }
            match object {
                Object::Node(n) => drop(cache.nodes.insert(name, n)),
                Object::Pod(p) => drop(cache.pods.insert((ns, name), p)),
                Object::Service(s) => drop(cache.services.insert((ns, name), s)),
                Object::Namespace(n) => drop(cache.namespaces.insert(name, n)),
                _ => {}
            }
        }
    }
    let ctx = TargetContext {
        attach: config.attach_metadata,
        cache: &cache,
    };
    let mut out: Vec<Target> = subjects
        .iter()
        .flat_map(|o| target_labels(o, &ctx))
        .map(|l| to_map(&l))
        .collect();
    out.sort();
    out
}

/// A label set as a sorted map.
pub fn to_map(labels: &Labels) -> Target {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

/// The subscription's targets, sorted.
pub async fn actual(sub: &Subscription<Labels>) -> Vec<Target> {
    let mut out: Vec<Target> = sub.targets().await.iter().map(to_map).collect();
    out.sort();
    out
}

/// A short account of how two sorted target lists differ.
pub fn diff(want: &[Target], got: &[Target]) -> String {
    let missing = want.iter().filter(|t| !got.contains(t)).count();
    let extra = got.iter().filter(|t| !want.contains(t)).count();
    format!(
        "expected {} targets, got {}: {missing} missing, {extra} unexpected",
        want.len(),
        got.len()
    )
}
