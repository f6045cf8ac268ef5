//! The engine against the simulator over real HTTP: after adds, updates, deletes,
//! dropped connections, 410s and a server restart, every subscription's targets equal
//! the labels computed directly from the simulator's state.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use kubesd::api::RoleSelector;
use kubesd::metrics::Metrics;
use kubesd::model::Role;
use kubesd::simulator::owners::{create_cron_job, create_deployment};
use kubesd::simulator::{Churn, ChurnRates, ClusterSpec, Failure, Resource, SimulatedCluster};
use kubesd::{Discovery, SdConfig};
use serde_json::json;
use support::{converge, keep_all};

async fn cluster(seed: u64) -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 4,
        pods: 40,
        namespaces: 3,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    SimulatedCluster::seeded(seed, spec)
        .await
        .expect("cluster starts")
}

fn gone_count(metrics: &Metrics) -> u64 {
    metrics.role_total(Role::Pod, |m| m.gone.get())
}

fn relist_count(metrics: &Metrics) -> u64 {
    metrics.role_total(Role::Pod, |m| m.relists.total())
}

fn churn(seed: u64) -> Churn {
    Churn::new(seed, ChurnRates::default())
}

#[actix_rt::test]
async fn pods_converge_through_adds_updates_and_deletes() {
    let running = cluster(1).await;
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let config = running.sd_config(Role::Pod);
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    converge(&sub, sim, &config, "initial list").await;
    assert!(!sub.targets().await.is_empty());

    let mut churn = churn(11);
    for round in 0..3 {
        churn.step(sim, 25).expect("churn");
        converge(&sub, sim, &config, &format!("churn round {round}")).await;
    }
    sub.stop().await;
    running.stop().await;
}

#[actix_rt::test]
async fn dropped_connections_and_410s_lose_nothing() {
    let running = cluster(2).await;
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let config = running.sd_config(Role::Pod);
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    let mut churn = churn(22);

    // A connection cut in the middle of an event, with changes made meanwhile.
    sim.drop_watches(true);
    churn.step(sim, 20).expect("churn");
    converge(&sub, sim, &config, "after a mid-event drop").await;

    // The next watch is answered 410 as an HTTP status: relist.
    let gone_before = gone_count(discovery.metrics());
    let relists_before = relist_count(discovery.metrics());
    sim.faults().gone_next_watches(1);
    sim.drop_watches(false);
    churn.step(sim, 20).expect("churn");
    converge(&sub, sim, &config, "after an HTTP 410").await;

    // History compacted while the watcher is disconnected (its reconnects are refused
    // meanwhile): it comes back with a resourceVersion the server no longer has, gets a
    // 410 ERROR event, and relists.
    sim.faults().fail_next(Failure::ServerError, u32::MAX);
    sim.drop_watches(false);
    churn.step(sim, 20).expect("churn");
    sim.compact();
    sim.faults().fail_next(Failure::ServerError, 0);
    converge(&sub, sim, &config, "after compaction").await;
    assert!(
        gone_count(discovery.metrics()) >= gone_before + 2,
        "both 410s were seen"
    );
    assert!(
        relist_count(discovery.metrics()) >= relists_before + 2,
        "and both caused a relist"
    );

    // The API server restarts with its resourceVersions reset.
    sim.restart();
    churn.step(sim, 20).expect("churn");
    converge(&sub, sim, &config, "after a restart").await;
    running.stop().await;
}

