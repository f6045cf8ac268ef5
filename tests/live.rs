//! The live suite: `kubesd run` against a real Kubernetes API server, with the real
//! endpoints, endpointslice and garbage-collector controllers. Opt-in:
//!
//! - `KUBESD_LIVE_APISERVER` (URL) with `KUBESD_LIVE_TOKEN` (and `KUBESD_LIVE_CA_FILE`,
//!   or the server's certificate is not verified), or `KUBESD_LIVE_KUBECONFIG` (its
//!   current context; files it names must be absolute paths or inline data);
//! - `KUBESD_LIVE_AUDIT_LOG`: the API server's audit log (JSON lines), to count
//!   kubesd's LIST and WATCH requests and read its user agent;
//! - `KUBESD_LIVE_RESTART`: a shell command that restarts the API server so that every
//!   resumed watch gets a 410 (`scripts/live-apiserver.sh restart-compacted`).
//!
//! `scripts/live-apiserver.sh start` prints all of them. Without the first, the suite
//! says it was skipped and passes (CI). Each run works in two namespaces and on three
//! nodes of its own, named `kubesd-live-<id>-*`, and deletes them at the end.
//!
//! It creates nodes, namespaces, a ReplicaSet and a Job with their pods (their status
//! patched, since no kubelet runs), services and an ingress; lets the controllers make
//! Endpoints and EndpointSlices; checks every job's `/sd` against the targets computed
//! from the server's own objects (listed, then labelled by kubesd's label code: a path
//! independent of the watch machinery); churns, measures how long dependent changes
//! take to reach `/sd`, and checks again; then forces 410s and checks again. Figures
//! are printed (`cargo test --test live -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use kubesd::config::{HttpClientConfig, Secret, TlsConfig};
use kubesd::http::{Credentials, build_client, build_tls_config};
use kubesd::model::{Object, Role};
use kubesd::promconfig::parse_config;
use kubesd::relabel::{Target, process};
use kubesd::targets::{ObjectCache, TargetContext, target_labels};

type LabelSet = BTreeMap<String, String>;

/// The user agent of the suite's own requests, to tell them from kubesd's in the audit
/// log (both use the same credentials).
const SUITE_AGENT: &str = "kubesd-live-suite";

/// How long the API server, its controllers and kubesd get to agree.
const CONVERGE: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------
// Where the server is

struct LiveEnv {
    server: String,
    http: HttpClientConfig,
    audit_log: Option<PathBuf>,
    restart: Option<String>,
}

fn live_env() -> Option<LiveEnv> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let (server, http) = if let Some(path) = var("KUBESD_LIVE_KUBECONFIG") {
        let target = kubesd::kubeconfig::load_kubeconfig(Path::new(&path))
            .unwrap_or_else(|e| panic!("KUBESD_LIVE_KUBECONFIG: {e}"));
        (target.api_server, target.http)
    } else {
        let server = var("KUBESD_LIVE_APISERVER")?;
        let token = var("KUBESD_LIVE_TOKEN")?;
        let ca_file = var("KUBESD_LIVE_CA_FILE").map(PathBuf::from);
        let http = HttpClientConfig {
            bearer_token: Secret(token),
            tls_config: TlsConfig {
                insecure_skip_verify: ca_file.is_none(),
                ca_file,
                ..TlsConfig::default()
            },
            follow_redirects: true,
            ..HttpClientConfig::default()
        };
        (server, http)
    };
    Some(LiveEnv {
        server: server.trim_end_matches('/').to_string(),
        http,
        audit_log: var("KUBESD_LIVE_AUDIT_LOG").map(PathBuf::from),
        restart: var("KUBESD_LIVE_RESTART"),
    })
}

/// A kubeconfig for kubesd with the suite's credentials, whose current context's
/// namespace is `namespace` (what `own_namespace` then means).
fn kubeconfig_for_kubesd(env: &LiveEnv, namespace: &str) -> String {
    let tls = &env.http.tls_config;
    let mut cluster = format!("server: {:?}", env.server);
    if let Some(ca) = &tls.ca_file {
        cluster += &format!(", certificate-authority: {:?}", ca.display().to_string());
    }
    if tls.insecure_skip_verify {
        cluster += ", insecure-skip-tls-verify: true";
    }
    let mut user = Vec::new();
    if !env.http.bearer_token.expose().is_empty() {
        user.push(format!("token: {:?}", env.http.bearer_token.expose()));
    }
    if let Some(file) = &env.http.bearer_token_file {
        user.push(format!("tokenFile: {:?}", file.display().to_string()));
    }
    if let (Some(cert), Some(key)) = (&tls.cert_file, &tls.key_file) {
        user.push(format!(
            "client-certificate: {:?}, client-key: {:?}",
            cert.display().to_string(),
            key.display().to_string()
        ));
    }
    if let Some(basic) = &env.http.basic_auth {
        user.push(format!(
            "username: {:?}, password: {:?}",
            basic.username,
            basic.password.expose()
        ));
    }
    format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: live\n\
         clusters: [{{name: live, cluster: {{{cluster}}}}}]\n\
         users: [{{name: live, user: {{{}}}}}]\n\
         contexts: [{{name: live, context: {{cluster: live, user: live, namespace: {namespace}}}}}]\n",
        user.join(", ")
    )
}

// ---------------------------------------------------------------------------------
// The API, as the suite uses it

struct Api {
    server: String,
    client: awc::Client,
    credentials: Credentials,
}

impl Api {
    fn new(env: &LiveEnv) -> Api {
        let tls = env.server.starts_with("https://").then(|| {
            build_tls_config(&env.http.tls_config, false).expect("the suite's TLS settings")
        });
        Api {
            server: env.server.clone(),
            client: build_client(tls, true, Duration::from_secs(30)),
            credentials: Credentials::from_config(&env.http, Duration::from_secs(60)),
        }
    }

