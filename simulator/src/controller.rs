//! The endpoints and endpointslice controllers: derive `Endpoints` and
//! `EndpointSlice` objects from services and the pods they select, as the
//! kube-controller-manager does, and keep them in sync on every pod or service
//! write.
//!
//! Reconciling is synchronous (it runs right after the triggering write), so a
//! test sees consistent endpoints as soon as its write returns. Unchanged
//! objects are not rewritten, so a pod edit that does not touch endpoints
//! produces no endpoint events, as in a real cluster.
//!
//! A pod's services and a service's pods and slices are found through the store's
//! indexes (by selector and by label), never by scanning a namespace: a write costs
//! the same in a cluster of any size.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::json_pointer::{at, str_at};
use super::resource::Resource;
use super::store::{ChangeType, Field, Store, WriteMode, Written};

/// The `managed-by` label value the real endpointslice controller sets.
pub const SLICE_MANAGER: &str = "endpointslice-controller.k8s.io";
/// The label linking an EndpointSlice to its service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The most endpoints one slice holds before another is started (real default).
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// Reconciles whatever the write of `resource` affects.
pub fn on_write(store: &Store, resource: Resource, written: &Written) {
    match resource {
        Resource::Pods => {
            let before = written.previous.as_deref();
            if written.change_type == ChangeType::Modified
                && before.is_some_and(|b| endpoint_inputs(b) == endpoint_inputs(&written.object))
            {
                return;
            }
            let ns = namespace_of(&written.object);
            for svc in services_of(store, &ns, [Some(&*written.object), before]) {
                let selects = |pod: &Value| selector_of(&svc).is_some_and(|s| selects(&s, pod));
                if selects(&written.object) || before.is_some_and(selects) {
                    reconcile_service(store, &ns, name_of(&svc));
                }
            }
        }
        Resource::Services => {
            reconcile_service(
                store,
                &namespace_of(&written.object),
                name_of(&written.object),
            );
        }
        _ => {}
    }
}

/// What of a pod its services' Endpoints and EndpointSlices are made of. An update
/// that changes none of it (an annotation, a container's status) leaves them as they
/// are, and the real controllers skip it too (`podEndpointsChanged`).
fn endpoint_inputs(pod: &Value) -> (bool, [Option<&Value>; 7]) {
    let field = |pointer: &str| at(pod, pointer);
    (
        is_ready(pod),
        [
            field("/metadata/labels"),
            field("/metadata/uid"),
            field("/metadata/deletionTimestamp"),
            field("/spec/nodeName"),
            field("/spec/containers"),
            field("/status/podIP"),
            field("/status/phase"),
        ],
    )
}

/// The services of namespace `ns` whose selector shares a pair with the labels of one
/// of `pods` (the candidates to select them), in name order, each once.
fn services_of<'a>(
    store: &Store,
    ns: &str,
    pods: impl IntoIterator<Item = Option<&'a Value>>,
) -> impl Iterator<Item = Arc<Value>> {
    let mut services: BTreeMap<String, Arc<Value>> = BTreeMap::new();
    for pod in pods.into_iter().flatten() {
        let labels = at(pod, "/metadata/labels").and_then(Value::as_object);
        for (k, v) in labels.into_iter().flatten() {
            let Some(v) = v.as_str() else { continue };
            for svc in store.find(Resource::Services, Field::Selector, ns, k, v) {
                services.insert(name_of(&svc).to_string(), svc);
            }
        }
    }
    services.into_values()
}

/// Reconciles every service, and removes endpoints left by deleted services.
pub fn reconcile_all(store: &Store) {
    for svc in store.list(Resource::Services, None) {
        reconcile_service(store, &namespace_of(&svc), name_of(&svc));
    }
    for ep in store.list(Resource::Endpoints, None) {
        let ns = namespace_of(&ep);
        if store.get(Resource::Services, &ns, name_of(&ep)).is_none() {
            let _ = store.delete(Resource::Endpoints, &ns, name_of(&ep));
        }
    }
    for slice in store.list(Resource::EndpointSlices, None) {
        let ns = namespace_of(&slice);
        let Some(svc) = managed_slice_service(&slice) else {
            continue;
        };
        if store.get(Resource::Services, &ns, svc).is_none() {
            let _ = store.delete(Resource::EndpointSlices, &ns, name_of(&slice));
        }
    }
}

