//! `GET /api/v1/kubesd/monitors`: the `monitors:` section's selected monitors, each
//! with its state, its jobs (those kubesd runs and those it translates but does not
//! run) or why it has none, and the watches that read them. `data` is `null` when the
//! config has no `monitors:` section. Names Secrets, never their values.

use actix_web::{HttpResponse, web};
use serde_json::Value;

use super::json::success;
use super::route::get_or_head;
use crate::service::ServiceState;

/// Adds the route (GET and HEAD).
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/api/v1/kubesd/monitors", get_or_head().to(monitors));
}

async fn monitors(state: web::Data<ServiceState>) -> HttpResponse {
    let report = state.service_metrics.monitors.report();
    let data = report
        .map(|r| serde_json::to_value(&*r).unwrap_or(Value::Null))
        .unwrap_or(Value::Null);
    success(data)
}
