//! A target as Prometheus' targets API shows it: its pool, its JSON, its public labels
//! and the URL it is scraped at.

use serde_json::{Value, json};

use super::go_query::{encode_values, escape_path};
use super::json::labels_object;
use super::listing::{ActiveTarget, DroppedTarget, scrape_of};
use crate::labels::Labels;
use crate::relabel::{ADDRESS_LABEL, PARAM_PREFIX, ScrapeSettings, seeded};
use crate::service::Job;

/// A job as a scrape pool: its name and what its targets' URLs are made of.
#[derive(Clone, Debug)]
pub struct Pool {
    /// The job's name.
    pub name: String,
    /// Its scrape settings, with its own name.
    pub scrape: ScrapeSettings,
    /// Its `params`, every value: the URL's query before `__param_*` labels.
    pub params: Vec<(String, Vec<String>)>,
}

impl Pool {
    /// `job`, called `name`: its config's settings, or the defaults.
    pub fn of(name: &str, job: &Job) -> Pool {
        Pool {
            name: name.to_string(),
            scrape: scrape_of(name, job),
            params: job.config().map(|c| c.params.clone()).unwrap_or_default(),
        }
    }
}

/// An active target in Prometheus' shape.
pub fn active_json(pool: &Pool, target: &ActiveTarget) -> Value {
    let url = scrape_url(&target.labels, &pool.params, &pool.scrape.metrics_path);
    let scrape = &pool.scrape;
    let interval = target.labels.get("__scrape_interval__");
    let timeout = target.labels.get("__scrape_timeout__");
    json!({
        "discoveredLabels": labels_object(&seeded(&target.discovered, scrape)),
        "labels": labels_object(&public_labels(&target.labels)),
        "scrapePool": pool.name,
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

/// The URL a target is scraped at, as Prometheus writes it (`Target.URL`): its
/// scheme, address and path (kubesd's output leaves out the scheme and path when they
/// are the defaults, and has no path label when the job's `metrics_path` is empty:
/// then `job_path`, the job's), and as query the job's `params`, every value, each
/// one's first value replaced by its `__param_<name>` label, and the other `__param_*`
/// labels; names in order, escaped as Go escapes a query.
pub fn scrape_url(labels: &Labels, params: &[(String, Vec<String>)], job_path: &str) -> String {
    let scheme = labels.get("__scheme__").unwrap_or("http");
    let default_path = if job_path.is_empty() { "" } else { "/metrics" };
    let path = labels.get("__metrics_path__").unwrap_or(default_path);
    let address = labels.get(ADDRESS_LABEL).unwrap_or("");
    let mut query: Vec<(String, Vec<String>)> = params.to_vec();
    for label in labels.iter() {
        let Some(name) = label.name.strip_prefix(PARAM_PREFIX) else {
            continue;
        };
        match query
            .iter_mut()
            .find(|(n, values)| n == name && !values.is_empty())
        {
            Some((_, values)) => values[0] = label.value.to_string(),
            None => query.push((name.to_string(), vec![label.value.to_string()])),
        }
    }
    let query = encode_values(&query);
    let separator = if query.is_empty() { "" } else { "?" };
    let slash = if path.is_empty() || path.starts_with('/') {
        ""
    } else {
        "/"
    };
    let path = escape_path(path);
    format!("{scheme}://{address}{slash}{path}{separator}{query}")
}
