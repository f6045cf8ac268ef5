//! The Secrets and ConfigMaps a monitor's credentials come from, and the Namespaces the
//! section's namespace selectors match: the fields translation and selection read.

use std::collections::BTreeMap;

use base64::Engine;
use serde::Deserialize;

use super::common::MonitorMeta;
use crate::model::json::null_default;

/// A Secret: its `data`, base64 as the API server sends it.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SecretObject {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its keys and their values, base64-encoded.
    #[serde(deserialize_with = "null_default")]
    pub data: BTreeMap<String, String>,
}

/// Never shows the values: a Secret's `Debug` names its keys only.
impl std::fmt::Debug for SecretObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretObject")
            .field("metadata", &self.metadata)
            .field("keys", &self.data.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Why a Secret's key could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SecretKeyError {
    /// The Secret has no such key.
    #[error("key {key:?} in secret {namespace}/{name} not found")]
    Missing {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key.
        key: String,
    },
    /// The key's value is not base64.
    #[error("key {key:?} in secret {namespace}/{name} is not base64")]
    NotBase64 {
        /// The Secret's namespace.
        namespace: String,
        /// The Secret's name.
        name: String,
        /// The key.
        key: String,
    },
}

impl SecretObject {
    /// The decoded value of `key` (bytes that are not UTF-8 replaced, as they end up
    /// in a YAML string).
    pub fn value(&self, key: &str) -> Result<String, SecretKeyError> {
        let at = |make: fn(String, String, String) -> SecretKeyError| {
            make(
                self.metadata.namespace.clone(),
                self.metadata.name.clone(),
                key.to_string(),
            )
        };
        let encoded = self.data.get(key).ok_or_else(|| {
            at(|namespace, name, key| SecretKeyError::Missing {
                namespace,
                name,
                key,
            })
        })?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|_| {
                at(|namespace, name, key| SecretKeyError::NotBase64 {
                    namespace,
                    name,
                    key,
                })
            })?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}

/// A ConfigMap: its `data`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ConfigMapObject {
    /// Its metadata.
    pub metadata: MonitorMeta,
    /// Its keys and values.
    #[serde(deserialize_with = "null_default")]
    pub data: BTreeMap<String, String>,
}

/// A Namespace: its name and labels.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct NamespaceObject {
    /// Its metadata.
    pub metadata: MonitorMeta,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_decodes_its_keys_and_never_shows_them() {
        let secret: SecretObject = serde_json::from_str(
            r#"{"metadata":{"name":"s","namespace":"n"},"data":{"password":"aHVudGVyMg=="}}"#,
        )
        .expect("json");
        assert_eq!(secret.value("password").as_deref(), Ok("hunter2"));
        assert!(!format!("{secret:?}").contains("aHVudGVy"));
        let missing = secret.value("user").expect_err("missing");
        assert_eq!(missing.to_string(), "key \"user\" in secret n/s not found");
    }
}
