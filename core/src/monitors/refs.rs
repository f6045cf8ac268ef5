//! References to Secrets and ConfigMaps, and the selectors of labels and namespaces a
//! monitor carries, as prometheus-operator's resources write them.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::model::json::null_default;

/// A key of a Secret in the monitor's namespace (`v1.SecretKeySelector`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct SecretKeySelector {
    /// The Secret's name.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// The key in its `data`.
    #[serde(deserialize_with = "null_default")]
    pub key: String,
}

/// A key of a ConfigMap in the monitor's namespace (`v1.ConfigMapKeySelector`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct ConfigMapKeySelector {
    /// The ConfigMap's name.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// The key in its `data`.
    #[serde(deserialize_with = "null_default")]
    pub key: String,
}

/// A key of a Secret or of a ConfigMap: at most one is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct SecretOrConfigMap {
    /// The Secret's key.
    pub secret: Option<SecretKeySelector>,
    /// The ConfigMap's key.
    pub config_map: Option<ConfigMapKeySelector>,
}

impl SecretOrConfigMap {
    /// Neither is set (Go's comparison with the zero value).
    pub fn is_empty(&self) -> bool {
        self.secret.is_none() && self.config_map.is_none()
    }

    /// How the operator names it in messages: `<secret=NAME,key=KEY>`.
    pub fn describe(&self) -> String {
        match (&self.secret, &self.config_map) {
            (Some(s), _) => format!("<secret={},key={}>", s.name, s.key),
            (None, Some(c)) => format!("<configmap={},key={}>", c.name, c.key),
            (None, None) => "<empty>".into(),
        }
    }
}

/// A Kubernetes label selector (`metav1.LabelSelector`): `matchLabels` and
/// `matchExpressions`, ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must have exactly these values.
    #[serde(deserialize_with = "null_default")]
    pub match_labels: BTreeMap<String, String>,
    /// Set-based requirements.
    #[serde(deserialize_with = "null_default")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One of `matchExpressions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct LabelSelectorRequirement {
    /// The label.
    #[serde(deserialize_with = "null_default")]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(deserialize_with = "null_default")]
    pub operator: String,
    /// The values `In` and `NotIn` compare with.
    #[serde(deserialize_with = "null_default")]
    pub values: Vec<String>,
}

/// Which namespaces a monitor's targets come from: `any`, else `matchNames`, else the
/// monitor's own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NamespaceSelector {
    /// Every namespace.
    pub any: bool,
    /// These namespaces.
    #[serde(deserialize_with = "null_default")]
    pub match_names: Vec<String>,
}

/// A port by number or by name (`intstr.IntOrString`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum IntOrString {
    /// A number.
    Int(i64),
    /// A name.
    Str(String),
}

impl IntOrString {
    /// Its text, as Go's `IntOrString.String()` writes it.
    pub fn text(&self) -> String {
        match self {
            IntOrString::Int(n) => n.to_string(),
            IntOrString::Str(s) => s.clone(),
        }
    }
}