    async fn call(&mut self, method: &str, path: &str, body: Option<(&str, &Value)>) -> Value {
        let url = format!("{}{path}", self.server);
        let method = awc::http::Method::from_bytes(method.as_bytes()).expect("an HTTP method");
        // A request that got no response at all is sent again (a few times): after the
        // API server restarts, the suite's pooled connections to it are dead.
        let mut attempt = 0;
        let mut resp = loop {
            let mut req = self
                .client
                .request(method.clone(), &url)
                .insert_header(("User-Agent", SUITE_AGENT));
            if let Some(auth) = self.credentials.header().expect("the suite's credentials") {
                req = req.insert_header(("Authorization", auth));
            }
            let sent = match body {
                Some((content_type, body)) => {
                    req.insert_header(("Content-Type", content_type))
                        .send_body(body.to_string())
                        .await
                }
                None => req.send().await,
            };
            match sent {
                Ok(resp) => break resp,
                Err(e) if attempt < 5 => {
                    attempt += 1;
                    println!("live: {method} {url}: {e}; sending it again");
                    actix_rt::time::sleep(Duration::from_millis(500)).await;
                }
                Err(e) => panic!("{method} {url}: {e}"),
            }
        };
        let bytes = resp
            .body()
            .limit(256 << 20)
            .await
            .unwrap_or_else(|e| panic!("{method} {url}: reading the body: {e}"));
        let status = resp.status();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            status.is_success() || (method == "DELETE" && status.as_u16() == 404),
            "{method} {url}: {status}: {text}"
        );
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    async fn get(&mut self, path: &str) -> Value {
        self.call("GET", path, None).await
    }

    async fn create(&mut self, path: &str, object: Value) -> Value {
        self.call("POST", path, Some(("application/json", &object)))
            .await
    }

    async fn merge_patch(&mut self, path: &str, patch: Value) -> Value {
        self.call(
            "PATCH",
            path,
            Some(("application/merge-patch+json", &patch)),
        )
        .await
    }

    /// Deletes at once: no kubelet runs to finish a pod's graceful deletion.
    async fn delete(&mut self, path: &str) {
        let background = json!({"kind": "DeleteOptions", "apiVersion": "v1",
            "propagationPolicy": "Background", "gracePeriodSeconds": 0});
        self.call("DELETE", path, Some(("application/json", &background)))
            .await;
    }

