//! [`Simulator`]: the in-process handle on a simulated cluster. Tests,
//! benchmarks, the generator and the churn driver write through it, and so
//! does the HTTP layer, so both paths run the same validation and the same
//! controllers.
//!
//! Every write and the controller reconcile it triggers run under one write
//! lock: two concurrent pod writes can then never leave endpoints computed
//! from a stale view.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::controller;
use super::error::ApiError;
use super::faults::{FaultRequest, Faults, Injection, WatchFault};
use super::metrics::SimulatorMetrics;
use super::patch::merge_patch;
use super::resource::Resource;
use super::store::{Store, WriteMode, Written};

struct Shared {
    store: Store,
    metrics: SimulatorMetrics,
    faults: Faults,
    write_lock: Mutex<()>,
    controllers: AtomicBool,
    gateway_api: AtomicBool,
    monitoring: AtomicBool,
}

/// A handle on one simulated cluster; clones share it.
#[derive(Clone)]
pub struct Simulator {
    shared: Arc<Shared>,
}

impl Simulator {
    /// An empty cluster retaining `history_limit` changes for watches, with
    /// the endpoints controllers on or off; `seed` makes uids reproducible.
    pub fn new(history_limit: usize, seed: u64, controllers: bool) -> Simulator {
        Simulator {
            shared: Arc::new(Shared {
                store: Store::new(history_limit, seed),
                metrics: SimulatorMetrics::default(),
                faults: Faults::default(),
                write_lock: Mutex::new(()),
                controllers: AtomicBool::new(controllers),
                gateway_api: AtomicBool::new(true),
                monitoring: AtomicBool::new(true),
            }),
        }
    }

