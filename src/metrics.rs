//! The engine's counters and gauges, exposed in Prometheus text format.
//!
//! Plain atomics in a static, indexed by role: updating one on the hot path is a single
//! relaxed add, with no registry look-up and no lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::model::Role;

/// Counters and gauges of one role.
#[derive(Default)]
pub struct RoleMetrics {
    /// Objects of the role in all group caches (gauge).
    pub objects: AtomicI64,
    /// `ADDED` events received.
    pub events_added: AtomicU64,
    /// `MODIFIED` events received.
    pub events_modified: AtomicU64,
    /// `DELETED` events received.
    pub events_deleted: AtomicU64,
    /// `BOOKMARK` events received.
    pub bookmarks: AtomicU64,
    /// Object events a URL watcher handed to its group undecoded (counted in the
    /// `events_*` counters too), so that both threads decode.
    pub events_deferred: AtomicU64,
    /// Complete LISTs (initial and re-).
    pub relists: AtomicU64,
    /// `410 Gone` answers, as HTTP status or `ERROR` event.
    pub gone: AtomicU64,
    /// Watches reopened (clean end, error or stall).
    pub watch_restarts: AtomicU64,
    /// Watches reopened because nothing arrived within the stall timeout.
    pub watch_stalls: AtomicU64,
    /// Events or list items that could not be decoded.
    pub decode_errors: AtomicU64,
    /// Failed requests (connection errors and non-2xx answers other than 410).
    pub request_errors: AtomicU64,
}

/// One per-role metric: name, type, help, and how to read it.
type RoleSample = (
    &'static str,
    &'static str,
    &'static str,
    fn(&RoleMetrics) -> i64,
);

/// All of kubesd's metrics.
pub struct Metrics {
    roles: [RoleMetrics; Role::ALL.len()],
    /// Running group watchers (gauge).
    pub groups: AtomicI64,
    /// Running subscribers (gauge).
    pub subscribers: AtomicI64,
    /// Dirty flushes run.
    pub flushes: AtomicU64,
    /// Objects whose targets a flush recomputed.
    pub flush_recomputed: AtomicU64,
    /// Targets pushed to subscribers (added, changed or removed, per object).
    pub target_updates: AtomicU64,
    /// Times a group began holding change batches back for a slow subscriber.
    pub subscriber_coalesced: AtomicU64,
    /// Bytes of interned strings made permanent (never freed; gauge, bounded by
    /// [`crate::model::json::PERMANENT_STRING_BYTES_LIMIT`]).
    pub permanent_string_bytes: AtomicU64,
}

/// The process-wide metrics.
pub static METRICS: Metrics = Metrics::new();

impl Metrics {
    const fn new() -> Metrics {
        const fn role() -> RoleMetrics {
            RoleMetrics {
                objects: AtomicI64::new(0),
                events_added: AtomicU64::new(0),
                events_modified: AtomicU64::new(0),
                events_deleted: AtomicU64::new(0),
                bookmarks: AtomicU64::new(0),
                events_deferred: AtomicU64::new(0),
                relists: AtomicU64::new(0),
                gone: AtomicU64::new(0),
                watch_restarts: AtomicU64::new(0),
                watch_stalls: AtomicU64::new(0),
                decode_errors: AtomicU64::new(0),
                request_errors: AtomicU64::new(0),
            }
        }
        Metrics {
            roles: [
                role(),
                role(),
                role(),
                role(),
                role(),
                role(),
                role(),
                role(),
                role(),
            ],
            groups: AtomicI64::new(0),
            subscribers: AtomicI64::new(0),
            flushes: AtomicU64::new(0),
            flush_recomputed: AtomicU64::new(0),
            target_updates: AtomicU64::new(0),
            subscriber_coalesced: AtomicU64::new(0),
            permanent_string_bytes: AtomicU64::new(0),
        }
    }

    /// The metrics of `role`.
    pub fn role(&self, role: Role) -> &RoleMetrics {
        let i = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
        &self.roles[i]
    }

