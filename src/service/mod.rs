//! kubesd as a standalone discovery service: jobs from a Prometheus-style config file,
//! their targets served over Prometheus HTTP SD (and written as file SD), metrics,
//! health and readiness, reload on SIGHUP or a changed file, sharding.

mod file_name;
mod http;
mod job;
mod jobs;
mod latency;
mod members;
mod pipeline;
mod process_metrics;
mod shard;
mod view_query;
pub mod views;
pub mod web_config;
pub mod web_guard;
pub mod web_tls;

pub use file_name::{job_file, job_file_name, job_name_of};
pub use http::{ReloadRequest, ServiceState, serve_http};
pub use job::{
    GetJobViews, GetSd, GetStatus, GetView, JobActor, JobStatus, JobTargets, JobViewCounts, SdBody,
    StopJob, job_constructor,
};
pub use jobs::{ApplyError, JobSet, JobSetOptions};
pub use latency::LatencyHistogram;
pub use members::{MemberWatch, Members, ready_members};
pub use pipeline::{GetWork, Pipeline, PipelineWork};
pub use shard::Shard;
pub use view_query::parse_view_query;
pub use views::ViewQuery;
