//! The nodes' zones, for a zone-aware fleet: a node watch through kubesd's own
//! discovery (role node, the same group a job of role node uses, so its list and watch
//! are shared with the jobs), reduced to each node's `topology.kubernetes.io/zone`.

use std::collections::BTreeMap;
use std::sync::Arc;

use arcstr::ArcStr;

use super::assignment::NodeZones;
use crate::config::SdConfig;
use crate::labels::Labels;
use crate::model::Role;
use crate::{Discovery, SubscribeError, Subscription};

/// The node role's label holding the node's `topology.kubernetes.io/zone` label.
pub const ZONE_LABEL: &str = "__meta_kubernetes_node_label_topology_kubernetes_io_zone";

/// The node role's label holding the node's name.
const NODE_NAME_LABEL: &str = "__meta_kubernetes_node_name";

/// A node and its zone, as the watch sees it.
pub type NodeZone = (ArcStr, ArcStr);

/// Subscribes to every node of the API server `members_sd` reaches (its connection
/// settings, role node), each node as its name and zone (nodes without a zone left
/// out).
pub async fn watch_node_zones(
    discovery: &Discovery,
    members_sd: &SdConfig,
) -> Result<Subscription<NodeZone>, SubscribeError> {
    let mut sd = members_sd.clone();
    sd.role = Role::Node;
    sd.namespaces = Default::default();
    sd.selectors = Vec::new();
    sd.attach_metadata = Default::default();
    discovery
        .subscribe(&sd, |labels: &Labels| {
            let zone = labels.get_shared(ZONE_LABEL).filter(|z| !z.is_empty())?;
            Some((labels.get_shared(NODE_NAME_LABEL)?, zone))
        })
        .await
}

/// The zones of `nodes` (the watch's values) by node name.
pub fn node_zones(nodes: &[NodeZone]) -> NodeZones {
    Arc::new(nodes.iter().cloned().collect::<BTreeMap<_, _>>())
}
