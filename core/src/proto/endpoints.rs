//! `core/v1.Endpoints` in protobuf: `subsets` 2, each with `addresses` 1,
//! `notReadyAddresses` 2 and `ports` 3; and `ObjectReference` (a `targetRef`), which
//! EndpointSlices share.

use super::fields::{for_each_field, repeated};
use super::meta::object_meta;
use super::wire::WireError;
use crate::model::{EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference};

/// Decodes an `Endpoints` object.
pub(crate) fn endpoints(bytes: &[u8]) -> Result<Endpoints, WireError> {
    let mut endpoints = Endpoints::default();
    for_each_field(bytes, "Endpoints", |f| {
        if f.number == 1 {
            endpoints.metadata = object_meta(f.bytes("metadata")?)?;
        }
        Ok(())
    })?;
    endpoints.subsets = repeated(bytes, "Endpoints", 2, |f| subset(f.bytes("subsets")?))?;
    Ok(endpoints)
}

fn subset(bytes: &[u8]) -> Result<EndpointSubset, WireError> {
    const M: &str = "EndpointSubset";
    Ok(EndpointSubset {
        addresses: repeated(bytes, M, 1, |f| address(f.bytes("addresses")?))?,
        not_ready_addresses: repeated(bytes, M, 2, |f| address(f.bytes("notReadyAddresses")?))?,
        ports: repeated(bytes, M, 3, |f| port(f.bytes("ports")?))?,
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
