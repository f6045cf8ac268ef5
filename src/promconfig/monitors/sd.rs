//! The `kubernetes_sd_configs` entry of a ServiceMonitor's, PodMonitor's or Ingress
//! Probe's job (`generateK8SSDConfig`): its role, namespaces, `attach_metadata` and, with
//! `selectorMechanism: RoleSelector`, the selector the API server applies.

use kubesd_core::monitors::{AttachMetadata, LabelSelector, NamespaceSelector};
use serde_norway::Value;

use super::error::Reason;
use super::yaml::{Map, list, strings};

/// The namespaces a monitor's targets come from: none listed (every namespace) for
/// `any`, else `matchNames`, else the monitor's own.
fn namespaces(selector: &NamespaceSelector, own: &str) -> Vec<String> {
    if selector.any {
        Vec::new()
    } else if selector.match_names.is_empty() {
        vec![own.to_string()]
    } else {
        selector.match_names.clone()
    }
}

/// Whether `mechanism` asks the API server to filter (`RoleSelector`) rather than keep
/// rules (`RelabelConfig`, the default).
pub fn role_selector(mechanism: Option<&str>) -> bool {
    mechanism.is_some_and(|m| m != "RelabelConfig")
}

/// The discovery of a monitor in namespace `own`: `roles` are the roles its selector
/// restricts when `selector` is given (role selection).
pub fn kubernetes_sd(
    namespace_selector: &NamespaceSelector,
    own: &str,
    role: &str,
    attach: Option<&AttachMetadata>,
    selector: Option<(&LabelSelector, &[&str])>,
) -> Result<Value, Reason> {
    let mut sd = Map::new();
    sd.put("role", role);
    let names = namespaces(namespace_selector, own);
    if !names.is_empty() {
        let mut ns = Map::new();
        ns.put("names", strings(&names));
        sd.put("namespaces", ns);
    }
    if let Some(attach) = attach {
        let mut meta = Map::new();
        meta.put("node", attach.node.unwrap_or(false));
        sd.put("attach_metadata", meta);
    }
    if let Some((selector, roles)) = selector {
        let query = selector.to_query().map_err(|source| Reason::Selector {
            field: "selector".into(),
            source,
        })?;
        let selectors = roles
            .iter()
            .map(|role| {
                let mut s = Map::new();
                s.put("role", *role);
                s.put("label", query.as_str());
                s.into()
            })
            .collect();
        sd.put("selectors", list(selectors));
    }
    Ok(list(vec![sd.into()]))
}
