//! The Pod object (`/api/v1/pods`), as much of it as discovery reads.
//!
//! Pods are the bulk of a cluster's watch traffic, so the shape is lean: env, volumes,
//! probes, `managedFields` and every resource but the CPU request are skipped by the
//! parser without being built.

use arcstr::ArcStr;

use serde::Deserialize;
use serde::de::{Deserializer, SeqAccess, Visitor};
use std::fmt;

use super::json::{
    empty_str, enum_str, exact_slice, interned_str, map_str, null_default, nullable_str,
    scratch_elements, share_str,
};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Pod {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: PodSpec,
    /// `status`.
    #[serde(default, deserialize_with = "null_default")]
    pub status: PodStatus,
}

/// `spec` of a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// The node the pod is scheduled on; empty while pending.
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub node_name: ArcStr,
    /// `spec.containers`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub containers: Box<[Container]>,
    /// `spec.initContainers`; those with `restartPolicy: Always` are sidecars.
    #[serde(default, deserialize_with = "exact_slice")]
    pub init_containers: Box<[Container]>,
}

/// A container of `spec.containers` or `spec.initContainers`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// The container's name, unique within the pod.
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub name: ArcStr,
    /// The image reference.
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub image: ArcStr,
    /// Declared ports.
    #[serde(default, deserialize_with = "exact_slice")]
    pub ports: Box<[ContainerPort]>,
    /// Only set on init containers: `Always` makes it a sidecar that keeps running.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub restart_policy: ArcStr,
    /// `resources.requests.cpu` in millicores; `None` when none is requested or it is
    /// not a quantity. The rest of `resources` is read past. (Four bytes: every cached
    /// pod's containers carry it.)
    #[serde(default, rename = "resources", deserialize_with = "cpu_request")]
    pub cpu_request: Option<u32>,
}

impl Container {
    /// True for an init container that runs alongside the pod (a native sidecar).
    pub(crate) fn is_sidecar(&self) -> bool {
        &*self.restart_policy == "Always"
    }
}

impl PodSpec {
    /// The CPU the pod requests while it runs, in millicores: the sum of its
    /// containers' and native sidecars' requests (init containers that run to
    /// completion before them are not counted); `None` when none of them requests any.
    pub(crate) fn cpu_request(&self) -> Option<u64> {
        let sidecars = self.init_containers.iter().filter(|c| c.is_sidecar());
        self.containers
            .iter()
            .chain(sidecars)
            .filter_map(|c| c.cpu_request.map(u64::from))
            .reduce(u64::saturating_add)
    }
}

/// Deserializes a container's `resources` (possibly `null`) into its CPU request in
/// millicores; limits, other resources and claims are read past.
fn cpu_request<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<u32>, D::Error> {
    #[derive(Deserialize)]
    struct Resources<'a> {
        #[serde(default, borrow)]
        requests: Option<Requests<'a>>,
    }
    #[derive(Deserialize)]
    struct Requests<'a> {
        #[serde(default, borrow)]
        cpu: Option<std::borrow::Cow<'a, str>>,
    }
    let resources = Option::<Resources<'de>>::deserialize(deserializer)?;
    Ok(resources
        .and_then(|r| r.requests)
        .and_then(|r| r.cpu)
        .and_then(|cpu| super::quantity::cpu_millis(&cpu)))
}

/// One entry of a container's `ports`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// The port's name (optional).
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub name: ArcStr,
    /// The port number.
    #[serde(default, deserialize_with = "null_default")]
    pub container_port: i64,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub protocol: ArcStr,
}

/// `status` of a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    pub phase: ArcStr,
    /// The pod's IP; pods without one produce no targets.
    #[serde(
        rename = "podIP",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    pub pod_ip: ArcStr,
    /// The IP of the node the pod runs on.
    #[serde(
        rename = "hostIP",
        default = "empty_str",
        deserialize_with = "interned_str"
    )]
    pub host_ip: ArcStr,
    /// The status of the `Ready` condition (`True`, `False`, ...); `None` without one.
    /// The other conditions are read past, not kept: no label depends on them, so a
    /// pod event that only changes them leaves the pod unchanged.
    #[serde(rename = "conditions", default, deserialize_with = "ready_condition")]
    pub ready: Option<ArcStr>,
    /// `status.containerStatuses`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub container_statuses: Box<[ContainerStatus]>,
    /// `status.initContainerStatuses`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub init_container_statuses: Box<[ContainerStatus]>,
}

/// The status of the first `Ready` entry of `status.conditions` (`null` or no such
/// entry: `None`), without keeping the list.
fn ready_condition<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<ArcStr>, D::Error> {
    struct ConditionsVisitor;
    impl<'de> Visitor<'de> for ConditionsVisitor {
        type Value = Option<ArcStr>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of pod conditions, or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<ArcStr>, E> {
            Ok(None)
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Option<ArcStr>, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<ArcStr>, D::Error> {
            d.deserialize_seq(self)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<ArcStr>, A::Error> {
            let mut ready = None;
            // Every entry is still parsed (and must be well-formed); the first Ready wins.
            while let Some(condition) = seq.next_element::<PodCondition>()? {
                if ready.is_none() && condition.is_ready {
                    ready = Some(condition.status);
                }
            }
            Ok(ready)
        }
    }
    deserializer.deserialize_option(ConditionsVisitor)
}

/// One entry of `status.conditions`, as [`ready_condition`] reads it: its strings are
/// compared in the parser's buffer, not kept (interning or copying every entry's two
/// strings cost ~8 look-ups or allocations per pod event, for one status kept).
#[derive(Deserialize)]
struct PodCondition {
    /// True when the condition's `type` is `Ready`.
    #[serde(rename = "type", default, deserialize_with = "is_ready_type")]
    is_ready: bool,
    /// `True`, `False` or `Unknown` (shared static strings), or what the API sent.
    #[serde(default = "empty_str", deserialize_with = "enum_str")]
    status: ArcStr,
}

/// `type == "Ready"`, without building the string (`null` is not Ready).
fn is_ready_type<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    map_str(deserializer, |v| v == "Ready")
}

/// One entry of `status.containerStatuses` (or `initContainerStatuses`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    /// The container this status is for.
    #[serde(default = "empty_str", deserialize_with = "interned_str")]
    pub name: ArcStr,
    /// `<runtime>://<id>`; empty before the container started.
    #[serde(
        rename = "containerID",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    pub container_id: ArcStr,
    /// The container's current state.
    #[serde(default, deserialize_with = "null_default")]
    pub state: ContainerState,
}

