//! The `monitors:` section: which prometheus-operator resources kubesd turns into jobs,
//! under the OpenTelemetry target allocator's `prometheus_cr` key names (so its section
//! moves over as it is), with the scrape defaults, scrape classes and discovery role
//! of the Prometheus resource, and the API server to watch them on.
//!
//! ```yaml
//! monitors:
//!   service_monitor_selector: {}                  # {} selects all; absent, none
//!   service_monitor_namespace_selector: {}        # absent: every namespace
//!   pod_monitor_selector: {matchLabels: {team: a}}
//!   probe_selector: {}
//!   scrape_config_selector: {}
//!   scrape_interval: 30s                          # the default interval
//!   scrape_timeout: 10s                           # the default timeout
//!   service_discovery_role: endpointslice         # or endpoints
//!   scrape_classes: [{name: tls, default: true, tlsConfig: {caFile: /ca.crt}}]
//!   # and, as in kubernetes_sd_configs, how to reach the API server (optional):
//!   # api_server, kubeconfig_file, tls_config, authorization, ...
//! ```
//!
//! Every key is checked at start; a mistake stops kubesd naming it, e.g.
//! `monitors.pod_monitor_selector.matchExpressions[0]: "Equals" is not a valid label
//! selector operator`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kubesd_core::monitors::{
    LabelSelector, LabelSelectorRequirement, SCRAPE_CLASS_KEYS, ScrapeClass,
};
use serde_norway::{Mapping, Value};

use super::scrape_class::ScrapeClasses;
use super::settings::{EndpointRole, Settings};
use crate::config::SdConfig;
use crate::promconfig::{format_duration, parse_duration};

/// The section's own keys; any other is the API server's connection, as in
/// `kubernetes_sd_configs`.
const OWN_KEYS: [&str; 20] = [
    "enabled",
    "allow_namespaces",
    "deny_namespaces",
    "service_monitor_selector",
    "service_monitor_namespace_selector",
    "pod_monitor_selector",
    "pod_monitor_namespace_selector",
    "probe_selector",
    "probe_namespace_selector",
    "scrape_config_selector",
    "scrape_config_namespace_selector",
    "scrape_interval",
    "scrape_timeout",
    "evaluation_interval",
    "scrape_protocols",
    "scrape_classes",
    "service_discovery_role",
    // Accepted for the allocator's section to move over as it is; kubesd watches the
    // monitors live and sends no Kubernetes events.
    "resync_period",
    "secret_namespaces",
    "event_interval",
];

/// Keys of `kubernetes_sd_configs` that say what to discover, not where: meaningless
/// here.
const NOT_CONNECTION: [&str; 4] = ["role", "namespaces", "selectors", "attach_metadata"];

/// The protocols Prometheus can ask a target for (`scrape_protocols`).
const SCRAPE_PROTOCOLS: [&str; 5] = [
    "PrometheusProto",
    "OpenMetricsText0.0.1",
    "OpenMetricsText1.0.0",
    "PrometheusText0.0.4",
    "PrometheusText1.0.0",
];

/// One kind's selection: which monitors, in which namespaces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KindSelection {
    /// The monitors' labels: `None` (the key absent) selects none, an empty selector all.
    pub selector: Option<LabelSelector>,
    /// Their namespaces' labels: absent or empty, every namespace.
    pub namespace_selector: LabelSelector,
}

