//! `networking/v1.Ingress` (and `v1beta1`, numbered alike for what discovery reads) in
//! protobuf: in `spec` (2), `tls` 2 (`hosts` 1), `rules` 3 (`host` 1,
//! `ingressRuleValue.http.paths[].path` 2.1.1.1) and `ingressClassName` 4.

use super::fields::{Repeated, for_each_field, repeated};
use super::meta::object_meta;
use super::reader::WireError;
use crate::model::{
    HttpIngressPath, HttpIngressRuleValue, Ingress, IngressRule, IngressSpec, IngressTls,
};

/// Decodes an `Ingress`.
pub(crate) fn ingress(bytes: &[u8]) -> Result<Ingress, WireError> {
    let mut ingress = Ingress::default();
    for_each_field(bytes, "Ingress", |f| {
        match f.number {
            1 => ingress.metadata = object_meta(f.bytes("metadata")?)?,
            2 => ingress.spec = ingress_spec(f.bytes("spec")?)?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(ingress)
}

fn ingress_spec(bytes: &[u8]) -> Result<IngressSpec, WireError> {
    const M: &str = "IngressSpec";
    let mut spec = IngressSpec::default();
    let (mut tls, mut rules) = (Repeated::default(), Repeated::default());
    for_each_field(bytes, M, |f| {
        match f.number {
            2 => tls.note(f),
            3 => rules.note(f),
            4 => spec.ingress_class_name = f.unique("ingressClassName")?,
            _ => {}
        }
        Ok(())
    })?;
    spec.tls = tls.decode(bytes, M, |f| {
        let hosts = repeated(f.bytes("tls")?, "IngressTLS", 1, |h| h.unique("hosts"))?;
        Ok(IngressTls {
            hosts: hosts.into_vec(),
        })
    })?;
    spec.rules = rules.decode(bytes, M, |f| rule(f.bytes("rules")?))?;
    Ok(spec)
}

fn rule(bytes: &[u8]) -> Result<IngressRule, WireError> {
    let mut rule = IngressRule::default();
    for_each_field(bytes, "IngressRule", |f| {
        match f.number {
            1 => rule.host = f.unique("host")?,
            2 => {
                for_each_field(f.bytes("ingressRuleValue")?, "IngressRuleValue", |v| {
                    if v.number == 1 {
                        rule.http = Some(http(v.bytes("http")?)?);
                    }
                    Ok(())
                })?;
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok(rule)
}

fn http(bytes: &[u8]) -> Result<HttpIngressRuleValue, WireError> {
    let paths = repeated(bytes, "HTTPIngressRuleValue", 1, |f| {
        let mut path = HttpIngressPath::default();
        for_each_field(f.bytes("paths")?, "HTTPIngressPath", |p| {
            if p.number == 1 {
                path.path = p.unique("path")?;
            }
            Ok(())
        })?;
        Ok(path)
    })?;
    Ok(HttpIngressRuleValue { paths })
}