    /// Renders every metric in Prometheus text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(4096);
        let per_role: [RoleSample; 12] = [
            (
                "kubesd_objects",
                "gauge",
                "Objects in the group caches.",
                |m| m.objects.load(Ordering::Relaxed),
            ),
            (
                "kubesd_relists_total",
                "counter",
                "Complete LISTs, initial and after 410 Gone.",
                |m| load(&m.relists),
            ),
            (
                "kubesd_gone_total",
                "counter",
                "410 Gone answers (HTTP status or ERROR event).",
                |m| load(&m.gone),
            ),
            (
                "kubesd_watch_restarts_total",
                "counter",
                "Watches reopened.",
                |m| load(&m.watch_restarts),
            ),
            (
                "kubesd_watch_stalls_total",
                "counter",
                "Watches reopened after sending nothing for the stall timeout.",
                |m| load(&m.watch_stalls),
            ),
            (
                "kubesd_decode_errors_total",
                "counter",
                "Events or list items that could not be decoded.",
                |m| load(&m.decode_errors),
            ),
            (
                "kubesd_request_errors_total",
                "counter",
                "Failed LIST or WATCH requests.",
                |m| load(&m.request_errors),
            ),
            (
                "kubesd_bookmarks_total",
                "counter",
                "BOOKMARK events received.",
                |m| load(&m.bookmarks),
            ),
            (
                "kubesd_events_added_total",
                "counter",
                "ADDED events received.",
                |m| load(&m.events_added),
            ),
            (
                "kubesd_events_modified_total",
                "counter",
                "MODIFIED events received.",
                |m| load(&m.events_modified),
            ),
            (
                "kubesd_events_deleted_total",
                "counter",
                "DELETED events received.",
                |m| load(&m.events_deleted),
            ),
            (
                "kubesd_events_deferred_total",
                "counter",
                "Watch events handed to the group undecoded, for its thread to decode.",
                |m| load(&m.events_deferred),
            ),
        ];
        for (name, kind, help, get) in per_role {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for role in Role::ALL {
                let _ = writeln!(out, "{name}{{role=\"{role}\"}} {}", get(self.role(role)));
            }
        }
        let globals: [(&str, &str, &str, i64); 7] = [
            (
                "kubesd_groups",
                "gauge",
                "Running group watchers.",
                self.groups.load(Ordering::Relaxed),
            ),
            (
                "kubesd_subscribers",
                "gauge",
                "Running subscribers (scrape jobs).",
                self.subscribers.load(Ordering::Relaxed),
            ),
            (
                "kubesd_flushes_total",
                "counter",
                "Dirty flushes run.",
                load(&self.flushes),
            ),
            (
                "kubesd_flush_recomputed_total",
                "counter",
                "Objects whose targets a dirty flush recomputed.",
                load(&self.flush_recomputed),
            ),
            (
                "kubesd_target_updates_total",
                "counter",
                "Per-object target updates pushed to subscribers.",
                load(&self.target_updates),
            ),
            (
                "kubesd_subscriber_coalesced_total",
                "counter",
                "Times a group began holding change batches back for a slow subscriber.",
                load(&self.subscriber_coalesced),
            ),
            (
                "kubesd_permanent_string_bytes",
                "gauge",
                "Bytes of interned strings that repeat across objects, made permanent (never freed).",
                load(&self.permanent_string_bytes),
            ),
        ];
        for (name, kind, help, value) in globals {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        }
        out
    }
}

fn load(c: &AtomicU64) -> i64 {
    i64::try_from(c.load(Ordering::Relaxed)).unwrap_or(i64::MAX)
}

/// Adds one to a counter.
pub fn inc(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_role_in_text_format() {
        inc(&METRICS.role(Role::Pod).relists);
        let text = METRICS.render();
        assert!(text.contains("# TYPE kubesd_relists_total counter"));
        assert!(text.lines().any(|l| l.starts_with("kubesd_relists_total{role=\"pod\"} ") && !l.ends_with(" 0")));
        assert!(text.contains("kubesd_objects{role=\"endpointslice\"}"));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap_or("");
            assert!(value.parse::<i64>().is_ok(), "{line}");
        }
    }
}
