//! `core/v1.Service` in protobuf: in `spec` (2), `ports` 1, `clusterIP` 3, `type` 4,
//! `loadBalancerIP` 8, `externalName` 10, `ipFamilyPolicy` 17, `ipFamilies` 19; in
//! `status` (3), `loadBalancer.ingress[].ip` (1.1.1).

use super::fields::{Repeated, for_each_field, repeated, unique_strings};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{LoadBalancerIngress, Service, ServicePort, ServiceSpec};

/// Decodes a `Service`.
pub(crate) fn service(bytes: &[u8]) -> Result<Service, WireError> {
    let mut service = Service::default();
    for_each_field(bytes, "Service", |f| {
        match f.number {
            1 => service.metadata = object_meta(f.bytes("metadata")?)?,
            2 => service.spec = service_spec(f.bytes("spec")?)?,
            3 => {
                for_each_field(f.bytes("status")?, "ServiceStatus", |s| {
                    if s.number == 1 {
                        service.status.load_balancer.ingress =
                            repeated(s.bytes("loadBalancer")?, "LoadBalancerStatus", 1, |i| {
                                load_balancer_ingress(i.bytes("ingress")?)
                            })?;
                    }
                    Ok(())
                })?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(service)
}

fn service_spec(bytes: &[u8]) -> Result<ServiceSpec, WireError> {
    const M: &str = "ServiceSpec";
    let mut spec = ServiceSpec::default();
    let (mut ports, mut ip_families) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => ports.note(f),
            3 => spec.cluster_ip = f.unique("clusterIP")?,
            4 => spec.kind = f.enum_value("type")?,
            8 => spec.load_balancer_ip = f.unique("loadBalancerIP")?,
            10 => spec.external_name = f.unique("externalName")?,
            17 => spec.ip_family_policy = f.enum_value("ipFamilyPolicy")?,
            19 => ip_families.note(f),
            _ => {}
        }
        Ok(())
    })?;
    spec.ip_families = unique_strings(bytes, M, ip_families, "ipFamilies")?;
    spec.ports = ports.decode(bytes, M, |f| {
        let mut port = ServicePort::default();
        for_each_field(f.bytes("ports")?, "ServicePort", |p| {
            match p.number {
                1 => port.name = p.unique("name")?,
                2 => port.protocol = p.enum_value("protocol")?,
                3 => port.port = p.int32("port")?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(port)
    })?;
    Ok(spec)
}

fn load_balancer_ingress(bytes: &[u8]) -> Result<LoadBalancerIngress, WireError> {
    let mut ingress = LoadBalancerIngress::default();
    for_each_field(bytes, "LoadBalancerIngress", |f| {
        if f.number == 1 {
            ingress.ip = f.unique("ip")?;
        }
        Ok(())
    })?;
    Ok(ingress)
}