/// The `monitors:` section, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct MonitorsSection {
    /// `enabled` (default true): false keeps the section but watches nothing.
    pub enabled: bool,
    /// Watch monitors only in these namespaces (`allow_namespaces`).
    pub allow_namespaces: Vec<String>,
    /// Never watch monitors in these namespaces (`deny_namespaces`).
    pub deny_namespaces: Vec<String>,
    /// ServiceMonitors.
    pub service_monitors: KindSelection,
    /// PodMonitors.
    pub pod_monitors: KindSelection,
    /// Probes.
    pub probes: KindSelection,
    /// ScrapeConfigs.
    pub scrape_configs: KindSelection,
    /// The default `scrape_timeout` (Prometheus': 10s, at most the interval).
    pub scrape_timeout: Option<Duration>,
    /// `scrape_protocols`, the global preference.
    pub scrape_protocols: Vec<String>,
    /// What translation reads: the default interval, role and the scrape classes.
    pub settings: Settings,
    /// The API server the monitors are watched on, as a `kubernetes_sd_config` names
    /// one (its role aside); also the one their jobs discover from, unless a
    /// ScrapeConfig names its own.
    pub connection: SdConfig,
    /// The connection's keys as written, for the jobs' discovery.
    pub connection_keys: Mapping,
    /// The config file's directory, which relative file names in them are taken from.
    pub dir: PathBuf,
}

/// The section `value`, checked; on error, the key at fault (under `monitors`, empty
/// for the section) and why.
pub fn parse_section(
    value: &Value,
    dir: &Path,
    default_kubeconfig: Option<&Path>,
) -> Result<MonitorsSection, (String, String)> {
    let Value::Mapping(map) = value else {
        return Err((String::new(), "expected a mapping".into()));
    };
    let fail = |key: &str, why: String| (key.to_string(), why);
    let mut connection_keys = Mapping::new();
    for (key, v) in map {
        let name = key.as_str().unwrap_or_default();
        if NOT_CONNECTION.contains(&name) {
            return Err(fail(
                name,
                "unknown key: the monitors section discovers monitors, \
                 whose own settings say what their jobs discover"
                    .into(),
            ));
        }
        if !OWN_KEYS.contains(&name) {
            connection_keys.insert(key.clone(), v.clone());
        }
    }
    let (interval, timeout) = intervals(map)?;
    let allow_namespaces = names(map, "allow_namespaces")?;
    let deny_namespaces = names(map, "deny_namespaces")?;
    if !allow_namespaces.is_empty() && !deny_namespaces.is_empty() {
        return Err(fail(
            "deny_namespaces",
            "only one of allow_namespaces and deny_namespaces can be set".into(),
        ));
    }
    let settings = Settings {
        scrape_interval: format_duration(interval),
        role: discovery_role(map)?,
        classes: scrape_classes(map)?,
        shards: 1,
    };
    Ok(MonitorsSection {
        enabled: boolean(map, "enabled", true)?,
        allow_namespaces,
        deny_namespaces,
        service_monitors: selection(map, "service_monitor")?,
        pod_monitors: selection(map, "pod_monitor")?,
        probes: selection(map, "probe")?,
        scrape_configs: selection(map, "scrape_config")?,
        scrape_timeout: timeout,
        scrape_protocols: protocols(map)?,
        settings,
        connection: connection(&connection_keys, dir, default_kubeconfig)?,
        connection_keys,
        dir: dir.to_path_buf(),
    })
}

/// `scrape_interval` (default 30s, the allocator's) and `scrape_timeout`, no longer
/// than it; `evaluation_interval` checked and unused.
fn intervals(map: &Mapping) -> Result<(Duration, Option<Duration>), (String, String)> {
    let duration = |key: &str| -> Result<Option<Duration>, (String, String)> {
        match map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => parse_duration(text)
                .map(Some)
                .map_err(|why| (key.to_string(), why)),
            Some(_) => Err((key.to_string(), "expected a duration such as 30s".into())),
        }
    };
    let interval = duration("scrape_interval")?.unwrap_or(Duration::from_secs(30));
    if interval.is_zero() {
        return Err(("scrape_interval".into(), "must be greater than 0".into()));
    }
    let timeout = duration("scrape_timeout")?;
    duration("evaluation_interval")?;
    if let Some(t) = timeout.filter(|t| *t > interval) {
        return Err((
            "scrape_timeout".into(),
            format!(
                "{} is greater than scrape_interval {}",
                format_duration(t),
                format_duration(interval)
            ),
        ));
    }
    Ok((interval, timeout))
}

