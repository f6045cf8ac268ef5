//! `Object`: any watched object, decoded by role.

use arcstr::ArcStr;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer};

use super::{
    ConfigObject, EndpointSlice, Endpoints, Gateway, GrpcRoute, HttpRoute, Ingress, Job, Namespace,
    Node, ObjectKey, ObjectMeta, Pod, ReplicaSet, Role, Service,
};
use crate::error::DecodeError;

/// A decoded object of one of the watched kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    /// A node.
    Node(Node),
    /// A pod.
    Pod(Pod),
    /// A service.
    Service(Service),
    /// An Endpoints object.
    Endpoints(Endpoints),
    /// An EndpointSlice.
    EndpointSlice(EndpointSlice),
    /// An ingress.
    Ingress(Ingress),
    /// A namespace.
    Namespace(Namespace),
    /// A ReplicaSet (its metadata).
    ReplicaSet(ReplicaSet),
    /// A Job (its metadata).
    Job(Job),
    /// A Gateway API Gateway.
    Gateway(Gateway),
    /// A Gateway API HTTPRoute.
    HttpRoute(HttpRoute),
    /// A Gateway API GRPCRoute.
    GrpcRoute(GrpcRoute),
    /// An object watched as configuration (a monitor, a Secret, a ConfigMap), with
    /// its JSON.
    Config(ConfigObject),
}

impl Object {
    /// The kind of this object.
    pub fn role(&self) -> Role {
        match self {
            Object::Node(_) => Role::Node,
            Object::Pod(_) => Role::Pod,
            Object::Service(_) => Role::Service,
            Object::Endpoints(_) => Role::Endpoints,
            Object::EndpointSlice(_) => Role::EndpointSlice,
            Object::Ingress(_) => Role::Ingress,
            Object::Namespace(_) => Role::Namespace,
            Object::ReplicaSet(_) => Role::ReplicaSet,
            Object::Job(_) => Role::Job,
            Object::Gateway(_) => Role::Gateway,
            Object::HttpRoute(_) => Role::HttpRoute,
            Object::GrpcRoute(_) => Role::GrpcRoute,
            Object::Config(o) => o.role,
        }
    }

