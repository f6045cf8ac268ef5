//! `core/v1.Endpoints` in protobuf: `subsets` 2, each with `addresses` 1,
//! `notReadyAddresses` 2 and `ports` 3; and `ObjectReference` (a `targetRef`), which
//! EndpointSlices share.

use super::fields::{Repeated, for_each_field};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference};

/// Decodes an `Endpoints` object.
pub(crate) fn endpoints(bytes: &[u8]) -> Result<Endpoints, WireError> {
    const M: &str = "Endpoints";
    let mut endpoints = Endpoints::default();
    let mut subsets = Repeated::default();
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => endpoints.metadata = object_meta(f.bytes("metadata")?)?,
            2 => subsets.note(f),
            _ => {}
        }
        Ok(())
    })?;
    endpoints.subsets = subsets.decode(bytes, M, |f| subset(f.bytes("subsets")?))?;
    Ok(endpoints)
}

fn subset(bytes: &[u8]) -> Result<EndpointSubset, WireError> {
    const M: &str = "EndpointSubset";
    let (mut addresses, mut not_ready, mut ports) = (
        Repeated::default(),
        Repeated::default(),
        Repeated::default(),
    );
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => addresses.note(f),
            2 => not_ready.note(f),
            3 => ports.note(f),
            _ => {}
        }
        Ok(())
    })?;
    Ok(EndpointSubset {
        addresses: addresses.decode(bytes, M, |f| address(f.bytes("addresses")?))?,
        not_ready_addresses: not_ready
            .decode(bytes, M, |f| address(f.bytes("notReadyAddresses")?))?,
        ports: ports.decode(bytes, M, |f| port(f.bytes("ports")?))?,
    })
}

fn address(bytes: &[u8]) -> Result<EndpointAddress, WireError> {
    let mut address = EndpointAddress::default();
    for_each_field(bytes, "EndpointAddress", |f| {
        match f.number {
            1 => address.ip = f.unique("ip")?,
            2 => address.target_ref = object_reference(f.bytes("targetRef")?)?,
            3 => address.hostname = f.unique("hostname")?,
            4 => address.node_name = f.unique("nodeName")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(address)
}

/// A core `EndpointPort`: `name` 1, `port` 2, `protocol` 3, `appProtocol` 4.
fn port(bytes: &[u8]) -> Result<EndpointPort, WireError> {
    let mut port = EndpointPort::default();
    for_each_field(bytes, "EndpointPort", |f| {
        match f.number {
            1 => port.name = f.unique("name")?,
            2 => port.port = Some(f.int32("port")?),
            3 => port.protocol = f.enum_value("protocol")?,
            4 => port.app_protocol = f.unique("appProtocol")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(port)
}

/// Decodes an `ObjectReference`: `kind` 1, `namespace` 2, `name` 3.
pub(crate) fn object_reference(bytes: &[u8]) -> Result<ObjectReference, WireError> {
    let mut reference = ObjectReference::default();
    for_each_field(bytes, "ObjectReference", |f| {
        match f.number {
            1 => reference.kind = f.enum_value("kind")?,
            2 => reference.namespace = f.unique("namespace")?,
            3 => reference.name = f.unique("name")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(reference)
}
