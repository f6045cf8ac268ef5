//! kubesd's own JSON for its status page, next to Prometheus' shapes:
//!
//! - `GET /api/v1/kubesd/jobs`: each job's targets, dropped targets, sync, last change
//!   and the counts of the views asked for (targets per shard, node, member);
//! - `GET /api/v1/kubesd/targets?scrapePool=JOB&state=&filter=&limit=`:
//!   `/api/v1/targets`' shapes, each dropped target with `droppedBy`, the rule that
//!   dropped it; only targets `filter` matches ([`TargetFilter`]), at most `limit`
//!   active ones, every one counted (`activeTargetCounts`, `droppedTargetCounts`);
//! - `GET /api/v1/kubesd/watchers`: each URL watcher's state.

use std::sync::Arc;
use std::time::SystemTime;

use actix::prelude::*;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::active_stream::{ActiveList, success_with_active};
use super::dropped_counts::dropped_count;
use super::json::{bad_data, jobs_named, query_param, success};
use super::listing::{DropReason, DroppedTarget, Lens, TargetQuery, list_job};
use super::prometheus_api::States;
use super::route::get_or_head;
use super::target_filter::TargetFilter;
use super::target_json::{Pool, dropped_json};
use crate::UrlStatus;
use crate::service::views::query::view_query_text;
use crate::service::{Job, JobActor, ServiceState};

/// Dropped targets one answer lists per job, at most (all are counted): the status
/// page shows no more.
pub const DROPPED_TARGETS_LIMIT: usize = 1000;

/// Adds the routes.
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/api/v1/kubesd/jobs", get_or_head().to(jobs))
        .route("/api/v1/kubesd/targets", get_or_head().to(targets))
        .route("/api/v1/kubesd/watchers", get_or_head().to(watchers));
}

/// Seconds since the Unix epoch, as the page reads times.
fn unix_seconds(at: Option<SystemTime>) -> Value {
    at.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(Value::Null, |d| d.as_secs_f64().into())
}

/// `GET /api/v1/kubesd/jobs`.
async fn jobs(state: web::Data<ServiceState>) -> HttpResponse {
    let mut out = Vec::new();
    for (name, job) in jobs_named(&state, "") {
        let status = job.status();
        let dropped = dropped_count(&name, &job, Lens::Kubesd).await;
        let views: Vec<Value> = job
            .views()
            .iter()
            .flat_map(|(kind, buckets)| buckets.iter().map(move |(b, n)| (*kind, b, *n)))
            .map(|(kind, bucket, targets)| {
                json!({"view": view_query_text(kind, bucket), "targets": targets})
            })
            .collect();
        let zones: serde_json::Map<String, Value> = job
            .member_zones()
            .into_iter()
            .map(|(zone, n)| (zone.to_string(), n.into()))
            .collect();
        out.push(json!({
            "job": name,
            "targets": status.targets,
            "dropped": dropped,
            "synced": status.synced,
            "changesApplied": status.applied,
            "lastChange": unix_seconds(status.last_change),
            "views": views,
            "memberZones": zones,
        }));
    }
    success(Value::Array(out))
}