    /// The items of a list, each with its kind set (lists leave it out).
    async fn list(&mut self, path: &str, kind: &str) -> Vec<Value> {
        let list = self.get(path).await;
        let items = list["items"].as_array().cloned().unwrap_or_default();
        items
            .into_iter()
            .map(|mut item| {
                item["kind"] = json!(kind);
                item
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------
// The objects

/// Names of this run's objects.
struct Run {
    id: String,
    ns_a: String,
    ns_b: String,
}

impl Run {
    fn new() -> Run {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        // Tests of one process start in the same second: a counter tells them apart.
        static RUNS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!(
            "kubesd-live-{:x}",
            ((seconds & 0xffffff) ^ u64::from(std::process::id())) * 16 + n
        );
        Run {
            ns_a: format!("{id}-a"),
            ns_b: format!("{id}-b"),
            id,
        }
    }

    fn node(&self, i: usize) -> String {
        format!("{}-node-{i}", self.id)
    }
}

fn node_ip(i: usize) -> String {
    format!("10.250.0.{}", i + 10)
}

async fn create_node(api: &mut Api, run: &Run, i: usize) {
    let name = run.node(i);
    api.create(
        "/api/v1/nodes",
        json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubesd-live": run.id,
                "topology.kubernetes.io/zone": format!("zone-{}", i % 2)},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": format!("10.251.{i}.0/24")}}),
    )
    .await;
    set_node_status(api, &name, i).await;
}

async fn set_node_status(api: &mut Api, name: &str, i: usize) {
    api.merge_patch(
        &format!("/api/v1/nodes/{name}/status"),
        json!({"status": {
            "addresses": [{"type": "InternalIP", "address": node_ip(i)},
                          {"type": "Hostname", "address": name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                "lastHeartbeatTime": "2025-01-01T00:00:00Z",
                "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}),
    )
    .await;
}

/// A pod on node `node` with IP `ip`, owned by `owner` (API version, kind, name, uid)
/// if any, made Running and Ready.
async fn create_pod(
    api: &mut Api,
    run: &Run,
    ns: &str,
    name: &str,
    labels: Value,
    owner: Option<(&str, &str, &str, &str)>,
    (node, ip): (usize, &str),
) {
    let mut metadata = json!({"name": name, "labels": labels,
        "annotations": {"prometheus.io/scrape": "true"}});
    if let Some((api_version, kind, owner_name, uid)) = owner {
        metadata["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind,
            "name": owner_name, "uid": uid, "controller": true, "blockOwnerDeletion": true}]);
    }
    api.create(
        &format!("/api/v1/namespaces/{ns}/pods"),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": run.node(node), "restartPolicy": "Always",
                "initContainers": [{"name": "setup", "image": "busybox:1.36",
                    "ports": [{"name": "init-metrics", "containerPort": 9100}]}],
                "containers": [
                    {"name": "app", "image": "registry.example/app:1.0",
                     "ports": [{"name": "http", "containerPort": 8080},
                               {"name": "metrics", "containerPort": 9090}]},
                    {"name": "sidecar", "image": "registry.example/proxy:2.1",
                     "ports": [{"name": "admin", "containerPort": 15000, "protocol": "TCP"},
                               {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}),
    )
    .await;
    set_pod_status(api, ns, name, node, ip, true).await;
}

async fn set_pod_status(api: &mut Api, ns: &str, name: &str, node: usize, ip: &str, ready: bool) {
    let ready = if ready { "True" } else { "False" };
    let t = "2025-01-01T00:00:00Z";
    let running = |c: &str, image: &str| {
        json!({"name": c, "image": image, "imageID": format!("{image}@sha256:0123"),
            "containerID": format!("containerd://{name}-{c}"), "ready": ready == "True",
            "started": true, "restartCount": 0, "state": {"running": {"startedAt": t}}})
    };
    api.merge_patch(
        &format!("/api/v1/namespaces/{ns}/pods/{name}/status"),
        json!({"status": {"phase": "Running", "hostIP": node_ip(node),
            "hostIPs": [{"ip": node_ip(node)}], "podIP": ip, "podIPs": [{"ip": ip}],
            "startTime": t,
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": t},
                {"type": "Ready", "status": ready, "lastTransitionTime": t},
                {"type": "ContainersReady", "status": ready, "lastTransitionTime": t},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": t}],
            "initContainerStatuses": [{"name": "setup", "image": "busybox:1.36",
                "imageID": "busybox@sha256:0123", "containerID": format!("containerd://{name}-setup"),
                "ready": true, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
            "containerStatuses": [running("app", "registry.example/app:1.0"),
                                  running("sidecar", "registry.example/proxy:2.1")]}}),
    )
    .await;
}

fn pod_template(labels: &Value, restart: &str) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"restartPolicy": restart,
        "containers": [{"name": "app", "image": "registry.example/app:1.0"}]}})
}

/// Everything the suite starts with.
async fn create_world(api: &mut Api, run: &Run) {
    for (ns, team) in [(&run.ns_a, "a"), (&run.ns_b, "b")] {
        api.create(
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": {"team": team, "kubesd-live": run.id},
                    "annotations": {"owner": "kubesd-live"}}}),
        )
        .await;
    }
    for i in 0..3 {
        create_node(api, run, i).await;
    }
    let a = &run.ns_a;
    let web = json!({"app": "web", "tier": "frontend"});
    // No deployment, replicaset, job or cronjob controller runs: the objects stand as
    // created, their owner references as the controllers would set them.
    let deployment = api
        .create(
            &format!("/apis/apps/v1/namespaces/{a}/deployments"),
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "web", "labels": web},
                "spec": {"replicas": 3, "selector": {"matchLabels": web},
                    "template": pod_template(&web, "Always")}}),
        )
        .await;
    let deployment_uid = deployment["metadata"]["uid"].clone();
    let rs = api
        .create(
            &format!("/apis/apps/v1/namespaces/{a}/replicasets"),
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "web-5d9c7b", "labels": web,
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                        "name": "web", "uid": deployment_uid, "controller": true}]},
                "spec": {"replicas": 3, "selector": {"matchLabels": web},
                    "template": pod_template(&web, "Always")}}),
        )
        .await;
    let rs_uid = rs["metadata"]["uid"]
        .as_str()
        .expect("the ReplicaSet's uid")
        .to_string();
    for i in 0..3 {
        let owner = ("apps/v1", "ReplicaSet", "web-5d9c7b", rs_uid.as_str());
        let name = format!("web-5d9c7b-{i}");
        create_pod(
            api,
            run,
            a,
            &name,
            web.clone(),
            Some(owner),
            (i, &format!("10.252.0.{}", i + 10)),
        )
        .await;
    }
    let b = &run.ns_b;
    let batch = json!({"app": "batch"});
    let cronjob = api
        .create(
            &format!("/apis/batch/v1/namespaces/{b}/cronjobs"),
            json!({"apiVersion": "batch/v1", "kind": "CronJob",
                "metadata": {"name": "nightly", "labels": batch},
                "spec": {"schedule": "0 3 * * *", "suspend": true, "jobTemplate": {"spec": {
                    "template": pod_template(&batch, "Never")}}}}),
        )
        .await;
    let cronjob_uid = cronjob["metadata"]["uid"].clone();
    let job = api
        .create(
            &format!("/apis/batch/v1/namespaces/{b}/jobs"),
            json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "report", "labels": batch,
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob",
                        "name": "nightly", "uid": cronjob_uid, "controller": true}]},
                "spec": {"parallelism": 2, "completions": 2, "suspend": true,
                    "template": pod_template(&batch, "Never")}}),
        )
        .await;
    let job_uid = job["metadata"]["uid"]
        .as_str()
        .expect("the Job's uid")
        .to_string();
    // The Job's pods carry the labels the Job controller gives them.
    let job_labels = job["spec"]["template"]["metadata"]["labels"].clone();
    for i in 0..2 {
        let owner = ("batch/v1", "Job", "report", job_uid.as_str());
        let name = format!("report-{i}");
        create_pod(
            api,
            run,
            b,
            &name,
            job_labels.clone(),
            Some(owner),
            (i, &format!("10.252.1.{}", i + 10)),
        )
        .await;
    }
    create_pod(
        api,
        run,
        b,
        "solo",
        json!({"app": "solo"}),
        None,
        (2, "10.252.1.50"),
    )
    .await;

    api.create(
        &format!("/api/v1/namespaces/{a}/services"),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"app": "web"},
                "annotations": {"prometheus.io/scrape": "true"}},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "metrics", "port": 9090, "targetPort": 9090}]}}),
    )
    .await;
    api.create(
        &format!("/api/v1/namespaces/{b}/services"),
        json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "batch", "labels": {"app": "batch"}},
            "spec": {"selector": {"app": "batch"}, "clusterIP": "None",
                "ports": [{"name": "metrics", "port": 9090}]}}),
    )
    .await;
    api.create(
        &format!("/api/v1/namespaces/{b}/services"),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "docs"},
            "spec": {"type": "ExternalName", "externalName": "docs.example.com"}}),
    )
    .await;
    api.create(
        &format!("/apis/networking.k8s.io/v1/namespaces/{a}/ingresses"),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"ingressClassName": "nginx",
                "tls": [{"hosts": ["web.example.com"]}],
                "rules": [{"host": "web.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix",
                     "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}},
                    {"host": "api.example.com", "http": {"paths": [
                    {"path": "/v1", "pathType": "Prefix",
                     "backend": {"service": {"name": "web", "port": {"name": "http"}}}}]}}]}}),
    )
    .await;
}

