//! One pass over the monitors: select them, translate each whose inputs changed (the
//! monitor, or a Secret or ConfigMap it named last time), load its entries as jobs,
//! and give every selected monitor's jobs in the operator's order, or why it has none.
//! A monitor's outcome is kept with its inputs, so a pass translates only what changed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use super::cache::{CacheKey, ConfigCache, Undecodable};
use super::report::{MonitorReport, MonitorState, Rejection};
use crate::model::Role;
use crate::monitors::jobs::load_jobs;
use crate::monitors::model::{ConfigMapObject, SecretObject};
use crate::monitors::section::MonitorsSection;
use crate::monitors::{CredentialStore, Monitor, MonitorKind, translate};
use crate::promconfig::{Job, LoadError, LoadOptions};

/// What a pass needs besides the cache.
pub struct PassInputs<'a> {
    /// The section.
    pub section: &'a MonitorsSection,
    /// How the loader reads the generated entries.
    pub options: &'a LoadOptions,
    /// The names of the hand-written jobs, which win over a monitor's of the same name.
    pub hand_written: &'a BTreeSet<String>,
    /// Jobs that could not start, by name, and why.
    pub not_started: &'a BTreeMap<String, String>,
}

/// What a pass gives.
#[derive(Default)]
pub struct Pass {
    /// The selected monitors' jobs, in the operator's order.
    pub jobs: Vec<Job>,
    /// Every selected monitor, in the same order.
    pub monitors: Vec<MonitorReport>,
    /// The Secrets and ConfigMaps the selected monitors name.
    pub wanted: BTreeSet<CacheKey>,
}

/// The outcome of each monitor translated, with the inputs it was made of.
#[derive(Default)]
pub struct Translations {
    memo: BTreeMap<CacheKey, Memo>,
}

struct Memo {
    /// The monitor's version, and the version of each object it named (`None`: absent).
    inputs: (String, BTreeMap<CacheKey, Option<String>>),
    outcome: Outcome,
}

#[derive(Clone)]
enum Outcome {
    Jobs {
        jobs: Vec<Job>,
        not_run: Vec<String>,
        warnings: Vec<String>,
    },
    Rejected(Rejection),
}

impl Translations {
    /// Selects and translates the cache's monitors.
    pub fn pass(&mut self, cache: &ConfigCache, inputs: &PassInputs<'_>) -> Pass {
        let namespaces = cache.namespace_labels();
        let mut selected: Vec<(&CacheKey, &str, Result<&Monitor, &Undecodable>)> = Vec::new();
        for (key, entry) in cache.monitors() {
            let super::cache::Decoded::Monitor(decoded) = &entry.decoded else {
                continue;
            };
            let monitor = decoded.as_ref().as_ref().unwrap_or_else(|u| &u.shell);
            if inputs.section.selects(monitor, &namespaces) {
                selected.push((key, &entry.version, decoded.as_ref().as_ref()));
            }
        }
        // The operator's order: by kind, then by `namespace/name` as one string.
        selected.sort_by_cached_key(|(key, _, _)| (key.0, format!("{}/{}", key.1, key.2)));
        let keep: BTreeSet<&CacheKey> = selected.iter().map(|s| s.0).collect();
        self.memo.retain(|k, _| keep.contains(k));
        let mut pass = Pass::default();
        let mut taken: BTreeSet<String> = inputs.hand_written.clone();
        for (key, version, decoded) in selected {
            let memo = self.outcome(key, version, decoded, cache, inputs);
            pass.wanted.extend(memo.inputs.1.keys().cloned());
            let report = assemble(key, &memo.outcome, &mut taken, inputs.not_started);
            if report.state == MonitorState::Active
                && let Outcome::Jobs { jobs, .. } = &memo.outcome
            {
                pass.jobs.extend(jobs.iter().cloned());
            }
            pass.monitors.push(report);
        }
        pass
    }

    /// The monitor's outcome: the one kept, if its inputs are unchanged, else a new one.
    fn outcome(
        &mut self,
        key: &CacheKey,
        version: &str,
        decoded: Result<&Monitor, &Undecodable>,
        cache: &ConfigCache,
        inputs: &PassInputs<'_>,
    ) -> &Memo {
        let fresh = self.memo.get(key).is_some_and(|m| {
            m.inputs.0 == version
                && (m.inputs.1.iter()).all(|(k, v)| cache.version(k) == v.as_deref())
        });
        if !fresh {
            let memo = translate_one(key, version, decoded, cache, inputs);
            self.memo.insert(key.clone(), memo);
        }
        // Just inserted if it was not there.
        &self.memo[key]
    }
}

