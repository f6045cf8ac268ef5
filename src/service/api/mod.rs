//! Read-only endpoints that show what discovery decided, next to `/sd`:
//!
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
mod config_yaml;
mod dropped_counts;
mod json;
pub mod kubesd_api;
pub mod listing;
pub mod monitors_api;
pub mod prometheus_api;
pub mod status_page;
pub mod target_filter;

use actix_web::web;

/// Adds the API's routes and the status page to an app.
pub fn routes(app: &mut web::ServiceConfig) {
    prometheus_api::routes(app);
    kubesd_api::routes(app);
    monitors_api::routes(app);
    status_page::routes(app);
}
