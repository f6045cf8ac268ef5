//! A monitor's generated entries handed to kubesd's config loader, so that its jobs run,
//! are served and are listed exactly as hand-written ones: the section's scrape
//! defaults as `global`, the section's API server for discovery that names none, and
//! `$(SHARD)` expanded as prometheus-operator's config reloader expands it for the one
//! shard of an unsharded Prometheus.

use serde_norway::{Mapping, Value};

use super::monitor::GeneratedJob;
use super::section::MonitorsSection;
use super::yaml::{Map, list};
use crate::promconfig::{Job, LoadError, LoadOptions, format_duration, parse_config_with};

/// What the loader made of a monitor's entries.
#[derive(Clone, Debug, Default)]
pub struct LoadedJobs {
    /// The jobs kubesd runs: those with Kubernetes discovery.
    pub jobs: Vec<Job>,
    /// The entries it does not run (a Probe's static targets, a ScrapeConfig's static,
    /// file or HTTP discovery): kubesd discovers only from Kubernetes.
    pub not_run: Vec<String>,
}

/// Loads `generated` (one monitor's entries) as jobs, with the loader's `options`
/// (dialect, kubeconfig) and environment `env` for placeholders the reloader would
/// expand (read only if `options.expand_reloader_vars`).
pub fn load_jobs(
    generated: &[GeneratedJob],
    section: &MonitorsSection,
    options: &LoadOptions,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<LoadedJobs, LoadError> {
    let text = document(generated, section);
    let reloader_env = |name: &str| match name {
        // The one shard of an unsharded Prometheus; a fleet reads shards as views.
        "SHARD" => Some(format!("{}", 0)),
        _ if options.expand_reloader_vars => env(name),
        _ => None,
    };
    let options = LoadOptions {
        expand_reloader_vars: true,
        ..options.clone()
    };
    // Relative file names (the section's kubeconfig) are the config file's.
    let path = section.dir.join("monitors");
    let loaded = parse_config_with(&text, &path, &options, &reloader_env)?;
    let not_run = generated
        .iter()
        .filter(|g| !loaded.jobs.iter().any(|j| j.name == g.name))
        .map(|g| g.name.clone())
        .collect();
    Ok(LoadedJobs {
        jobs: loaded.jobs,
        not_run,
    })
}

/// The config document: `global` from the section, then the entries.
fn document(generated: &[GeneratedJob], section: &MonitorsSection) -> String {
    let mut global = Map::new();
    global.put("scrape_interval", section.settings.scrape_interval.as_str());
    if let Some(timeout) = section.scrape_timeout {
        global.put("scrape_timeout", format_duration(timeout));
    }
    let entries = generated
        .iter()
        .map(|g| with_connection(g.config.clone(), &section.connection_keys))
        .collect();
    let mut doc = Map::new();
    doc.put("global", global);
    doc.put("scrape_configs", list(entries));
    // A mapping of strings, numbers and lists always serializes.
    serde_norway::to_string(&Value::from(doc)).unwrap_or_default()
}

/// `entry` with the section's connection keys in each `kubernetes_sd_configs` entry
/// that names no server and no client settings (prometheus-operator's entries name
/// none; a ScrapeConfig's may).
fn with_connection(mut entry: Value, connection: &Mapping) -> Value {
    if connection.is_empty() {
        return entry;
    }
    let Some(Value::Sequence(configs)) = entry.get_mut("kubernetes_sd_configs") else {
        return entry;
    };
    const WHAT_NOT_WHERE: [&str; 4] = ["role", "namespaces", "selectors", "attach_metadata"];
    for config in configs {
        let Value::Mapping(sd) = config else { continue };
        let names_where = sd
            .keys()
            .any(|k| !WHAT_NOT_WHERE.contains(&k.as_str().unwrap_or_default()));
        if !names_where {
            for (key, value) in connection {
                sd.insert(key.clone(), value.clone());
            }
        }
    }
    entry
}