async fn delete_world(api: &mut Api, run: &Run) {
    for ns in [&run.ns_a, &run.ns_b] {
        api.delete(&format!("/api/v1/namespaces/{ns}")).await;
    }
    for i in 0..3 {
        api.delete(&format!("/api/v1/nodes/{}", run.node(i))).await;
    }
}

// ---------------------------------------------------------------------------------
// The config, and what each job must serve

/// Every job relabels `__meta_*` into `meta_*`, so `/sd` keeps every discovered label.
const KEEP_META: &str =
    "    relabel_configs:\n      - {action: labelmap, regex: __meta_(.+), replacement: meta_$1}\n";

/// The jobs: name, role, extra `kubernetes_sd_configs` keys.
fn jobs(run: &Run) -> Vec<(&'static str, Role, String)> {
    let names = format!("namespaces: {{names: [{}, {}]}}", run.ns_a, run.ns_b);
    vec![
        (
            "pods",
            Role::Pod,
            format!(
                "{names}, attach_metadata: {{node: true, namespace: true, deployment: true, \
                 job: true, cronjob: true}}"
            ),
        ),
        ("services", Role::Service, names.clone()),
        (
            "endpoints",
            Role::Endpoints,
            format!("{names}, attach_metadata: {{node: true, deployment: true}}"),
        ),
        (
            "endpointslices",
            Role::EndpointSlice,
            format!("{names}, attach_metadata: {{node: true}}"),
        ),
        ("ingresses", Role::Ingress, names.clone()),
        (
            "nodes",
            Role::Node,
            format!(
                "selectors: [{{role: node, label: \"kubesd-live={}\"}}]",
                run.id
            ),
        ),
        // own_namespace outside a pod: the kubeconfig context's namespace, ns_a.
        (
            "own",
            Role::Pod,
            "namespaces: {own_namespace: true}".to_string(),
        ),
    ]
}

fn config_yaml(run: &Run, kubeconfig: &Path) -> String {
    let mut yaml = "scrape_configs:\n".to_string();
    for (name, role, extra) in jobs(run) {
        yaml += &format!(
            "  - job_name: {name}\n    kubernetes_sd_configs:\n      - {{role: {role}, kubeconfig_file: {:?}, {extra}}}\n{KEEP_META}",
            kubeconfig.display().to_string()
        );
    }
    yaml
}

/// Every object the jobs can see, listed from the server.
struct Listed {
    cache: ObjectCache,
    by_role: BTreeMap<Role, Vec<Object>>,
}

async fn list_all(api: &mut Api, run: &Run) -> Listed {
    let mut cache = ObjectCache::default();
    let mut by_role: BTreeMap<Role, Vec<Object>> = BTreeMap::new();
    let mut add = |role: Role, items: Vec<Value>| {
        for item in items {
            let raw = serde_json::to_vec(&item).expect("a listed object re-encodes");
            let object = Object::decode(role, &raw)
                .unwrap_or_else(|e| panic!("a listed {role} does not decode: {e}"));
            cache.insert(object.clone());
            by_role.entry(role).or_default().push(object);
        }
    };
    let nodes = api.list("/api/v1/nodes", "Node").await;
    add(Role::Node, nodes);
    for ns in [&run.ns_a, &run.ns_b] {
        let namespace = api.get(&format!("/api/v1/namespaces/{ns}")).await;
        let mut namespace = namespace;
        namespace["kind"] = json!("Namespace");
        add(Role::Namespace, vec![namespace]);
        for (role, path, kind) in [
            (Role::Pod, format!("/api/v1/namespaces/{ns}/pods"), "Pod"),
            (
                Role::Service,
                format!("/api/v1/namespaces/{ns}/services"),
                "Service",
            ),
            (
                Role::Endpoints,
                format!("/api/v1/namespaces/{ns}/endpoints"),
                "Endpoints",
            ),
            (
                Role::EndpointSlice,
                format!("/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"),
                "EndpointSlice",
            ),
            (
                Role::Ingress,
                format!("/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses"),
                "Ingress",
            ),
            (
                Role::ReplicaSet,
                format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
                "ReplicaSet",
            ),
            (
                Role::Job,
                format!("/apis/batch/v1/namespaces/{ns}/jobs"),
                "Job",
            ),
        ] {
            let items = api.list(&path, kind).await;
            add(role, items);
        }
    }
    Listed { cache, by_role }
}

/// What `/sd/{job}` must serve, from the listed objects.
fn expected(listed: &Listed, run: &Run, yaml: &str, job: &str) -> Vec<LabelSet> {
    let loaded = parse_config(yaml, Path::new("live.yml")).expect("the suite's config loads");
    let config = loaded
        .jobs
        .iter()
        .find(|j| j.name == job)
        .expect("the job is in the config");
    let sd = &config.sd_configs[0];
    let (_, role, _) = jobs(run)
        .into_iter()
        .find(|(n, ..)| *n == job)
        .expect("a known job");
    let ctx = TargetContext {
        attach: sd.attach_metadata,
        // What `kubesd run` follows unless told otherwise.
        semantics: kubesd::Semantics::Prometheus,
        cache: &listed.cache,
    };
    let namespaces: BTreeSet<&str> = sd.namespaces.names.iter().map(String::as_str).collect();
    let wanted = |o: &Object| match role {
        Role::Node => o.metadata().labels.get("kubesd-live").map(|v| &**v) == Some(run.id.as_str()),
        _ => namespaces.contains(&*o.metadata().namespace),
    };
    let mut out: Vec<LabelSet> = listed
        .by_role
        .get(&role)
        .into_iter()
        .flatten()
        .filter(|o| wanted(o))
        .flat_map(|o| target_labels(o, &ctx))
        .filter_map(|l| match process(&l, &config.scrape, &config.rules) {
            Target::Keep(t) => Some(
                t.iter()
                    .map(|l| (l.name.to_string(), l.value.to_string()))
                    .collect(),
            ),
            _ => None,
        })
        .collect();
    out.sort();
    out
}

