//! `ConfigObject`: an object watched as configuration, not for targets (a monitor, or a
//! Secret or ConfigMap a monitor names): its metadata, for the watch's keys and
//! versions, and its JSON as the API server sent it, which the `kubesd` crate decodes
//! into the monitors' model.

use std::sync::Arc;

use serde::Deserialize;
use serde::de::{Deserializer, Error as _};
use serde_json::value::RawValue;

use super::Role;
use super::json::null_default;
use super::meta::{Kind, ObjectMeta};

/// An object of a configuration role ([`Role::CONFIG`]).
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigObject {
    /// Its role.
    pub role: Role,
    /// `kind`, checked against the role when present.
    pub kind: Kind,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// The object's JSON, as sent (a Secret's holds its values).
    pub json: Arc<str>,
}

/// Names the object only: a Secret's JSON holds its values.
impl std::fmt::Debug for ConfigObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigObject")
            .field("role", &self.role)
            .field("namespace", &self.metadata.namespace)
            .field("name", &self.metadata.name)
            .finish_non_exhaustive()
    }
}

/// The fields of a configuration object the watch reads itself.
#[derive(Deserialize)]
struct Head {
    #[serde(default)]
    kind: Kind,
    #[serde(default, deserialize_with = "null_default")]
    metadata: ObjectMeta,
}

impl ConfigObject {
    /// Reads one object of configuration role `role` from `d`, keeping its JSON.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        role: Role,
        d: D,
    ) -> Result<ConfigObject, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        let head: Head = serde_json::from_str(raw.get()).map_err(D::Error::custom)?;
        Ok(ConfigObject {
            role,
            kind: head.kind,
            metadata: head.metadata,
            json: Arc::from(raw.get()),
        })
    }
}