#[actix_rt::test]
async fn pods_and_endpoints_follow_the_objects_they_read() {
    let running = cluster(3).await;
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let mut churn = churn(33);
    // Pods read their node (whose labels they share, built once per node object) and
    // namespace; endpoints also their pods and services.
    for role in [Role::Pod, Role::Endpoints, Role::EndpointSlice] {
        let mut config = SdConfig::new(role, running.url());
        config.attach_metadata.node = true;
        config.attach_metadata.namespace = true;
        let sub = discovery
            .subscribe(&config, keep_all)
            .await
            .expect("subscribes");
        sub.synced().await;
        converge(&sub, sim, &config, "initial list").await;

        // A node label changes: every pod and endpoint on that node must show it
        // (dependency refresh at the flusher's tick).
        let node = sim
            .list(Resource::Nodes, None)
            .into_iter()
            .next()
            .expect("a node");
        let name = node["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        sim.patch(
            Resource::Nodes,
            "",
            &name,
            &json!({"metadata": {"labels": {"kubesd-test": format!("{role}")}}}),
        )
        .expect("node patch");
        converge(&sub, sim, &config, "after a node label change").await;

        let namespace = sim
            .list(Resource::Namespaces, None)
            .into_iter()
            .next()
            .expect("a namespace");
        let ns = namespace["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        sim.patch(
            Resource::Namespaces,
            "",
            &ns,
            &json!({"metadata": {"labels": {"team": "payments"}}}),
        )
        .expect("namespace patch");
        converge(&sub, sim, &config, "after a namespace label change").await;

        churn.step(sim, 30).expect("churn");
        converge(&sub, sim, &config, "after pod churn").await;
        sub.stop().await;
    }
    running.stop().await;
}

#[actix_rt::test]
async fn every_role_with_namespaces_and_selectors() {
    let running = cluster(4).await;
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let namespaces: Vec<String> = sim
        .list(Resource::Namespaces, None)
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
        .filter(|n| n != "default" && !n.starts_with("kube-"))
        .take(2)
        .collect();
    assert_eq!(namespaces.len(), 2, "the generator makes namespaces");
    let mut subs = Vec::new();
    for role in Role::DISCOVERY {
        let mut config = SdConfig::new(role, running.url());
        if role != Role::Node {
            config.namespaces.names = namespaces.clone();
        }
        if role == Role::Pod {
            config.selectors.push(RoleSelector {
                role: "pod".into(),
                label: "kubesd-test!=out".into(),
                field: "status.phase=Running".into(),
            });
        }
        let sub = discovery
            .subscribe(&config, keep_all)
            .await
            .expect("subscribes");
        subs.push((config, sub));
    }
    for (config, sub) in &subs {
        sub.synced().await;
        converge(sub, sim, config, "initial list").await;
    }

    // A pod leaves the pod job's selector, then comes back.
    let pod = sim
        .list(Resource::Pods, Some(&namespaces[0]))
        .into_iter()
        .find(|p| p["status"]["phase"] == "Running")
        .expect("a running pod");
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for value in ["out", "in"] {
        sim.patch(
            Resource::Pods,
            &namespaces[0],
            &name,
            &json!({"metadata": {"labels": {"kubesd-test": value}}}),
        )
        .expect("pod patch");
        let (config, sub) = &subs[1];
        converge(sub, sim, config, &format!("after the pod moved {value}")).await;
    }

    churn(44).step(sim, 40).expect("churn");
    for (config, sub) in &subs {
        converge(sub, sim, config, "after churn").await;
    }
    running.stop().await;
}

#[actix_rt::test]
async fn jobs_with_one_key_share_a_group_and_the_last_to_leave_stops_it() {
    let running = cluster(5).await;
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let pods = running.sd_config(Role::Pod);
    let endpoints = running.sd_config(Role::Endpoints);
    let mut other = running.sd_config(Role::Pod);
    other.namespaces.names = vec!["default".into()];

    let a = discovery
        .subscribe(&pods, keep_all)
        .await
        .expect("subscribes");
    let b = discovery
        .subscribe(&pods, keep_all)
        .await
        .expect("subscribes");
    let c = discovery
        .subscribe(&endpoints, keep_all)
        .await
        .expect("subscribes");
    assert_eq!(
        discovery.groups(),
        1,
        "same server, namespaces and selectors"
    );
    let d = discovery
        .subscribe(&other, keep_all)
        .await
        .expect("subscribes");
    assert_eq!(discovery.groups(), 2);

    for s in [&a, &b, &c, &d] {
        s.synced().await;
    }
    assert_eq!(*a.targets().await, *b.targets().await);
    for s in [a, b, c, d] {
        s.stop().await;
    }
    // Groups leave the registry as they stop.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while discovery.groups() > 0 && std::time::Instant::now() < deadline {
        actix_rt::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(discovery.groups(), 0);
    running.stop().await;
}

