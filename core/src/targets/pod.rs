//! Role `pod`: one target per declared container port, one per port-less container.

use arcstr::ArcStr;
use std::collections::HashMap;

use super::address::join_host_port;
use super::attach_metadata::CPU_REQUEST_LABEL;
use super::context::TargetContext;
use super::meta::{
    NODE, POD, add_annotations, add_labels, add_namespace_metadata, bool_str, metadata_labels,
};
use super::owners::add_workload_labels;
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{Container, ContainerPort, ContainerStatus, Pod};

/// The targets of a pod.
///
/// Pods without an IP produce none; which others produce none, and which containers
/// are skipped, is the semantics' choice ([`pod_has_no_targets`]).
pub(super) fn pod_targets(pod: &Pod, ctx: &TargetContext<'_>) -> Vec<Labels> {
    if pod_has_no_targets(pod, ctx) {
        return Vec::new();
    }
    let skip_terminated = !ctx.semantics.keeps_finished_pods();
    let bracket_ipv6 = ctx.semantics.brackets_portless_ipv6();
    let common = pod_common_labels(pod, ctx);
    // Each target's own labels; laid over the common part together at the end. (Sized
    // up front: a growing vector of builders cost a reallocation per pod.)
    let targets: usize = [&pod.spec.containers, &pod.spec.init_containers]
        .into_iter()
        .flatten()
        .map(|c| c.ports.len().max(1))
        .sum();
    let mut owns = Vec::with_capacity(targets);
    for (containers, statuses, init) in [
        (&pod.spec.containers, &pod.status.container_statuses, false),
        (
            &pod.spec.init_containers,
            &pod.status.init_container_statuses,
            true,
        ),
    ] {
        let statuses = StatusIndex::new(statuses);
        for c in containers {
            let status = statuses.get(&c.name);
            if skip_terminated && status.is_some_and(|s| s.state.terminated.is_some()) {
                continue;
            }
            // A port-less container is one target without port labels.
            let ports = c.ports.iter().map(Some);
            let no_port = c.ports.is_empty().then_some(None);
            for port in ports.chain(no_port) {
                // The eight labels below.
                let mut b = LabelsBuilder::with_capacity(8);
                let address = match port {
                    Some(p) => join_host_port(&pod.status.pod_ip, p.container_port),
                    None if bracket_ipv6 && pod.status.pod_ip.contains(':') => {
                        format!("[{}]", pod.status.pod_ip).into()
                    }
                    // The IP itself, shared.
                    None => ArcStr::clone(&pod.status.pod_ip),
                };
                b.add(arcstr::literal!("__address__"), address);
                if let Some(status) = status
                    && !status.container_id.is_empty()
                {
                    b.add(
                        arcstr::literal!("__meta_kubernetes_pod_container_id"),
                        ArcStr::clone(&status.container_id),
                    );
                }
                add_container_labels(&mut b, c, port, init);
                owns.push(b);
            }
        }
    }
    common.merged_each(owns)
}

/// [`pod_targets`] for a pod that replaced `previous`. When the pod's IP, containers
/// and container statuses are what they were, its targets are the old targets' own
/// parts (address, container, port labels) over a freshly built shared part: the same
/// labels as [`pod_targets`] builds (tested in `tests/roles.rs`), with ~half the work
/// for the usual event (a condition, an annotation, a label changed).
pub(super) fn pod_targets_after(
    pod: &Pod,
    ctx: &TargetContext<'_>,
    previous: Option<(&Pod, &[Labels])>,
) -> Vec<Labels> {
    let Some((old, old_targets)) = previous else {
        return pod_targets(pod, ctx);
    };
    if pod_has_no_targets(pod, ctx) {
        return Vec::new();
    }
    let same_own_inputs = !old_targets.is_empty()
        && old.status.pod_ip == pod.status.pod_ip
        && !is_finished(&old.status.phase)
        && old.spec.containers == pod.spec.containers
        && old.spec.init_containers == pod.spec.init_containers
        && old.status.container_statuses == pod.status.container_statuses
        && old.status.init_container_statuses == pod.status.init_container_statuses;
    if !same_own_inputs || is_finished(&pod.status.phase) {
        return pod_targets(pod, ctx);
    }
    let common = pod_common_labels(pod, ctx);
    Labels::rebased_each(old_targets, &common)
}

