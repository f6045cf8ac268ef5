//! Prometheus' HTTP API, the read-only part about targets, in its documented shapes
//! (`docs/querying/api.md`): `GET /api/v1/targets`, `GET /api/v1/targets/relabel_steps`
//! and `GET /api/v1/status/config`, each in Prometheus' envelope.
//!
//! kubesd scrapes nothing, so an active target's scrape fields are those of a target
//! not yet scraped (`health` `unknown`, no last scrape). Dropped targets are listed up
//! to [`DROPPED_TARGETS_LIMIT`] per scrape pool, as Prometheus' `keep_dropped_targets`
//! bounds them; `droppedTargetCounts` counts them all.

use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use super::active_stream::{ActiveList, success_with_active};
use super::config_yaml::config_yaml;
use super::json::{bad_data, jobs_named, labels_object, query_param, success};
use super::listing::{ActiveTarget, DroppedTarget, ListTargets, Listing, TargetQuery};
use crate::labels::Labels;
use crate::relabel::{
    ADDRESS_LABEL, PARAM_PREFIX, RelabelConfig, ScrapeSettings, relabel_steps as steps, seeded,
};
use crate::service::web::http::get_or_head;
use crate::service::{Job, ServiceState};

/// Dropped targets one response lists per scrape pool, at most.
pub const DROPPED_TARGETS_LIMIT: usize = 1000;

/// Listings at once: each relabels every target of its jobs in their actors, so two
/// clients polling cannot make the actors do nothing else.
static LISTINGS: Semaphore = Semaphore::const_new(1);

/// Adds the routes.
pub fn routes(app: &mut web::ServiceConfig) {
    app.route("/api/v1/targets", get_or_head().to(targets))
        .route(
            "/api/v1/targets/relabel_steps",
            get_or_head().to(relabel_steps),
        )
        .route("/api/v1/status/config", get_or_head().to(status_config));
}

/// Which targets a request asks for: Prometheus' `state` (`active`, `dropped`,
/// `any`; anything else is `any`).
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
        match state.to_lowercase().as_str() {
            "active" => States {
                active: true,
                dropped: false,
            },
            "dropped" => States {
                active: false,
                dropped: true,
            },
            _ => States {
                active: true,
                dropped: true,
            },
        }
    }
}

/// A job's scrape settings with its own name: its config's, or the defaults.
pub fn scrape_of(name: &str, job: &Job) -> ScrapeSettings {
    match job.config() {
        Some(config) => config.scrape.clone(),
        None => ScrapeSettings::new(name),
    }
}

/// Every target of `job` as `query` asks, from each of its actors in config order.
pub async fn list_job(job: &Job, query: TargetQuery) -> Listing {
    // Never closed: a permit is always given, in turn.
    let _permit = LISTINGS.acquire().await;
    let mut listing = Listing::default();
    for part in job.parts() {
        // An actor that stopped (its job is stopping) lists nothing.
        if let Ok(more) = part.addr.send(ListTargets(query.clone())).await {
            listing.extend(more, &query);
        }
    }
    listing
}

/// `GET /api/v1/targets?state=&scrapePool=`.
async fn targets(req: HttpRequest, state: web::Data<ServiceState>) -> HttpResponse {
    let query = req.query_string();
    let states = States::parse(&query_param(query, "state"));
    let pool = query_param(query, "scrapePool");
    let mut active = ActiveList::default();
    let mut dropped = Vec::new();
    let mut counts = serde_json::Map::new();
    for (name, job) in jobs_named(&state, &pool) {
        let scrape = scrape_of(&name, &job);
        let limit = if states.dropped {
            DROPPED_TARGETS_LIMIT
        } else {
            0
        };
        let query = TargetQuery::new(scrape.clone(), states.active, limit);
        let listing = list_job(&job, query).await;
        dropped.extend(listing.dropped.iter().map(|t| dropped_json(&name, t)));
        active.add(&name, &scrape, listing.active);
        if states.dropped {
            counts.insert(name, listing.dropped_total.into());
        }
    }
    let mut rest = json!({"droppedTargets": dropped});
    if states.dropped {
        rest["droppedTargetCounts"] = Value::Object(counts);
    }
    success_with_active(active, rest)
}

/// An active target in Prometheus' shape.
pub fn active_json(pool: &str, scrape: &ScrapeSettings, target: &ActiveTarget) -> Value {
    let url = scrape_url(&target.labels);
    let interval = target.labels.get("__scrape_interval__");
    let timeout = target.labels.get("__scrape_timeout__");
    json!({
        "discoveredLabels": labels_object(&seeded(&target.discovered, scrape)),
        "labels": labels_object(&public_labels(&target.labels)),
        "scrapePool": pool,
        "scrapeUrl": url,
        "globalUrl": url,
        "lastError": "",
        "lastScrape": "0001-01-01T00:00:00Z",
        "lastScrapeDuration": 0,
        "health": "unknown",
        "scrapeInterval": interval.unwrap_or(&scrape.scrape_interval),
        "scrapeTimeout": timeout.unwrap_or(&scrape.scrape_timeout),
    })
}

/// A dropped target in Prometheus' shape.
pub fn dropped_json(pool: &str, target: &DroppedTarget) -> Value {
    json!({"discoveredLabels": labels_object(&target.discovered), "scrapePool": pool})
}

/// The labels Prometheus shows for a target it scrapes: those not starting with `__`,
/// and `instance` set to the address when the rules set none.
pub fn public_labels(labels: &Labels) -> Labels {
    let address = labels.get(ADDRESS_LABEL).unwrap_or("");
    let instance = labels.get("instance").unwrap_or(address);
    Labels::from_pairs(
        labels
            .iter()
            .filter(|l| !l.name.starts_with("__") && l.name.as_str() != "instance")
            .map(|l| (l.name.as_str(), l.value.as_str()))
            .chain((!instance.is_empty()).then_some(("instance", instance))),
    )
}

/// The URL a target is scraped at: its scheme, address, path and `__param_*` labels
/// (kubesd's output leaves out the scheme and path when they are the defaults).
pub fn scrape_url(labels: &Labels) -> String {
    let scheme = labels.get("__scheme__").unwrap_or("http");
    let path = labels.get("__metrics_path__").unwrap_or("/metrics");
    let address = labels.get(ADDRESS_LABEL).unwrap_or("");
    let mut query = form_urlencoded::Serializer::new(String::new());
    for label in labels.iter() {
        if let Some(name) = label.name.strip_prefix(PARAM_PREFIX) {
            query.append_pair(name, &label.value);
        }
    }
    let query = query.finish();
    let separator = if query.is_empty() { "" } else { "?" };
    format!("{scheme}://{address}{path}{separator}{query}")
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
