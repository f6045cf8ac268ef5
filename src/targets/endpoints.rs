//! Role `endpoints`: one target per address and port of each subset, plus one per
//! container port of a backing pod that no endpoint port covers.

use arcstr::ArcStr;
use std::collections::HashMap;

use super::backing_pods::{BackingPods, InitContainers};
use super::meta::{ENDPOINTS, add_labels_and_annotations, bool_str};
use super::pod::{NodeLabels, add_pod_common_labels};
use super::service::add_service_common_labels;
use super::{TargetContext, join_host_port};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{EndpointAddress, EndpointPort, Endpoints, Pod};

/// The targets of an Endpoints object.
pub(super) fn endpoints_targets(eps: &Endpoints, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let meta = &eps.metadata;
    // The service has the Endpoints object's name.
    let svc = ctx.cache.service(&meta.namespace, &meta.name);
    let mut pods = BackingPods::new(InitContainers::SidecarsOnly);
    let mut targets = Vec::new();
    // A target's labels are added in this order, a later one winning over an earlier
    // one of the same name: the address's, the service's, the object's, the backing
    // pod's, the matched container's. All but the address's and the container's are the
    // same for every target of one pod (or of no pod), so they are built once per pod
    // and shared; the address's labels that the shared part also has lose to it, as
    // they would have lost to a later addition.
    let mut owner = LabelsBuilder::new();
    if let Some(svc) = svc {
        add_service_common_labels(&mut owner, svc, ctx);
    }
    add_labels_and_annotations(&mut owner, &ENDPOINTS, meta);
    let mut podless: Option<Labels> = None;
    let mut per_pod: HashMap<*const Pod, Labels> = HashMap::new();
    for subset in &eps.subsets {
        for port in &subset.ports {
            for (addresses, ready) in [
                (&subset.addresses, true),
                (&subset.not_ready_addresses, false),
            ] {
                for addr in addresses {
                    let mut own = endpoint_labels(eps, addr, port, ready);
                    let pod = if &*addr.target_ref.kind == "Pod" {
                        ctx.cache
                            .pod(&addr.target_ref.namespace, &addr.target_ref.name)
                    } else {
                        None
                    };
                    let shared = match pod {
                        Some(pod) => per_pod
                            .entry(std::ptr::from_ref(pod))
                            .or_insert_with(|| {
                                let mut b = owner.clone();
                                add_pod_common_labels(&mut b, pod, ctx, NodeLabels::Copied);
                                b.finish()
                            })
                            .clone(),
                        None => podless
                            .get_or_insert_with(|| owner.clone().finish())
                            .clone(),
                    };
                    own.remove_names_in(&shared);
                    if let Some(pod) = pod {
                        pods.add_matching_container_labels(&mut own, pod, port.port);
                    }
                    targets.push(shared.merged(own));
                }
            }
        }
    }
    pods.add_uncovered_ports(&mut targets, ctx, |b, pod| {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoints_name"),
            ArcStr::clone(&meta.name),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_kind"),
            "Pod",
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_name"),
            ArcStr::clone(&pod.metadata.name),
        );
        if let Some(svc) = svc {
            add_service_common_labels(b, svc, ctx);
        }
        add_labels_and_annotations(b, &ENDPOINTS, meta);
    });
    targets
}

fn endpoint_labels(
    eps: &Endpoints,
    addr: &EndpointAddress,
    port: &EndpointPort,
    ready: bool,
) -> LabelsBuilder {
    let mut b = LabelsBuilder::new();
    b.add(
        arcstr::literal!("__address__"),
        join_host_port(&addr.ip, port.port),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&eps.metadata.namespace),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoints_name"),
        ArcStr::clone(&eps.metadata.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_ready"),
        bool_str(ready),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_port_name"),
        ArcStr::clone(&port.name),
    );
    b.add(
        arcstr::literal!("__meta_kubernetes_endpoint_port_protocol"),
        ArcStr::clone(&port.protocol),
    );
    if !addr.target_ref.kind.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_kind"),
            ArcStr::clone(&addr.target_ref.kind),
        );
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_address_target_name"),
            ArcStr::clone(&addr.target_ref.name),
        );
    }
    if !addr.node_name.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_node_name"),
            ArcStr::clone(&addr.node_name),
        );
    }
    if !addr.hostname.is_empty() {
        b.add(
            arcstr::literal!("__meta_kubernetes_endpoint_hostname"),
            ArcStr::clone(&addr.hostname),
        );
    }
    b
}
