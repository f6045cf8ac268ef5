//! `discovery/v1.EndpointSlice` (and `v1beta1`) in protobuf: `endpoints` 2, `ports` 3,
//! `addressType` 4. The versions differ in one place discovery reads: an endpoint's
//! field 5 is `topology` in `v1beta1` and `deprecatedTopology` in `v1`, and field 7 is
//! `zone` in `v1` only (`hints` in `v1beta1`); the envelope's `apiVersion` says which.

use super::endpoints::object_reference;
use super::fields::{Repeated, for_each_field, string_map, unique_strings};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};

/// Which schema an EndpointSlice is read with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SliceVersion {
    /// `discovery.k8s.io/v1`.
    V1,
    /// `discovery.k8s.io/v1beta1`.
    V1beta1,
}

/// Decodes an `EndpointSlice` of `version`.
pub(crate) fn endpoint_slice(
    bytes: &[u8],
    version: SliceVersion,
) -> Result<EndpointSlice, WireError> {
    const M: &str = "EndpointSlice";
    let mut slice = EndpointSlice::default();
    let (mut endpoints, mut ports) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => slice.metadata = object_meta(f.bytes("metadata")?)?,
            2 => endpoints.note(f),
            3 => ports.note(f),
            4 => slice.address_type = f.enum_value("addressType")?,
            _ => {}
        }
        Ok(())
    })?;
    slice.endpoints = endpoints.decode(bytes, M, |f| endpoint(f.bytes("endpoints")?, version))?;
    slice.ports = ports.decode(bytes, M, |f| port(f.bytes("ports")?))?;
    Ok(slice)
}

fn endpoint(bytes: &[u8], version: SliceVersion) -> Result<Endpoint, WireError> {
    const M: &str = "Endpoint";
    let mut endpoint = Endpoint::default();
    let (mut addresses, mut topology) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match (f.number, version) {
            (1, _) => addresses.note(f),
            (5, _) => topology.note(f),
            (2, _) => endpoint.conditions = conditions(f.bytes("conditions")?)?,
            (3, _) => endpoint.hostname = f.unique("hostname")?,
            (4, _) => endpoint.target_ref = object_reference(f.bytes("targetRef")?)?,
            (6, _) => endpoint.node_name = f.unique("nodeName")?,
            (7, SliceVersion::V1) => endpoint.zone = f.unique("zone")?,
            _ => {}
        }
        Ok(())
    })?;
    endpoint.addresses = unique_strings(bytes, M, addresses, "addresses")?.into_vec();
    let topology = string_map(bytes, M, topology)?;
    match version {
        SliceVersion::V1 => endpoint.deprecated_topology = topology,
        SliceVersion::V1beta1 => endpoint.topology = topology,
    }
    Ok(endpoint)
}

fn conditions(bytes: &[u8]) -> Result<EndpointConditions, WireError> {
    let mut conditions = EndpointConditions::default();
    for_each_field(bytes, "EndpointConditions", |f| {
        match f.number {
            1 => conditions.ready = Some(f.bool("ready")?),
            2 => conditions.serving = Some(f.bool("serving")?),
            3 => conditions.terminating = Some(f.bool("terminating")?),
            _ => {}
        }
        Ok(())
    })?;
    Ok(conditions)
}

/// A discovery `EndpointPort`: `name` 1, `protocol` 2, `port` 3, `appProtocol` 4 (not
/// the core numbering).
fn port(bytes: &[u8]) -> Result<EndpointPort, WireError> {
    let mut port = EndpointPort::default();
    for_each_field(bytes, "EndpointPort", |f| {
        match f.number {
            1 => port.name = f.unique("name")?,
            2 => port.protocol = f.enum_value("protocol")?,
            3 => port.port = Some(f.int32("port")?),
            4 => port.app_protocol = f.unique("appProtocol")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(port)
}