/// Brings the Endpoints and EndpointSlices of one service up to date.
pub fn reconcile_service(store: &Store, ns: &str, name: &str) {
    let service = store.get(Resource::Services, ns, name);
    let selector = service.as_deref().and_then(selector_of);
    let (Some(service), Some(selector)) = (service, selector) else {
        // Deleted service: its endpoints go. Selector-less or ExternalName
        // service: endpoints are the user's business, leave them alone.
        if store.get(Resource::Services, ns, name).is_none() {
            let _ = store.delete(Resource::Endpoints, ns, name);
            sync_slices(store, ns, name, Vec::new());
        }
        return;
    };
    // Every pod the selector selects carries its first pair (a selector is not empty).
    let candidates = selector
        .iter()
        .next()
        .and_then(|(k, v)| Some(store.find(Resource::Pods, Field::Label, ns, k, v.as_str()?)))
        .unwrap_or_default();
    let pods: Vec<Arc<Value>> = candidates
        .iter()
        .filter(|pod| selects(&selector, pod) && has_ip_and_runs(pod))
        .cloned()
        .collect();
    let groups = group_by_ports(&service, &pods);
    let desired_endpoints = endpoints_object(&service, &groups);
    write_if_changed(store, Resource::Endpoints, desired_endpoints);
    let slices = slice_objects(store, &service, &groups);
    sync_slices(store, ns, name, slices);
}

/// Pods grouped by the resolved service ports they serve (a named
/// targetPort can resolve differently per pod), in a stable order.
type PortGroups = BTreeMap<Vec<(String, i64, String)>, Vec<Arc<Value>>>;

fn group_by_ports(service: &Value, pods: &[Arc<Value>]) -> PortGroups {
    let mut groups = PortGroups::new();
    let ports = at(service, "/spec/ports").and_then(Value::as_array);
    for pod in pods {
        let resolved: Vec<(String, i64, String)> = ports
            .into_iter()
            .flatten()
            .filter_map(|port| {
                let name = str_at(port, "/name").to_string();
                let protocol = at(port, "/protocol")
                    .and_then(Value::as_str)
                    .unwrap_or("TCP");
                let target = resolve_target_port(port, pod)?;
                Some((name, target, protocol.to_string()))
            })
            .collect();
        // A pod that serves none of the service's ports is no endpoint of it.
        if ports.is_some_and(|p| !p.is_empty()) && resolved.is_empty() {
            continue;
        }
        groups.entry(resolved).or_default().push(pod.clone());
    }
    groups
}

/// `targetPort` as a number, or a named container port looked up in the pod;
/// absent means the same as `port`.
fn resolve_target_port(port: &Value, pod: &Value) -> Option<i64> {
    match port.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        Some(Value::String(name)) => {
            if let Ok(n) = name.parse::<i64>() {
                return Some(n);
            }
            at(pod, "/spec/containers")
                .and_then(Value::as_array)?
                .iter()
                .filter_map(|c| c.get("ports").and_then(Value::as_array))
                .flatten()
                .find(|p| p.get("name").and_then(Value::as_str) == Some(name.as_str()))
                .and_then(|p| p.get("containerPort"))
                .and_then(Value::as_i64)
        }
        _ => port.get("port").and_then(Value::as_i64),
    }
}