/// Translates and loads one monitor, recording what it named.
fn translate_one(
    key: &CacheKey,
    version: &str,
    decoded: Result<&Monitor, &Undecodable>,
    cache: &ConfigCache,
    inputs: &PassInputs<'_>,
) -> Memo {
    let recording = Recording {
        cache,
        named: RefCell::default(),
    };
    let outcome = match decoded {
        Err(u) => Outcome::Rejected(Rejection {
            reason: "undecodable",
            message: format!("{} {}/{}: {}", kind_of(key.0), key.1, key.2, u.message),
        }),
        Ok(monitor) => match translate(monitor, &inputs.section.settings, &recording) {
            Err(e) => Outcome::Rejected(Rejection {
                reason: e.reason.label(),
                message: e.to_string(),
            }),
            Ok(t) => {
                let env = |name: &str| std::env::var(name).ok();
                match load_jobs(&t.jobs, inputs.section, inputs.options, &env) {
                    Ok(loaded) => Outcome::Jobs {
                        jobs: loaded.jobs,
                        not_run: loaded.not_run,
                        warnings: t.warnings,
                    },
                    Err(e) => Outcome::Rejected(Rejection {
                        reason: "invalid_config",
                        message: format!(
                            "{} {}/{}: {}",
                            kind_of(key.0),
                            key.1,
                            key.2,
                            load_problems(&e)
                        ),
                    }),
                }
            }
        },
    };
    let named = recording.named.into_inner();
    let refs = named
        .into_iter()
        .map(|k| {
            let v = cache.version(&k).map(str::to_string);
            (k, v)
        })
        .collect();
    Memo {
        inputs: (version.to_string(), refs),
        outcome,
    }
}

/// The monitor's report; its jobs are taken unless a hand-written job or an earlier
/// monitor took one of their names, or one could not start.
fn assemble(
    key: &CacheKey,
    outcome: &Outcome,
    taken: &mut BTreeSet<String>,
    not_started: &BTreeMap<String, String>,
) -> MonitorReport {
    let mut report = MonitorReport {
        kind: kind_of(key.0),
        namespace: key.1.clone(),
        name: key.2.clone(),
        state: MonitorState::Rejected,
        rejection: None,
        jobs: Vec::new(),
        not_run: Vec::new(),
        warnings: Vec::new(),
    };
    let what = format!("{} {}/{}", report.kind, key.1, key.2);
    match outcome {
        Outcome::Rejected(r) => report.rejection = Some(r.clone()),
        Outcome::Jobs {
            jobs,
            not_run,
            warnings,
        } => {
            report.warnings = warnings.clone();
            report.not_run = not_run.clone();
            let clash = jobs.iter().find(|j| taken.contains(&j.name));
            let failed = jobs
                .iter()
                .find_map(|j| not_started.get(&j.name).map(|e| (j, e)));
            if let Some(job) = clash {
                report.rejection = Some(Rejection {
                    reason: "name_taken",
                    message: format!(
                        "{what}: job {:?} is already defined (a hand-written job of that name wins)",
                        job.name
                    ),
                });
            } else if let Some((job, why)) = failed {
                report.rejection = Some(Rejection {
                    reason: "start_failed",
                    message: format!("{what}: job {:?} cannot start: {why}", job.name),
                });
            } else {
                report.state = MonitorState::Active;
                report.jobs = jobs.iter().map(|j| j.name.clone()).collect();
                taken.extend(report.jobs.iter().cloned());
            }
        }
    }
    report
}

/// A load error's problems, without the config file's made-up path.
fn load_problems(e: &LoadError) -> String {
    match e {
        LoadError::Invalid { problems, .. } => problems
            .iter()
            .map(|p| format!("{}: {}", p.at, p.problem))
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

/// The monitor kind of a monitor's role.
pub fn kind_of(role: Role) -> MonitorKind {
    match role {
        Role::PodMonitor => MonitorKind::PodMonitor,
        Role::Probe => MonitorKind::Probe,
        Role::ScrapeConfig => MonitorKind::ScrapeConfig,
        _ => MonitorKind::ServiceMonitor,
    }
}

/// The cache as translation reads it, recording every Secret and ConfigMap looked up
/// (found or not): what the monitor names, to keep and to watch.
struct Recording<'a> {
    cache: &'a ConfigCache,
    named: RefCell<BTreeSet<CacheKey>>,
}

impl CredentialStore for Recording<'_> {
    fn secret(&self, namespace: &str, name: &str) -> Option<&SecretObject> {
        let key = (Role::Secret, namespace.to_string(), name.to_string());
        self.named.borrow_mut().insert(key);
        self.cache.secret(namespace, name)
    }

    fn config_map(&self, namespace: &str, name: &str) -> Option<&ConfigMapObject> {
        let key = (Role::ConfigMap, namespace.to_string(), name.to_string());
        self.named.borrow_mut().insert(key);
        self.cache.config_map(namespace, name)
    }
}
