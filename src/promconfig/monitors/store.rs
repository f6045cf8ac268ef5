//! Where a monitor's credentials come from: the Secrets and ConfigMaps of its namespace,
//! looked up through [`CredentialStore`], which the caller provides (a map here and in
//! tests; the watched objects when running).

use std::collections::BTreeMap;

use kubesd_core::config::Secret;
use kubesd_core::monitors::{
    ConfigMapKeySelector, ConfigMapObject, SecretKeyError, SecretKeySelector, SecretObject,
    SecretOrConfigMap,
};

use super::error::Reason;

/// The Secrets and ConfigMaps translation may read, by namespace and name.
pub trait CredentialStore {
    /// The Secret `namespace/name`, if there is one.
    fn secret(&self, namespace: &str, name: &str) -> Option<&SecretObject>;
    /// The ConfigMap `namespace/name`, if there is one.
    fn config_map(&self, namespace: &str, name: &str) -> Option<&ConfigMapObject>;
}

/// A [`CredentialStore`] over objects held in maps.
#[derive(Clone, Debug, Default)]
pub struct MemoryStore {
    secrets: BTreeMap<(String, String), SecretObject>,
    config_maps: BTreeMap<(String, String), ConfigMapObject>,
}

impl MemoryStore {
    /// Adds (or replaces) a Secret.
    pub fn add_secret(&mut self, secret: SecretObject) {
        let key = (
            secret.metadata.namespace.clone(),
            secret.metadata.name.clone(),
        );
        self.secrets.insert(key, secret);
    }

    /// Adds (or replaces) a ConfigMap.
    pub fn add_config_map(&mut self, config_map: ConfigMapObject) {
        let key = (
            config_map.metadata.namespace.clone(),
            config_map.metadata.name.clone(),
        );
        self.config_maps.insert(key, config_map);
    }
}

impl CredentialStore for MemoryStore {
    fn secret(&self, namespace: &str, name: &str) -> Option<&SecretObject> {
        self.secrets.get(&(namespace.to_string(), name.to_string()))
    }

    fn config_map(&self, namespace: &str, name: &str) -> Option<&ConfigMapObject> {
        self.config_maps
            .get(&(namespace.to_string(), name.to_string()))
    }
}

/// The credentials of one monitor's namespace.
#[derive(Clone, Copy)]
pub struct Credentials<'a> {
    /// Where they are looked up.
    pub store: &'a dyn CredentialStore,
    /// The monitor's namespace.
    pub namespace: &'a str,
}

impl Credentials<'_> {
    /// The value of a Secret's key, `field` naming the reference in errors.
    pub fn secret_key(&self, sel: &SecretKeySelector, field: &str) -> Result<Secret, Reason> {
        let secret = self
            .store
            .secret(self.namespace, &sel.name)
            .ok_or_else(|| Reason::SecretNotFound {
                field: field.to_string(),
                namespace: self.namespace.to_string(),
                name: sel.name.clone(),
            })?;
        secret
            .value(&sel.key)
            .map(Secret)
            .map_err(|e: SecretKeyError| Reason::Key {
                field: field.to_string(),
                problem: e.to_string(),
            })
    }

    /// The value of a ConfigMap's key.
    pub fn config_map_key(
        &self,
        sel: &ConfigMapKeySelector,
        field: &str,
    ) -> Result<String, Reason> {
        let map = self
            .store
            .config_map(self.namespace, &sel.name)
            .ok_or_else(|| Reason::ConfigMapNotFound {
                field: field.to_string(),
                namespace: self.namespace.to_string(),
                name: sel.name.clone(),
            })?;
        map.data.get(&sel.key).cloned().ok_or_else(|| Reason::Key {
            field: field.to_string(),
            problem: format!(
                "key {:?} in configmap {}/{} not found",
                sel.key, self.namespace, sel.name
            ),
        })
    }

    /// The value a Secret-or-ConfigMap reference names; empty when it names none.
    pub fn either_key(&self, sel: &SecretOrConfigMap, field: &str) -> Result<Secret, Reason> {
        match (&sel.secret, &sel.config_map) {
            (Some(secret), _) => self.secret_key(secret, &format!("{field}.secret")),
            (None, Some(map)) => self
                .config_map_key(map, &format!("{field}.configMap"))
                .map(Secret),
            (None, None) => Ok(Secret(String::new())),
        }
    }
}
