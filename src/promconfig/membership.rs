//! The `membership` section: which pods are the scrapers kubesd assigns targets to
//! (`/sd/{job}?member=POD`). kubesd watches them through its own discovery (role pod)
//! and takes the Ready ones.
//!
//! ```yaml
//! membership:
//!   namespace: monitoring                        # required
//!   label_selector: app.kubernetes.io/name=vmagent   # required
//!   zone_aware: false     # assign a target among its zone's members (default false)
//!   weight_from: annotation:kubesd.io/weight   # or cpu_request (default: all equal)
//!   handover: 2m          # how long a moved target stays at its old member too
//!   # and, as in kubernetes_sd_configs, how to reach the API server (optional):
//!   # api_server, kubeconfig_file, tls_config, authorization, ...
//! ```
//!
//! The handover's default, two minutes, covers a consumer that reads its share once a
//! minute (Prometheus' HTTP SD `refresh_interval` default) and then scrapes once a
//! minute (Prometheus' `scrape_interval` default): the new member has read and scraped
//! a moved target before the old one lets it go.

use std::path::Path;
use std::time::Duration;

use serde_norway::{Mapping, Value};

use super::duration::parse_duration;
use super::job::sd_config;
use crate::config::SdConfig;

/// Keys the section sets itself, refused when written.
const SET_BY_MEMBERSHIP: [&str; 4] = ["role", "namespaces", "selectors", "attach_metadata"];

/// Keys of the section that are not the discovery's.
const OWN_KEYS: [&str; 5] = [
    "namespace",
    "label_selector",
    "zone_aware",
    "weight_from",
    "handover",
];

/// The default [`Membership::handover`]: see the module documentation.
pub const DEFAULT_HANDOVER: Duration = Duration::from_secs(120);

/// Where a member's weight comes from.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum WeightFrom {
    /// Every member weighs 1.
    #[default]
    Equal,
    /// The value of the pod's annotation of this name (a positive number).
    Annotation(String),
    /// The CPU the pod requests, in cores: the sum of its containers' and native
    /// sidecars' `resources.requests.cpu`.
    CpuRequest,
}

/// The scrapers' pods, as the config names them.
#[derive(Clone, Debug, PartialEq)]
pub struct Membership {
    /// Their namespace.
    pub namespace: String,
    /// Their label selector, e.g. `app.kubernetes.io/name=vmagent`.
    pub label_selector: String,
    /// The discovery that watches them (role pod, that namespace and selector).
    pub sd: SdConfig,
    /// Assign each target among the members in its zone while there are any.
    pub zone_aware: bool,
    /// Where a member's weight comes from.
    pub weight_from: WeightFrom,
    /// How long a target that moved stays at its old member too.
    pub handover: Duration,
}

/// `weight_from`'s value read.
fn parse_weight_from(value: &Value) -> Result<WeightFrom, String> {
    let Value::String(text) = value else {
        return Err("expected a string: cpu_request or annotation:NAME".into());
    };
    if text.trim() == "cpu_request" {
        return Ok(WeightFrom::CpuRequest);
    }
    match text.strip_prefix("annotation:") {
        Some(name) if !name.trim().is_empty() => Ok(WeightFrom::Annotation(name.trim().into())),
        Some(_) => {
            Err("annotation: must name the annotation, e.g. annotation:kubesd.io/weight".into())
        }
        None => Err(format!(
            "{text:?} is not a weight source: cpu_request or annotation:NAME"
        )),
    }
}

/// The section's own settings besides the pods: `zone_aware`, `weight_from`,
/// `handover`, each checked; on error, the key and why.
fn fleet_settings(map: &Mapping) -> Result<(bool, WeightFrom, Duration), (String, String)> {
    let zone_aware = match map.get("zone_aware") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(("zone_aware".into(), "expected true or false".into())),
    };
    let weight_from = match map.get("weight_from") {
        None => WeightFrom::Equal,
        Some(v) => parse_weight_from(v).map_err(|why| ("weight_from".to_string(), why))?,
    };
    let handover = match map.get("handover") {
        None => DEFAULT_HANDOVER,
        Some(Value::String(text)) => {
            parse_duration(text).map_err(|why| ("handover".to_string(), why))?
        }
        Some(_) => {
            return Err(("handover".into(), "expected a duration such as 2m".into()));
        }
    };
    Ok((zone_aware, weight_from, handover))
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
    let (zone_aware, weight_from, handover) = fleet_settings(map)?;
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
        if !OWN_KEYS.contains(&name) {
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
    let mut sd =
        sd_config(&Value::Mapping(sd), dir, default_kubeconfig).map_err(|(key, why)| {
            // The selector is checked as the discovery's: name it as written here.
            let key = if why.contains("selector") && key.is_empty() {
                "label_selector".to_string()
            } else {
                key
            };
            (key, why)
        })?;
    // The members' targets carry their CPU request (a label no job's targets have).
    sd.attach_metadata.cpu_request = weight_from == WeightFrom::CpuRequest;
    Ok(Membership {
        namespace,
        label_selector,
        sd,
        zone_aware,
        weight_from,
        handover,
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

    #[test]
    fn fleet_settings_default_and_bad_values_are_named() {
        let m = parse("{namespace: m, label_selector: a=b}").expect("valid");
        assert!(!m.zone_aware);
        assert_eq!(m.weight_from, WeightFrom::Equal);
        assert_eq!(m.handover, DEFAULT_HANDOVER);
        let m = parse(
            "{namespace: m, label_selector: a=b, zone_aware: true, weight_from: 'annotation:kubesd.io/weight', handover: 45s}",
        )
        .expect("valid");
        assert!(m.zone_aware);
        assert_eq!(
            m.weight_from,
            WeightFrom::Annotation("kubesd.io/weight".into())
        );
        assert_eq!(m.handover, Duration::from_secs(45));
        assert!(!m.sd.attach_metadata.cpu_request);
        let m =
            parse("{namespace: m, label_selector: a=b, weight_from: cpu_request}").expect("valid");
        assert_eq!(m.weight_from, WeightFrom::CpuRequest);
        assert!(m.sd.attach_metadata.cpu_request);
        for (yaml, key) in [
            (
                "{namespace: m, label_selector: a=b, zone_aware: yes please}",
                "zone_aware",
            ),
            (
                "{namespace: m, label_selector: a=b, weight_from: memory}",
                "weight_from",
            ),
            (
                "{namespace: m, label_selector: a=b, weight_from: 'annotation:'}",
                "weight_from",
            ),
            (
                "{namespace: m, label_selector: a=b, handover: soon}",
                "handover",
            ),
            (
                "{namespace: m, label_selector: a=b, handover: 3}",
                "handover",
            ),
        ] {
            let (at, why) = parse(yaml).expect_err(yaml);
            assert_eq!(at, key, "{yaml}: {why}");
        }
    }
}
