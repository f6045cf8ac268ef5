//! `kubesd run` as a process against `kubesd simulate` as a process: with a bearer
//! token, with TLS, after changes and after a config reload, `/sd/{job}` converges to
//! the targets the simulator's objects make; config mistakes stop it at start with a
//! message that names the problem.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kubesd::config::TlsConfig;
use kubesd::http::{build_client, build_tls_config};
use kubesd::model::Role;
use kubesd::promconfig::parse_config;
use kubesd::relabel::{Target, process};
use kubesd::targets::{AttachMetadata, EmptyCache, TargetContext, target_labels};
use kubesd::wire::json::decode_list;

type LabelSet = BTreeMap<String, String>;

/// A child process, killed when dropped; its output lines arrive on a channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(args: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubesd starts");
    let (tx, rx) = mpsc::channel();
    for out in [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|e| Box::new(e) as _),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    Proc { child, lines: rx }
}

impl Proc {
    /// Waits for an output line containing `marker`; returns the word after it.
    fn wait_for(&self, marker: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some((_, rest)) = line.split_once(marker) {
                        return rest
                            .split_whitespace()
                            .next()
                            .unwrap_or("")
                            .trim_end_matches(':')
                            .to_string();
                    }
                    seen.push(line);
                }
                Err(_) => break,
            }
        }
        panic!("no line with {marker:?} in:\n{}", seen.join("\n"));
    }

    /// Waits for the process to exit; returns its status and everything it printed.
    fn finish(mut self) -> (std::process::ExitStatus, String) {
        let status = self.child.wait().expect("waits");
        let mut out = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
            out.push(line);
        }
        (status, out.join("\n"))
    }
}

struct Cluster {
    _proc: Proc,
    url: String,
    token: String,
    ca_file: Option<PathBuf>,
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubesd-service-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn simulate(dir: &Path, tls: bool) -> Cluster {
    let token = "s3cr3t-token".to_string();
    let ca = dir.join("ca.pem");
    let ca_arg = ca.to_string_lossy().into_owned();
    let mut args = vec![
        "simulate",
        "--listen",
        "127.0.0.1:0",
        "--nodes",
        "3",
        "--pods",
        "24",
        "--token",
        &token,
        "--ca-file",
        &ca_arg,
    ];
    if tls {
        args.push("--tls");
    }
    let proc = spawn(&args);
    let url = proc.wait_for("simulator serving ");
    Cluster {
        _proc: proc,
        url,
        token,
        ca_file: tls.then_some(ca),
    }
}

fn client(cluster: &Cluster) -> awc::Client {
    let tls = cluster.ca_file.as_ref().map(|ca| {
        build_tls_config(
            &TlsConfig {
                ca_file: Some(ca.clone()),
                ..TlsConfig::default()
            },
            false,
        )
        .expect("tls config")
    });
    build_client(tls, true, Duration::from_secs(10))
}

async fn get(client: &awc::Client, url: &str, token: Option<&str>) -> (u16, Vec<u8>) {
    let mut req = client.get(url);
    if let Some(t) = token {
        req = req.insert_header(("Authorization", format!("Bearer {t}")));
    }
    let mut resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let body = resp.body().limit(64 << 20).await.expect("body");
    (status, body.to_vec())
}

const RELABEL: &str = r#"
    relabel_configs:
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod"#;

fn config(cluster: &Cluster, jobs: &[(&str, &str)]) -> String {
    let mut yaml = "global: {scrape_interval: 15s}\nscrape_configs:\n".to_string();
    for (name, role) in jobs {
        yaml += &format!(
            "  - job_name: {name}\n    kubernetes_sd_configs:\n      - api_server: {}\n        role: {role}\n        bearer_token: {}\n",
            cluster.url, cluster.token
        );
        if let Some(ca) = &cluster.ca_file {
            yaml += &format!("        tls_config: {{ca_file: {}}}\n", ca.display());
        }
        if *role == "pod" {
            yaml += RELABEL;
            yaml += "\n";
        }
    }
    yaml
}

/// What `/sd/{job}` must serve: the simulator's objects through kubesd's labels and
/// the job's relabelling (read from the same config text).
async fn expected(
    client: &awc::Client,
    cluster: &Cluster,
    yaml: &str,
    job: &str,
    role: Role,
) -> Vec<LabelSet> {
    let loaded = parse_config(yaml, Path::new("test.yml")).expect("config parses");
    let job_config = loaded
        .jobs
        .iter()
        .find(|j| j.name == job)
        .expect("job in config");
    let path = match role {
        Role::Pod => "/api/v1/pods",
        _ => "/api/v1/nodes",
    };
    let (status, body) = get(
        client,
        &format!("{}{path}", cluster.url),
        Some(&cluster.token),
    )
    .await;
    assert_eq!(status, 200);
    let page = decode_list(role, &body).expect("list decodes");
    let ctx = TargetContext {
        semantics: kubesd::Semantics::default(),
        attach: AttachMetadata::default(),
        cache: &EmptyCache,
    };
    let mut out: Vec<LabelSet> = page
        .items
        .iter()
        .flat_map(|o| target_labels(o, &ctx))
        .filter_map(
            |l| match process(&l, &job_config.scrape, &job_config.rules) {
                Target::Keep(t) => Some(
                    t.iter()
                        .map(|l| (l.name.to_string(), l.value.to_string()))
                        .collect(),
                ),
                _ => None,
            },
        )
        .collect();
    out.sort();
    out
}

/// `/sd/{job}` flattened to one label set per target; `None` on a non-200 answer.
async fn served(client: &awc::Client, base: &str, job: &str) -> Option<Vec<LabelSet>> {
    let (status, body) = get(client, &format!("{base}/sd/{job}"), None).await;
    if status != 200 {
        return None;
    }
    let groups: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("HTTP SD is JSON");
    let mut out = Vec::new();
    for g in groups {
        // The documented shape: {"targets": [strings], "labels": {string: string}}.
        let targets = g["targets"].as_array().expect("targets is an array");
        let labels = g["labels"].as_object().expect("labels is an object");
        for t in targets {
            let mut set: LabelSet = labels
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().expect("string value").to_string()))
                .collect();
            set.insert(
                "__address__".into(),
                t.as_str().expect("target is a string").to_string(),
            );
            out.push(set);
        }
    }
    out.sort();
    Some(out)
}

