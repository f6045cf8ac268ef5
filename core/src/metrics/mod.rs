//! The engine's counters and gauges, exposed in Prometheus text format, in a registry
//! handed to whatever counts: a `Discovery` makes one ([`Metrics`]) and passes it to
//! its groups, URL watchers and subscribers; there is no process-wide instance.
//!
//! Each metric is defined once, in one of the `metric_set!` lists (`sets.rs`): its
//! field, its kind, its Prometheus name and its help text together. Updating one on the
//! hot path is a single relaxed atomic add ([`Counter::inc`], [`Gauge::add`]), with no
//! registry look-up and no lock.
//!
//! Counters split by a reason ([`ReasonCounter`]) carry a `reason` label whose values
//! an enum declares ([`RelistReason`], [`RequestError`], [`RejectReason`],
//! [`StallReason`]); a gauge split the same way ([`ModeGauge`]) carries a `mode`
//! label ([`ListMethod`]).
//!
//! The discovery metrics ([`RoleMetrics`]) are kept per API server and role: a URL
//! watcher or a group takes its API server's [`ApiServerMetrics`] once, when it starts
//! ([`Metrics::api_server`]), and they are rendered with `api_server` and `role`
//! labels. The label is the server's base URL without any user information, so no
//! credential reaches a label.

mod reasons;
mod sets;
mod values;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use crate::model::Role;

pub use reasons::{
    ListMethod, RejectReason, RelistReason, RequestError, ResponseEncoding, StallReason,
};
pub use sets::{EngineMetrics, RoleMetrics};
pub use values::{Counter, Gauge, ModeGauge, Reason, ReasonCounter};

/// The discovery metrics of one API server, one [`RoleMetrics`] per role.
#[derive(Default, Debug)]
pub struct ApiServerMetrics {
    roles: [RoleMetrics; Role::COUNT],
}

impl ApiServerMetrics {
    /// The metrics of `role`.
    pub fn role(&self, role: Role) -> &RoleMetrics {
        &self.roles[role.index()]
    }
}

/// One engine's metrics: what its groups, URL watchers and subscribers count.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Discovery metrics by API server label (base URL, no user information).
    api_servers: Mutex<BTreeMap<String, Arc<ApiServerMetrics>>>,
    /// The engine's other metrics.
    pub engine: EngineMetrics,
}

impl Metrics {
    /// The discovery metrics of the API server at `base_url`, created on first use.
    /// Called when a watcher or group starts, not per event.
    pub fn api_server(&self, base_url: &str) -> Arc<ApiServerMetrics> {
        let label = api_server_label(base_url);
        let mut map = self.api_servers.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(map.entry(label).or_default())
    }

    /// The sum of one role metric over every API server, e.g.
    /// `metrics.role_total(Role::Pod, |m| m.relists.total())`.
    pub fn role_total(&self, role: Role, read: impl Fn(&RoleMetrics) -> u64) -> u64 {
        let map = self.api_servers.lock().unwrap_or_else(|e| e.into_inner());
        map.values().map(|s| read(s.role(role))).sum()
    }

    /// Renders every metric of the engine in Prometheus text exposition format
    /// (version 0.0.4).
    ///
    /// API servers that no watcher or group uses now are left out; their counters are
    /// kept (in the registry, one small set per server ever configured), so a server
    /// used again continues its counts rather than resetting them, and totals only grow.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8192);
        self.render_per_role(&mut out);
        let mut globals =
            |name: &str, kind: &str, help: &str, _: Option<(&str, &str)>, value: i64| {
                let _ = writeln!(
                    out,
                    "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
                );
            };
        self.engine.each_sample(&mut globals);
        let permanent = crate::model::json::permanent_string_bytes();
        let _ = writeln!(
            out,
            "# HELP kubesd_permanent_string_bytes Bytes of interned strings that repeat across objects, made permanent (never freed).\n\
             # TYPE kubesd_permanent_string_bytes gauge\nkubesd_permanent_string_bytes {permanent}"
        );
        out
    }

    /// The per API server and role families, one family at a time in the order of the
    /// definitions, each (API server, role)'s samples read once.
    fn render_per_role(&self, out: &mut String) {
        let servers: Vec<(String, Arc<ApiServerMetrics>)> = {
            let map = self.api_servers.lock().unwrap_or_else(|e| e.into_inner());
            map.iter()
                .filter(|(_, m)| Arc::strong_count(m) > 1)
                .map(|(k, v)| (k.clone(), Arc::clone(v)))
                .collect()
        };
        let mut families: Vec<(&str, &str, &str)> = Vec::new();
        RoleMetrics::new().each_sample(&mut |name, kind, help, _, _| {
            if families.last().is_none_or(|f| f.0 != name) {
                families.push((name, kind, help));
            }
        });
        let mut rows: Vec<(&str, String, Role, Option<SplitLabel>, i64)> = Vec::new();
        for (server, metrics) in &servers {
            let server = escape_label_value(server);
            for role in Role::ALL.into_iter().chain(Role::CONFIG) {
                let from = rows.len();
                metrics
                    .role(role)
                    .each_sample(&mut |name, _, _, reason, value| {
                        rows.push((name, server.clone(), role, reason, value));
                    });
                // The configuration kinds only where the monitors section watches
                // them: a config without one shows no rows for them.
                if role.is_config() && rows[from..].iter().all(|r| r.4 == 0) {
                    rows.truncate(from);
                }
            }
        }
        for (name, kind, help) in families {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (_, server, role, reason, value) in rows.iter().filter(|r| r.0 == name) {
                let _ = match reason {
                    Some((label, reason)) => writeln!(
                        out,
                        "{name}{{api_server=\"{server}\",role=\"{role}\",{label}=\"{reason}\"}} {value}"
                    ),
                    None => writeln!(
                        out,
                        "{name}{{api_server=\"{server}\",role=\"{role}\"}} {value}"
                    ),
                };
            }
        }
    }
}

