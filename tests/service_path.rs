//! The service path (`kubesd run`'s jobs, in-process) against the simulator over HTTP:
//! each job's `/sd` body converges to the simulator's objects through the job's
//! relabelling, and the work done for a change is proportional to the change. The work
//! is counted (objects relabelled, bodies changed), not timed.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use kubesd::model::Role;
use kubesd::promconfig::{LoadedConfig, parse_config};
use kubesd::relabel::{Target, process};
use kubesd::service::{Job, JobSet, JobSetOptions, Shard};
use kubesd::simulator::{ClusterSpec, Resource, SimulatedCluster};
use kubesd::{Discovery, SdConfig};
use support::expected;

/// One target as a set of labels (the `__address__` included).
type Flat = BTreeMap<String, String>;

async fn cluster() -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 3,
        pods: 40,
        namespaces: 3,
        pods_per_workload: 4,
        ..ClusterSpec::default()
    };
    SimulatedCluster::seeded(5, spec)
        .await
        .expect("cluster starts")
}

/// Jobs `a` and `b` relabel alike and never read `job`: they share one job actor. Job
/// `c` copies `job` into another label, so its targets depend on its name: a job actor
/// of its own.
fn config(url: &str) -> LoadedConfig {
    let rules = r#"
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Unknown
        action: drop"#;
    let job = |name: &str, extra: &str| {
        format!(
            "  - job_name: {name}\n    kubernetes_sd_configs:\n      - role: pod\n        api_server: {url}\n    relabel_configs:{rules}{extra}\n"
        )
    };
    let text = format!(
        "scrape_configs:\n{}{}{}",
        job("a", ""),
        job("b", ""),
        job(
            "c",
            "\n      - source_labels: [job]\n        target_label: job_copy"
        ),
    );
    parse_config(&text, Path::new("service_path.yml")).expect("config loads")
}

/// What job `name`'s `/sd` must hold: the simulator's pods through its rules.
fn want(
    sim: &kubesd::simulator::Simulator,
    url: &str,
    config: &LoadedConfig,
    name: &str,
) -> BTreeSet<Flat> {
    let job = config.jobs.iter().find(|j| j.name == name).expect("job");
    expected(sim, &SdConfig::new(Role::Pod, url))
        .into_iter()
        .filter_map(|target| {
            let labels =
                kubesd::Labels::from_pairs(target.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            match process(&labels, &job.scrape, &job.rules) {
                Target::Keep(t) => Some(support::to_map(&t).into_iter().collect()),
                _ => None,
            }
        })
        .collect()
}

/// A job's `/sd` body, flattened to one label set per target, and its ETag.
async fn served(job: &Job) -> (BTreeSet<Flat>, String) {
    let body = job.sd();
    let json: serde_json::Value = serde_json::from_slice(&body.to_vec()).expect("valid JSON");
    let mut out = BTreeSet::new();
    for group in json.as_array().expect("an array of groups") {
        let labels: Flat = group["labels"]
            .as_object()
            .expect("labels")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().expect("string value").to_string()))
            .collect();
        for address in group["targets"].as_array().expect("targets") {
            let mut target = labels.clone();
            target.insert(
                "__address__".into(),
                address.as_str().expect("address").into(),
            );
            out.insert(target);
        }
    }
    (out, body.etag)
}

/// Waits until every job serves what the simulator's state says.
async fn converge(
    set: &JobSet,
    sim: &kubesd::simulator::Simulator,
    url: &str,
    config: &LoadedConfig,
    what: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(20);
    for (name, job) in set.jobs() {
        loop {
            let want = want(sim, url, config, &name);
            let (got, _) = served(&job).await;
            if got == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: job {name} did not converge: {} wanted, {} served; missing {:?}",
                want.len(),
                got.len(),
                want.difference(&got).next()
            );
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[actix_rt::test]
async fn each_jobs_sd_converges_and_a_change_costs_work_for_the_changed_objects_only() {
    let running = cluster().await;
    let (sim, url) = (running.sim(), running.url().to_string());
    let config = config(&url);
    let mut set = JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::ALL,
            output_dir: None,
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    );
    set.apply(&config).await.expect("jobs start");
    assert_eq!(
        set.job_actors(),
        2,
        "a and b share one actor, c has its own"
    );
    converge(&set, sim, &url, &config, "initial list").await;
    let pods = sim.list(Resource::Pods, None).len();
    assert!(pods >= 40);

    // Change the labels of three pods: their targets change after relabelling.
    let before = set.work();
    let changed = 3;
    for (i, mut pod) in sim
        .list(Resource::Pods, None)
        .into_iter()
        .take(changed)
        .enumerate()
    {
        pod["metadata"]["labels"]["tier"] = serde_json::json!(format!("changed-{i}"));
        sim.update(Resource::Pods, pod).expect("pod updates");
    }
    converge(&set, sim, &url, &config, "after three changes").await;
    let after = set.work();
    let relabelled = after.objects_relabelled - before.objects_relabelled;
    // Each job actor relabels each changed pod once (twice if its two events came in
    // two batches); a rebuild would be every pod, per job actor, per event.
    assert!(
        (2 * changed as u64..=4 * changed as u64).contains(&relabelled),
        "{relabelled} objects relabelled for {changed} changed pods in 2 job actors"
    );
    assert_eq!(
        after.objects_changed - before.objects_changed,
        2 * changed as u64
    );

    // Nothing changes: every body is served from what was built, with its ETag.
    let jobs = set.jobs();
    let mut etags = Vec::new();
    for (_, job) in &jobs {
        etags.push(served(job).await.1);
    }
    let idle = set.work();
    for _ in 0..5 {
        for ((_, job), etag) in jobs.iter().zip(&etags) {
            assert_eq!(&served(job).await.1, etag, "unchanged body, same ETag");
        }
    }
    assert_eq!(
        set.work(),
        idle,
        "no object relabelled and no body changed while nothing changed"
    );
    assert_ne!(etags[0], etags[1], "a and b differ in their job label");

    // Annotate three pods with an annotation no rule reads: each job actor sees each
    // change and tells it cannot reach its targets, without relabelling it.
    for mut pod in sim.list(Resource::Pods, None).into_iter().take(changed) {
        pod["metadata"]["annotations"]["deploy/revision"] = serde_json::json!("2");
        sim.update(Resource::Pods, pod).expect("pod updates");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let unseen = loop {
        let now = set.work();
        if now.objects_unseen - idle.objects_unseen >= 2 * changed as u64 {
            break now;
        }
        assert!(
            Instant::now() < deadline,
            "unseen changes not taken: {now:?}"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        (
            unseen.objects_relabelled,
            unseen.objects_changed,
            unseen.bodies_changed
        ),
        (
            idle.objects_relabelled,
            idle.objects_changed,
            idle.bodies_changed
        ),
        "an annotation no rule reads relabels nothing and changes no body"
    );
    for ((_, job), etag) in jobs.iter().zip(&etags) {
        assert_eq!(&served(job).await.1, etag, "unchanged body, same ETag");
    }
    converge(&set, sim, &url, &config, "after the annotations").await;

    // Each job counted the changes it applied and how long they took to be visible.
    for (name, job) in &jobs {
        let status = job.status();
        assert!(status.applied >= changed as u64, "job {name}: {status:?}");
        assert!(status.latency.count() > 0, "job {name}: {status:?}");
        assert_eq!(
            status.targets,
            want(sim, &url, &config, name).len(),
            "job {name}"
        );
    }
    set.stop_all().await;
    running.stop().await;
}