// ---------------------------------------------------------------------------------
// kubesd

/// `kubesd run`, killed when dropped.
struct Kubesd {
    child: Child,
    base: String,
    local: awc::Client,
}

impl Drop for Kubesd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// `kubesd run` with `config` and the extra `args`, logging to `log`.
fn start_kubesd(config: &Path, log: &Path, args: &[&str]) -> Kubesd {
    let port = free_port();
    let log_file = std::fs::File::create(log).expect("kubesd's log file");
    let child = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(["run", "--config"])
        .arg(config)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(args)
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .expect("kubesd starts");
    Kubesd {
        child,
        base: format!("http://127.0.0.1:{port}"),
        local: build_client(None, true, Duration::from_secs(10)),
    }
}

impl Kubesd {
    async fn get(&self, path: &str) -> Option<(u16, Vec<u8>)> {
        let mut resp = self
            .local
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .ok()?;
        let body = resp.body().limit(256 << 20).await.ok()?;
        Some((resp.status().as_u16(), body.to_vec()))
    }

    async fn wait_ready(&self) {
        let deadline = Instant::now() + CONVERGE;
        loop {
            if let Some((200, _)) = self.get("/ready").await {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "kubesd not ready within {CONVERGE:?}"
            );
            actix_rt::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `/sd/{job}` flattened to one label set per target.
    async fn served(&self, job: &str) -> Option<Vec<LabelSet>> {
        let (status, body) = self.get(&format!("/sd/{job}")).await?;
        if status != 200 {
            return None;
        }
        let groups: Vec<Value> = serde_json::from_slice(&body).ok()?;
        let mut out = Vec::new();
        for g in groups {
            let labels: LabelSet = g["labels"]
                .as_object()?
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect();
            for t in g["targets"].as_array()? {
                let mut set = labels.clone();
                set.insert("__address__".into(), t.as_str()?.to_string());
                out.push(set);
            }
        }
        out.sort();
        Some(out)
    }

    /// The sum over roles of a counter in `/metrics`.
    async fn metric(&self, name: &str) -> f64 {
        self.metric_where(name, &[]).await
    }

    /// The sum of a metric's series whose labels include every `label="value"` given.
    async fn metric_where(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let Some((200, body)) = self.get("/metrics").await else {
            return f64::NAN;
        };
        String::from_utf8_lossy(&body)
            .lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter(|l| {
                labels
                    .iter()
                    .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }
}

/// Waits until every job serves what the server's objects make; returns how long that
/// took. Panics naming the job and the first difference.
async fn converge(api: &mut Api, kubesd: &Kubesd, run: &Run, yaml: &str, what: &str) -> Duration {
    let start = Instant::now();
    let deadline = start + CONVERGE;
    loop {
        let listed = list_all(api, run).await;
        let mut differing = Vec::new();
        for (job, ..) in jobs(run) {
            let want = expected(&listed, run, yaml, job);
            let got = kubesd.served(job).await;
            // No targets yet (the controllers have not made the endpoints) is no
            // comparison: wait.
            if want.is_empty() || got.as_ref() != Some(&want) {
                differing.push((job, want, got));
            }
        }
        if differing.is_empty() {
            return start.elapsed();
        }
        if Instant::now() > deadline {
            let (job, want, got) = &differing[0];
            let got = got.clone().unwrap_or_default();
            let missing: Vec<_> = want.iter().filter(|t| !got.contains(t)).take(2).collect();
            let extra: Vec<_> = got.iter().filter(|t| !want.contains(t)).take(2).collect();
            panic!(
                "{what}: job {job} serves {} targets, the server's objects make {}\n\
                 missing: {missing:#?}\nextra: {extra:#?}",
                got.len(),
                want.len()
            );
        }
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
}

/// How long until `/sd/{job}` has a target whose `label` is `value`.
async fn time_until_served(
    kubesd: &Kubesd,
    job: &str,
    label: &str,
    value: &str,
    since: Instant,
) -> Duration {
    let deadline = since + CONVERGE;
    loop {
        let served = kubesd.served(job).await.unwrap_or_default();
        if served
            .iter()
            .any(|t| t.get(label).map(String::as_str) == Some(value))
        {
            return since.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "{job}: no target with {label}={value}"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
}

// ---------------------------------------------------------------------------------
// The audit log

/// kubesd's requests in the audit log, one per request (an audit ID), after `skip`
/// lines: (verb, user agent); a watch with `sendInitialEvents` is a "streaming list".
fn kubesd_requests(log: &Path, skip: usize) -> (Vec<(String, String)>, usize) {
    let Ok(file) = std::fs::File::open(log) else {
        return (Vec::new(), skip);
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    let mut lines = 0;
    for line in BufReader::new(file).lines().map_while(Result::ok) {
        lines += 1;
        if lines <= skip {
            continue;
        }
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let agent = event["userAgent"].as_str().unwrap_or_default();
        // The controllers and the API server itself name themselves; the suite too.
        let ours = agent != SUITE_AGENT
            && !agent.starts_with("kube-controller-manager")
            && !agent.starts_with("kube-apiserver");
        let audit_id = event["auditID"].as_str().unwrap_or_default().to_string();
        let verb = match event["verb"].as_str().unwrap_or_default() {
            "watch" if event["requestURI"].as_str().is_some_and(is_streaming_list) => {
                "streaming list"
            }
            verb => verb,
        };
        if ours && matches!(verb, "list" | "watch" | "streaming list") && seen.insert(audit_id) {
            out.push((verb.to_string(), agent.to_string()));
        }
    }
    (out, lines)
}

fn is_streaming_list(uri: &str) -> bool {
    uri.contains("sendInitialEvents=true")
}

fn audit_lines(log: &Path) -> usize {
    std::fs::File::open(log)
        .map(|f| BufReader::new(f).lines().count())
        .unwrap_or_default()
}

fn count(requests: &[(String, String)], verb: &str) -> usize {
    requests.iter().filter(|(v, _)| v == verb).count()
}

// ---------------------------------------------------------------------------------
// The suite

/// The tests take turns: one restarts the API server, and each counts requests in the
/// audit log.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What the suite says when no API server is given.
const SKIPPED: &str = "live: skipped (set KUBESD_LIVE_APISERVER with KUBESD_LIVE_TOKEN, or \
                       KUBESD_LIVE_KUBECONFIG; see scripts/live-apiserver.sh)";

/// One test's names, temporary directory, and kubesd config (every job of [`jobs`]).
struct Workspace {
    run: Run,
    dir: PathBuf,
    config: PathBuf,
    yaml: String,
}

impl Workspace {
    fn new(env: &LiveEnv) -> Workspace {
        let run = Run::new();
        let dir = std::env::temp_dir().join(&run.id);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let kubeconfig = dir.join("kubeconfig");
        std::fs::write(&kubeconfig, kubeconfig_for_kubesd(env, &run.ns_a))
            .expect("kubeconfig written");
        let config = dir.join("kubesd.yml");
        let yaml = config_yaml(&run, &kubeconfig);
        std::fs::write(&config, &yaml).expect("config written");
        Workspace {
            run,
            dir,
            config,
            yaml,
        }
    }
}

#[actix_rt::test]
async fn kubesd_matches_a_real_api_server_through_churn_and_410s() {
    let Some(env) = live_env() else {
        println!("{SKIPPED}");
        return;
    };
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut api = Api::new(&env);
    let Workspace {
        run,
        dir,
        config,
        yaml,
    } = Workspace::new(&env);
    let audit_start = env
        .audit_log
        .as_deref()
        .map(audit_lines)
        .unwrap_or_default();

    create_world(&mut api, &run).await;
    let kubesd = start_kubesd(&config, &dir.join("kubesd.log"), &[]);
    let started = Instant::now();
    kubesd.wait_ready().await;
    let ready = started.elapsed();
    let first = converge(&mut api, &kubesd, &run, &yaml, "at start").await;
    println!(
        "live: {} ready in {ready:?}, all jobs matched {first:?} later",
        run.id
    );
    // The owners' metadata is there, not only equal on both sides.
    let pods = kubesd.served("pods").await.unwrap_or_default();
    for (label, value) in [
        ("meta_kubernetes_pod_controller_kind", "ReplicaSet"),
        ("meta_kubernetes_pod_deployment_name", "web"),
        ("meta_kubernetes_pod_job_name", "report"),
        ("meta_kubernetes_pod_cronjob_name", "nightly"),
    ] {
        assert!(
            pods.iter()
                .any(|t| t.get(label).map(String::as_str) == Some(value)),
            "no pod target with {label}={value}"
        );
    }

    // Churn, three rounds.
    let (a, b) = (run.ns_a.clone(), run.ns_b.clone());
    let mut dependent = Vec::new();
    for round in 0..3 {
        // Dependent changes: a pod's label behind an endpoints target, a node's label
        // behind pod targets (attach_metadata.node).
        let value = format!("r{round}");
        let since = Instant::now();
        api.merge_patch(
            &format!("/api/v1/namespaces/{a}/pods/web-5d9c7b-0"),
            json!({"metadata": {"labels": {"release": value}}}),
        )
        .await;
        dependent.push(
            time_until_served(
                &kubesd,
                "endpoints",
                "meta_kubernetes_pod_label_release",
                &value,
                since,
            )
            .await,
        );
        let since = Instant::now();
        api.merge_patch(
            &format!("/api/v1/nodes/{}", run.node(1)),
            json!({"metadata": {"labels": {"rack": value}}}),
        )
        .await;
        dependent.push(
            time_until_served(
                &kubesd,
                "pods",
                "meta_kubernetes_node_label_rack",
                &value,
                since,
            )
            .await,
        );

        // Direct changes: readiness, pods coming and going, ports, ingress paths.
        set_pod_status(
            &mut api,
            &a,
            "web-5d9c7b-1",
            1,
            "10.252.0.11",
            round % 2 == 1,
        )
        .await;
        let rs = api
            .get(&format!(
                "/apis/apps/v1/namespaces/{a}/replicasets/web-5d9c7b"
            ))
            .await;
        let rs_uid = rs["metadata"]["uid"]
            .as_str()
            .expect("the ReplicaSet's uid")
            .to_string();
        let new = format!("web-5d9c7b-n{round}");
        let owner = ("apps/v1", "ReplicaSet", "web-5d9c7b", rs_uid.as_str());
        let web = json!({"app": "web", "tier": "frontend"});
        create_pod(
            &mut api,
            &run,
            &a,
            &new,
            web,
            Some(owner),
            (round, &format!("10.252.2.{}", round + 10)),
        )
        .await;
        if round > 0 {
            api.delete(&format!(
                "/api/v1/namespaces/{a}/pods/web-5d9c7b-n{}",
                round - 1
            ))
            .await;
        }
        api.merge_patch(
            &format!("/api/v1/namespaces/{b}/services/batch"),
            json!({"spec": {"ports": [{"name": "metrics", "port": 9090},
                {"name": format!("extra-{round}"), "port": 9100 + round}]}}),
        )
        .await;
        api.merge_patch(
            &format!("/apis/networking.k8s.io/v1/namespaces/{a}/ingresses/web"),
            json!({"metadata": {"annotations": {"round": value}}}),
        )
        .await;
        let took = converge(
            &mut api,
            &kubesd,
            &run,
            &yaml,
            &format!("churn round {round}"),
        )
        .await;
        println!("live: churn round {round}: all jobs matched within {took:?}");
    }
    // The garbage collector deletes a Job's pods after the Job (gracefully: with no
    // kubelet to finish, they stay, terminating).
    api.delete(&format!("/apis/batch/v1/namespaces/{b}/jobs/report"))
        .await;
    let deadline = Instant::now() + CONVERGE;
    let batch_pods = format!("/api/v1/namespaces/{b}/pods?labelSelector=app%3Dbatch");
    while api
        .list(&batch_pods, "Pod")
        .await
        .iter()
        .any(|p| p["metadata"]["deletionTimestamp"].is_null())
    {
        assert!(
            Instant::now() < deadline,
            "the garbage collector did not delete the Job's pods"
        );
        actix_rt::time::sleep(Duration::from_millis(200)).await;
    }
    let took = converge(&mut api, &kubesd, &run, &yaml, "after the Job's deletion").await;
    println!("live: the Job and its pods deleted: all jobs matched within {took:?}");
    let slowest = dependent.iter().max().copied().unwrap_or_default();
    println!("live: dependent changes reached /sd in {dependent:?} (slowest {slowest:?})");
    assert!(
        slowest < Duration::from_secs(1),
        "a dependent change took {slowest:?} to reach /sd, at rest"
    );

    // Real 410s: the API server restarted without its watch cache, etcd compacted.
    if let Some(restart) = &env.restart {
        let gone_before = kubesd.metric("kubesd_gone_total").await;
        let relists_before = kubesd.metric("kubesd_relists_total").await;
        let audit_before = env
            .audit_log
            .as_deref()
            .map(audit_lines)
            .unwrap_or_default();
        // Off the actix thread, so that kubesd's HTTP server and the suite's client stay
        // served while the API server restarts.
        let command = restart.clone();
        let status = actix_rt::task::spawn_blocking(move || {
            Command::new("sh").args(["-c", &command]).status()
        })
        .await
        .expect("the restart command's thread")
        .expect("the restart command runs");
        assert!(status.success(), "KUBESD_LIVE_RESTART failed: {status}");
        api.merge_patch(
            &format!("/api/v1/namespaces/{a}/pods/web-5d9c7b-2"),
            json!({"metadata": {"labels": {"release": "after-410"}}}),
        )
        .await;
        let deadline = Instant::now() + CONVERGE;
        while kubesd.metric("kubesd_gone_total").await <= gone_before {
            assert!(
                Instant::now() < deadline,
                "no 410 reached kubesd after the restart"
            );
            actix_rt::time::sleep(Duration::from_millis(200)).await;
        }
        let took = converge(&mut api, &kubesd, &run, &yaml, "after the 410s").await;
        let gone = kubesd.metric("kubesd_gone_total").await - gone_before;
        let relists = kubesd.metric("kubesd_relists_total").await - relists_before;
        println!(
            "live: after the restart: {gone} 410s, {relists} relists; all jobs matched within {took:?}"
        );
        if let Some(log) = &env.audit_log {
            let (requests, _) = kubesd_requests(log, audit_before);
            println!(
                "live: kubesd's requests since the restart: {} LIST, {} streaming list, {} WATCH",
                count(&requests, "list"),
                count(&requests, "streaming list"),
                count(&requests, "watch")
            );
            assert!(
                (count(&requests, "list") + count(&requests, "streaming list")) as f64 <= relists,
                "a LIST or streaming list for every relist, no more"
            );
        }
    } else {
        println!("live: 410s not forced (KUBESD_LIVE_RESTART not set)");
    }

    if let Some(log) = &env.audit_log {
        let (requests, _) = kubesd_requests(log, audit_start);
        let agents: BTreeSet<&str> = requests.iter().map(|(_, a)| a.as_str()).collect();
        println!(
            "live: kubesd's requests in the audit log: {} LIST, {} streaming list, {} WATCH; \
             user agents {agents:?}",
            count(&requests, "list"),
            count(&requests, "streaming list"),
            count(&requests, "watch")
        );
        assert!(
            agents.iter().all(|a| a.starts_with("kubesd/")),
            "kubesd names itself in every request, as client-go's clients do: {agents:?}"
        );
        assert!(
            count(&requests, "list") + count(&requests, "streaming list") > 0,
            "kubesd's LISTs or streaming lists are in the audit log"
        );
    }

    drop(kubesd);
    delete_world(&mut api, &run).await;
    let _ = std::fs::remove_dir_all(&dir);
}

// ---------------------------------------------------------------------------------
// Every way of asking

/// The ways `kubesd run` can ask the API server: a name and its flags. The default
/// (list mode auto) lists this server (1.33 or later) with LIST and WATCH.
const MODES: [(&str, &[&str]); 5] = [
    (
        "json-list",
        &["--encoding", "json", "--kubernetes.list-mode", "list"],
    ),
    (
        "json-streaming",
        &["--encoding", "json", "--kubernetes.list-mode", "stream"],
    ),
    ("protobuf-list", &["--kubernetes.list-mode", "list"]),
    ("protobuf-streaming", &["--kubernetes.list-mode", "stream"]),
    ("default", &[]),
];

/// The kinds the suite's jobs read (their roles, `attach_metadata`'s owners included).
const ROLES_READ: [&str; 9] = [
    "pod",
    "service",
    "endpoints",
    "endpointslice",
    "ingress",
    "node",
    "namespace",
    "replicaset",
    "job",
];

/// Whether the server serves streaming lists: asked directly, a short streaming list
/// of the run's services must end its initial events with the annotated bookmark.
async fn server_serves_streaming_lists(api: &mut Api, run: &Run) -> bool {
    let url = format!(
        "{}/api/v1/namespaces/{}/services?watch=1&sendInitialEvents=true&\
         resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=3",
        api.server, run.ns_a
    );
    let mut req = api
        .client
        .get(&url)
        .insert_header(("User-Agent", SUITE_AGENT));
    if let Some(auth) = api.credentials.header().expect("the suite's credentials") {
        req = req.insert_header(("Authorization", auth));
    }
    let Ok(mut resp) = req.send().await else {
        return false;
    };
    let body = resp.body().limit(16 << 20).await.unwrap_or_default();
    resp.status().is_success()
        && String::from_utf8_lossy(&body).contains("\"k8s.io/initial-events-end\":\"true\"")
}

#[actix_rt::test]
async fn every_encoding_and_list_mode_serves_the_servers_targets() {
    let Some(env) = live_env() else {
        println!("{SKIPPED}");
        return;
    };
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut api = Api::new(&env);
    let ws = Workspace::new(&env);
    let run = &ws.run;
    create_world(&mut api, run).await;
    let streaming = server_serves_streaming_lists(&mut api, run).await;
    println!("live: the API server serves streaming lists: {streaming}");
    let kubesds: Vec<(&str, Kubesd)> = MODES
        .iter()
        .map(|(mode, args)| {
            let log = ws.dir.join(format!("kubesd-{mode}.log"));
            (*mode, start_kubesd(&ws.config, &log, args))
        })
        .collect();
    for (mode, kubesd) in &kubesds {
        kubesd.wait_ready().await;
        let took = converge(
            &mut api,
            kubesd,
            run,
            &ws.yaml,
            &format!("{mode}: at start"),
        )
        .await;
        println!("live: {mode}: all jobs matched {took:?} after ready");
    }
    // Watch events in every encoding: a pod's label, a node's label, a new pod.
    let a = &run.ns_a;
    api.merge_patch(
        &format!("/api/v1/namespaces/{a}/pods/web-5d9c7b-0"),
        json!({"metadata": {"labels": {"release": "modes"}}}),
    )
    .await;
    api.merge_patch(
        &format!("/api/v1/nodes/{}", run.node(2)),
        json!({"metadata": {"labels": {"rack": "modes"}}}),
    )
    .await;
    create_pod(
        &mut api,
        run,
        a,
        "solo-modes",
        json!({"app": "solo"}),
        None,
        (1, "10.252.3.10"),
    )
    .await;
    for (mode, kubesd) in &kubesds {
        let took = converge(&mut api, kubesd, run, &ws.yaml, &format!("{mode}: watched")).await;
        println!("live: {mode}: the changes matched within {took:?}");
    }
    for (mode, kubesd) in &kubesds {
        check_mode(mode, kubesd, streaming).await;
    }
    drop(kubesds);
    delete_world(&mut api, run).await;
    let _ = std::fs::remove_dir_all(&ws.dir);
}

/// A mode's metrics say it asked as told: every kind read in its encoding, and every
/// URL in streaming lists where the mode and the server allow them, else LIST.
async fn check_mode(mode: &str, kubesd: &Kubesd, server_streams: bool) {
    let responses = "kubesd_responses_total";
    let (wanted, other) = if mode.starts_with("json") {
        ("json", "protobuf")
    } else {
        ("protobuf", "json")
    };
    for role in ROLES_READ {
        let read = kubesd
            .metric_where(responses, &[("role", role), ("reason", wanted)])
            .await;
        let wrong = kubesd
            .metric_where(responses, &[("role", role), ("reason", other)])
            .await;
        println!("live: {mode}: {role}: {read} {wanted} responses, {wrong} {other}");
        assert!(read > 0.0, "{mode}: no {wanted} response for the {role}s");
        assert_eq!(wrong, 0.0, "{mode}: {other} responses for the {role}s");
    }
    let gauge = "kubesd_list_mode_watchers";
    let streaming_urls = kubesd.metric_where(gauge, &[("mode", "streaming")]).await;
    let list_urls = kubesd.metric_where(gauge, &[("mode", "list")]).await;
    println!("live: {mode}: {streaming_urls} URLs in streaming lists, {list_urls} in LIST");
    if mode.ends_with("streaming") && server_streams {
        assert!(
            streaming_urls > 0.0 && list_urls == 0.0,
            "{mode}: not streaming"
        );
    } else {
        assert!(
            list_urls > 0.0 && streaming_urls == 0.0,
            "{mode}: not listing"
        );
    }
}

// ---------------------------------------------------------------------------------
// RBAC

#[actix_rt::test]
async fn a_token_without_list_rights_fails_naming_the_url_and_the_servers_words() {
    let (Some(env), Ok(token)) = (live_env(), std::env::var("KUBESD_LIVE_NO_RIGHTS_TOKEN")) else {
        println!(
            "live: RBAC skipped (KUBESD_LIVE_NO_RIGHTS_TOKEN not set: a token bound to no role)"
        );
        return;
    };
    let _alone = ONE_AT_A_TIME.lock().await;
    let mut env = env;
    env.http.bearer_token = Secret(token);
    let dir = std::env::temp_dir().join(format!("{}-rbac", Run::new().id));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_for_kubesd(&env, "default"))
        .expect("kubeconfig written");
    let config = dir.join("kubesd.yml");
    std::fs::write(
        &config,
        format!(
            "scrape_configs:\n  - job_name: pods\n    kubernetes_sd_configs:\n      \
             - {{role: pod, kubeconfig_file: {:?}}}\n",
            kubeconfig.display().to_string()
        ),
    )
    .expect("config written");
    for (mode, args) in MODES {
        let out = Command::new(env!("CARGO_BIN_EXE_kubesd"))
            .args(["once", "--timeout", "20s", "--config"])
            .arg(&config)
            .args(args)
            .output()
            .expect("kubesd once runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = stderr
            .lines()
            .rev()
            .find(|l| l.contains("403"))
            .unwrap_or("");
        println!("live: RBAC, {mode}: {said}");
        assert!(
            !out.status.success(),
            "{mode}: kubesd once succeeded without rights"
        );
        assert!(
            said.contains("/api/v1/pods")
                && said.contains("forbidden")
                && said.contains("kubesd-live-nobody"),
            "{mode}: the URL and the API server's message are not in what kubesd said:\n{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
