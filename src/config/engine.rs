//! The engine's tuning knobs: timings and sizes that are not part of any job's config.
//! Defaults suit a real cluster; tests shorten the timers.

use std::time::Duration;

/// Options of a [`crate::Discovery`] engine.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// How often dependency-dirty targets are recomputed (the dirty flusher's tick).
    /// Under load, that is; at rest a group flushes a few dirty objects sooner (below).
    pub flush_interval: Duration,
    /// How long a group waits after a change that dirtied objects before flushing them
    /// itself, instead of at the next tick: the events of one change (a pod and its
    /// endpoints, on two watches) arrive within it and are recomputed once.
    pub flush_soon_delay: Duration,
    /// The most dirty objects a group flushes after `flush_soon_delay`; more means a
    /// burst, left to the tick, which batches it (see `actors/flusher.rs`).
    pub flush_soon_max: usize,
    /// LIST from the API server's watch cache (`resourceVersion=0`) instead of a
    /// consistent (quorum) read: far cheaper for etcd in big clusters, which is why it is
    /// the default. Consistent reads are paginated with `list_page_size`.
    pub list_from_watch_cache: bool,
    /// `limit` of each LIST page for consistent reads.
    pub list_page_size: u32,
    /// The largest LIST response body accepted, in bytes.
    pub max_list_body: usize,
    /// The largest single watch event accepted, in bytes.
    pub max_event_size: usize,
    /// `timeoutSeconds` of watches is drawn from this range, so that many watchers do
    /// not reconnect in step.
    pub watch_timeout: (Duration, Duration),
    /// A watch that sends nothing (no event, no bookmark) for this long is treated as
    /// stalled and reopened.
    pub watch_stall_timeout: Duration,
    /// The first retry delay after an error; it doubles, with jitter, up to `backoff_max`.
    pub backoff_initial: Duration,
    /// The longest retry delay.
    pub backoff_max: Duration,
    /// How many delta batches a URL watcher may have queued at its group before it stops
    /// reading its stream (back-pressure instead of an unbounded mailbox).
    pub watcher_in_flight: usize,
    /// While its group keeps up, a URL watcher hands every this-many-th watch event to
    /// the group undecoded, so that the group's thread shares the decoding (in a flood
    /// of events decoding one thread's worth is the bottleneck). A watch resumes from
    /// the last event the watcher decoded itself, so a reconnect replays up to this
    /// many minus one events. 0: the watcher decodes every event.
    pub watch_defer_every: usize,
    /// How many change batches may wait in a subscriber's mailbox before the group
    /// holds further batches back for it, to send them in one message once it has
    /// caught up (see `actors/backlog.rs`; a slow subscriber costs at most about two
    /// changes per object, never one per event). Default 64. Holding a batch back costs
    /// the group a pointer; it used to cost a map insert per change, dearer than
    /// sending, and with many subscribers on the group's thread a lag then fed itself
    /// (flood bench, fanout of 100 at 64: 9–16k events/s and a p99 of 3–9 s in most
    /// runs; with the backlog, 16.7–26.9k and under 0.5 s in all of 29 runs;
    /// BENCHMARKS.md, seventh round).
    pub subscriber_in_flight: usize,
    /// How long to wait for the response head of a LIST or WATCH request.
    pub request_timeout: Duration,
    /// How long reading a whole LIST body may take.
    pub list_body_timeout: Duration,
    /// A safety net: every URL is relisted this often even when its watch is healthy.
    /// Watches cannot notice every server-side loss: after an etcd restore, or an API
    /// server whose resourceVersions were reset, a watch resumed from a number the new
    /// history has already passed is accepted and silently skips changes. A relist
    /// (from the watch cache, so cheap) bounds how long such a loss can last; it
    /// pushes only what actually differs. `None` turns it off.
    pub relist_interval: Option<Duration>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            flush_interval: Duration::from_secs(5),
            flush_soon_delay: Duration::from_millis(100),
            flush_soon_max: 128,
            list_from_watch_cache: true,
            list_page_size: 500,
            max_list_body: 2 << 30,
            max_event_size: 64 << 20,
            watch_timeout: (Duration::from_secs(300), Duration::from_secs(600)),
            watch_stall_timeout: Duration::from_secs(180),
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            watcher_in_flight: 4,
            watch_defer_every: 2,
            subscriber_in_flight: 64,
            request_timeout: Duration::from_secs(30),
            list_body_timeout: Duration::from_secs(300),
            relist_interval: Some(Duration::from_secs(3600)),
        }
    }
}
