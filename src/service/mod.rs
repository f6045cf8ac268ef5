//! kubesd as a standalone discovery service: jobs from a Prometheus-style config file,
//! their targets served over Prometheus HTTP SD (and written as file SD), metrics,
//! health and readiness, reload on SIGHUP or a changed file, sharding.
//!
//! In layers, each importing only those below it: `web` (the listener and its web
//! config) serves `api` (every endpoint's handler: HTTP SD, `/metrics`, health, the
//! target allocator's API, Prometheus' targets API, kubesd's JSON, the status page),
//! which reads [`state`] (the running jobs) and `jobs` (the job set, job actors, their
//! state and snapshots), which keep `fleet` (members, zones, weights, handover, the
//! shares assigned) over `views` (a job's targets split: shards, nodes, members).

pub mod api;
pub mod fleet;
mod jobs;
pub mod metrics;
pub mod monitors;
pub mod state;
pub mod views;
pub mod web;

pub use fleet::members::{MemberPod, MemberWatch, Members, ready_members};
pub use jobs::background::BACKGROUND_THREAD;
pub use jobs::file_name::{job_file, job_file_name, job_name_of};
pub use jobs::job::{Job, JobPart, JobStatus, JobViewCounts, SdBody};
pub use jobs::job_actor::{JobActor, KeepView, RelabelAll, StopJobActor, Subscribed};
pub use jobs::latency::LatencyHistogram;
pub use jobs::relabelling::Relabelling;
pub use jobs::snapshot::{JobSnapshot, JobStats, JobWork, SnapshotCell};
pub use jobs::{ApplyError, CollectorLabels, JobSet, JobSetOptions};
pub use metrics::ServiceMetrics;
pub use monitors::running::Monitors;
pub use state::{ReloadRequest, ServiceState};
pub use views::ViewQuery;
pub use views::query::parse_view_query;
pub use views::shard::Shard;
pub use web::http::serve_http;