    /// The object's `metadata`.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Object::Node(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::Endpoints(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Ingress(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
            Object::ReplicaSet(o) => &o.metadata,
            Object::Job(o) => &o.metadata,
            Object::Gateway(o) => &o.metadata,
            Object::HttpRoute(o) => &o.metadata,
            Object::GrpcRoute(o) => &o.metadata,
            Object::Config(o) => &o.metadata,
        }
    }

    /// Makes this object (an update of `previous`) share `previous`'s strings where they
    /// are equal: the ones decoding interns, which a `MODIFIED` event's decoding copies
    /// instead (see [`crate::wire::json::decode_event`]), and a pod's container IDs, which its
    /// old targets may still hold (see `Pod::share_strings_of`).
    pub fn share_strings_of(&mut self, previous: &Object) {
        self.metadata_mut().share_strings_of(previous.metadata());
        match (self, previous) {
            (Object::Pod(new), Object::Pod(old)) => new.share_strings_of(old),
            (Object::EndpointSlice(new), Object::EndpointSlice(old)) => new.share_strings_of(old),
            // The other kinds intern nothing else, but an unusual value of an enum
            // field (`enum_str`: a rare protocol or kind) stays a copy in an update.
            _ => {}
        }
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Node(o) => &mut o.metadata,
            Object::Pod(o) => &mut o.metadata,
            Object::Service(o) => &mut o.metadata,
            Object::Endpoints(o) => &mut o.metadata,
            Object::EndpointSlice(o) => &mut o.metadata,
            Object::Ingress(o) => &mut o.metadata,
            Object::Namespace(o) => &mut o.metadata,
            Object::ReplicaSet(o) => &mut o.metadata,
            Object::Job(o) => &mut o.metadata,
            Object::Gateway(o) => &mut o.metadata,
            Object::HttpRoute(o) => &mut o.metadata,
            Object::GrpcRoute(o) => &mut o.metadata,
            Object::Config(o) => &mut o.metadata,
        }
    }

    /// The object's cache key, `namespace/name`.
    pub fn key(&self) -> ObjectKey {
        self.metadata().key()
    }

    /// The object's `metadata.resourceVersion`.
    pub fn resource_version(&self) -> &ArcStr {
        &self.metadata().resource_version
    }

    /// Decodes one object of `role` from its JSON.
    pub fn decode(role: Role, json: &[u8]) -> Result<Object, DecodeError> {
        // As `decode_event`: checked as UTF-8 once, not string by string.
        match std::str::from_utf8(json) {
            Ok(text) => Object::decode_from(role, serde_json::Deserializer::from_str(text)),
            Err(_) => Object::decode_from(role, serde_json::Deserializer::from_slice(json)),
        }
    }

    fn decode_from<'de, R: serde_json::de::Read<'de>>(
        role: Role,
        mut de: serde_json::Deserializer<R>,
    ) -> Result<Object, DecodeError> {
        let object = ObjectSeed(role)
            .deserialize(&mut de)
            .and_then(|o| de.end().map(|()| o))
            .map_err(|source| DecodeError::Json { role, source })?;
        object.validate()
    }

    /// The object's `kind` as sent, if it was.
    pub(crate) fn kind(&self) -> Option<&str> {
        let kind = match self {
            Object::Node(o) => &o.kind,
            Object::Pod(o) => &o.kind,
            Object::Service(o) => &o.kind,
            Object::Endpoints(o) => &o.kind,
            Object::EndpointSlice(o) => &o.kind,
            Object::Ingress(o) => &o.kind,
            Object::Namespace(o) => &o.kind,
            Object::ReplicaSet(o) => &o.kind,
            Object::Job(o) => &o.kind,
            Object::Gateway(o) => &o.kind,
            Object::HttpRoute(o) => &o.kind,
            Object::GrpcRoute(o) => &o.kind,
            Object::Config(o) => &o.kind,
        };
        kind.0.as_deref().filter(|k| !k.is_empty())
    }

    /// Rejects objects discovery cannot key (every object needs `metadata.name`) and
    /// objects that say they are of another kind than the role being decoded.
    pub(crate) fn validate(self) -> Result<Object, DecodeError> {
        if let Some(kind) = self.kind()
            && kind != self.role().kind()
        {
            return Err(DecodeError::WrongKind {
                role: self.role(),
                kind: kind.to_string(),
            });
        }
        if self.metadata().name.is_empty() {
            return Err(DecodeError::MissingName {
                role: self.role(),
                namespace: self.metadata().namespace.to_string(),
            });
        }
        Ok(self)
    }
}

/// Deserializes an [`Object`] of a role known in advance, straight from the parser (no
/// intermediate `Value` tree).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ObjectSeed(pub Role);

impl<'de> DeserializeSeed<'de> for ObjectSeed {
    type Value = Object;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Object, D::Error> {
        Ok(match self.0 {
            Role::Node => Object::Node(Node::deserialize(d)?),
            Role::Pod => Object::Pod(Pod::deserialize(d)?),
            Role::Service => Object::Service(Service::deserialize(d)?),
            Role::Endpoints => Object::Endpoints(Endpoints::deserialize(d)?),
            Role::EndpointSlice => Object::EndpointSlice(EndpointSlice::deserialize(d)?),
            Role::Ingress => Object::Ingress(Ingress::deserialize(d)?),
            Role::Namespace => Object::Namespace(Namespace::deserialize(d)?),
            Role::ReplicaSet => Object::ReplicaSet(ReplicaSet::deserialize(d)?),
            Role::Job => Object::Job(Job::deserialize(d)?),
            Role::Gateway => Object::Gateway(Gateway::deserialize(d)?),
            Role::HttpRoute => Object::HttpRoute(HttpRoute::deserialize(d)?),
            Role::GrpcRoute => Object::GrpcRoute(GrpcRoute::deserialize(d)?),
            role => Object::Config(ConfigObject::deserialize(role, d)?),
        })
    }
}
