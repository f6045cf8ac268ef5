//! The engine's counters and gauges, exposed in Prometheus text format.
//!
//! Plain atomics in a static, indexed by role: updating one on the hot path is a single
//! relaxed add, with no registry look-up and no lock.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::model::Role;

/// Declares a metric label's values: an enum, its `ALL` values in order and their
/// label text.
macro_rules! reasons {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// Every value, in the order the metric's samples are rendered.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The label value.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

reasons! {
    /// Why a URL watcher started a LIST (`kubesd_relists_total{reason}`).
    RelistReason {
        /// The watcher's first LIST.
        Initial => "initial",
        /// 410 Gone: the watch's resourceVersion or the list's continue token expired.
        Gone => "gone",
        /// A watch event was rejected: a change may have been missed.
        BadEvent => "bad_event",
        /// The previous LIST failed.
        Retry => "retry",
        /// The periodic safety-net relist (`EngineOptions::relist_interval`).
        Resync => "resync",
        /// The previous LIST had no resourceVersion to watch from.
        NoResourceVersion => "no_resource_version",
        /// 404 on the role's current API version: the older one is tried.
        FallBack => "fall_back",
    }
}

reasons! {
    /// Why a LIST or WATCH request failed (`kubesd_request_errors_total{reason}`).
    RequestError {
        /// The connection failed, timed out, or broke mid-body.
        Connection => "connection",
        /// 400: the request itself is wrong (a selector the server refuses).
        BadRequest => "bad_request",
        /// 401: the credentials were refused.
        Unauthorized => "unauthorized",
        /// 403: the credentials may not list or watch this resource.
        Forbidden => "forbidden",
        /// 404 with no older API version to fall back to.
        NotFound => "not_found",
        /// 429: the server asks to slow down.
        Throttled => "throttled",
        /// 5xx.
        ServerError => "server_error",
        /// Any other status.
        OtherStatus => "other_status",
        /// A LIST body that is not a whole list of the role (wrong kind, truncated,
        /// undecodable, over `max_list_body`).
        BadBody => "bad_body",
        /// A watch `ERROR` event other than 410.
        ErrorEvent => "error_event",
        /// A watch the server ended cleanly before it had been healthy for
        /// `EngineOptions::healthy_after`.
        ShortWatch => "short_watch",
    }
}

reasons! {
    /// Why an object (a list item or a watch event) was rejected
    /// (`kubesd_rejected_objects_total{reason}`).
    RejectReason {
        /// Not JSON, or JSON of the wrong shape (no name, unknown event type, ...).
        Undecodable => "undecodable",
        /// An object of another kind than the role's.
        WrongKind => "wrong_kind",
        /// Larger than `EngineOptions::max_object_size`.
        TooLarge => "too_large",
        /// Nested deeper than `EngineOptions::max_json_depth`.
        TooDeep => "too_deep",
    }
}

reasons! {
    /// What stalled (`kubesd_stalls_total{reason}`): a stream that stopped making
    /// progress mid-object for longer than `EngineOptions::progress_deadline`.
    StallReason {
        /// A watch line stayed incomplete.
        Watch => "watch",
        /// A LIST body found no next item.
        List => "list",
    }
}

/// A counter split by one reason label, with its sum.
pub struct ReasonCounter<const N: usize> {
    counts: [AtomicU64; N],
}

impl<const N: usize> ReasonCounter<N> {
    const fn new() -> Self {
        ReasonCounter {
            counts: [const { AtomicU64::new(0) }; N],
        }
    }

    /// Adds one for the reason at `index` (its place in the reason's `ALL`).
    fn inc(&self, index: usize) {
        if let Some(c) = self.counts.get(index) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of the reason at `index`.
    fn get(&self, index: usize) -> u64 {
        self.counts
            .get(index)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The sum over every reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

impl<const N: usize> Default for ReasonCounter<N> {
    fn default() -> Self {
        ReasonCounter::new()
    }
}

fn index_of<T: PartialEq>(all: &[T], value: &T) -> usize {
    all.iter().position(|v| v == value).unwrap_or(0)
}

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
    /// LISTs started (initial and re-), every reason.
    pub relists: AtomicU64,
    /// LISTs started, by reason.
    pub relists_by: ReasonCounter<7>,
    /// `410 Gone` answers, as HTTP status or `ERROR` event.
    pub gone: AtomicU64,
    /// Watches reopened (clean end, error or stall).
    pub watch_restarts: AtomicU64,
    /// Streams (watch or LIST) cut because they stopped making progress mid-object.
    pub watch_stalls: AtomicU64,
    /// The same, by what stalled.
    pub stalls_by: ReasonCounter<2>,
    /// Events or list items rejected (undecodable, wrong kind, too large, too deep).
    pub decode_errors: AtomicU64,
    /// The same, by reason.
    pub rejected_by: ReasonCounter<4>,
    /// Failed requests (connection errors and non-2xx answers other than 410).
    pub request_errors: AtomicU64,
    /// The same, by reason.
    pub request_errors_by: ReasonCounter<11>,
}

impl RoleMetrics {
    /// Counts a LIST started for `reason`.
    pub fn count_relist(&self, reason: RelistReason) {
        inc(&self.relists);
        self.relists_by.inc(index_of(RelistReason::ALL, &reason));
    }

    /// Counts a failed request.
    pub fn count_request_error(&self, reason: RequestError) {
        inc(&self.request_errors);
        self.request_errors_by
            .inc(index_of(RequestError::ALL, &reason));
    }

    /// Counts a rejected object.
    pub fn count_rejected(&self, reason: RejectReason) {
        inc(&self.decode_errors);
        self.rejected_by.inc(index_of(RejectReason::ALL, &reason));
    }

    /// Counts a stalled stream.
    pub fn count_stall(&self, reason: StallReason) {
        inc(&self.watch_stalls);
        self.stalls_by.inc(index_of(StallReason::ALL, &reason));
    }
}

/// One per-role metric split by a reason: name, help, the reason's label values, and
/// how to read the count of the value at an index.
type ReasonSample = (
    &'static str,
    &'static str,
    Vec<&'static str>,
    fn(&RoleMetrics, usize) -> u64,
);

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
                relists_by: ReasonCounter::new(),
                gone: AtomicU64::new(0),
                watch_restarts: AtomicU64::new(0),
                watch_stalls: AtomicU64::new(0),
                stalls_by: ReasonCounter::new(),
                decode_errors: AtomicU64::new(0),
                rejected_by: ReasonCounter::new(),
                request_errors: AtomicU64::new(0),
                request_errors_by: ReasonCounter::new(),
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
        let per_role: [RoleSample; 8] = [
            (
                "kubesd_objects",
                "gauge",
                "Objects in the group caches.",
                |m| m.objects.load(Ordering::Relaxed),
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
        let by_reason: [ReasonSample; 4] = [
            (
                "kubesd_relists_total",
                "LISTs started, initial and re-, by why.",
                RelistReason::ALL.iter().map(|r| r.as_str()).collect(),
                |m, i| m.relists_by.get(i),
            ),
            (
                "kubesd_request_errors_total",
                "Failed LIST or WATCH requests, by why.",
                RequestError::ALL.iter().map(|r| r.as_str()).collect(),
                |m, i| m.request_errors_by.get(i),
            ),
            (
                "kubesd_rejected_objects_total",
                "List items and watch events rejected, by why.",
                RejectReason::ALL.iter().map(|r| r.as_str()).collect(),
                |m, i| m.rejected_by.get(i),
            ),
            (
                "kubesd_stalls_total",
                "Watches and LISTs cut for making no progress mid-object.",
                StallReason::ALL.iter().map(|r| r.as_str()).collect(),
                |m, i| m.stalls_by.get(i),
            ),
        ];
        for (name, help, reasons, get) in by_reason {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for role in Role::ALL {
                for (i, reason) in reasons.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "{name}{{role=\"{role}\",reason=\"{reason}\"}} {}",
                        get(self.role(role), i)
                    );
                }
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
        METRICS.role(Role::Pod).count_relist(RelistReason::Gone);
        let text = METRICS.render();
        assert!(text.contains("# TYPE kubesd_relists_total counter"));
        assert!(text.lines().any(|l| {
            l.starts_with("kubesd_relists_total{role=\"pod\",reason=\"gone\"} ")
                && !l.ends_with(" 0")
        }));
        assert!(text.contains("kubesd_objects{role=\"endpointslice\"}"));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let value = line.rsplit(' ').next().unwrap_or("");
            assert!(value.parse::<i64>().is_ok(), "{line}");
        }
    }
}
