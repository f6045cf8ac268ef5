//! Every HTTP endpoint's handler; [`routes`] adds them to an app:
//!
//! - HTTP SD at `/sd/{job}` (`sd.rs`), `/metrics`, `/healthz`, `/ready`, `/-/reload`;
//! - the OpenTelemetry target allocator's API ([`allocator`]);
//! - Prometheus' own API shapes ([`prometheus_api`]): `/api/v1/targets`,
//!   `/api/v1/targets/relabel_steps` and `/api/v1/status/config`, so tools written for
//!   Prometheus' API read kubesd;
//! - kubesd's own for its status page ([`kubesd_api`]): jobs, a job's targets with the
//!   rule that dropped each, and the URL watchers;
//! - the status page at `/` ([`status_page`]), one self-contained HTML file.
//!
//! Every one of them passes the web config's checks as `/sd` does (the guard wraps the
//! whole app).

mod active_stream;
pub mod allocator;
mod allocator_shares;
mod config_yaml;
mod dropped_counts;
pub(crate) mod fleet_metrics;
pub mod go_query;
mod health;
mod json;
pub mod kubesd_api;
pub mod listing;
mod metrics_page;
pub mod monitors_api;
pub(crate) mod process_metrics;
pub mod prometheus_api;
pub mod route;
mod sd;
pub mod status_page;
pub mod target_filter;
pub mod target_json;

use actix_web::web;

use route::get_or_head;

/// Adds every endpoint to an app: HTTP SD, the process's own, the target allocator's
/// API, Prometheus' and kubesd's APIs and the status page.
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/sd", get_or_head().to(sd::job_names))
        // `{job:.*}`: a job name may hold `/` (`serviceMonitor/default/app/0`), raw
        // or escaped as `%2F`; both reach the same job.
        .route("/sd/{job:.*}", get_or_head().to(sd::sd))
        .route("/metrics", get_or_head().to(metrics_page::metrics))
        .route("/healthz", get_or_head().to(health::healthz))
        .route("/ready", get_or_head().to(health::ready))
        .route("/-/reload", web::post().to(health::reload))
        // The OpenTelemetry target allocator's API.
        .route(
            "/scrape_configs",
            get_or_head().to(allocator::scrape_configs),
        )
        .route("/jobs", get_or_head().to(allocator::jobs))
        .route(
            "/jobs/{job:.*}/targets",
            get_or_head().to(allocator::targets),
        );
    prometheus_api::routes(app);
    kubesd_api::routes(app);
    monitors_api::routes(app);
    status_page::routes(app);
}
