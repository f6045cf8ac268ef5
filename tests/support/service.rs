//! `kubesd run`'s serving side for the end-to-end tests: a job set's jobs served over
//! HTTP on a free port of 127.0.0.1.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use kubesd::service::web::guard::WebGuard;
use kubesd::service::{Job, JobSet, ServiceState, serve_http};

/// Serves `jobs` as `kubesd run` does (with `guard`'s checks and TLS, if given): the
/// address bound and the server's handle, to stop it.
pub fn serve(
    jobs: Arc<RwLock<BTreeMap<String, Job>>>,
    guard: Option<Arc<WebGuard>>,
) -> (SocketAddr, ServerHandle) {
    let state = Arc::new(ServiceState {
        jobs,
        reload: None,
        engine_metrics: Default::default(),
        service_metrics: Default::default(),
    });
    let addr = "127.0.0.1:0".parse().expect("addr");
    let (server, bound) = serve_http(addr, state, guard).expect("listens");
    let handle = server.handle();
    actix_rt::spawn(server);
    (bound, handle)
}

/// Waits until every job of `jobs` has listed everything it discovers once (`/sd`
/// answers 503 before), for at most 20 s.
pub async fn wait_synced(jobs: &JobSet) {
    for (name, job) in jobs.jobs() {
        let mut polls = 0;
        while !job.status().synced {
            polls += 1;
            assert!(polls < 4_000, "job {name} never synced");
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
