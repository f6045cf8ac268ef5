//! The churn driver: a seeded stream of pod adds, updates (readiness, label,
//! annotation and phase changes), deletes, rollouts (a Deployment's pods
//! moved to a new ReplicaSet, a CronJob's to its next Job) and HTTPRoute changes
//! (see [`super::gateway_api::churn_route`]), applied through the in-process API so
//! the controllers keep endpoints in step.
//!
//! Its unit is the pod change: one pod written (added, updated, marked terminating or
//! deleted), as a pod watch sees one event. Adds and deletes keep the cluster at the
//! pod count the churn first found, and it finishes the graceful
//! deletions it starts, as the kubelet does. Each action finds its pods through the
//! store's indexes, so a change costs the same in a cluster of any size.
//!
//! Tests call [`Churn::step`] for a number of pod changes; the demo and `kubesd
//! simulate` run [`Churn::start`], which keeps a pace ([`pace`]).

mod pace;
mod pod_edit;

use std::collections::VecDeque;

use serde_json::{Value, json};

use super::error::ApiError;
use super::generator::{hex, pod_ip, suffix};
use super::json_pointer::{at, at_mut, str_at};
use super::owners::{OwnerRef, controller_of, create_job, create_replica_set};
use super::resource::Resource;
use super::sim::Simulator;
use super::store::{Field, ObjectKey};
use super::timestamp;
pub use pace::{ChurnHandle, ChurnPace, PaceReport, PaceVerdict};
use pod_edit::{NewOwner, adopt, rename, set_in, set_ready, without_resource_version};

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