    /// The underlying store (read access, resourceVersions, watch registry).
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The simulator's own metrics (the churn's pace), served at `/metrics`.
    pub fn metrics(&self) -> &SimulatorMetrics {
        &self.shared.metrics
    }

    /// The request-level fault switches.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    fn write_guard(&self) -> MutexGuard<'_, ()> {
        self.shared
            .write_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Turns the endpoints/endpointslice controllers on or off. Turning them
    /// on reconciles every service at once.
    pub fn set_controllers(&self, on: bool) {
        self.shared.controllers.store(on, Ordering::SeqCst);
        if on {
            let _guard = self.write_guard();
            controller::reconcile_all(self.store());
        }
    }

    /// Whether the endpoints/endpointslice controllers are on.
    pub fn controllers_enabled(&self) -> bool {
        self.shared.controllers.load(Ordering::SeqCst)
    }

    /// Serves the Gateway API's resources (Gateways, HTTPRoutes, GRPCRoutes) or not:
    /// off, their URLs answer 404 as a cluster without the CRDs does. Their objects
    /// stay stored either way.
    pub fn set_gateway_api(&self, on: bool) {
        self.shared.gateway_api.store(on, Ordering::SeqCst);
    }

    /// Whether the Gateway API's resources are served.
    pub fn gateway_api_served(&self) -> bool {
        self.shared.gateway_api.load(Ordering::SeqCst)
    }

    /// Serves prometheus-operator's resources (`monitoring.coreos.com`: its CRDs
    /// "installed", the default) or not: with `false`, their URLs answer 404 and
    /// discovery does not list the group.
    pub fn set_monitoring_served(&self, on: bool) {
        self.shared.monitoring.store(on, Ordering::SeqCst);
    }

    /// Whether prometheus-operator's resources are served.
    pub fn monitoring_served(&self) -> bool {
        self.shared.monitoring.load(Ordering::SeqCst)
    }

    fn after_write(&self, resource: Resource, written: &Written) {
        if self.shared.controllers.load(Ordering::SeqCst) {
            controller::on_write(self.store(), resource, written);
        }
    }

    /// Writes `object` per `mode`, runs the controllers, returns the stored object.
    pub fn write_object(
        &self,
        resource: Resource,
        mode: WriteMode,
        object: Value,
    ) -> Result<Written, ApiError> {
        let _guard = self.write_guard();
        let written = self.store().write(resource, mode, object)?;
        self.after_write(resource, &written);
        Ok(written)
    }

    /// Deletes an object, runs the controllers, returns its final state.
    pub fn delete_object(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
    ) -> Result<Written, ApiError> {
        let _guard = self.write_guard();
        let written = self.store().delete(resource, namespace, name)?;
        self.after_write(resource, &written);
        Ok(written)
    }

    /// Applies a JSON merge patch (RFC 7386) to an existing object. A
    /// `metadata.resourceVersion` in the patch is a precondition, as on the
    /// real server; renaming or moving the object is rejected.
    pub fn patch_object(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<Written, ApiError> {
        let _guard = self.write_guard();
        let Some(current) = self.store().get(resource, namespace, name) else {
            return Err(ApiError::not_found(resource.plural(), name));
        };
        if !patch.is_object() {
            return Err(ApiError::bad_request("a merge patch must be a JSON object"));
        }
        let mut object = (*current).clone();
        merge_patch(&mut object, patch);
        let same = |field: &str, want: &str| {
            let got = object
                .pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str);
            got.unwrap_or("") == want
        };
        let ns = if resource.namespaced() { namespace } else { "" };
        if !same("name", name) || (resource.namespaced() && !same("namespace", ns)) {
            return Err(ApiError::invalid(
                "metadata.name/namespace: field is immutable",
            ));
        }
        if patch.pointer("/metadata/resourceVersion").is_none()
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            meta.remove("resourceVersion");
        }
        let written = self.store().write(resource, WriteMode::Update, object)?;
        self.after_write(resource, &written);
        Ok(written)
    }

    /// Creates an object (409 if it exists); returns the new resourceVersion.
    pub fn create(&self, resource: Resource, object: Value) -> Result<u64, ApiError> {
        self.write_object(resource, WriteMode::Create, object)
            .map(|w| w.rv)
    }

    /// Replaces an object (404 if missing); returns the new resourceVersion.
    pub fn update(&self, resource: Resource, object: Value) -> Result<u64, ApiError> {
        self.write_object(resource, WriteMode::Update, object)
            .map(|w| w.rv)
    }

    /// Creates or replaces an object; returns the new resourceVersion.
    pub fn apply(&self, resource: Resource, object: Value) -> Result<u64, ApiError> {
        self.write_object(resource, WriteMode::Upsert, object)
            .map(|w| w.rv)
    }

    /// Same as [`Simulator::apply`].
    pub fn upsert(&self, resource: Resource, object: Value) -> Result<u64, ApiError> {
        self.apply(resource, object)
    }

    /// Deletes an object (404 if missing); returns the new resourceVersion.
    pub fn delete(&self, resource: Resource, namespace: &str, name: &str) -> Result<u64, ApiError> {
        self.delete_object(resource, namespace, name).map(|w| w.rv)
    }

    /// Merge-patches an object; returns the new resourceVersion.
    pub fn patch(
        &self,
        resource: Resource,
        namespace: &str,
        name: &str,
        patch: &Value,
    ) -> Result<u64, ApiError> {
        self.patch_object(resource, namespace, name, patch)
            .map(|w| w.rv)
    }

    /// One object as stored (no `kind`/`apiVersion`), if it exists.
    pub fn get(&self, resource: Resource, namespace: &str, name: &str) -> Option<Value> {
        self.store()
            .get(resource, namespace, name)
            .map(|o| (*o).clone())
    }

    /// All objects of a resource, optionally in one namespace, sorted by key.
    pub fn list(&self, resource: Resource, namespace: Option<&str>) -> Vec<Value> {
        self.store()
            .list(resource, namespace)
            .into_iter()
            .map(|o| (*o).clone())
            .collect()
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.store().current_rv()
    }

    /// Fault: close every open watch abruptly, optionally mid-event.
    pub fn drop_watches(&self, mid_event: bool) {
        self.store().signal_watches(WatchFault::Drop { mid_event });
    }

    /// Fault: write a bad line into every open watch.
    pub fn inject(&self, injection: Injection) {
        self.store().signal_watches(WatchFault::Inject(injection));
    }

    /// Fault: stall (or resume) every watch, open now or opened meanwhile.
    pub fn stall_watches(&self, stalled: bool) {
        self.faults().set_stalled(stalled);
        self.store().signal_watches(WatchFault::Stall(stalled));
    }

    /// Drops all retained watch history (older resourceVersions get 410).
    pub fn compact(&self) {
        self.store().compact();
    }

    /// Simulates an API-server restart with reset resourceVersions.
    pub fn restart(&self) {
        let _guard = self.write_guard();
        self.store().restart();
    }

    /// Applies a fault described as JSON (the `POST /sim/faults` body).
    pub fn apply_fault(&self, request: FaultRequest) {
        match request {
            FaultRequest::Fail { failure, count } => self.faults().fail_next(failure, count),
            FaultRequest::GoneNextWatch { count } => self.faults().gone_next_watches(count),
            FaultRequest::SplitEvents { count } => self.faults().split_next_events(count),
            FaultRequest::DropWatches { mid_event } => self.drop_watches(mid_event),
            FaultRequest::Inject { line } => self.inject(line),
            FaultRequest::Stall { on } => self.stall_watches(on),
            FaultRequest::Restart => self.restart(),
            FaultRequest::StreamingLists { mode } => self.faults().set_streaming_lists(mode),
            FaultRequest::Compact => self.compact(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_updates_and_respects_preconditions() {
        let sim = Simulator::new(100, 1, true);
        let rv = sim.create(
            Resource::Pods,
            json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1", "b": "2"}}}),
        );
        assert_eq!(rv, Ok(1));
        let rv = sim.patch(
            Resource::Pods,
            "ns",
            "p",
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
        );
        assert_eq!(rv, Ok(2));
        let pod = sim.get(Resource::Pods, "ns", "p").unwrap_or_default();
        assert_eq!(pod["metadata"]["labels"], json!({"b": "2", "c": "3"}));
        let stale = sim.patch(
            Resource::Pods,
            "ns",
            "p",
            &json!({"metadata": {"resourceVersion": "1"}}),
        );
        assert_eq!(stale.map_err(|e| e.code), Err(409));
        let rename = sim.patch(
            Resource::Pods,
            "ns",
            "p",
            &json!({"metadata": {"name": "q"}}),
        );
        assert_eq!(rename.map_err(|e| e.code), Err(422));
        assert_eq!(
            sim.patch(Resource::Pods, "ns", "zz", &json!({}))
                .map_err(|e| e.code),
            Err(404)
        );
    }
}
