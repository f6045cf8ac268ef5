//! kubesd as a standalone discovery service: jobs from a Prometheus-style config file,
//! their targets served over Prometheus HTTP SD (and written as file SD), metrics,
//! health and readiness, reload on SIGHUP or a changed file, sharding.

pub mod api;
mod file_name;
mod file_sd;
pub mod fleet;
mod http;
mod job;
mod job_actor;
mod job_state;
mod jobs;
mod latency;
mod members;
mod process_metrics;
mod relabelling;
mod shard;
mod snapshot;
mod view_index;
mod view_query;
pub mod views;
pub mod web_config;
pub mod web_guard;
pub mod web_tls;

pub use file_name::{job_file, job_file_name, job_name_of};
pub use http::{ReloadRequest, ServiceState, serve_http};
pub use job::{Job, JobPart, JobStatus, JobViewCounts, SdBody};
pub use job_actor::{JobActor, KeepView, RelabelAll, StopJobActor, Subscribed};
pub use jobs::{ApplyError, JobSet, JobSetOptions};
pub use latency::LatencyHistogram;
pub use members::{MemberPod, MemberWatch, Members, ready_members};
pub use relabelling::Relabelling;
pub use shard::Shard;
pub use snapshot::{JobSnapshot, JobStats, JobWork, SnapshotCell};
pub use view_query::parse_view_query;
pub use views::ViewQuery;
