//! The engine's tuning knobs: timings and sizes that are not part of any job's config.
//! Defaults suit a real cluster; tests shorten the timers.

use std::time::Duration;

use super::ListMode;
use crate::targets::Semantics;

/// Options of a `kubesd::Discovery` engine.
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
    /// How URLs are listed: `Auto` (the default) asks each API server's `/version` and
    /// uses LIST and WATCH on 1.33 and later, streaming lists on 1.32 (see
    /// [`ListMode`]); `List` and `Stream` force one way. A URL whose server shows it
    /// does not serve streaming lists (it refuses them with 400, 403 or 422, ignores
    /// them, or ends one at once) is listed with LIST for the rest of its watcher's
    /// life; any other failure of a streaming list makes the next attempt a LIST, and
    /// streaming lists are tried again once a watch has been healthy.
    pub list_mode: ListMode,
    /// Open a watch after each list (the default). Off for a one-shot sync
    /// (`kubesd once`): each URL is listed once and not watched, and a streaming
    /// list's stream is closed at its initial-events-end bookmark.
    pub watch_after_list: bool,
    /// The most requests one LIST attempt makes: its pages, and the redirects it
    /// follows. A server whose continue tokens never end (or that sends one although
    /// no `limit` was asked for, and keeps doing so) ends the attempt as a failure
    /// after this many; a continue token that comes round again, or a redirect back to
    /// a URL the attempt already asked for, ends it at once. The last good targets are
    /// kept and the next attempt waits for the backoff. So does a page that names a
    /// next one but brings no object the attempt has not had (the API server fills
    /// every page but the last). Default 1000 (500,000 objects at the default page
    /// size).
    pub max_list_pages: usize,
    /// The most objects one list attempt may bring, a LIST's pages or a streaming
    /// list's initial events alike; past it the attempt fails, the last good targets
    /// are kept and the next attempt waits for the backoff. Default 2,000,000.
    pub max_list_objects: usize,
    /// `limit` of each LIST page for consistent reads.
    pub list_page_size: u32,
    /// The most bytes one list attempt may bring: a LIST's pages together (a
    /// `Content-Length` over what is left is refused before the body is read), or a
    /// streaming list's initial events. Default 1 GiB: a watch-cache LIST of 100,000
    /// pods is about 500 MB.
    pub max_list_body: usize,
    /// The largest single object accepted, in bytes: a watch event's line, or one item
    /// of a LIST. Enforced as the bytes arrive, so a larger one is never held whole: a
    /// list item over it is skipped, a watch line over it ends the stream. Default
    /// 4 MiB (etcd refuses objects over about 1.5 MiB).
    pub max_event_size: usize,
    /// The deepest nesting of JSON arrays and objects accepted in one list item (watch
    /// lines are held to serde_json's limit of 128). Default 64; a pod nests about 10.
    pub max_json_depth: usize,
    /// `timeoutSeconds` of watches is drawn from this range, so that many watchers do
    /// not reconnect in step.
    pub watch_timeout: (Duration, Duration),
    /// How long a watch line or a LIST item may stay incomplete: a stream that sends
    /// part of an object and then nothing more, or drips it byte by byte, is cut after
    /// this long and resumed from the last resourceVersion (a watch) or retried (a
    /// LIST). An idle watch that has received nothing at all is not stalled: it is
    /// closed quietly and reopened from the same resourceVersion once it has been open
    /// for its `timeoutSeconds` (`watch_timeout`) plus this long, in case the server
    /// does not end it. Default 30 s.
    pub watch_stall_timeout: Duration,
    /// A watch counts as healthy once it has been open this long, at a line boundary,
    /// with nothing rejected: then the retry backoff starts over from
    /// `backoff_initial`, a 410 relists at once again, and a clean end of the stream
    /// rewatches at once. A watch the server ends sooner is retried after the backoff.
    /// Default 10 s.
    pub healthy_after: Duration,
    /// The first retry delay after an error; it doubles, with jitter, up to `backoff_max`.
    /// Every retry of a URL (LIST, WATCH, relist after a repeated 410 or a rejected
    /// event) waits on this one backoff. Default 1 s.
    pub backoff_initial: Duration,
    /// The longest retry delay, and the longest `Retry-After` honoured. Default 30 s: a
    /// URL under a lasting fault makes about 4 to 8 requests a minute.
    pub backoff_max: Duration,
    /// How many outputs (watch batches, LIST parts) a URL watcher may have sent its group
    /// and not yet seen handled before it stops reading its stream (back-pressure
    /// instead of an unbounded mailbox). Default 4.
    pub watcher_in_flight: usize,
    /// How many change batches a subscriber may have unanswered before the group
    /// holds further batches back for it, to send them in one message once it has
    /// caught up (see `actors/backlog.rs`; a slow subscriber costs at most about two
    /// changes per object, never one per event). Default 64. Holding a batch back costs
    /// the group a pointer, less than sending it: with many subscribers on the group's
    /// thread, a lag must not make the group slower, or it would feed itself.
    pub subscriber_in_flight: usize,
    /// How long to wait for the response head of a LIST or WATCH request.
    pub request_timeout: Duration,
    /// How long a kubeconfig's credential plugin (`exec`) may run before it is killed
    /// and the run counts as failed.
    pub credential_plugin_timeout: Duration,
    /// How long one list attempt may take the server: a LIST's pages together, or a
    /// streaming list's initial events (each item must also arrive within
    /// `watch_stall_timeout` of the previous one). Waits for the group's room are not
    /// counted.
    pub list_body_timeout: Duration,
    /// A safety net: every URL is relisted this often even when its watch is healthy.
    /// Watches cannot notice every server-side loss: after an etcd restore, or an API
    /// server whose resourceVersions were reset, a watch resumed from a number the new
    /// history has already passed is accepted and silently skips changes. A relist
    /// (from the watch cache, so cheap) bounds how long such a loss can last; it
    /// pushes only what actually differs. `None` turns it off.
    pub relist_interval: Option<Duration>,
    /// Which encoding LISTs and WATCHes ask the API server for: `Auto` (the default)
    /// prefers protobuf and reads each response in the encoding its `Content-Type`
    /// names (custom resources, aggregated APIs and older servers answer JSON);
    /// `Json` asks for JSON only.
    pub encoding: WireEncoding,
    /// Whose target semantics every job's labels follow: Prometheus' (the default) or
    /// VictoriaMetrics' (SEMANTICS.md lists the differences).
    pub semantics: Semantics,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            flush_interval: Duration::from_secs(5),
            flush_soon_delay: Duration::from_millis(100),
            flush_soon_max: 128,
            list_from_watch_cache: true,
            list_mode: ListMode::Auto,
            watch_after_list: true,
            max_list_pages: 1000,
            max_list_objects: 2_000_000,
            list_page_size: 500,
            max_list_body: 1 << 30,
            max_event_size: 4 << 20,
            max_json_depth: 64,
            watch_timeout: (Duration::from_secs(300), Duration::from_secs(600)),
            watch_stall_timeout: Duration::from_secs(30),
            healthy_after: Duration::from_secs(10),
            backoff_initial: Duration::from_secs(1),
            backoff_max: Duration::from_secs(30),
            watcher_in_flight: 4,
            subscriber_in_flight: 64,
            request_timeout: Duration::from_secs(30),
            credential_plugin_timeout: Duration::from_secs(60),
            list_body_timeout: Duration::from_secs(300),
            relist_interval: Some(Duration::from_secs(3600)),
            encoding: WireEncoding::Auto,
            semantics: Semantics::default(),
        }
    }
}

/// The encoding the engine asks the API server for (see [`EngineOptions::encoding`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WireEncoding {
    /// Protobuf where the server offers it, JSON elsewhere.
    #[default]
    Auto,
    /// JSON only.
    Json,
}

impl WireEncoding {
    /// The `Accept` header of a LIST or WATCH.
    pub fn accept(self) -> &'static str {
        match self {
            WireEncoding::Auto => crate::wire::ACCEPT_PROTOBUF,
            WireEncoding::Json => "application/json",
        }
    }
}

impl std::str::FromStr for WireEncoding {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(WireEncoding::Auto),
            "json" => Ok(WireEncoding::Json),
            other => Err(format!("unknown encoding {other:?}: expected auto or json")),
        }
    }
}

impl std::fmt::Display for WireEncoding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            WireEncoding::Auto => "auto",
            WireEncoding::Json => "json",
        })
    }
}