/// `state` of a container status: only whether it has terminated matters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct ContainerState {
    /// Present when the container has exited.
    #[serde(default)]
    pub terminated: Option<Terminated>,
}

/// `state.terminated`; its fields are not read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Terminated {}

impl Pod {
    /// Makes this pod's spec and status (an update of `previous`) hold `previous`'s
    /// strings where they are equal, instead of equal copies: the ones decoding interns
    /// (node, containers, ports, phase, host IP), which a `MODIFIED` event's decoding
    /// copies, and the container IDs.
    ///
    /// A pod update whose containers did not change keeps its old targets' own parts
    /// (`targets::pod_targets_after`), and those hold the old pod's container IDs: without
    /// sharing them, every updated pod would keep two copies of each (long strings, one
    /// per container).
    pub(crate) fn share_strings_of(&mut self, previous: &Pod) {
        share_str(&mut self.spec.node_name, &previous.spec.node_name);
        share_str(&mut self.status.phase, &previous.status.phase);
        share_str(&mut self.status.host_ip, &previous.status.host_ip);
        for (containers, old) in [
            (&mut self.spec.containers, &previous.spec.containers),
            (
                &mut self.spec.init_containers,
                &previous.spec.init_containers,
            ),
        ] {
            for (new, old) in containers.iter_mut().zip(old.iter()) {
                share_str(&mut new.name, &old.name);
                share_str(&mut new.image, &old.image);
                share_str(&mut new.restart_policy, &old.restart_policy);
                for (new, old) in new.ports.iter_mut().zip(old.ports.iter()) {
                    share_str(&mut new.name, &old.name);
                    share_str(&mut new.protocol, &old.protocol);
                }
            }
        }
        for (statuses, old) in [
            (
                &mut self.status.container_statuses,
                &previous.status.container_statuses,
            ),
            (
                &mut self.status.init_container_statuses,
                &previous.status.init_container_statuses,
            ),
        ] {
            for (new, old) in statuses.iter_mut().zip(old.iter()) {
                share_str(&mut new.name, &old.name);
                share_str(&mut new.container_id, &old.container_id);
            }
        }
    }
}

scratch_elements!(Container, ContainerPort, ContainerStatus);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_request_sums_containers_and_sidecars_and_tolerates_odd_resources() {
        let spec: PodSpec = serde_json::from_str(
            r#"{"containers":[
                {"name":"a","resources":{"requests":{"cpu":"250m","memory":"1Gi"},"limits":{"cpu":"9"}}},
                {"name":"b","resources":{"requests":{"memory":"1Gi"}}},
                {"name":"c","resources":null},
                {"name":"d","resources":{"requests":null}},
                {"name":"e","resources":{"requests":{"cpu":"lots"}}},
                {"name":"f","resources":{"requests":{"cpu":"1.5"}}}],
              "initContainers":[
                {"name":"setup","resources":{"requests":{"cpu":"8"}}},
                {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m"}}}]}"#,
        )
        .expect("a pod spec");
        let requests: Vec<Option<u32>> = spec.containers.iter().map(|c| c.cpu_request).collect();
        assert_eq!(requests, [Some(250), None, None, None, None, Some(1500)]);
        assert_eq!(spec.cpu_request(), Some(1850));
        assert_eq!(PodSpec::default().cpu_request(), None);
    }

    fn pod(conditions: &str) -> Pod {
        let json =
            format!(r#"{{"metadata":{{"name":"p"}},"status":{{"conditions":{conditions}}}}}"#);
        match serde_json::from_str(&json) {
            Ok(pod) => pod,
            Err(e) => panic!("{json}: {e}"),
        }
    }

    #[test]
    fn only_the_first_ready_condition_is_kept() {
        let ready = |c: &str| pod(c).status.ready.map(|s| s.to_string());
        assert_eq!(ready("null"), None);
        assert_eq!(ready("[]"), None);
        assert_eq!(ready(r#"[{"type":"PodScheduled","status":"True"}]"#), None);
        assert_eq!(
            ready(
                r#"[{"type":"Initialized","status":"True"},{"type":"Ready","status":"False"},{"type":"Ready","status":"True"}]"#
            ),
            Some("False".to_string())
        );
        // Other conditions are not part of the pod: changing them changes nothing.
        assert_eq!(
            pod(r#"[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"True"}]"#),
            pod(r#"[{"type":"PodScheduled","status":"False"},{"type":"Ready","status":"True"}]"#)
        );
        // Entries are still checked.
        let bad = r#"{"status":{"conditions":[{"type":1}]}}"#;
        assert!(serde_json::from_str::<Pod>(bad).is_err());
    }
}