fn is_finished(phase: &str) -> bool {
    phase == "Succeeded" || phase == "Failed"
}

/// True for a pod that gives no targets: one without an IP; a finished one, unless the
/// semantics keeps them; with `attach_metadata.node`, one whose node is not cached,
/// when the semantics needs it (a node selector filtered the node out).
fn pod_has_no_targets(pod: &Pod, ctx: &TargetContext<'_>) -> bool {
    let semantics = ctx.semantics;
    pod.status.pod_ip.is_empty()
        || (!semantics.keeps_finished_pods() && is_finished(&pod.status.phase))
        || (ctx.attach.node
            && semantics.pod_needs_its_node()
            && ctx.cache.node(&pod.spec.node_name).is_none())
}

/// The shared part of the pod's targets, built and sorted.
fn pod_common_labels(pod: &Pod, ctx: &TargetContext<'_>) -> Labels {
    let mut common = LabelsBuilder::new();
    add_pod_common_labels(&mut common, pod, ctx, Related::SharedNode);
    if ctx.attach.cpu_request
        && let Some(milli) = pod.spec.cpu_request()
    {
        common.add(arcstr::literal!(CPU_REQUEST_LABEL), cores(milli));
    }
    common.finish()
}

/// Millicores as cores, without trailing zeros: `1500` is `1.5`, `2000` is `2`.
fn cores(milli: u64) -> String {
    let (whole, fraction) = (milli / 1000, milli % 1000);
    if fraction == 0 {
        return whole.to_string();
    }
    let fraction = format!("{fraction:03}");
    format!("{whole}.{}", fraction.trim_end_matches('0'))
}

/// Which of a pod's related labels (its namespace's and its node's) join its own.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Related {
    /// The namespace and its metadata, and the node's labels shared with every other
    /// pod on the node ([`LabelsBuilder::inherit`]): the pod's own targets, whose
    /// builder becomes their shared part.
    SharedNode,
    /// The same, the node's labels copied in: VictoriaMetrics' endpoint targets, whose
    /// builders are laid over the endpoints' labels and so cannot keep a shared part of
    /// their own.
    CopiedNode,
    /// Neither: Prometheus' endpoint targets, which take the namespace from the
    /// endpoints object and the node from the address.
    Neither,
}

