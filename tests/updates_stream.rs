//! `Subscription::updates()`, the target sets as a `futures::Stream` for an agent whose
//! core is not an actor, against the simulator over HTTP: the first item is the set as
//! it is, later ones follow changes, a slow reader gets the latest set rather than a
//! queue, and the stream ends when the subscription stops.

mod support;

use std::time::Duration;

use futures_util::StreamExt;
use kubesd::Discovery;
use kubesd::model::Role;
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster, SimulatorConfig};
use support::keep_all;

#[actix_rt::test]
async fn the_stream_yields_the_set_now_then_the_latest_after_changes_and_ends_with_the_subscription()
 {
    let config = SimulatorConfig {
        seed: 9,
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        seed: 9,
        nodes: 2,
        pods: 12,
        namespaces: 2,
        pods_per_workload: 3,
    };
    let running = SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts");
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let config = running.sd_config(Role::Pod);
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    let mut updates = sub.updates();
    let first = updates.next().await.expect("the set as it is");
    assert_eq!(first.len(), sub.targets().await.len());
    assert!(!first.is_empty());

    // Three changes while nobody reads: the next item is the set after all of them.
    let pods = sim.list(Resource::Pods, None);
    for (i, mut pod) in pods.into_iter().take(3).enumerate() {
        pod["metadata"]["labels"]["tier"] = serde_json::json!(format!("v{i}"));
        sim.update(Resource::Pods, pod).expect("pod updates");
    }
    let tiers = |set: &[kubesd::Labels]| {
        set.iter()
            .filter(|l| l.get("__meta_kubernetes_pod_label_tier").is_some())
            .count()
    };
    let mut latest = updates.next().await.expect("an update");
    while tiers(&latest) < tiers(&sub.targets().await) || tiers(&latest) == 0 {
        latest = actix_rt::time::timeout(Duration::from_secs(10), updates.next())
            .await
            .expect("the changes arrive")
            .expect("an update");
    }
    assert_eq!(
        *latest,
        *sub.targets().await,
        "the latest set, not a stale one"
    );

    sub.stop().await;
    let end = actix_rt::time::timeout(Duration::from_secs(10), async {
        while updates.next().await.is_some() {}
    })
    .await;
    assert!(end.is_ok(), "the stream ends with the subscription");
    running.stop().await;
}
