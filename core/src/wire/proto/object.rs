//! One object of a role in protobuf, as the [`Object`] the JSON path builds: the
//! per-kind decoders, and the metadata-only kinds (Namespace, ReplicaSet, Job), whose
//! `metadata` is field 1 like every object's.

use super::endpoints::endpoints;
use super::endpointslice::{SliceVersion, endpoint_slice};
use super::fields::for_each_field;
use super::ingress::ingress;
use super::meta::object_meta;
use super::node::node;
use super::pod::pod;
use super::reader::WireError;
use super::service::service;
use crate::error::DecodeError;
use crate::model::json::enum_string;
use crate::model::{Job, Kind, Namespace, Object, ObjectMeta, ReplicaSet, Role};

/// Decodes an object of `role` from its protobuf bytes (an envelope's `raw`, or a list
/// item) and checks it as the JSON path does (a name; the role's kind). `api_version`
/// picks the schema where versions differ (EndpointSlice `v1beta1`); `kind`, from an
/// envelope, is checked against the role (empty for list items, which carry none).
pub fn decode_object(
    role: Role,
    api_version: &str,
    kind: &str,
    bytes: &[u8],
) -> Result<Object, DecodeError> {
    let mut object = decode_fields(role, api_version, bytes)
        .map_err(|source| DecodeError::Protobuf { role, source })?;
    if !kind.is_empty() {
        let Ok(kind) = enum_string(kind);
        set_kind(&mut object, Kind(Some(kind)));
    }
    object.validate()
}

fn decode_fields(role: Role, api_version: &str, bytes: &[u8]) -> Result<Object, WireError> {
    Ok(match role {
        Role::Pod => Object::Pod(pod(bytes)?),
        Role::Node => Object::Node(node(bytes)?),
        Role::Service => Object::Service(service(bytes)?),
        Role::Endpoints => Object::Endpoints(endpoints(bytes)?),
        Role::EndpointSlice => {
            let version = if api_version.ends_with("/v1beta1") {
                SliceVersion::V1beta1
            } else {
                SliceVersion::V1
            };
            Object::EndpointSlice(endpoint_slice(bytes, version)?)
        }
        Role::Ingress => Object::Ingress(ingress(bytes)?),
        Role::Namespace => Object::Namespace(Namespace {
            metadata: metadata_only(bytes, "Namespace")?,
            ..Namespace::default()
        }),
        Role::ReplicaSet => Object::ReplicaSet(ReplicaSet {
            metadata: metadata_only(bytes, "ReplicaSet")?,
            ..ReplicaSet::default()
        }),
        Role::Job => Object::Job(Job {
            metadata: metadata_only(bytes, "Job")?,
            ..Job::default()
        }),
        // Custom resources: the API server answers them in JSON whatever is asked.
        // Custom resources: the API server answers them in JSON whatever is asked; the
        // configuration kinds are always asked for in JSON.
        Role::Gateway | Role::HttpRoute | Role::GrpcRoute => {
            return Err(WireError::NoSchema { kind: role.kind() });
        }
        role => return Err(WireError::NoSchema { kind: role.kind() }),
    })
}

/// The `metadata` (field 1) of an object whose other fields discovery does not read.
fn metadata_only(bytes: &[u8], message: &'static str) -> Result<ObjectMeta, WireError> {
    let mut metadata = ObjectMeta::default();
    for_each_field(bytes, message, |f| {
        if f.number == 1 {
            metadata = object_meta(f.bytes("metadata")?)?;
        }
        Ok(())
    })?;
    Ok(metadata)
}

fn set_kind(object: &mut Object, kind: Kind) {
    match object {
        Object::Node(o) => o.kind = kind,
        Object::Pod(o) => o.kind = kind,
        Object::Service(o) => o.kind = kind,
        Object::Endpoints(o) => o.kind = kind,
        Object::EndpointSlice(o) => o.kind = kind,
        Object::Ingress(o) => o.kind = kind,
        Object::Namespace(o) => o.kind = kind,
        Object::ReplicaSet(o) => o.kind = kind,
        Object::Job(o) => o.kind = kind,
        Object::Gateway(o) => o.kind = kind,
        Object::HttpRoute(o) => o.kind = kind,
        Object::GrpcRoute(o) => o.kind = kind,
        Object::Config(o) => o.kind = kind,
    }
}
