//! Prometheus' HTTP API, the read-only part about targets, in the shapes Prometheus
//! 3.12 answers with (`web/api/v1/api.go`): `GET /api/v1/targets`,
//! `GET /api/v1/targets/relabel_steps` and `GET /api/v1/status/config`, each in
//! Prometheus' envelope.
//!
//! kubesd scrapes nothing, so an active target's scrape fields are those of a target
//! not yet scraped (`health` `unknown`, no last scrape). A job's targets are listed as
//! Prometheus' scrape pool holds them ([`Lens::Prometheus`]): a target Prometheus
//! could not make a scrape target of is neither listed nor counted, active targets with
//! the same labels are one, and dropped targets are listed up to the job's
//! `keep_dropped_targets` (all when 0), every one counted.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::active_stream::{ActiveList, success_with_active};
use super::config_yaml::config_yaml;
use super::dropped_counts::dropped_count;
use super::json::{bad_data, jobs_named, labels_object, query_param, success};
use super::listing::{Lens, TargetQuery, list_job};
use super::route::get_or_head;
use super::target_json::{Pool, dropped_json};
use crate::labels::Labels;
use crate::relabel::{RelabelConfig, relabel_steps as steps};
use crate::service::{Job, ServiceState};

/// Adds the routes.
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/api/v1/targets", get_or_head().to(targets))
        .route(
            "/api/v1/targets/relabel_steps",
            get_or_head().to(relabel_steps),
        )
        .route("/api/v1/status/config", get_or_head().to(status_config));
}

/// Which targets a request asks for: Prometheus' `state`, in any case: `active`,
/// `dropped`, `any` or empty for both; anything else for neither, as Prometheus reads
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct States {
    /// Active targets.
    pub active: bool,
    /// Dropped targets.
    pub dropped: bool,
}

impl States {
    /// The states `state` names, as Prometheus reads it.
    pub fn parse(state: &str) -> States {
        let state = state.to_lowercase();
        let any = state.is_empty() || state == "any";
        States {
            active: any || state == "active",
            dropped: any || state == "dropped",
        }
    }
}

/// How many dropped targets Prometheus' targets API lists for `job`: its
/// `keep_dropped_targets`, or all.
fn dropped_limit(job: &Job) -> usize {
    match job.config().map(|c| c.keep_dropped_targets) {
        None | Some(0) => usize::MAX,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

/// `GET /api/v1/targets?state=&scrapePool=`: the active and dropped targets of the
/// pool asked for (every pool when none is), and every pool's count of dropped
/// targets (`null` when dropped targets are not asked for).
async fn targets(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let query = req.query_string();
    let states = States::parse(&query_param(query, "state"));
    let wanted = query_param(query, "scrapePool");
    let mut active = ActiveList::default();
    let mut dropped = Vec::new();
    let mut counts = serde_json::Map::new();
    for (name, job) in jobs_named(&state, "") {
        if !wanted.is_empty() && name != wanted {
            if states.dropped {
                let count = dropped_count(&name, &job, Lens::Prometheus).await;
                counts.insert(name, count.into());
            }
            continue;
        }
        if !states.active && !states.dropped {
            continue;
        }
        let pool = Pool::of(&name, &job);
        let limit = if states.dropped {
            dropped_limit(&job)
        } else {
            0
        };
        let query = TargetQuery {
            lens: Lens::Prometheus,
            ..TargetQuery::new(pool.scrape.clone(), states.active, limit)
        };
        let listing = list_job(&job, query).await;
        dropped.extend(listing.dropped.iter().map(|t| dropped_json(&name, t)));
        active.add(pool, listing.active);
        if states.dropped {
            counts.insert(name, listing.dropped_total.into());
        }
    }
    let counts = match states.dropped {
        true => Value::Object(counts),
        false => Value::Null,
    };
    let rest = json!({"droppedTargets": dropped, "droppedTargetCounts": counts});
    success_with_active(active, rest)
}

/// `GET /api/v1/targets/relabel_steps?scrapePool=&labels=`: the job's rules applied
/// to `labels` one by one, as Prometheus' endpoint applies its pool's rules.
async fn relabel_steps(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let query = req.query_string();
    let pool = query_param(query, "scrapePool");
    if pool.is_empty() {
        return bad_data("no scrapePool parameter provided".into());
    }
    let text = query_param(query, "labels");
    if text.is_empty() {
        return bad_data("no labels parameter provided".into());
    }
    let map: std::collections::BTreeMap<String, String> = match serde_json::from_str(&text) {
        Ok(map) => map,
        Err(e) => return bad_data(format!("error parsing labels: {e}")),
    };
    let job = jobs_named(&state, &pool).into_iter().next();
    let Some(config) = job.as_ref().and_then(|(_, job)| job.config().cloned()) else {
        return bad_data(format!(
            "error retrieving scrape config: scrape pool {pool:?} not found"
        ));
    };
    let labels = Labels::from_pairs(map.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    success(json!({"steps": steps_json(&config.relabel, &config.rules, &labels)}))
}

/// Each rule with its output and `keep`, in Prometheus' shape.
pub fn steps_json(
    configs: &[RelabelConfig],
    rules: &[crate::relabel::CompiledRule],
    labels: &Labels,
) -> Vec<Value> {
    steps(labels, rules)
        .iter()
        .map(|step| {
            let rule = configs.get(step.rule).map(RelabelConfig::prometheus_json);
            json!({"rule": rule, "output": labels_object(&step.output), "keep": step.keep})
        })
        .collect()
}

/// `GET /api/v1/status/config`: the jobs kubesd runs as YAML, secrets redacted.
async fn status_config(state: web::Data<ServiceState>) -> HttpResponse {
    let jobs = jobs_named(&state, "");
    let configs: Vec<_> = jobs.iter().filter_map(|(_, job)| job.config()).collect();
    let configs: Vec<&crate::promconfig::Job> = configs.iter().map(|c| c.as_ref()).collect();
    match config_yaml(&configs) {
        Ok(yaml) => success(json!({"yaml": yaml})),
        Err(e) => HttpResponse::InternalServerError().json(json!({
            "status": "error",
            "errorType": "internal",
            "error": format!("cannot write the config as YAML: {e}"),
        })),
    }
}