/// A pod's deployment and cronjob labels come through its owner (`attach_metadata`):
/// when a ReplicaSet or a Job gets a new owner, its pods' targets follow, while the
/// pods themselves stay as they were.
#[actix_rt::test]
async fn a_new_owner_of_a_replicaset_or_a_job_relabels_its_pods_without_the_pods_changing() {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 60,
        namespaces: 2,
        pods_per_workload: 3,
        ..ClusterSpec::default()
    };
    let running = SimulatedCluster::seeded(11, spec)
        .await
        .expect("cluster starts");
    assert!(running.made.deployments > 0 && running.made.cron_jobs > 0);
    let sim = running.sim();
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let mut config = running.sd_config(Role::Pod);
    config.attach_metadata.deployment = true;
    config.attach_metadata.cronjob = true;
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    converge(&sub, sim, &config, "the generated cluster").await;

    // One ReplicaSet of a Deployment, one Job of a CronJob, and their pods.
    let owned_by = |resource: Resource, kind: &str| {
        sim.list(resource, None)
            .into_iter()
            .find(|o| o["metadata"]["ownerReferences"][0]["kind"] == kind)
            .unwrap_or_else(|| panic!("a {resource:?} owned by a {kind}"))
    };
    let rs = owned_by(Resource::ReplicaSets, "Deployment");
    let job = owned_by(Resource::Jobs, "CronJob");
    let pods_before = sim.list(Resource::Pods, None);
    let name_of = |o: &serde_json::Value| o["metadata"]["name"].as_str().unwrap_or("").to_string();
    let pods_of = |owner: &serde_json::Value| -> BTreeSet<String> {
        pods_before
            .iter()
            .filter(|p| p["metadata"]["ownerReferences"][0]["name"] == owner["metadata"]["name"])
            .map(name_of)
            .collect()
    };
    let (rs_pods, job_pods) = (pods_of(&rs), pods_of(&job));
    assert!(!rs_pods.is_empty() && !job_pods.is_empty());

    // New owners for both, as an adoption would make them.
    let ns_of = |o: &serde_json::Value| {
        o["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let deployment = create_deployment(sim, &ns_of(&rs), "adopter", "adopter").expect("deployment");
    let cron_job = create_cron_job(sim, &ns_of(&job), "nightly", "nightly").expect("cronjob");
    for (resource, mut object, owner) in [
        (Resource::ReplicaSets, rs, deployment),
        (Resource::Jobs, job, cron_job),
    ] {
        object["metadata"]["ownerReferences"] = json!([owner.to_json()]);
        sim.update(resource, object).expect("owner changes");
    }
    converge(&sub, sim, &config, "the new owners").await;

    assert_eq!(
        sim.list(Resource::Pods, None),
        pods_before,
        "the pods did not change"
    );
    let targets = sub.targets().await;
    let label_of = |pods: &BTreeSet<String>, label: &str| -> BTreeSet<String> {
        targets
            .iter()
            .filter(|t| {
                t.get("__meta_kubernetes_pod_name")
                    .is_some_and(|n| pods.contains(n))
            })
            .map(|t| t.get(label).unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        label_of(&rs_pods, "__meta_kubernetes_pod_deployment_name"),
        BTreeSet::from(["adopter".to_string()])
    );
    assert_eq!(
        label_of(&job_pods, "__meta_kubernetes_pod_cronjob_name"),
        BTreeSet::from(["nightly".to_string()])
    );
    sub.stop().await;
    running.stop().await;
}
