//! JSON pieces every endpoint of the API shares: Prometheus' envelope, label sets as
//! objects, and the job a request names.

use actix_web::HttpResponse;
use serde_json::{Map, Value, json};

use crate::labels::Labels;
use crate::service::{Job, ServiceState};

/// `{"status":"success","data":…}`, Prometheus' envelope.
pub fn success(data: Value) -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "success", "data": data}))
}

/// Prometheus' envelope for a bad request: 400 with `errorType` `bad_data`.
pub fn bad_data(error: String) -> HttpResponse {
    HttpResponse::BadRequest().json(json!({
        "status": "error",
        "errorType": "bad_data",
        "error": error,
    }))
}

/// A label set as a JSON object, in name order.
pub fn labels_object(labels: &Labels) -> Value {
    let map: Map<String, Value> = labels
        .iter()
        .map(|l| (l.name.to_string(), Value::from(l.value.as_str())))
        .collect();
    Value::Object(map)
}

/// The running jobs the query's `scrapePool` picks (all when it is empty), in name
/// order.
pub fn jobs_named(state: &ServiceState, pool: &str) -> Vec<(String, Job)> {
    let Ok(jobs) = state.jobs.read() else {
        return Vec::new();
    };
    jobs.iter()
        .filter(|(name, _)| pool.is_empty() || name.as_str() == pool)
        .map(|(name, job)| (name.clone(), job.clone()))
        .collect()
}

/// The value of query parameter `name`, decoded; empty when absent.
pub fn query_param(query: &str, name: &str) -> String {
    form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}
