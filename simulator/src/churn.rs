//! The churn driver: a seeded stream of pod adds, updates (readiness, label,
//! annotation and phase changes), deletes, rollouts (a Deployment's pods
//! moved to a new ReplicaSet, a CronJob's to its next Job) and HTTPRoute changes
//! (see [`super::gateway_api::churn_route`]), applied through the in-process API so
//! the controllers keep endpoints in step.
//!
//! Tests call [`Churn::step`] for an exact number of changes; the demo runs
//! [`Churn::start`], which applies changes on an actix interval.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::error::ApiError;
use super::generator::{hex, pod_ip, suffix};
use super::owners::{OwnerRef, controller_of, create_job, create_replica_set};
use super::resource::Resource;
use super::sim::Simulator;
use super::timestamp;

/// Relative weights of the churn actions (0 disables one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChurnRates {
    /// New pod, cloned from an existing one of the same workload.
    pub add: u32,
    /// Readiness flip, label, annotation or phase change.
    pub update: u32,
    /// Pod deleted.
    pub delete: u32,
    /// Every pod of one ReplicaSet replaced by pods of a new one (a Deployment's
    /// rollout), or of one Job by pods of the next (a CronJob's next run).
    pub rollout: u32,
    /// An HTTPRoute's path, hostname or parent listener changed.
    pub route: u32,
}

impl Default for ChurnRates {
    fn default() -> ChurnRates {
        ChurnRates {
            add: 3,
            update: 10,
            delete: 3,
            rollout: 1,
            route: 1,
        }
    }
}

/// What [`Churn::step`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChurnStats {
    /// Pods added (rollouts included).
    pub added: usize,
    /// Pods updated.
    pub updated: usize,
    /// Pods deleted (rollouts included).
    pub deleted: usize,
    /// Pods marked terminating (graceful deletion started).
    pub terminating: usize,
    /// Rollouts and CronJob runs.
    pub rollouts: usize,
    /// HTTPRoutes changed.
    pub routes: usize,
}

/// A seeded churn generator.
pub struct Churn {
    rng: fastrand::Rng,
    rates: ChurnRates,
    /// Next pod IP serial; starts far above the generator's range.
    serial: u64,
}

/// A churn loop running on the actix runtime; dropping it does not stop it.
pub struct ChurnHandle {
    pub(crate) task: tokio::task::JoinHandle<()>,
}

impl ChurnHandle {
    /// Stops the loop.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Churn {
    /// A churn generator: the same seed and rates over the same cluster
    /// give the same sequence of changes.
    pub fn new(seed: u64, rates: ChurnRates) -> Churn {
        Churn {
            rng: fastrand::Rng::with_seed(seed),
            rates,
            serial: 1 << 22,
        }
    }

    /// Applies `n` churn actions now.
    pub fn step(&mut self, sim: &Simulator, n: usize) -> Result<ChurnStats, ApiError> {
        let mut stats = ChurnStats::default();
        let r = self.rates;
        let total = r.add + r.update + r.delete + r.rollout + r.route;
        if total == 0 {
            return Ok(stats);
        }
        for _ in 0..n {
            let pods = sim.store().list(Resource::Pods, None);
            if pods.is_empty() {
                break;
            }
            let pick = self.rng.u32(..total);
            let pod = &pods[self.rng.usize(..pods.len())];
            if pick < r.add {
                self.add_like(sim, pod, None)?;
                stats.added += 1;
            } else if pick < r.add + r.update {
                self.update(sim, pod)?;
                stats.updated += 1;
            } else if pick < r.add + r.update + r.delete {
                // Half the deletes are graceful: the pod first turns
                // terminating (as kubelet shuts it down), and a later delete
                // of a terminating pod removes it.
                let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
                if terminating || self.rng.bool() {
                    sim.delete(
                        Resource::Pods,
                        str_at(pod, "/metadata/namespace"),
                        str_at(pod, "/metadata/name"),
                    )?;
                    stats.deleted += 1;
                } else {
                    let mut pod = (**pod).clone();
                    set_in(
                        &mut pod,
                        &["metadata", "deletionTimestamp"],
                        json!(timestamp::now_rfc3339()),
                    );
                    set_in(
                        &mut pod,
                        &["metadata", "deletionGracePeriodSeconds"],
                        json!(30),
                    );
                    set_ready(&mut pod, false);
                    sim.update(Resource::Pods, without_resource_version(pod))?;
                    stats.terminating += 1;
                }
            } else if pick >= total - r.route {
                if super::gateway_api::churn_route(sim, &mut self.rng)? {
                    stats.routes += 1;
                }
            } else {
                let (added, deleted) = self.rollout(sim, &pods)?;
                stats.added += added;
                stats.deleted += deleted;
                if added > 0 {
                    stats.rollouts += 1;
                }
            }
        }
        Ok(stats)
    }

