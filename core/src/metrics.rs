//! The engine's counters and gauges, exposed in Prometheus text format.
//!
//! Each metric is defined once, in one of the `metric_set!` lists below: its field,
//! its kind, its Prometheus name and its help text together. Updating one on the hot
//! path is a single relaxed atomic add ([`Counter::inc`], [`Gauge::add`]), with no
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

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::build_info;
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

        impl Reason for $name {
            const ALL: &'static [$name] = $name::ALL;

            fn as_str(self) -> &'static str {
                $name::as_str(self)
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
    /// The encoding of a LIST or WATCH response (`kubesd_responses_total{reason}`):
    /// what each role's URLs are read in, per API server.
    ResponseEncoding {
        /// JSON (asked for, or what the server answered a request that preferred
        /// protobuf: custom resources, aggregated APIs, older servers).
        Json => "json",
        /// Kubernetes' protobuf.
        Protobuf => "protobuf",
    }
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
        /// No credential to send: a kubeconfig credential plugin failed or has not
        /// answered yet (no request was made).
        Credentials => "credentials",
        /// A LIST attempt whose pages did not end within
        /// `EngineOptions::max_list_pages`, or came round again, or that was
        /// redirected back to a URL it had already asked for.
        EndlessList => "endless_list",
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

reasons! {
    /// How a URL watcher gets a URL's state (`kubesd_list_mode_watchers{mode}`).
    ListMethod {
        /// A streaming list: a watch with `sendInitialEvents=true` whose initial
        /// events end at the `k8s.io/initial-events-end` bookmark.
        Streaming => "streaming",
        /// A LIST request, then a watch from its resourceVersion.
        List => "list",
    }
}

/// A counter: only goes up.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero.
    pub const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn sample(&self) -> i64 {
        i64::try_from(self.get()).unwrap_or(i64::MAX)
    }
}

/// A gauge: a value that goes up and down.
#[derive(Default, Debug)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// A gauge at zero.
    pub const fn new() -> Gauge {
        Gauge(AtomicI64::new(0))
    }

    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1);
    }

    /// Adds `n` (negative to subtract).
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds `n` unless the value would then exceed `limit`; true if it did. (A budget
    /// shared by threads: the check and the add are one atomic step.)
    pub fn add_within(&self, n: u64, limit: u64) -> bool {
        let (Ok(n), Ok(limit)) = (i64::try_from(n), i64::try_from(limit)) else {
            return false;
        };
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                v.checked_add(n).filter(|&total| total <= limit)
            })
            .is_ok()
    }

    /// Sets the value.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    fn sample(&self) -> i64 {
        self.get()
    }
}

/// How a metric shows its samples: its Prometheus type, and each value with the value
/// of its `reason` (or [`Samples::LABEL`]) label if it has one.
pub trait Samples {
    /// Prometheus' type name.
    const TYPE: &'static str;

    /// The name of the label that splits the samples, if they are split.
    const LABEL: &'static str = "reason";

    /// Calls `f` with each sample: `reason` label value (None: no such label), value.
    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64));
}

impl Samples for Counter {
    const TYPE: &'static str = "counter";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        f(None, self.sample());
    }
}

impl Samples for Gauge {
    const TYPE: &'static str = "gauge";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        f(None, self.sample());
    }
}

/// The values of a `reason` label: an enum declared with `reasons!`.
pub trait Reason: Copy + PartialEq + 'static {
    /// Every value, in the order the samples are rendered.
    const ALL: &'static [Self];

    /// The label value.
    fn as_str(self) -> &'static str;
}

/// A counter split by a reason label (one count per value of `R`), with its sum.
#[derive(Debug)]
pub struct ReasonCounter<R> {
    counts: [AtomicU64; MAX_REASONS],
    reason: std::marker::PhantomData<R>,
}

/// The most values a reason label has (checked by a test).
const MAX_REASONS: usize = 16;

impl<R: Reason> ReasonCounter<R> {
    /// Every count at zero.
    pub const fn new() -> Self {
        ReasonCounter {
            counts: [const { AtomicU64::new(0) }; MAX_REASONS],
            reason: std::marker::PhantomData,
        }
    }

