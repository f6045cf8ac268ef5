//! The Ingress object (`networking.k8s.io/v1`, and `v1beta1`, which agrees on every
//! field discovery reads).

use arcstr::ArcStr;

use serde::Deserialize;

use super::json::{empty_str, exact_slice, null_default, nullable_str, scratch_elements};
use super::meta::{Kind, ObjectMeta};

/// A Kubernetes ingress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Ingress {
    /// `kind`, checked against the role when present.
    #[serde(default)]
    pub kind: Kind,
    /// `metadata`.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// `spec`.
    #[serde(default, deserialize_with = "null_default")]
    pub spec: IngressSpec,
}

/// `spec` of an ingress.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IngressSpec {
    /// `spec.ingressClassName`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub ingress_class_name: ArcStr,
    /// `spec.tls`: hosts served over TLS.
    #[serde(default, deserialize_with = "exact_slice")]
    pub tls: Box<[IngressTls]>,
    /// `spec.rules`.
    #[serde(default, deserialize_with = "exact_slice")]
    pub rules: Box<[IngressRule]>,
}

/// One entry of `spec.tls`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct IngressTls {
    /// Host names or `*.`-wildcards covered by the certificate.
    #[serde(default, deserialize_with = "null_default")]
    pub hosts: Vec<ArcStr>,
}

/// One entry of `spec.rules`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct IngressRule {
    /// The host the rule matches; empty matches every host.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub host: ArcStr,
    /// The HTTP paths.
    #[serde(default)]
    pub http: Option<HttpIngressRuleValue>,
}

/// `http` of a rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpIngressRuleValue {
    /// The rule's paths.
    #[serde(default, deserialize_with = "exact_slice")]
    pub paths: Box<[HttpIngressPath]>,
}

/// One path of a rule.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct HttpIngressPath {
    /// The path; empty means `/`.
    #[serde(default = "empty_str", deserialize_with = "nullable_str")]
    pub path: ArcStr,
}

scratch_elements!(IngressTls, IngressRule, HttpIngressPath);