    /// Runs `steps_per_tick` actions every `every` on the current actix
    /// runtime until the handle is stopped. Errors are logged and skipped:
    /// the demo should keep churning.
    pub fn start(mut self, sim: Simulator, every: Duration, steps_per_tick: usize) -> ChurnHandle {
        let task = actix_rt::spawn(async move {
            let mut interval = tokio::time::interval(every.max(Duration::from_millis(1)));
            loop {
                interval.tick().await;
                if let Err(err) = self.step(&sim, steps_per_tick) {
                    tracing::warn!(%err, "simulator churn step failed");
                }
            }
        });
        ChurnHandle { task }
    }

    /// Runs about `per_second` actions a second, spread over ten ticks, as
    /// [`Churn::start`] does (the rate `kubesd simulate --churn` and `kubesd demo`
    /// take).
    pub fn start_per_second(self, sim: Simulator, per_second: usize) -> ChurnHandle {
        self.start(sim, Duration::from_millis(100), per_second.div_ceil(10))
    }

    /// Creates a new pod cloned from `template`, optionally for a new owner.
    fn add_like(
        &mut self,
        sim: &Simulator,
        template: &Value,
        new_owner: Option<&NewOwner>,
    ) -> Result<(), ApiError> {
        let mut pod = template.clone();
        let old_name = str_at(template, "/metadata/name");
        let base = match new_owner {
            Some(owner) => owner.reference.name.clone(),
            None => old_name
                .rsplit_once('-')
                .map_or(old_name, |(b, _)| b)
                .to_string(),
        };
        let name = format!("{base}-{}", suffix(&mut self.rng, 5));
        let ip = pod_ip(self.serial);
        self.serial += 1;
        rename(&mut pod, &name);
        if let Some(new_owner) = new_owner {
            adopt(&mut pod, new_owner);
        }
        if pod.pointer("/status/podIP").is_some() {
            set_in(&mut pod, &["status", "podIP"], json!(ip));
            set_in(&mut pod, &["status", "podIPs"], json!([{"ip": ip}]));
        }
        self.new_container_ids(&mut pod);
        // Like a ReplicaSet controller, pick another random suffix when the name is
        // taken (a churn seeded like the generator draws the same suffixes).
        for _ in 0..8 {
            match sim.create(Resource::Pods, pod.clone()) {
                Err(e) if e.code == 409 => {
                    let name = format!("{base}-{}", suffix(&mut self.rng, 5));
                    set_in(&mut pod, &["metadata", "name"], json!(name));
                }
                other => return other.map(|_| ()),
            }
        }
        sim.create(Resource::Pods, pod).map(|_| ())
    }

    /// Gives each container status that has a `containerID` a new one.
    fn new_container_ids(&mut self, pod: &mut Value) {
        for status in pod
            .pointer_mut("/status/containerStatuses")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if let Some(status) = status
                .as_object_mut()
                .filter(|s| s.contains_key("containerID"))
            {
                status.insert(
                    "containerID".into(),
                    json!(format!("containerd://{}", hex(&mut self.rng, 64))),
                );
            }
        }
    }

    fn update(&mut self, sim: &Simulator, pod: &Arc<Value>) -> Result<(), ApiError> {
        let mut pod = (**pod).clone();
        match self.rng.u8(..10) {
            0..=3 => {
                let ready = !super::controller::is_ready(&pod);
                set_ready(&mut pod, ready);
            }
            4..=5 => {
                let generation = json!(self.rng.u32(..1000).to_string());
                set_in(
                    &mut pod,
                    &["metadata", "labels", "churn-generation"],
                    generation,
                );
            }
            6..=8 => {
                let touched = json!(hex(&mut self.rng, 8));
                set_in(
                    &mut pod,
                    &["metadata", "annotations", "churn.example.com/touched"],
                    touched,
                );
            }
            _ => {
                // Running pods sometimes fail; failed or pending ones come back.
                let running = str_at(&pod, "/status/phase") == "Running";
                set_in(
                    &mut pod,
                    &["status", "phase"],
                    json!(if running { "Failed" } else { "Running" }),
                );
                set_ready(&mut pod, !running);
            }
        }
        sim.update(Resource::Pods, without_resource_version(pod))
            .map(|_| ())
    }

    /// Replaces every pod of one ReplicaSet with a pod of a new one, one by one, as a
    /// Deployment's rolling update does; or every pod of a CronJob's Job with a pod of
    /// its next Job. The new owner is created first, and the old one deleted with its
    /// last pod (its controller would keep it a while; the store stays bounded).
    fn rollout(
        &mut self,
        sim: &Simulator,
        pods: &[Arc<Value>],
    ) -> Result<(usize, usize), ApiError> {
        let mut by_owner: BTreeMap<(String, String, String), Vec<&Arc<Value>>> = BTreeMap::new();
        for pod in pods {
            let kind = str_at(pod, "/metadata/ownerReferences/0/kind");
            if kind == "ReplicaSet" || kind == "Job" {
                let key = (
                    str_at(pod, "/metadata/namespace").to_string(),
                    kind.to_string(),
                    str_at(pod, "/metadata/ownerReferences/0/name").to_string(),
                );
                by_owner.entry(key).or_default().push(pod);
            }
        }
        if by_owner.is_empty() {
            return Ok((0, 0));
        }
        let pick = self.rng.usize(..by_owner.len());
        let Some(((ns, kind, old_owner), old)) = by_owner.into_iter().nth(pick) else {
            return Ok((0, 0));
        };
        let resource = if kind == "Job" {
            Resource::Jobs
        } else {
            Resource::ReplicaSets
        };
        let parent = sim
            .store()
            .get(resource, &ns, &old_owner)
            .and_then(|o| controller_of(&o));
        let app = str_at(old[0], "/metadata/labels/app").to_string();
        let hash = suffix(&mut self.rng, 10);
        let new_owner = match (kind.as_str(), parent) {
            ("ReplicaSet", Some(deployment)) if deployment.kind == "Deployment" => {
                let rs = create_replica_set(sim, &ns, &app, &hash, &deployment)?;
                NewOwner::replica_set(rs, &hash)
            }
            // A ReplicaSet the simulator does not hold (its pods were written directly):
            // only the pods' reference changes.
            ("ReplicaSet", _) => {
                let rs = OwnerRef {
                    api_version: "apps/v1".into(),
                    kind: "ReplicaSet".into(),
                    name: format!("{app}-{hash}"),
                    uid: String::new(),
                };
                NewOwner::replica_set(rs, &hash)
            }
            ("Job", Some(cron_job)) if cron_job.kind == "CronJob" => {
                let name = format!("{}-{hash}", cron_job.name);
                NewOwner::job(create_job(sim, &ns, &name, &app, Some(&cron_job))?)
            }
            // A Job of its own runs once: nothing replaces it.
            _ => return Ok((0, 0)),
        };
        for pod in &old {
            self.add_like(sim, pod, Some(&new_owner))?;
            sim.delete(Resource::Pods, &ns, str_at(pod, "/metadata/name"))?;
        }
        match sim.delete(resource, &ns, &old_owner) {
            Err(e) if e.code != 404 => return Err(e),
            _ => {}
        }
        Ok((old.len(), old.len()))
    }
}