/// `GET /api/v1/kubesd/targets?scrapePool=JOB&state=&filter=&limit=`.
async fn targets(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let query = req.query_string();
    let states = States::parse(&query_param(query, "state"));
    let pool = query_param(query, "scrapePool");
    let filter = match TargetFilter::parse(&query_param(query, "filter")) {
        Ok(filter) => Arc::new(filter),
        Err(why) => return bad_data(why),
    };
    let active_limit = match query_param(query, "limit").as_str() {
        "" => usize::MAX,
        n => match n.parse::<usize>() {
            Ok(n) => n,
            Err(_) => return bad_data(format!("limit {n:?} is not a number")),
        },
    };
    let mut active = ActiveList::default();
    let mut dropped = Vec::new();
    let mut counts = serde_json::Map::new();
    let mut active_counts = serde_json::Map::new();
    for (name, job) in jobs_named(&state, &pool) {
        let pool = Pool::of(&name, &job);
        let limit = if states.dropped {
            DROPPED_TARGETS_LIMIT
        } else {
            0
        };
        let query = TargetQuery {
            active_limit: if states.active { active_limit } else { 0 },
            filter: Some(Arc::clone(&filter)),
            ..TargetQuery::new(pool.scrape.clone(), states.active, limit)
        };
        let listing = list_job(&job, query).await;
        active_counts.insert(name.clone(), listing.active_total.into());
        for target in &listing.dropped {
            let mut value = dropped_json(&name, target);
            value["droppedBy"] = dropped_by(&job, target);
            dropped.push(value);
        }
        active.add(pool, listing.active);
        counts.insert(name, listing.dropped_total.into());
    }
    let rest = json!({
        "droppedTargets": dropped,
        "droppedTargetCounts": counts,
        "droppedTargetsLimit": DROPPED_TARGETS_LIMIT,
        "activeTargetCounts": active_counts,
    });
    success_with_active(active, rest)
}

/// Why `target` is not served: the rule (its position and as written), or the reason.
fn dropped_by(job: &Job, target: &DroppedTarget) -> Value {
    match target.reason {
        DropReason::Rule(index) => {
            let rule = job
                .config()
                .and_then(|c| c.relabel.get(index))
                .map(|r| r.prometheus_json());
            json!({"reason": "rule", "index": index, "rule": rule})
        }
        DropReason::NoAddress => json!({"reason": "no __address__ after relabelling"}),
        DropReason::OtherShard => json!({"reason": "another shard's (--shard)"}),
    }
}

/// Sent by `/api/v1/kubesd/watchers` to a job actor: the state of every URL its
/// discovery needs, which its group holds (the same request [`crate::Subscription`]
/// makes: URL states are not part of a job's snapshot).
#[derive(Message)]
#[rtype(result = "Vec<UrlStatus>")]
pub struct UrlStatuses;

impl Handler<UrlStatuses> for JobActor {
    type Result = ResponseFuture<Vec<UrlStatus>>;

    fn handle(&mut self, _: UrlStatuses, _: &mut Context<Self>) -> Self::Result {
        match self.subscription() {
            Some(subscription) => Box::pin(subscription.status()),
            None => Box::pin(async { Vec::new() }),
        }
    }
}

/// `GET /api/v1/kubesd/watchers`: each URL once, with the jobs that need it.
async fn watchers(state: web::Data<ServiceState>) -> HttpResponse {
    let mut by_url: std::collections::BTreeMap<String, (UrlStatus, Vec<String>)> =
        Default::default();
    for (name, job) in jobs_named(&state, "") {
        for part in job.parts() {
            let statuses = part.addr.send(UrlStatuses).await.unwrap_or_default();
            for status in statuses {
                let entry = by_url
                    .entry(status.url.clone())
                    .or_insert_with(|| (status, Vec::new()));
                if !entry.1.contains(&name) {
                    entry.1.push(name.clone());
                }
            }
        }
    }
    let out: Vec<Value> = by_url
        .into_values()
        .map(|(status, jobs)| watcher_json(&status, &jobs))
        .collect();
    success(Value::Array(out))
}

/// One URL's state, as its watcher tells it.
fn watcher_json(status: &UrlStatus, jobs: &[String]) -> Value {
    let error = status.last_error.as_ref();
    json!({
        "url": status.url,
        "jobs": jobs,
        "phase": format!("{:?}", status.phase),
        "listMode": status.list_mode.as_str(),
        "encoding": status.encoding.map(|e| e.as_str()),
        "lastError": error.map(|e| e.to_string()),
        "lastErrorTime": unix_seconds(error.map(|e| e.at)),
        "configurationProblem": error.is_some_and(|e| e.configuration),
        "lastSync": unix_seconds(status.last_sync),
        "relists": status.relists,
        "gone": status.gone,
    })
}