    /// Adds one for `reason`.
    pub fn inc(&self, reason: R) {
        self.add(reason, 1);
    }

    /// Adds `n` for `reason`.
    pub fn add(&self, reason: R, n: u64) {
        if let Some(c) = self.counts.get(Self::index(reason)) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The count of `reason`.
    pub fn get(&self, reason: R) -> u64 {
        self.counts
            .get(Self::index(reason))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The sum over every reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    fn index(reason: R) -> usize {
        R::ALL.iter().position(|r| *r == reason).unwrap_or(0)
    }
}

impl<R: Reason> Default for ReasonCounter<R> {
    fn default() -> Self {
        ReasonCounter::new()
    }
}

impl<R: Reason> Samples for ReasonCounter<R> {
    const TYPE: &'static str = "counter";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        for &reason in R::ALL {
            f(
                Some(reason.as_str()),
                i64::try_from(self.get(reason)).unwrap_or(i64::MAX),
            );
        }
    }
}

/// A gauge split by a `mode` label (one value per value of `R`): how many of
/// something are in each mode now.
#[derive(Debug)]
pub struct ModeGauge<R> {
    values: [AtomicI64; MAX_REASONS],
    mode: std::marker::PhantomData<R>,
}

impl<R: Reason> ModeGauge<R> {
    /// Every value at zero.
    pub const fn new() -> Self {
        ModeGauge {
            values: [const { AtomicI64::new(0) }; MAX_REASONS],
            mode: std::marker::PhantomData,
        }
    }

    /// Adds `n` (negative to subtract) to `mode`'s value.
    pub fn add(&self, mode: R, n: i64) {
        let i = R::ALL.iter().position(|r| *r == mode).unwrap_or(0);
        if let Some(v) = self.values.get(i) {
            v.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The value of `mode`.
    pub fn get(&self, mode: R) -> i64 {
        let i = R::ALL.iter().position(|r| *r == mode).unwrap_or(0);
        self.values.get(i).map_or(0, |v| v.load(Ordering::Relaxed))
    }
}

impl<R: Reason> Default for ModeGauge<R> {
    fn default() -> Self {
        ModeGauge::new()
    }
}

impl<R: Reason> Samples for ModeGauge<R> {
    const TYPE: &'static str = "gauge";
    const LABEL: &'static str = "mode";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        for &mode in R::ALL {
            f(Some(mode.as_str()), self.get(mode));
        }
    }
}