/// The owner a rollout moves pods to, and the labels by which its pods name it.
struct NewOwner {
    reference: OwnerRef,
    labels: Vec<(&'static str, String)>,
}

impl NewOwner {
    /// A Deployment's ReplicaSet, for pods of template `hash`.
    fn replica_set(reference: OwnerRef, hash: &str) -> NewOwner {
        NewOwner {
            reference,
            labels: vec![("pod-template-hash", hash.to_string())],
        }
    }

    /// A Job, whose pods carry its name.
    fn job(reference: OwnerRef) -> NewOwner {
        let name = reference.name.clone();
        NewOwner {
            labels: vec![
                ("job-name", name.clone()),
                ("batch.kubernetes.io/job-name", name),
            ],
            reference,
        }
    }
}

/// Drops `metadata.resourceVersion`, so an update is unconditional (churn
/// is the only writer that matters; it must not trip over its own writes).
fn without_resource_version(mut pod: Value) -> Value {
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    pod
}

/// Sets `value` at `path`, creating missing objects on the way. Objects may
/// have come over HTTP in any shape, so a non-object on the path means the
/// change is skipped rather than a panic.
fn set_in(v: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for key in parents {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        cur = map.entry(key.to_string()).or_insert_with(|| json!({}));
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Sets the pod's Ready/ContainersReady conditions and container readiness.
fn set_ready(pod: &mut Value, ready: bool) {
    let status = if ready { "True" } else { "False" };
    for cond in pod
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if matches!(
            cond.get("type").and_then(Value::as_str),
            Some("Ready" | "ContainersReady")
        ) {
            set_in(cond, &["status"], json!(status));
        }
    }
    for cs in pod
        .pointer_mut("/status/containerStatuses")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        set_in(cs, &["ready"], json!(ready));
    }
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}
/// A copy of a pod named `name`: the fields the server sets are removed, and a
/// StatefulSet pod's own-name label follows.
fn rename(pod: &mut Value, name: &str) {
    if let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) {
        for server_owned in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
        ] {
            meta.remove(server_owned);
        }
        meta.insert("name".into(), json!(name));
    }
    if pod
        .pointer("/metadata/labels/statefulset.kubernetes.io~1pod-name")
        .is_some()
    {
        set_in(
            pod,
            &["metadata", "labels", "statefulset.kubernetes.io/pod-name"],
            json!(name),
        );
    }
}

/// The pod's labels and first owner reference made those of `owner`.
fn adopt(pod: &mut Value, owner: &NewOwner) {
    for (label, value) in &owner.labels {
        set_in(pod, &["metadata", "labels", label], json!(value));
    }
    if let Some(reference) = pod
        .pointer_mut("/metadata/ownerReferences/0")
        .and_then(Value::as_object_mut)
    {
        reference.insert("name".into(), json!(owner.reference.name));
        if !owner.reference.uid.is_empty() {
            reference.insert("uid".into(), json!(owner.reference.uid));
        }
    }
}
