//! The `membership` section: which pods are the scrapers kubesd assigns targets to
//! (`/sd/{job}?member=POD`). kubesd watches them through its own discovery (role pod)
//! and takes the Ready ones.
//!
//! ```yaml
//! membership:
//!   namespace: monitoring                        # required
//!   label_selector: app.kubernetes.io/name=vmagent   # required
//!   # and, as in kubernetes_sd_configs, how to reach the API server (optional):
//!   # api_server, kubeconfig_file, tls_config, authorization, ...
//! ```

use std::path::Path;

use serde_norway::{Mapping, Value};

use super::job::sd_config;
use crate::config::SdConfig;

/// Keys the section sets itself, refused when written.
const SET_BY_MEMBERSHIP: [&str; 4] = ["role", "namespaces", "selectors", "attach_metadata"];

/// The scrapers' pods, as the config names them.
#[derive(Clone, Debug, PartialEq)]
pub struct Membership {
    /// Their namespace.
    pub namespace: String,
    /// Their label selector, e.g. `app.kubernetes.io/name=vmagent`.
    pub label_selector: String,
    /// The discovery that watches them (role pod, that namespace and selector).
    pub sd: SdConfig,
}

/// The section `value`, checked; on error, the key at fault (under `membership`) and
/// why.
pub fn parse_membership(
    value: &Value,
    dir: &Path,
    default_kubeconfig: Option<&Path>,
) -> Result<Membership, (String, String)> {
    let Value::Mapping(map) = value else {
        return Err((String::new(), "expected a mapping".into()));
    };
    let text = |key: &str| -> Result<String, (String, String)> {
        match map.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(_) => Err((key.into(), "expected a non-empty string".into())),
            None => Err((key.into(), "required: the scrapers' pods' one".into())),
        }
    };
    let namespace = text("namespace")?;
    let label_selector = text("label_selector")?;
    let mut sd = Mapping::new();
    for (key, v) in map {
        let name = key.as_str().unwrap_or_default();
        if SET_BY_MEMBERSHIP.contains(&name) {
            return Err((
                name.into(),
                "set by the membership section itself (role pod, its namespace and label_selector)"
                    .into(),
            ));
        }
        if name != "namespace" && name != "label_selector" {
            sd.insert(key.clone(), v.clone());
        }
    }
    sd.insert("role".into(), "pod".into());
    let mut names = Mapping::new();
    names.insert(
        "names".into(),
        Value::Sequence(vec![namespace.clone().into()]),
    );
    sd.insert("namespaces".into(), Value::Mapping(names));
    let mut selector = Mapping::new();
    selector.insert("role".into(), "pod".into());
    selector.insert("label".into(), label_selector.clone().into());
    sd.insert(
        "selectors".into(),
        Value::Sequence(vec![Value::Mapping(selector)]),
    );
    let sd = sd_config(&Value::Mapping(sd), dir, default_kubeconfig).map_err(|(key, why)| {
        // The selector is checked as the discovery's: name it as written here.
        let key = if why.contains("selector") && key.is_empty() {
            "label_selector".to_string()
        } else {
            key
        };
        (key, why)
    })?;
    Ok(Membership {
        namespace,
        label_selector,
        sd,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Membership, (String, String)> {
        let value: Value = serde_norway::from_str(yaml).expect("yaml");
        parse_membership(&value, Path::new("."), None)
    }

    #[test]
    fn the_section_names_the_scrapers_pods() {
        let m = parse(
            "{namespace: monitoring, label_selector: app=prom, api_server: http://127.0.0.1:1}",
        )
        .expect("valid");
        assert_eq!(m.sd.role, crate::model::Role::Pod);
        assert_eq!(m.sd.namespaces.names, ["monitoring"]);
        assert_eq!(m.sd.selectors[0].label, "app=prom");
        for (yaml, key) in [
            ("{label_selector: app=prom}", "namespace"),
            ("{namespace: m, label_selector: ''}", "label_selector"),
            ("{namespace: m, label_selector: a=b, role: node}", "role"),
            (
                "{namespace: m, label_selector: 'a in (b'}",
                "label_selector",
            ),
        ] {
            let (at, why) = parse(yaml).expect_err(yaml);
            assert_eq!(at, key, "{yaml}: {why}");
        }
    }
}