/// A boolean key.
fn boolean(map: &Mapping, key: &str, default: bool) -> Result<bool, (String, String)> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err((key.into(), "expected true or false".into())),
    }
}

/// A list of namespace names.
fn names(map: &Mapping, key: &str) -> Result<Vec<String>, (String, String)> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v) => serde_norway::from_value::<Vec<String>>(v.clone())
            .map_err(|_| (key.into(), "expected a list of namespace names".into())),
    }
}

/// `service_discovery_role`: `endpoints` or `endpointslice` (the default), in any case.
fn discovery_role(map: &Mapping) -> Result<EndpointRole, (String, String)> {
    let key = "service_discovery_role";
    match map.get(key) {
        None | Some(Value::Null) => Ok(EndpointRole::default()),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("endpoints") => {
            Ok(EndpointRole::Endpoints)
        }
        Some(Value::String(s)) if s.eq_ignore_ascii_case("endpointslice") => {
            Ok(EndpointRole::EndpointSlice)
        }
        Some(other) => Err((
            key.into(),
            format!("{other:?} is not endpoints or endpointslice"),
        )),
    }
}

/// `scrape_protocols`: each one Prometheus knows.
fn protocols(map: &Mapping) -> Result<Vec<String>, (String, String)> {
    let key = "scrape_protocols";
    let list = names(map, key)?;
    for (i, p) in list.iter().enumerate() {
        if !SCRAPE_PROTOCOLS.contains(&p.as_str()) {
            return Err((
                format!("{key}[{i}]"),
                format!("{p:?} is not one of {}", SCRAPE_PROTOCOLS.join(", ")),
            ));
        }
    }
    Ok(list)
}

/// `scrape_classes`: each with the CRD's keys, checked as the operator checks them.
fn scrape_classes(map: &Mapping) -> Result<ScrapeClasses, (String, String)> {
    let key = "scrape_classes";
    let items = match map.get(key) {
        None | Some(Value::Null) => return Ok(ScrapeClasses::default()),
        Some(Value::Sequence(items)) => items,
        Some(_) => return Err((key.into(), "expected a list".into())),
    };
    let mut classes = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let Value::Mapping(fields) = item else {
            return Err((at, "expected a mapping".into()));
        };
        if let Some(unknown) = fields
            .keys()
            .map(|k| k.as_str().unwrap_or_default())
            .find(|k| !SCRAPE_CLASS_KEYS.contains(k))
        {
            return Err((format!("{at}.{unknown}"), "unknown key".into()));
        }
        let class: ScrapeClass =
            serde_norway::from_value(item.clone()).map_err(|e| (at.clone(), e.to_string()))?;
        classes.push(class);
    }
    ScrapeClasses::new(classes).map_err(|(i, why)| (format!("{key}[{i}]"), why))
}

/// `<kind>_selector` and `<kind>_namespace_selector`.
fn selection(map: &Mapping, kind: &str) -> Result<KindSelection, (String, String)> {
    let key = format!("{kind}_selector");
    let selector = match map.get(key.as_str()) {
        None | Some(Value::Null) => None,
        Some(v) => Some(label_selector(v, &key)?),
    };
    let ns_key = format!("{kind}_namespace_selector");
    let namespace_selector = match map.get(ns_key.as_str()) {
        None | Some(Value::Null) => LabelSelector::default(),
        Some(v) => label_selector(v, &ns_key)?,
    };
    Ok(KindSelection {
        selector,
        namespace_selector,
    })
}

