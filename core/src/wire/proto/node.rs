//! `core/v1.Node` in protobuf: `spec.providerID` (2.3) and, in `status` (3),
//! `conditions` 4, `addresses` 5 and `daemonEndpoints.kubeletEndpoint.Port` (6.1.1).

use super::fields::{Repeated, for_each_field};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus};

/// Decodes a `Node`.
pub(crate) fn node(bytes: &[u8]) -> Result<Node, WireError> {
    let mut node = Node::default();
    for_each_field(bytes, "Node", |f| {
        match f.number {
            1 => node.metadata = object_meta(f.bytes("metadata")?)?,
            2 => node.spec = node_spec(f.bytes("spec")?)?,
            3 => node.status = node_status(f.bytes("status")?)?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(node)
}

fn node_spec(bytes: &[u8]) -> Result<NodeSpec, WireError> {
    let mut spec = NodeSpec::default();
    for_each_field(bytes, "NodeSpec", |f| {
        if f.number == 3 {
            spec.provider_id = f.unique("providerID")?;
        }
        Ok(())
    })?;
    Ok(spec)
}

fn node_status(bytes: &[u8]) -> Result<NodeStatus, WireError> {
    const M: &str = "NodeStatus";
    let mut status = NodeStatus::default();
    let (mut conditions, mut addresses) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            4 => conditions.note(f),
            5 => addresses.note(f),
            6 => {
                for_each_field(f.bytes("daemonEndpoints")?, "NodeDaemonEndpoints", |d| {
                    if d.number == 1 {
                        for_each_field(d.bytes("kubeletEndpoint")?, "DaemonEndpoint", |e| {
                            if e.number == 1 {
                                status.daemon_endpoints.kubelet_endpoint.port = e.int32("Port")?;
                            }
                            Ok(())
                        })?;
                    }
                    Ok(())
                })?;
            }
            _ => {}
        }
        Ok(())
    })?;
    status.conditions = conditions.decode(bytes, M, |f| {
        let mut condition = NodeCondition::default();
        for_each_field(f.bytes("conditions")?, "NodeCondition", |c| {
            match c.number {
                1 => condition.kind = c.enum_value("type")?,
                2 => condition.status = c.enum_value("status")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(condition)
    })?;
    status.addresses = addresses.decode(bytes, M, |f| {
        let mut address = NodeAddress::default();
        for_each_field(f.bytes("addresses")?, "NodeAddress", |a| {
            match a.number {
                1 => address.kind = a.enum_value("type")?,
                2 => address.address = a.unique("address")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(address)
    })?;
    Ok(status)
}
