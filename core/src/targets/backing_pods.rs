//! The pods behind endpoints and endpoint slices: their labels on each endpoint target,
//! and extra targets for the container ports no endpoint port covers (so a pod's
//! metrics port is discoverable through its service's endpoints even when the service
//! does not expose it).

use std::collections::HashMap;

use arcstr::ArcStr;

use super::address::join_host_port;
use super::context::TargetContext;
use super::pod::{Related, add_container_labels, add_pod_common_labels};
use super::semantics::{EndpointNode, InitContainers};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{Container, Pod};

/// The pods seen behind an endpoints object, with the ports endpoint targets covered.
pub(super) struct BackingPods<'a> {
    /// The init containers an endpoint port may match.
    matched: InitContainers,
    seen: Vec<(&'a Pod, Vec<i64>)>,
    /// Where each seen pod (by address) is in `seen`: an endpoints object of thousands
    /// of pods must not search `seen` once per address.
    index: HashMap<*const Pod, usize>,
}

/// Which of the pod's related labels join an endpoint target: the semantics' choice of
/// where node labels come from ([`EndpointNode`]).
pub(super) fn related_of_backing_pod(ctx: &TargetContext<'_>) -> Related {
    match ctx.semantics.endpoint_node() {
        EndpointNode::FromPod => Related::CopiedNode,
        EndpointNode::FromAddress => Related::Neither,
    }
}

impl<'a> BackingPods<'a> {
    /// No pods seen yet; endpoint ports may match the containers `matched` allows.
    pub(super) fn new(matched: InitContainers) -> Self {
        BackingPods {
            matched,
            seen: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Adds to an endpoint target on `port` the labels of the container that declares
    /// `port` (the pod's own labels are the caller's, in the target's shared part), and
    /// records `port` as covered. `protocol`, when given, is the
    /// endpoint port's, and replaces the container port's protocol.
    pub(super) fn add_matching_container_labels(
        &mut self,
        b: &mut LabelsBuilder,
        pod: &'a Pod,
        port: i64,
        protocol: Option<&ArcStr>,
    ) {
        let idx = *self
            .index
            .entry(std::ptr::from_ref(pod))
            .or_insert_with(|| {
                self.seen.push((pod, Vec::new()));
                self.seen.len() - 1
            });
        // Every container declaring the port is applied, so with duplicates the last one's
        // labels win: both Prometheus and VictoriaMetrics break out of the port loop only,
        // not the container loop (corpus cases `*/dup-container-port-*`).
        for (c, init) in scraped_containers(pod, self.matched) {
            if let Some(cp) = c.ports.iter().find(|cp| cp.container_port == port) {
                self.seen[idx].1.push(port);
                add_container_labels(b, c, Some(cp), init);
                if let Some(protocol) = protocol {
                    b.add(
                        arcstr::literal!("__meta_kubernetes_pod_container_port_protocol"),
                        ArcStr::clone(protocol),
                    );
                }
            }
        }
    }

    /// Appends one target per container port of every seen pod that no endpoint target
    /// covered; `add_owner_labels` adds the endpoints' own labels.
    pub(super) fn add_uncovered_ports(
        &self,
        targets: &mut Vec<Labels>,
        ctx: &TargetContext<'_>,
        add_owner_labels: impl Fn(&mut LabelsBuilder, &Pod),
    ) {
        let semantics = ctx.semantics;
        for (pod, covered) in &self.seen {
            if semantics.uncovered_ports_need_pod_ip() && pod.status.pod_ip.is_empty() {
                continue;
            }
            // The pod's and the owner's labels are the same for every uncovered port of
            // the pod: built once and shared. The owner's labels come last and win: a
            // pod in another namespace still gets the endpoints' namespace (corpus case
            // `endpoints/cross-namespace-*`). Each target's own part (its address and
            // container labels) shares no name with that part, so it neither wins nor
            // loses against it.
            let mut shared: Option<Labels> = None;
            for (c, init) in scraped_containers(pod, semantics.uncovered_port_containers()) {
                for cp in &c.ports {
                    if covered.contains(&cp.container_port) {
                        continue;
                    }
                    let shared = shared.get_or_insert_with(|| {
                        let mut b = LabelsBuilder::new();
                        add_pod_common_labels(&mut b, pod, ctx, related_of_backing_pod(ctx));
                        add_owner_labels(&mut b, pod);
                        b.finish()
                    });
                    let mut own = LabelsBuilder::new();
                    own.add(
                        arcstr::literal!("__address__"),
                        join_host_port(&pod.status.pod_ip, cp.container_port),
                    );
                    add_container_labels(&mut own, c, Some(cp), init);
                    targets.push(shared.merged(own));
                }
            }
        }
    }
}

/// The containers whose ports endpoint targets may point at: the regular containers and
/// the init containers `init` allows.
fn scraped_containers(pod: &Pod, init: InitContainers) -> impl Iterator<Item = (&Container, bool)> {
    let regular = pod.spec.containers.iter().map(|c| (c, false));
    let inits = pod
        .spec
        .init_containers
        .iter()
        .filter(move |c| init == InitContainers::All || c.is_sidecar())
        .map(|c| (c, true));
    regular.chain(inits)
}