async fn converge(
    client: &awc::Client,
    cluster: &Cluster,
    base: &str,
    yaml: &str,
    job: &str,
    role: Role,
) {
    let local = build_client(None, true, Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let want = expected(client, cluster, yaml, job, role).await;
        let got = served(&local, base, job).await;
        if got.as_ref() == Some(&want) {
            assert!(!want.is_empty(), "{job}: there are targets to compare");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{job} did not converge: want {} targets, got {:?}",
            want.len(),
            got.map(|g| g.len())
        );
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn run_against(tls: bool) {
    let dir = temp_dir(if tls { "tls" } else { "token" });
    let cluster = simulate(&dir, tls);
    let client = client(&cluster);
    let config_path = dir.join("kubesd.yml");
    let yaml = config(&cluster, &[("pods", "pod")]);
    std::fs::write(&config_path, &yaml).expect("config written");
    let cfg = config_path.to_string_lossy().into_owned();
    let run = spawn(&[
        "run",
        "--config",
        &cfg,
        "--listen",
        "127.0.0.1:0",
        "--reload-check",
        "100ms",
    ]);
    let base = format!(
        "http://{}",
        run.wait_for("kubesd serving http://")
            .trim_end_matches("/sd/{job}")
    );
    converge(&client, &cluster, &base, &yaml, "pods", Role::Pod).await;

    // Churn through the API: one pod deleted, one pod's labels changed.
    let (_, body) = get(
        &client,
        &format!("{}/api/v1/pods", cluster.url),
        Some(&cluster.token),
    )
    .await;
    let pods: serde_json::Value = serde_json::from_slice(&body).expect("json");
    let items = pods["items"].as_array().expect("items");
    let victim = &items[0]["metadata"];
    let path = format!(
        "{}/api/v1/namespaces/{}/pods/{}",
        cluster.url,
        victim["namespace"].as_str().unwrap_or(""),
        victim["name"].as_str().unwrap_or("")
    );
    let resp = client
        .delete(&path)
        .insert_header(("Authorization", format!("Bearer {}", cluster.token)))
        .send()
        .await
        .expect("delete");
    assert!(resp.status().is_success());
    converge(&client, &cluster, &base, &yaml, "pods", Role::Pod).await;

    // Reload: a nodes job appears, the pods job goes.
    let yaml = config(&cluster, &[("nodes", "node")]);
    std::fs::write(&config_path, &yaml).expect("config rewritten");
    converge(&client, &cluster, &base, &yaml, "nodes", Role::Node).await;
    let local = build_client(None, true, Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    while served(&local, &base, "pods").await.is_some() {
        assert!(Instant::now() < deadline, "the removed job is still served");
        actix_rt::time::sleep(Duration::from_millis(20)).await;
    }

    // The other endpoints.
    let (status, body) = get(&local, &format!("{base}/ready"), None).await;
    assert_eq!(
        (status, String::from_utf8_lossy(&body).trim()),
        (200, "ready")
    );
    let (status, body) = get(&local, &format!("{base}/metrics"), None).await;
    let text = String::from_utf8_lossy(&body);
    assert_eq!(status, 200);
    assert!(
        text.contains("kubesd_job_targets{job=\"nodes\"} 3"),
        "{text}"
    );
    assert!(!text.contains(&cluster.token), "no secret in /metrics");
    // ETag: an unchanged job answers 304.
    let resp = local
        .get(format!("{base}/sd/nodes"))
        .send()
        .await
        .expect("sd");
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .expect("etag")
        .to_string();
    let resp = local
        .get(format!("{base}/sd/nodes"))
        .insert_header(("If-None-Match", etag))
        .send()
        .await
        .expect("sd");
    assert_eq!(resp.status().as_u16(), 304);
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn run_with_a_bearer_token_converges_and_reloads() {
    run_against(false).await;
}

#[actix_rt::test]
async fn run_over_tls_converges_and_reloads() {
    run_against(true).await;
}

/// Starts `kubesd run` on `yaml` and returns what it said when it refused to.
fn refused(name: &str, yaml: &str) -> String {
    let dir = temp_dir(name);
    let path = dir.join("kubesd.yml");
    std::fs::write(&path, yaml).expect("config written");
    let cfg = path.to_string_lossy().into_owned();
    let (status, output) = spawn(&["run", "--config", &cfg, "--listen", "127.0.0.1:0"]).finish();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !status.success(),
        "{name}: kubesd run accepted it:\n{output}"
    );
    output
}

#[test]
fn config_mistakes_stop_kubesd_at_start_naming_the_problem() {
    let job = |sd: &str, extra: &str| {
        format!(
            "scrape_configs:\n  - job_name: pods\n    kubernetes_sd_configs:\n      - {sd}\n{extra}"
        )
    };
    let cases = [
        (
            "unknown-key",
            job(
                "{role: pod, api_server: 'http://127.0.0.1:1', namespace: {names: [a]}}",
                "",
            ),
            "unknown key \"namespace\"",
        ),
        (
            "bad-role",
            job("{role: pods, api_server: 'http://127.0.0.1:1'}", ""),
            "role: unknown variant `pods`",
        ),
        (
            "bad-regex",
            job(
                "{role: pod, api_server: 'http://127.0.0.1:1'}",
                "    relabel_configs:\n      - {source_labels: [a], regex: '(unclosed', action: keep}\n",
            ),
            "relabel_configs[0].regex",
        ),
        (
            "unreadable-token",
            job(
                "{role: pod, api_server: 'http://127.0.0.1:1', bearer_token_file: /nonexistent/token}",
                "",
            ),
            "bearer_token_file: cannot read /nonexistent/token",
        ),
    ];
    for (name, yaml, want) in cases {
        let output = refused(name, &yaml);
        assert!(
            output.contains(want),
            "{name}: the message does not name the problem ({want}):\n{output}"
        );
        assert!(
            output.contains("pods"),
            "{name}: the message does not name the job:\n{output}"
        );
    }
}

/// `namespaces.own_namespace` outside a pod, with a kubeconfig: the namespace of its
/// current context, so `kubesd once` on a laptop discovers that namespace (it used to
/// stop, unable to read the service account's namespace file).
#[test]
fn once_outside_a_pod_takes_own_namespace_from_the_kubeconfig_context() {
    let dir = temp_dir("own-namespace");
    let cluster = simulate(&dir, false);
    std::fs::write(
        dir.join("kubeconfig"),
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: laptop\n\
             contexts: [{{name: laptop, context: {{cluster: sim, user: me, namespace: payments}}}}]\n\
             clusters: [{{name: sim, cluster: {{server: \"{}\"}}}}]\n\
             users: [{{name: me, user: {{token: \"{}\"}}}}]\n",
            cluster.url, cluster.token
        ),
    )
    .expect("write kubeconfig");
    let config = dir.join("kubesd.yml");
    std::fs::write(
        &config,
        "scrape_configs:\n  - job_name: mine\n    kubernetes_sd_configs:\n      \
         - {role: pod, kubeconfig_file: kubeconfig, namespaces: {own_namespace: true}}\n    \
         relabel_configs:\n      - {source_labels: [__meta_kubernetes_namespace], target_label: namespace}\n",
    )
    .expect("write config");
    let config_arg = config.to_string_lossy().into_owned();
    let (status, output) = spawn(&["once", "--config", &config_arg, "--timeout", "30s"]).finish();
    assert!(status.success(), "kubesd once failed:\n{output}");
    let json_start = output.find('{').expect("JSON output");
    let by_job: serde_json::Value =
        serde_json::from_str(&output[json_start..]).expect("once prints JSON");
    let groups = by_job["mine"].as_array().expect("the job's groups");
    assert!(
        !groups.is_empty(),
        "the context's namespace has pods: {output}"
    );
    for group in groups {
        assert_eq!(group["labels"]["namespace"], "payments", "{group}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