/// A label selector, with the allocator's spellings (`matchLabels` or `matchlabels`),
/// checked as Kubernetes checks one.
fn label_selector(value: &Value, key: &str) -> Result<LabelSelector, (String, String)> {
    let Value::Mapping(map) = value else {
        return Err((
            key.into(),
            "expected a label selector: matchLabels, matchExpressions".into(),
        ));
    };
    let mut selector = LabelSelector::default();
    for (k, v) in map {
        let name = k.as_str().unwrap_or_default();
        let at = format!("{key}.{name}");
        match name {
            "matchLabels" | "matchlabels" => {
                selector.match_labels = serde_norway::from_value::<Option<_>>(v.clone())
                    .map_err(|_| (at, "expected a map of label names to values".into()))?
                    .unwrap_or_default();
            }
            "matchExpressions" | "matchexpressions" => {
                let exprs: Option<Vec<LabelSelectorRequirement>> =
                    serde_norway::from_value(v.clone()).map_err(|_| {
                        (at, "expected a list of {key, operator, values}".to_string())
                    })?;
                selector.match_expressions = exprs.unwrap_or_default();
            }
            _ => {
                return Err((
                    at,
                    "unknown key: expected matchLabels or matchExpressions".into(),
                ));
            }
        }
    }
    selector
        .check()
        .map_err(|e| (key.to_string(), format!("invalid label selector: {e}")))?;
    Ok(selector)
}

/// The API server connection: the remaining keys, checked as a `kubernetes_sd_config`'s.
fn connection(
    keys: &Mapping,
    dir: &Path,
    default_kubeconfig: Option<&Path>,
) -> Result<SdConfig, (String, String)> {
    let mut sd = keys.clone();
    sd.insert("role".into(), "pod".into());
    crate::promconfig::job::sd_config(&Value::Mapping(sd), dir, default_kubeconfig)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<MonitorsSection, (String, String)> {
        let value: Value = serde_norway::from_str(yaml).expect("yaml");
        parse_section(&value, Path::new("."), None)
    }

    #[test]
    fn the_allocators_section_reads_as_it_is() {
        let s = parse(
            "{enabled: true, service_monitor_selector: {matchlabels: {team: a}},
              pod_monitor_selector: {}, probe_namespace_selector: {matchLabels: {x: y}},
              scrape_interval: 1m, scrape_protocols: [PrometheusProto],
              evaluation_interval: 30s, api_server: 'http://127.0.0.1:1'}",
        )
        .expect("valid");
        assert!(s.enabled);
        let sm = s.service_monitors.selector.expect("set");
        assert_eq!(sm.match_labels.get("team").map(String::as_str), Some("a"));
        assert_eq!(s.pod_monitors.selector, Some(LabelSelector::default()));
        assert_eq!(s.probes.selector, None, "absent selects none");
        assert_eq!(s.settings.scrape_interval, "1m");
        assert_eq!(s.settings.role, EndpointRole::EndpointSlice);
        assert_eq!(
            s.connection.api_server.as_deref(),
            Some("http://127.0.0.1:1")
        );
    }

    #[test]
    fn mistakes_name_their_key() {
        for (yaml, key) in [
            ("{scrape_intervl: 30s}", ""),
            (
                "{pod_monitor_selector: {matchExpressions: [{key: a, operator: Equals}]}}",
                "pod_monitor_selector",
            ),
            (
                "{probe_selector: {matchLabel: {a: b}}}",
                "probe_selector.matchLabel",
            ),
            (
                "{scrape_interval: 10s, scrape_timeout: 20s}",
                "scrape_timeout",
            ),
            ("{service_discovery_role: pods}", "service_discovery_role"),
            ("{scrape_protocols: [Text]}", "scrape_protocols[0]"),
            (
                "{allow_namespaces: [a], deny_namespaces: [b]}",
                "deny_namespaces",
            ),
            (
                "{scrape_classes: [{name: a, tlsConfg: {}}]}",
                "scrape_classes[0].tlsConfg",
            ),
            (
                "{scrape_classes: [{name: a, default: true}, {name: b, default: true}]}",
                "scrape_classes[1]",
            ),
            (
                "{scrape_classes: [{name: a, relabelings: [{action: hashmod, targetLabel: x}]}]}",
                "scrape_classes[0]",
            ),
            ("{role: pod}", "role"),
            ("{enabled: maybe}", "enabled"),
        ] {
            let (at, why) = parse(yaml).expect_err(yaml);
            assert_eq!(at, key, "{yaml}: {why}");
        }
    }
}