/// A sample's splitting label: (name, value), e.g. `("reason", "gone")`.
type SplitLabel = (&'static str, &'static str);

/// The `api_server` label of `base_url`: without user information (`https://user:pw@host`
/// → `https://host`), so that a credential written into an `api_server` URL never
/// becomes a label.
pub fn api_server_label(base_url: &str) -> String {
    let (scheme, rest) = base_url.split_once("://").unwrap_or(("", base_url));
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.is_empty() {
        format!("{host}{path}")
    } else {
        format!("{scheme}://{host}{path}")
    }
}

/// A label value escaped for the text format (backslash, double quote, newline).
pub fn escape_label_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_role_of_a_used_api_server_in_text_format() {
        let metrics = Metrics::default();
        let server = metrics.api_server("https://render-test:6443");
        server.role(Role::Pod).relists.inc(RelistReason::Gone);
        server.role(Role::Node).objects.add(3);
        server
            .role(Role::Pod)
            .list_mode
            .add(ListMethod::Streaming, 1);
        let text = metrics.render();
        assert!(text.contains(
            "kubesd_list_mode_watchers{api_server=\"https://render-test:6443\",role=\"pod\",mode=\"streaming\"} 1\n"
        ));
        assert!(text.contains("# TYPE kubesd_list_mode_watchers gauge"));
        assert!(text.contains("# TYPE kubesd_relists_total counter"));
        assert!(text.contains("# TYPE kubesd_objects gauge"));
        assert!(text.contains(
            "kubesd_relists_total{api_server=\"https://render-test:6443\",role=\"pod\",reason=\"gone\"} 1\n"
        ));
        assert!(
            text.contains(
                "kubesd_objects{api_server=\"https://render-test:6443\",role=\"node\"} 3\n"
            )
        );
        assert!(text.contains(
            "kubesd_objects{api_server=\"https://render-test:6443\",role=\"endpointslice\"} 0\n"
        ));
        assert_eq!(text.matches("# TYPE kubesd_objects ").count(), 1);
        assert!(text.contains("kubesd_permanent_string_bytes "));
        assert!(text.contains("kubesd_groups 0\n"));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap_or("");
            assert!(value.parse::<i64>().is_ok(), "{line}");
        }
        server.role(Role::Node).objects.add(-3);
    }

    #[test]
    fn reason_labels_fit_their_counters() {
        for len in [
            RelistReason::ALL.len(),
            RequestError::ALL.len(),
            RejectReason::ALL.len(),
            StallReason::ALL.len(),
            ListMethod::ALL.len(),
            ResponseEncoding::ALL.len(),
        ] {
            assert!(len <= values::MAX_REASONS);
        }
    }

    #[test]
    fn an_api_server_nobody_uses_is_no_longer_rendered() {
        let metrics = Metrics::default();
        drop(metrics.api_server("https://gone-test:6443"));
        assert!(!metrics.render().contains("gone-test"));
    }

    #[test]
    fn a_credential_in_the_api_server_url_never_becomes_a_label() {
        let metrics = Metrics::default();
        let server = metrics.api_server("https://admin:hunter2@creds-test:6443/prefix");
        let text = metrics.render();
        assert!(!text.contains("hunter2"));
        assert!(text.contains("api_server=\"https://creds-test:6443/prefix\""));
        drop(server);
    }

    #[test]
    fn totals_add_up_over_api_servers() {
        let metrics = Metrics::default();
        let a = metrics.api_server("https://total-a:6443");
        let b = metrics.api_server("https://total-b:6443");
        a.role(Role::Ingress).gone.inc();
        b.role(Role::Ingress).gone.add(2);
        assert_eq!(metrics.role_total(Role::Ingress, |m| m.gone.get()), 3);
    }
}
