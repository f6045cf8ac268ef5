//! The flood bench's options.

use clap::Parser;
use kubesd::EngineOptions;
use kubesd::Semantics;
use kubesd::config::ListMode;
use kubesd::config::WireEncoding;

/// The flood bench's options (`cargo bench --bench flood -- --help`).
#[derive(Parser, Debug, Clone)]
#[command(about = "kubesd flood benchmarks")]
pub(crate) struct Args {
    /// Pods in the LIST (~5 KB each, 3 containers x 2 ports: 6 targets each).
    #[arg(long, default_value_t = 100_000)]
    pub(crate) pods: usize,
    /// Nodes in the LIST.
    #[arg(long, default_value_t = 2000)]
    pub(crate) nodes: usize,
    /// MODIFIED pod events streamed by the WATCH.
    #[arg(long, default_value_t = 200_000)]
    pub(crate) events: usize,
    /// Services (and Endpoints objects) for the deps scenario; a multiple of 20.
    #[arg(long, default_value_t = 2000)]
    pub(crate) services: usize,
    /// Events of the deps scenario (0: `--events / 10`).
    #[arg(long, default_value_t = 0)]
    pub(crate) deps_events: usize,
    /// What each flood event changes besides its annotations: `annotation` (nothing
    /// else: no job's targets change) or `label` (the pod label `bench-seq` too: every
    /// event changes the targets of a job that maps pod labels).
    #[arg(long, default_value = "annotation", value_parser = ["annotation", "label"])]
    pub(crate) flood_touches: String,
    /// Job counts of the service scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 20])]
    pub(crate) jobs: Vec<usize>,
    /// How often the service scenario's reader asks for a job's `/sd`, ms (one request
    /// at a time, the whole body read, no `If-None-Match`).
    #[arg(long, default_value_t = 1000)]
    pub(crate) sd_poll_ms: u64,
    /// The service and fleet scenarios' `--sd.publish-interval`, ms: the least time
    /// between two snapshots of a job actor while changes keep coming.
    #[arg(long, default_value_t = 250)]
    pub(crate) publish_ms: u64,
    /// Fleet scenario: per-node consumers (one per node, `node-0000`...).
    #[arg(long, default_value_t = 2000)]
    pub(crate) fleet_nodes: usize,
    /// Fleet scenario: shard consumers (`shard=I&shards=N`).
    #[arg(long, default_value_t = 20)]
    pub(crate) fleet_shards: usize,
    /// Fleet scenario: how often each per-node and shard consumer polls its view, s
    /// (an HTTP SD `refresh_interval`).
    #[arg(long, default_value_t = 30.0)]
    pub(crate) fleet_poll_s: f64,
    /// Fleet scenario: the flood's pace, events/s.
    #[arg(long, default_value_t = 20_000)]
    pub(crate) fleet_rate: usize,
    /// Fleet scenario: `on` (consumers poll their views) or `off` (no consumer: the
    /// same kubesd serving no views).
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub(crate) fleet_views: String,
    /// Fleet scenario: member scrapers (pods `scraper-NN` in `monitoring` over the three
    /// zones, weights 1 and 2, rolled one by one; 0: no `membership` section). Each
    /// polls `?member=` every `--fleet-member-poll-s` and, as a collector,
    /// `/jobs/pods-0/targets?collector_id=` every `--fleet-collector-poll-s`.
    #[arg(long, default_value_t = 0)]
    pub(crate) fleet_members: usize,
    /// Fleet scenario: how often each member scraper polls `?member=`, s.
    #[arg(long, default_value_t = 30.0)]
    pub(crate) fleet_member_poll_s: f64,
    /// Fleet scenario: how often each collector polls `/scrape_configs` and its
    /// allocator share, s (0: no collectors; the collector's `interval` and its HTTP
    /// SD's `refresh_interval`, both 30 s by default).
    #[arg(long, default_value_t = 30.0)]
    pub(crate) fleet_collector_poll_s: f64,
    /// Fleet scenario: one roll step (a member NotReady, deleted, or back) every this
    /// many ms while the flood runs.
    #[arg(long, default_value_t = 1000)]
    pub(crate) fleet_roll_ms: u64,
    /// Fleet scenario: consumers send the ETag of their last answer in `If-None-Match`:
    /// kubesd's own optimisation, which neither Prometheus' HTTP SD nor the
    /// collector's allocator client uses (they poll with plain GETs).
    #[arg(long)]
    pub(crate) fleet_conditional: bool,
    /// Fleet scenario: the job, `pods` (the pod job the service scenario runs, with
    /// the member views' gaps and zones checked) or `service-monitor` (role endpoints,
    /// relabelling as prometheus-operator generates it for a ServiceMonitor).
    #[arg(long, default_value = "pods", value_parser = ["pods", "service-monitor"])]
    pub(crate) fleet_job: String,
    /// Fleet scenario: the discovered labels collectors are served, `readable` (those
    /// the job's rules read; kubesd's default) or `all` (`--allocator.keep-unread-labels`).
    #[arg(long, default_value = "readable", value_parser = ["readable", "all"])]
    pub(crate) fleet_collector_labels: String,
    /// Fleet scenario: seeds the consumers' random phases.
    #[arg(long, default_value_t = 1)]
    pub(crate) fleet_seed: u64,
    /// Fleet scenario: `membership.handover`.
    #[arg(long, default_value = "2m")]
    pub(crate) fleet_handover: String,
    /// Subscriber counts of the fanout scenario.
    #[arg(long, value_delimiter = ',', default_values_t = [20, 100])]
    pub(crate) subscribers: Vec<usize>,
    /// Scenarios to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["sync".to_string(), "flood".into(), "fanout".into(), "deps".into()])]
    pub(crate) scenario: Vec<String>,
    /// Small sizes: finishes in well under 2 minutes.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run subscribers on this many extra arbiters (0: the group's arbiter).
    #[arg(long, default_value_t = 0)]
    pub(crate) sub_arbiters: usize,
    /// The dirty flusher's interval, ms.
    #[arg(long, default_value_t = 1000)]
    pub(crate) flush_ms: u64,
    /// Batches a subscriber may have unhandled before the group holds more back
    /// (`EngineOptions::subscriber_in_flight`; default: the engine's).
    #[arg(long)]
    pub(crate) subscriber_in_flight: Option<usize>,
    /// Whose target semantics the discoveries follow: prometheus or victoriametrics.
    #[arg(long, default_value_t = Semantics::Prometheus)]
    pub(crate) semantics: Semantics,
    /// How URLs are listed: auto (streaming lists, which the fake server serves) or
    /// list (LIST, then WATCH).
    #[arg(long, default_value_t = ListMode::Auto)]
    pub(crate) list_mode: ListMode,
    /// What the engine asks for: auto (protobuf, which the fake server then serves) or
    /// json (`EngineOptions::encoding`; default: the engine's).
    #[arg(long, default_value_t = EngineOptions::default().encoding)]
    pub(crate) encoding: WireEncoding,
    /// Do not count allocations.
    #[arg(long)]
    pub(crate) no_count_allocs: bool,
    /// Skip the serde_json ceiling measurement.
    #[arg(long)]
    pub(crate) no_ceiling: bool,
    /// Use this API server instead of the built-in fake one (no gate, no latency).
    #[arg(long)]
    pub(crate) api_server: Option<String>,
    /// Bearer token for `--api-server`.
    #[arg(long)]
    pub(crate) token: Option<String>,
    /// Give up on a scenario after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub(crate) timeout_s: u64,
    /// Internal: run as the fake API server.
    #[arg(long, hide = true)]
    pub(crate) serve: bool,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    pub(crate) bench: bool,
}