impl ChurnRates {
    fn total(&self) -> u32 {
        self.add + self.update + self.delete + self.rollout + self.route
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

impl ChurnStats {
    /// Pods written: each is one event on a pod watch.
    pub fn pod_changes(&self) -> usize {
        self.added + self.updated + self.deleted + self.terminating
    }
}

/// A seeded churn generator.
pub struct Churn {
    rng: fastrand::Rng,
    rates: ChurnRates,
    /// Next pod IP serial; starts far above the generator's range.
    serial: u64,
    /// The pod count adds and deletes keep the cluster at: the count the first step
    /// found.
    target_pods: Option<usize>,
    /// The pods this churn marked terminating, oldest first: it deletes them later,
    /// as the kubelet ends a graceful deletion.
    terminating: VecDeque<ObjectKey>,
}

/// The share of the pods that is terminating at a time (one in this many), beyond
/// which a delete ends the oldest graceful deletion instead of starting one.
const TERMINATING_SHARE: usize = 100;

/// How many times an action looks for a pod it can act on (a rollout, for one owned
/// by a ReplicaSet or a Job) before it gives up for this step.
const PICK_TRIES: usize = 8;

impl Churn {
    /// A churn generator: the same seed and rates over the same cluster
    /// give the same sequence of changes.
    pub fn new(seed: u64, rates: ChurnRates) -> Churn {
        Churn {
            rng: fastrand::Rng::with_seed(seed),
            rates,
            serial: 1 << 22,
            target_pods: None,
            terminating: VecDeque::new(),
        }
    }

    /// Applies churn actions until they have written at least `n` pods (a rollout
    /// writes two per pod it moves, so the last action may pass `n`). HTTPRoute changes
    /// ride along at their rate; actions that find nothing to change stop the step
    /// after `n` of them, so rates without pod actions make `n` route changes.
    pub fn step(&mut self, sim: &Simulator, n: usize) -> Result<ChurnStats, ApiError> {
        let mut stats = ChurnStats::default();
        self.step_into(sim, n, &mut stats)?;
        Ok(stats)
    }

    /// [`Churn::step`], counting into `stats` as it goes, so that what an error
    /// interrupted is still counted.
    fn step_into(
        &mut self,
        sim: &Simulator,
        n: usize,
        stats: &mut ChurnStats,
    ) -> Result<(), ApiError> {
        if self.rates.total() == 0 {
            return Ok(());
        }
        let pods = sim.store().count(Resource::Pods);
        self.target_pods.get_or_insert(pods);
        let goal = stats.pod_changes() + n;
        let mut idle = 0;
        while stats.pod_changes() < goal && idle < n {
            if sim.store().count(Resource::Pods) == 0 {
                break;
            }
            let before = stats.pod_changes();
            self.act(sim, stats)?;
            if stats.pod_changes() == before {
                idle += 1;
            }
        }
        Ok(())
    }

    /// One action, drawn by the rates.
    fn act(&mut self, sim: &Simulator, stats: &mut ChurnStats) -> Result<(), ApiError> {
        let r = self.rates;
        let pick = self.rng.u32(..r.total());
        if pick < r.add + r.delete {
            if self.grows(sim) {
                if let Some(pod) = sim.store().sample(Resource::Pods, &mut self.rng) {
                    self.add_like(sim, &pod, None)?;
                    stats.added += 1;
                }
            } else {
                self.delete(sim, stats)?;
            }
        } else if pick < r.add + r.delete + r.update {
            if let Some(pod) = sim.store().sample(Resource::Pods, &mut self.rng) {
                self.update(sim, &pod)?;
                stats.updated += 1;
            }
        } else if pick < r.add + r.delete + r.update + r.rollout {
            self.rollout(sim, stats)?;
        } else if super::gateway_api::churn_route(sim, &mut self.rng)? {
            stats.routes += 1;
        }
        Ok(())
    }

    /// Whether an add-or-delete adds: the one that brings the pod count back to the
    /// target, drawn by the rates at the target; never one whose rate is 0.
    fn grows(&mut self, sim: &Simulator) -> bool {
        let r = self.rates;
        if r.add == 0 || r.delete == 0 {
            return r.add > 0;
        }
        let pods = sim.store().count(Resource::Pods);
        match pods.cmp(&self.target_pods.unwrap_or(pods)) {
            std::cmp::Ordering::Less => true,
            std::cmp::Ordering::Greater => false,
            std::cmp::Ordering::Equal => self.rng.u32(..r.add + r.delete) < r.add,
        }
    }

    /// Deletes a pod. Once one pod in [`TERMINATING_SHARE`] is terminating, the oldest
    /// graceful deletion ends; otherwise a random pod goes, at once or (half the
    /// time) gracefully: it turns terminating (as kubelet shuts it down) and a later
    /// delete removes it. A terminating pod picked again goes at once.
    fn delete(&mut self, sim: &Simulator, stats: &mut ChurnStats) -> Result<(), ApiError> {
        let limit = (self.target_pods.unwrap_or(0) / TERMINATING_SHARE).max(1);
        while self.terminating.len() >= limit {
            let Some((ns, name)) = self.terminating.pop_front() else {
                break;
            };
            // Someone else (a rollout, a client) may have deleted it already.
            match sim.delete(Resource::Pods, &ns, &name) {
                Ok(_) => {
                    stats.deleted += 1;
                    return Ok(());
                }
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        let Some(pod) = sim.store().sample(Resource::Pods, &mut self.rng) else {
            return Ok(());
        };
        let (ns, name) = (
            str_at(&pod, "/metadata/namespace"),
            str_at(&pod, "/metadata/name"),
        );
        let terminating = at(&pod, "/metadata/deletionTimestamp").is_some();
        if terminating || self.rng.bool() {
            sim.delete(Resource::Pods, ns, name)?;
            stats.deleted += 1;
            return Ok(());
        }
        self.terminating
            .push_back((ns.to_string(), name.to_string()));
        let mut pod = (*pod).clone();
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
        Ok(())
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
        if at(&pod, "/status/podIP").is_some() {
            set_in(&mut pod, &["status", "podIP"], json!(ip));
            set_in(&mut pod, &["status", "podIPs"], json!([{"ip": ip}]));
        }
        self.new_container_ids(&mut pod);
        // Like a ReplicaSet controller, pick another random suffix while the name is
        // taken (a churn seeded like the generator draws the same suffixes). Looked up
        // first, so the pod is not copied for a create that could fail.
        let namespace = str_at(&pod, "/metadata/namespace").to_string();
        for _ in 0..8 {
            let name = str_at(&pod, "/metadata/name");
            if sim.store().get(Resource::Pods, &namespace, name).is_none() {
                break;
            }
            let name = format!("{base}-{}", suffix(&mut self.rng, 5));
            rename(&mut pod, &name);
        }
        sim.create(Resource::Pods, pod).map(|_| ())
    }

    /// Gives each container status that has a `containerID` a new one.
    fn new_container_ids(&mut self, pod: &mut Value) {
        for status in at_mut(pod, "/status/containerStatuses")
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

    /// Flips the pod's readiness, or changes a label, an annotation or its phase.
    fn update(&mut self, sim: &Simulator, pod: &Value) -> Result<(), ApiError> {
        let mut pod = pod.clone();
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
    fn rollout(&mut self, sim: &Simulator, stats: &mut ChurnStats) -> Result<(), ApiError> {
        let Some((ns, kind, old_owner)) = self.pick_owner(sim) else {
            return Ok(());
        };
        let old = sim
            .store()
            .find(Resource::Pods, Field::Owner, &ns, &kind, &old_owner);
        let Some(first) = old.first() else {
            return Ok(());
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
        let app = str_at(first, "/metadata/labels/app").to_string();
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
            _ => return Ok(()),
        };
        stats.rollouts += 1;
        for pod in &old {
            self.add_like(sim, pod, Some(&new_owner))?;
            stats.added += 1;
            match sim.delete(Resource::Pods, &ns, str_at(pod, "/metadata/name")) {
                Ok(_) => stats.deleted += 1,
                // Deleted meanwhile by another writer.
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        match sim.delete(resource, &ns, &old_owner) {
            Err(e) if e.code != 404 => Err(e),
            _ => Ok(()),
        }
    }

    /// The owner of a random pod, as (namespace, kind, name), if a ReplicaSet or a Job
    /// owns it: owners are drawn in proportion to their pods.
    fn pick_owner(&mut self, sim: &Simulator) -> Option<(String, String, String)> {
        (0..PICK_TRIES).find_map(|_| {
            let pod = sim.store().sample(Resource::Pods, &mut self.rng)?;
            let kind = str_at(&pod, "/metadata/ownerReferences/0/kind");
            (kind == "ReplicaSet" || kind == "Job").then(|| {
                (
                    str_at(&pod, "/metadata/namespace").to_string(),
                    kind.to_string(),
                    str_at(&pod, "/metadata/ownerReferences/0/name").to_string(),
                )
            })
        })
    }
}