fn endpoints_object(service: &Value, groups: &PortGroups) -> Value {
    let publish_not_ready = at(service, "/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut subsets = Vec::new();
    for (ports, pods) in groups {
        let mut ready = Vec::new();
        let mut not_ready = Vec::new();
        for pod in pods {
            // Terminating pods leave Endpoints (they stay in slices, flagged).
            if is_terminating(pod) && !publish_not_ready {
                continue;
            }
            let address = json!({
                "ip": str_at(pod, "/status/podIP"),
                "nodeName": str_at(pod, "/spec/nodeName"),
                "targetRef": pod_ref(pod),
            });
            if is_ready(pod) || publish_not_ready {
                ready.push(address);
            } else {
                not_ready.push(address);
            }
        }
        if ready.is_empty() && not_ready.is_empty() {
            continue;
        }
        let mut subset = Map::new();
        if !ready.is_empty() {
            subset.insert("addresses".into(), Value::Array(ready));
        }
        if !not_ready.is_empty() {
            subset.insert("notReadyAddresses".into(), Value::Array(not_ready));
        }
        let ports: Vec<Value> = ports
            .iter()
            .map(|(name, port, protocol)| port_json(name, *port, protocol, false))
            .collect();
        subset.insert("ports".into(), Value::Array(ports));
        subsets.push(Value::Object(subset));
    }
    let mut endpoints = json!({
        "metadata": {
            "name": name_of(service),
            "namespace": namespace_of(service),
            "labels": at(service, "/metadata/labels").cloned().unwrap_or_else(|| json!({})),
        },
    });
    if !subsets.is_empty() {
        endpoints["subsets"] = Value::Array(subsets);
    }
    endpoints
}

fn slice_objects(store: &Store, service: &Value, groups: &PortGroups) -> Vec<Value> {
    let svc_name = name_of(service);
    let publish_not_ready = at(service, "/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut labels = at(service, "/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(SERVICE_NAME_LABEL.into(), json!(svc_name));
    labels.insert(
        "endpointslice.kubernetes.io/managed-by".into(),
        json!(SLICE_MANAGER),
    );
    let slice = |suffix_seed: String, endpoints: Vec<Value>, ports: Value| {
        json!({
            "metadata": {
                "name": format!("{svc_name}-{}", short_hash(&suffix_seed)),
                "namespace": namespace_of(service),
                "labels": labels,
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Service", "name": svc_name,
                    "uid": str_at(service, "/metadata/uid"),
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        })
    };
    let mut slices = Vec::new();
    for (ports, pods) in groups {
        let ports_json: Vec<Value> = ports
            .iter()
            .map(|(name, port, protocol)| port_json(name, *port, protocol, true))
            .collect();
        let signature = format!("{svc_name}/{ports:?}");
        for (i, chunk) in pods.chunks(MAX_ENDPOINTS_PER_SLICE).enumerate() {
            let endpoints = chunk
                .iter()
                .map(|pod| slice_endpoint(store, pod, publish_not_ready))
                .collect();
            slices.push(slice(
                format!("{signature}/{i}"),
                endpoints,
                Value::Array(ports_json.clone()),
            ));
        }
    }
    if slices.is_empty() {
        // The real controller keeps one empty placeholder slice per service.
        slices.push(slice(
            format!("{svc_name}/placeholder"),
            Vec::new(),
            Value::Null,
        ));
    }
    slices
}

/// A pod as an endpoint of an EndpointSlice: its address, conditions, node (and the
/// node's zone) and reference.
fn slice_endpoint(store: &Store, pod: &Value, publish_not_ready: bool) -> Value {
    let terminating = is_terminating(pod);
    let serving = is_ready(pod) || publish_not_ready;
    let node = str_at(pod, "/spec/nodeName");
    let mut endpoint = json!({
        "addresses": [str_at(pod, "/status/podIP")],
        "conditions": {"ready": serving && !terminating, "serving": serving, "terminating": terminating},
        "nodeName": node,
        "targetRef": pod_ref(pod),
    });
    let zone = store.get(Resource::Nodes, "", node).and_then(|n| {
        at(&n, "/metadata/labels/topology.kubernetes.io~1zone")
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    if let Some(zone) = zone {
        endpoint["zone"] = json!(zone);
    }
    endpoint
}

/// Writes `desired` slices and deletes the service's other managed slices.
fn sync_slices(store: &Store, ns: &str, service: &str, desired: Vec<Value>) {
    let desired_names: Vec<String> = desired.iter().map(|s| name_of(s).to_string()).collect();
    for existing in store.find(
        Resource::EndpointSlices,
        Field::Label,
        ns,
        SERVICE_NAME_LABEL,
        service,
    ) {
        if managed_slice_service(&existing) == Some(service)
            && !desired_names.iter().any(|n| n == name_of(&existing))
        {
            let _ = store.delete(Resource::EndpointSlices, ns, name_of(&existing));
        }
    }
    for slice in desired {
        write_if_changed(store, Resource::EndpointSlices, slice);
    }
}

/// Upserts `desired` unless the stored object already has the same content
/// (metadata compared on labels and owners only: the rest is server-owned).
fn write_if_changed(store: &Store, resource: Resource, desired: Value) {
    let existing = store.get(resource, &namespace_of(&desired), name_of(&desired));
    if let Some(existing) = existing {
        let same_meta = ["labels", "ownerReferences"].iter().all(|f| {
            at(&existing, &format!("/metadata/{f}")) == at(&desired, &format!("/metadata/{f}"))
        });
        let same_body = desired
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| *k != "metadata")
            .all(|(k, v)| existing.get(k) == Some(v))
            && existing
                .as_object()
                .into_iter()
                .flatten()
                .all(|(k, _)| k == "metadata" || desired.get(k).is_some());
        if same_meta && same_body {
            return;
        }
    }
    // Controller writes cannot conflict (the simulator serialises writes) and
    // the object is well-formed by construction, so an error here is a bug
    // worth a log line, not a crash.
    if let Err(err) = store.write(resource, WriteMode::Upsert, desired) {
        tracing::warn!(%err, %resource, "simulator controller write failed");
    }
}

fn managed_slice_service(slice: &Value) -> Option<&str> {
    let labels = at(slice, "/metadata/labels")?;
    if labels
        .get("endpointslice.kubernetes.io/managed-by")?
        .as_str()?
        != SLICE_MANAGER
    {
        return None;
    }
    labels.get(SERVICE_NAME_LABEL)?.as_str()
}

/// The service's selector, if the endpoints controllers manage it.
fn selector_of(service: &Value) -> Option<Map<String, Value>> {
    if at(service, "/spec/type").and_then(Value::as_str) == Some("ExternalName") {
        return None;
    }
    at(service, "/spec/selector")
        .and_then(Value::as_object)
        .filter(|s| !s.is_empty())
        .cloned()
}

fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = at(pod, "/metadata/labels");
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// Pods that have an IP and have not finished are endpoint candidates.
fn has_ip_and_runs(pod: &Value) -> bool {
    let phase = str_at(pod, "/status/phase");
    !str_at(pod, "/status/podIP").is_empty() && phase != "Succeeded" && phase != "Failed"
}

/// Whether the pod's `Ready` condition is `True`.
pub fn is_ready(pod: &Value) -> bool {
    at(pod, "/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

fn is_terminating(pod: &Value) -> bool {
    at(pod, "/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

fn pod_ref(pod: &Value) -> Value {
    json!({
        "kind": "Pod",
        "namespace": namespace_of(pod),
        "name": name_of(pod),
        "uid": str_at(pod, "/metadata/uid"),
    })
}

fn port_json(name: &str, port: i64, protocol: &str, always_name: bool) -> Value {
    let mut p = json!({"port": port, "protocol": protocol});
    if always_name || !name.is_empty() {
        p["name"] = json!(name);
    }
    p
}

fn name_of(v: &Value) -> &str {
    str_at(v, "/metadata/name")
}

fn namespace_of(v: &Value) -> String {
    str_at(v, "/metadata/namespace").to_string()
}

/// Five stable lowercase characters derived from `s` (FNV-1a), standing in
/// for the random suffix the real controller's generateName adds.
fn short_hash(s: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5)
        .map(|i| ALPHABET[((h >> (i * 8)) % ALPHABET.len() as u64) as usize] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(store: &Store, resource: Resource, obj: Value) {
        let written = store
            .write(resource, WriteMode::Upsert, obj)
            .expect("write");
        on_write(store, resource, &written);
    }

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
               "status": {"phase": "Running", "podIP": ip,
                          "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}})
    }

    #[test]
    fn endpoints_follow_pod_readiness_and_deletion() {
        let store = Store::new(1000, 1);
        write(
            &store,
            Resource::Services,
            json!({"metadata": {"name": "web", "namespace": "ns"},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}),
        );
        write(&store, Resource::Pods, pod("a", "10.0.0.1", true));
        write(&store, Resource::Pods, pod("b", "10.0.0.2", false));
        let ep = store
            .get(Resource::Endpoints, "ns", "web")
            .expect("endpoints");
        assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "10.0.0.1");
        assert_eq!(ep["subsets"][0]["notReadyAddresses"][0]["ip"], "10.0.0.2");
        assert_eq!(ep["subsets"][0]["ports"][0]["port"], 8080);
        let slices = store.list(Resource::EndpointSlices, Some("ns"));
        assert_eq!(slices.len(), 1);
        assert_eq!(slices[0]["endpoints"].as_array().map(Vec::len), Some(2));
        assert_eq!(slices[0]["endpoints"][1]["conditions"]["ready"], false);

        let written = store.delete(Resource::Pods, "ns", "a").expect("delete");
        on_write(&store, Resource::Pods, &written);
        let ep = store
            .get(Resource::Endpoints, "ns", "web")
            .expect("endpoints");
        assert!(ep["subsets"][0].get("addresses").is_none());
        let rv = store.current_rv();
        // Rewriting an identical pod changes nothing downstream.
        write(&store, Resource::Pods, pod("b", "10.0.0.2", false));
        assert_eq!(store.current_rv(), rv + 1);

        let written = store
            .delete(Resource::Services, "ns", "web")
            .expect("delete svc");
        on_write(&store, Resource::Services, &written);
        assert!(store.get(Resource::Endpoints, "ns", "web").is_none());
        assert!(store.list(Resource::EndpointSlices, Some("ns")).is_empty());
    }
}