/// Defines a struct of metrics and, from the same list, how each is rendered: field,
/// kind ([`Counter`] or [`Gauge`]), Prometheus name and help text, written once.
macro_rules! metric_set {
    (
        $(#[$meta:meta])*
        pub struct $set:ident {
            $( $(#[doc = $doc:literal])* $field:ident: $kind:ty = $name:literal, $help:literal; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $set {
            $( $(#[doc = $doc])* pub $field: $kind, )*
        }

        impl $set {
            /// Every metric at zero.
            pub const fn new() -> $set {
                $set { $( $field: <$kind>::new(), )* }
            }

            /// Calls `f` with each metric's name, type and help, and one of its samples
            /// ((label name, label value), value), in definition order.
            fn each_sample(&self, f: &mut dyn FnMut(&'static str, &'static str, &'static str, Option<(&'static str, &'static str)>, i64)) {
                $( self.$field.each(&mut |value_of_label, value| f($name, <$kind as Samples>::TYPE, $help, value_of_label.map(|v| (<$kind as Samples>::LABEL, v)), value)); )*
            }
        }

        impl Default for $set {
            fn default() -> $set {
                $set::new()
            }
        }
    };
}

metric_set! {
    /// The discovery metrics of one role at one API server, bumped by its URL watchers
    /// (events, lists, errors) and its groups (`objects`, objects they reject).
    pub struct RoleMetrics {
        /// Objects of the role in the group caches (gauge). Each group (jobs that
        /// differ in credentials, namespaces, selectors or attach_metadata) caches its
        /// own copy, so two groups watching one cluster's nodes count them twice.
        objects: Gauge = "kubesd_objects",
            "Objects in the group caches; each group caches its own, so objects that two groups watch count twice.";
        /// `410 Gone` answers, as HTTP status or `ERROR` event.
        gone: Counter = "kubesd_gone_total", "410 Gone answers (HTTP status or ERROR event).";
        /// Watches reopened (clean end, error or stall).
        watch_restarts: Counter = "kubesd_watch_restarts_total", "Watches reopened.";
        /// `BOOKMARK` events received.
        bookmarks: Counter = "kubesd_bookmarks_total", "BOOKMARK events received.";
        /// `ADDED` events received.
        events_added: Counter = "kubesd_events_added_total", "ADDED events received.";
        /// `MODIFIED` events received.
        events_modified: Counter = "kubesd_events_modified_total", "MODIFIED events received.";
        /// `DELETED` events received.
        events_deleted: Counter = "kubesd_events_deleted_total", "DELETED events received.";
        /// LISTs started (initial and re-), by why.
        relists: ReasonCounter<RelistReason> = "kubesd_relists_total",
            "LISTs started, initial and re-, by why.";
        /// Failed requests (connection errors and non-2xx answers other than 410), by why.
        request_errors: ReasonCounter<RequestError> = "kubesd_request_errors_total",
            "Failed LIST or WATCH requests, by why.";
        /// List items and watch events rejected (undecodable, wrong kind, too large, too
        /// deep), by why.
        rejected: ReasonCounter<RejectReason> = "kubesd_rejected_objects_total",
            "List items and watch events rejected, by why.";
        /// LIST and WATCH responses read, by their encoding.
        responses: ReasonCounter<ResponseEncoding> = "kubesd_responses_total",
            "LIST and WATCH responses read, by encoding (the reason label: json or protobuf).";
        /// Streams (watch or LIST) cut because they stopped making progress mid-object.
        stalls: ReasonCounter<StallReason> = "kubesd_stalls_total",
            "Watches and LISTs cut for making no progress mid-object.";
        /// Running URL watchers by how they get their URL's state now: streaming lists,
        /// or LIST (chosen, or fallen back to because the server does not serve
        /// streaming lists).
        list_mode: ModeGauge<ListMethod> = "kubesd_list_mode_watchers",
            "Running URL watchers by how they list: streaming (a watch with sendInitialEvents) or list.";
    }
}

metric_set! {
    /// The engine's metrics that belong to no API server.
    pub struct EngineMetrics {
        /// Running group watchers.
        groups: Gauge = "kubesd_groups", "Running group watchers.";
        /// Running subscribers.
        subscribers: Gauge = "kubesd_subscribers", "Running subscribers (scrape jobs).";
        /// Dirty flushes run.
        flushes: Counter = "kubesd_flushes_total", "Dirty flushes run.";
        /// Objects whose targets a flush recomputed.
        flush_recomputed: Counter = "kubesd_flush_recomputed_total",
            "Objects whose targets a dirty flush recomputed.";
        /// Targets pushed to subscribers (added, changed or removed, per object).
        target_updates: Counter = "kubesd_target_updates_total",
            "Per-object target updates pushed to subscribers.";
        /// Times a group began holding change batches back for a slow subscriber.
        subscriber_coalesced: Counter = "kubesd_subscriber_coalesced_total",
            "Times a group began holding change batches back for a slow subscriber.";
        /// Bytes of interned strings made permanent (never freed; bounded by
        /// [`crate::model::json::PERMANENT_STRING_BYTES_LIMIT`]).
        permanent_string_bytes: Gauge = "kubesd_permanent_string_bytes",
            "Bytes of interned strings that repeat across objects, made permanent (never freed).";
    }
}

metric_set! {
    /// The `kubesd run` service's metrics: its config file and its listener.
    pub struct ServiceMetrics {
        /// 1 if the last load of the config file succeeded, 0 if it failed.
        config_last_reload_successful: Gauge = "kubesd_config_last_reload_successful",
            "Whether the last configuration reload attempt was successful.";
        /// When the config file was last loaded successfully (Unix seconds).
        config_last_reload_success_timestamp_seconds: Gauge =
            "kubesd_config_last_reload_success_timestamp_seconds",
            "Timestamp of the last successful configuration reload.";
        /// 1 if the last read of the web config file succeeded, 0 if it failed.
        web_config_last_reload_successful: Gauge = "kubesd_web_config_last_reload_successful",
            "Whether the last read of the web config file (--web.config.file) was successful.";
        /// Requests refused for missing or wrong credentials.
        http_unauthorized: Counter = "kubesd_http_unauthorized_requests_total",
            "HTTP requests refused for missing or wrong credentials.";
        /// Requests refused because their client failed too often lately.
        http_rate_limited: Counter = "kubesd_http_rate_limited_requests_total",
            "HTTP requests refused because their client failed authentication too often lately.";
    }
}

/// The discovery metrics of one API server, one [`RoleMetrics`] per role.
#[derive(Default, Debug)]
pub struct ApiServerMetrics {
    roles: [RoleMetrics; Role::ALL.len()],
}

impl ApiServerMetrics {
    /// The metrics of `role`.
    pub fn role(&self, role: Role) -> &RoleMetrics {
        let i = Role::ALL.iter().position(|r| *r == role).unwrap_or(0);
        &self.roles[i]
    }
}

/// All of kubesd's engine metrics.
pub struct Metrics {
    /// Discovery metrics by API server label (base URL, no user information).
    api_servers: Mutex<BTreeMap<String, Arc<ApiServerMetrics>>>,
    /// The engine's other metrics.
    pub engine: EngineMetrics,
    /// The service's (`kubesd run`).
    pub service: ServiceMetrics,
    /// What each scrape job discovers: (job, role, API server label), set by the service
    /// when it applies a config. Joins the per-job metrics (`job` label) to the
    /// discovery metrics (`api_server`, `role`), which count per watch, not per job:
    /// jobs that share a group share its watches.
    job_discoveries: Mutex<Vec<(String, Role, String)>>,
}

/// The process-wide metrics.
pub static METRICS: Metrics = Metrics {
    api_servers: Mutex::new(BTreeMap::new()),
    engine: EngineMetrics::new(),
    service: ServiceMetrics::new(),
    job_discoveries: Mutex::new(Vec::new()),
};

impl Metrics {
    /// The discovery metrics of the API server at `base_url`, created on first use.
    /// Called when a watcher or group starts, not per event.
    pub fn api_server(&self, base_url: &str) -> Arc<ApiServerMetrics> {
        let label = api_server_label(base_url);
        let mut map = self.api_servers.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(map.entry(label).or_default())
    }

    /// Records what each job discovers, (job name, role, API server base URL), for
    /// `kubesd_job_discovery_info`; replaces what was set before.
    pub fn set_job_discoveries(
        &self,
        discoveries: impl IntoIterator<Item = (String, Role, String)>,
    ) {
        let mut list: Vec<(String, Role, String)> = discoveries
            .into_iter()
            .map(|(job, role, server)| (job, role, api_server_label(&server)))
            .collect();
        list.sort_by(|a, b| (&a.0, a.1.to_string(), &a.2).cmp(&(&b.0, b.1.to_string(), &b.2)));
        list.dedup();
        *self
            .job_discoveries
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = list;
    }

    /// The sum of one role metric over every API server, e.g.
    /// `METRICS.role_total(Role::Pod, |m| m.relists.get())`.
    pub fn role_total(&self, role: Role, read: impl Fn(&RoleMetrics) -> u64) -> u64 {
        let map = self.api_servers.lock().unwrap_or_else(|e| e.into_inner());
        map.values().map(|s| read(s.role(role))).sum()
    }

    /// Renders every metric in Prometheus text exposition format (version 0.0.4).
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
        self.service.each_sample(&mut globals);
        self.render_job_discoveries(&mut out);
        render_build_info(&mut out);
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
            for role in Role::ALL {
                metrics
                    .role(role)
                    .each_sample(&mut |name, _, _, reason, value| {
                        rows.push((name, server.clone(), role, reason, value));
                    });
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

    /// `kubesd_job_discovery_info`: which role and API server each job discovers from.
    fn render_job_discoveries(&self, out: &mut String) {
        let discoveries = self
            .job_discoveries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if discoveries.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "# HELP kubesd_job_discovery_info The role and API server each scrape job discovers from (1 per pair).\n\
             # TYPE kubesd_job_discovery_info gauge"
        );
        for (job, role, server) in &discoveries {
            let _ = writeln!(
                out,
                "kubesd_job_discovery_info{{job=\"{}\",role=\"{role}\",api_server=\"{}\"}} 1",
                escape_label_value(job),
                escape_label_value(server)
            );
        }
    }
}

/// `kubesd_build_info`, as Prometheus' own build info metric.
fn render_build_info(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP kubesd_build_info A metric with a constant '1' value labeled by version, revision and build date of kubesd.\n\
         # TYPE kubesd_build_info gauge\n\
         kubesd_build_info{{version=\"{}\",revision=\"{}\",build_date=\"{}\"}} 1",
        escape_label_value(build_info::VERSION),
        escape_label_value(build_info::GIT_COMMIT),
        escape_label_value(build_info::BUILD_DATE),
    );
}

/// A sample's splitting label: (name, value), e.g. `("reason", "gone")`.
type SplitLabel = (&'static str, &'static str);

/// `base_url` without user information (`https://user:pw@host` → `https://host`), so
/// that a credential written into an `api_server` URL never becomes a label.
fn api_server_label(base_url: &str) -> String {
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
        let server = METRICS.api_server("https://render-test:6443");
        server.role(Role::Pod).relists.inc(RelistReason::Gone);
        server.role(Role::Node).objects.add(3);
        server
            .role(Role::Pod)
            .list_mode
            .add(ListMethod::Streaming, 1);
        let text = METRICS.render();
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
        assert!(text.contains("kubesd_build_info{version=\""));
        assert!(text.contains("kubesd_config_last_reload_successful "));
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
            assert!(len <= MAX_REASONS);
        }
    }

    #[test]
    fn an_api_server_nobody_uses_is_no_longer_rendered() {
        drop(METRICS.api_server("https://gone-test:6443"));
        assert!(!METRICS.render().contains("gone-test"));
    }

    #[test]
    fn a_credential_in_the_api_server_url_never_becomes_a_label() {
        let server = METRICS.api_server("https://admin:hunter2@creds-test:6443/prefix");
        let text = METRICS.render();
        assert!(!text.contains("hunter2"));
        assert!(text.contains("api_server=\"https://creds-test:6443/prefix\""));
        drop(server);
    }

    #[test]
    fn job_discoveries_join_jobs_to_api_servers_without_credentials() {
        METRICS.set_job_discoveries([
            (
                "pods".to_string(),
                Role::Pod,
                "https://u:secret@10.0.0.1:6443".to_string(),
            ),
            (
                "pods".to_string(),
                Role::Pod,
                "https://u:secret@10.0.0.1:6443".to_string(),
            ),
            (
                "nodes".to_string(),
                Role::Node,
                "https://10.0.0.1:6443".to_string(),
            ),
        ]);
        let text = METRICS.render();
        assert!(text.contains(
            "kubesd_job_discovery_info{job=\"pods\",role=\"pod\",api_server=\"https://10.0.0.1:6443\"} 1\n"
        ));
        assert!(text.contains(
            "kubesd_job_discovery_info{job=\"nodes\",role=\"node\",api_server=\"https://10.0.0.1:6443\"} 1\n"
        ));
        assert_eq!(
            text.matches("kubesd_job_discovery_info{job=\"pods\"")
                .count(),
            1
        );
        assert!(!text.contains("secret"));
    }

    #[test]
    fn totals_add_up_over_api_servers() {
        let a = METRICS.api_server("https://total-a:6443");
        let b = METRICS.api_server("https://total-b:6443");
        let before = METRICS.role_total(Role::Ingress, |m| m.gone.get());
        a.role(Role::Ingress).gone.inc();
        b.role(Role::Ingress).gone.add(2);
        assert!(METRICS.role_total(Role::Ingress, |m| m.gone.get()) >= before + 3);
    }
}