/// The labels every target of the pod shares; also added to endpoint targets backed by
/// the pod.
pub(super) fn add_pod_common_labels(
    b: &mut LabelsBuilder,
    pod: &Pod,
    ctx: &TargetContext<'_>,
    related: Related,
) {
    let (meta, spec, status) = (&pod.metadata, &pod.spec, &pod.status);
    // Added in name order (the label and annotation maps come sorted by key): then the
    // builder need not sort. Any order gives the same labels, sorted if need be.
    if related != Related::Neither {
        b.add(
            arcstr::literal!("__meta_kubernetes_namespace"),
            ArcStr::clone(&meta.namespace),
        );
        add_namespace_metadata(b, ctx, &meta.namespace);
    }
    if ctx.attach.node && related != Related::Neither {
        // The node name comes from the pod. A pod whose node is not (yet) cached gets
        // here only when the semantics keeps its targets (`pod_needs_its_node`), and
        // then has them without node labels.
        if let Some(node) = ctx.cache.node(&spec.node_name) {
            let labels = metadata_labels(&node.metadata_labels, &NODE, &node.metadata);
            match related {
                Related::SharedNode => b.inherit(labels),
                Related::CopiedNode | Related::Neither => b.add_all(labels),
            }
        }
        b.add(
            arcstr::literal!("__meta_kubernetes_node_name"),
            ArcStr::clone(&spec.node_name),
        );
    }
    add_annotations(b, &POD, meta);
    if let Some(owner) = meta.owner_references.iter().find(|o| o.controller) {
        if !owner.kind.is_empty() {
            b.add(
                arcstr::literal!("__meta_kubernetes_pod_controller_kind"),
                ArcStr::clone(&owner.kind),
            );
        }
        if !owner.name.is_empty() {
            b.add(
                arcstr::literal!("__meta_kubernetes_pod_controller_name"),
                ArcStr::clone(&owner.name),
            );
        }
    }
    add_workload_labels(b, pod, ctx);
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_host_ip"),
        ArcStr::clone(&status.host_ip),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_ip"),
        ArcStr::clone(&status.pod_ip),
    );
    add_labels(b, &POD, meta);
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_name"),
        ArcStr::clone(&meta.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_node_name"),
        ArcStr::clone(&spec.node_name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_phase"),
        ArcStr::clone(&status.phase),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_ready"),
        ready_status(pod),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_uid"),
        ArcStr::clone(&meta.uid),
    );
}

/// The labels of one container, and of one of its ports when given.
pub(super) fn add_container_labels(
    b: &mut LabelsBuilder,
    c: &Container,
    port: Option<&ContainerPort>,
    init: bool,
) {
    // In name order (image, init, name), so that the builder need not sort.
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_container_image"),
        ArcStr::clone(&c.image),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_container_init"),
        bool_str(init),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_pod_container_name"),
        ArcStr::clone(&c.name),
    );
    if let Some(p) = port {
        b.add(
            arcstr::literal!("__meta_kubernetes_pod_container_port_name"),
            ArcStr::clone(&p.name),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_pod_container_port_number"),
            crate::labels::port_string(p.container_port),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_pod_container_port_protocol"),
            ArcStr::clone(&p.protocol),
        );
    }
}

/// `true`/`false` from the `Ready` condition, lower-cased; `unknown` without one.
fn ready_status(pod: &Pod) -> ArcStr {
    match pod.status.ready.as_deref() {
        // The usual two are shared strings; anything else is lower-cased as it comes.
        Some("True") => super::meta::true_str(),
        Some("False") => super::meta::false_str(),
        Some(status) => status.to_lowercase().into(),
        None => arcstr::literal!("unknown"),
    }
}

/// A pod's container statuses by container name. The usual handful is scanned; a pod
/// with many containers gets a map, built once, so that its targets cost containers,
/// not containers² (found by `tests/huge_objects.rs`).
struct StatusIndex<'a> {
    list: &'a [ContainerStatus],
    map: Option<HashMap<&'a str, &'a ContainerStatus>>,
}

impl<'a> StatusIndex<'a> {
    /// Above this many statuses, a map beats a scan.
    const SCAN_LIMIT: usize = 16;

    fn new(list: &'a [ContainerStatus]) -> StatusIndex<'a> {
        let map = (list.len() > Self::SCAN_LIMIT).then(|| {
            let mut map = HashMap::with_capacity(list.len());
            for s in list {
                // The first status of a name wins, as with a scan.
                map.entry(&*s.name).or_insert(s);
            }
            map
        });
        StatusIndex { list, map }
    }

    fn get(&self, name: &str) -> Option<&'a ContainerStatus> {
        match &self.map {
            Some(map) => map.get(name).copied(),
            None => self.list.iter().find(|s| &*s.name == name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cores;

    #[test]
    fn millicores_read_as_cores() {
        for (milli, text) in [
            (0, "0"),
            (1, "0.001"),
            (500, "0.5"),
            (1250, "1.25"),
            (2000, "2"),
        ] {
            assert_eq!(cores(milli), text);
        }
    }
}
