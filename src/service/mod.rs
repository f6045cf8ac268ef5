//! kubesd as a standalone discovery service: jobs from a Prometheus-style config file,
//! their targets served over Prometheus HTTP SD (and written as file SD), metrics,
//! health and readiness, reload on SIGHUP or a changed file, sharding.
//!
//! By concern: `jobs` (the job set, job actors, their state and snapshots), `views`
//! (a job's targets split for a fleet: shards, nodes, members), `fleet` (zones, weights,
//! handover, the target allocator's API), `api` (Prometheus' targets API, kubesd's JSON,
//! the status page) and `web` (the listener, its web config and the process metrics).

pub mod api;
pub mod fleet;
mod jobs;
pub mod metrics;
pub mod views;
pub mod web;

pub use jobs::file_name::{job_file, job_file_name, job_name_of};
pub use jobs::job::{Job, JobPart, JobStatus, JobViewCounts, SdBody};
pub use jobs::job_actor::{JobActor, KeepView, RelabelAll, StopJobActor, Subscribed};
pub use jobs::latency::LatencyHistogram;
pub use jobs::relabelling::Relabelling;
pub use jobs::snapshot::{JobSnapshot, JobStats, JobWork, SnapshotCell};
pub use jobs::{ApplyError, CollectorLabels, JobSet, JobSetOptions};
pub use metrics::ServiceMetrics;
pub use views::ViewQuery;
pub use views::members::{MemberPod, MemberWatch, Members, ready_members};
pub use views::query::parse_view_query;
pub use views::shard::Shard;
pub use web::http::{ReloadRequest, ServiceState, serve_http};
