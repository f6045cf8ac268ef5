//! The engine's metrics: per API server and role (bumped by URL watchers and groups),
//! and the engine's own.

use super::reasons::{
    ListMethod, RejectReason, RelistReason, RequestError, ResponseEncoding, StallReason,
};
use super::values::{Counter, Gauge, ModeGauge, ReasonCounter, Samples, metric_set};

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
    }
}
