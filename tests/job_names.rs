//! Job names are data, never paths: `--output-dir` files for any name stay inside the
//! directory, one per job, named reversibly; `/sd/<job>` answers for any name, raw or
//! URL-escaped.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use kubesd::Discovery;
use kubesd::cli::run::collect_once;
use kubesd::promconfig::parse_config;
use kubesd::service::{
    JobSet, JobSetOptions, ServiceState, Shard, job_file_name, job_name_of, serve_http,
};
use kubesd::simulator::{ClusterSpec, SimulatedCluster, SimulatorConfig};

/// Names a user or an operator may give jobs, some of which are paths.
const NAMES: [&str; 7] = [
    "../../escaped",
    "serviceMonitor/default/app/0",
    "/etc/passwd",
    "..",
    ".hidden",
    "a%2Fb",
    "plain",
];

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("readable").flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(dir).expect("under dir").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn config(url: &str) -> String {
    let mut yaml = String::from("scrape_configs:\n");
    for name in NAMES {
        yaml += &format!(
            "  - job_name: {name:?}\n    kubernetes_sd_configs: [{{role: node, api_server: {url:?}}}]\n"
        );
    }
    yaml
}

async fn small_cluster() -> SimulatedCluster {
    let spec = ClusterSpec {
        nodes: 2,
        pods: 4,
        ..ClusterSpec::default()
    };
    SimulatedCluster::start(SimulatorConfig::default(), &spec)
        .await
        .expect("cluster starts")
}

#[actix_rt::test]
async fn output_files_stay_in_the_directory_whatever_the_job_names() {
    let running = small_cluster().await;
    let root = std::env::temp_dir().join(format!(
        "kubesd-job-names-{}-{:x}",
        std::process::id(),
        fastrand::u64(..)
    ));
    // Deep enough that `../../escaped` would land inside `root` if it escaped.
    let out = root.join("a/b/out");
    std::fs::create_dir_all(&out).expect("dirs");
    let loaded = parse_config(&config(&running.url()), Path::new("k.yml")).expect("loads");
    let mut jobs = JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::new(0, 1).expect("shard"),
            output_dir: Some(out.clone()),
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::new(RwLock::new(BTreeMap::new())),
    );
    jobs.apply(&loaded).await.expect("jobs start");
    // `kubesd once` writes every job's file, and the job actors write theirs too.
    let printed = collect_once(&jobs, Duration::from_secs(20), Some(&out))
        .await
        .expect("synced");
    jobs.stop_all().await;
    let printed: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(&printed).expect("printed JSON");
    assert_eq!(
        printed.len(),
        NAMES.len(),
        "every job printed under its own name"
    );

    let files = files_under(&root);
    let want: Vec<PathBuf> = {
        let mut w: Vec<PathBuf> = NAMES
            .iter()
            .map(|n| Path::new("a/b/out").join(job_file_name(n)))
            .collect();
        w.sort();
        w
    };
    assert_eq!(
        files, want,
        "one file per job, all directly in the output directory"
    );
    for name in NAMES {
        let file = out.join(job_file_name(name));
        assert_eq!(file.parent(), Some(out.as_path()));
        assert_eq!(job_name_of(&job_file_name(name)).as_deref(), Some(name));
        let body: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).expect("written")).expect("file SD JSON");
        assert_eq!(body, printed[name], "{name}");
    }
    let _ = std::fs::remove_dir_all(&root);
    running.stop().await;
}

#[actix_rt::test]
async fn sd_answers_for_any_job_name_raw_or_escaped() {
    let running = small_cluster().await;
    let loaded = parse_config(&config(&running.url()), Path::new("k.yml")).expect("loads");
    let published = Arc::new(RwLock::new(BTreeMap::new()));
    let mut jobs = JobSet::new(
        Discovery::start(SimulatedCluster::engine_options()),
        JobSetOptions {
            shard: Shard::new(0, 1).expect("shard"),
            output_dir: None,
            publish_interval: JobSetOptions::DEFAULT_PUBLISH_INTERVAL,
        },
        Arc::clone(&published),
    );
    jobs.apply(&loaded).await.expect("jobs start");
    // `/sd` answers 503 until a job's first sync: wait for every job to have synced.
    for (name, job) in jobs.jobs() {
        let mut polls = 0;
        while !job.status().synced {
            polls += 1;
            assert!(polls < 2_000, "job {name} never synced");
            actix_rt::time::sleep(Duration::from_millis(5)).await;
        }
    }
    let (server, addr) = serve_http(
        "127.0.0.1:0".parse().expect("addr"),
        Arc::new(ServiceState {
            jobs: published,
            reload: None,
            engine_metrics: Default::default(),
            service_metrics: Default::default(),
        }),
        None,
    )
    .expect("listens");
    let handle = server.handle();
    actix_rt::spawn(server);
    let client = awc::Client::default();
    let get = |path: String| {
        let client = client.clone();
        async move {
            let mut res = client
                .get(format!("http://{addr}{path}"))
                .send()
                .await
                .expect("answers");
            let body = res.body().await.expect("body");
            (res.status().as_u16(), body)
        }
    };
    let escape = |name: &str| -> String {
        name.bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                    char::from(b).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect()
    };
    for name in ["serviceMonitor/default/app/0", "plain", "a%2Fb", ".hidden"] {
        let (status, escaped) = get(format!("/sd/{}", escape(name))).await;
        assert_eq!(status, 200, "{name} escaped");
        if !name.contains('%') {
            let (status, raw) = get(format!("/sd/{name}")).await;
            assert_eq!(status, 200, "{name} raw");
            assert_eq!(raw, escaped, "{name}: both forms reach the same job");
        }
    }
    let (status, _) = get("/sd/serviceMonitor/default/app/1".into()).await;
    assert_eq!(status, 404);
    handle.stop(true).await;
    jobs.stop_all().await;
    running.stop().await;
}
