//! The synthetic cluster generator: nodes, namespaces, workloads' pods and the
//! objects that own them (Deployments and their ReplicaSets, CronJobs and their
//! Jobs, standalone Jobs), services, ingresses, Gateway API gateways and routes
//! (and, through the controllers, endpoints and endpointslices), deterministically
//! from a seed.
//!
//! Objects are shaped and sized like a real cluster's (a pod is ~4 KB of JSON
//! with owner references, containers, probes, env, volumes, statuses and
//! `managedFields`), so benchmarks parse realistic bytes and kubesd's label
//! mapping meets the fields it will meet in production.

use serde_json::{Value, json};

use super::error::ApiError;
use super::owners::{OwnerRef, create_cron_job, create_deployment, create_job, create_replica_set};
use super::resource::Resource;
use super::sim::Simulator;
use super::timestamp;

/// What to generate.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// Seed for every random choice: the same spec gives the same cluster.
    pub seed: u64,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of pods, spread over workloads, namespaces and nodes.
    pub pods: usize,
    /// Number of namespaces holding workloads.
    pub namespaces: usize,
    /// Average pods per workload (each workload gets a service).
    pub pods_per_workload: usize,
}

impl Default for ClusterSpec {
    fn default() -> ClusterSpec {
        ClusterSpec {
            seed: 1,
            nodes: 5,
            pods: 50,
            namespaces: 3,
            pods_per_workload: 4,
        }
    }
}

/// Counts of what [`generate`] created.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GeneratedCluster {
    /// Namespace names, in creation order.
    pub namespaces: Vec<String>,
    /// Node count.
    pub nodes: usize,
    /// Pod count.
    pub pods: usize,
    /// Service count.
    pub services: usize,
    /// Ingress count.
    pub ingresses: usize,
    /// Deployment count (each with one ReplicaSet).
    pub deployments: usize,
    /// CronJob count (each with one Job).
    pub cron_jobs: usize,
    /// Job count, those of CronJobs included.
    pub jobs: usize,
    /// Gateway API objects (a Gateway per namespace, routes for Deployments).
    pub routes: super::gateway_api::GeneratedRoutes,
    /// prometheus-operator's monitors (two per namespace) and their Secrets.
    pub monitors: super::monitors::GeneratedMonitors,
}

/// The kind of controller owning a workload's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// Pods owned by a ReplicaSet (of a Deployment).
    Deployment,
    /// Pods owned by a StatefulSet, named by ordinal, behind a headless service.
    StatefulSet,
    /// Pods owned by a DaemonSet.
    DaemonSet,
    /// Pods owned by a Job of their own.
    Job,
    /// Pods owned by a Job that a CronJob started.
    CronJob,
}

/// One generated workload: enough to build its pods and service.
#[derive(Debug, Clone)]
pub struct Workload {
    /// Namespace.
    pub namespace: String,
    /// App name (`app` label, service name).
    pub name: String,
    /// Owning controller kind.
    pub kind: WorkloadKind,
    /// Pod template hash (ReplicaSet suffix / controller revision).
    pub template_hash: String,
    /// Named ports of the main container: (name, containerPort).
    pub ports: Vec<(String, i64)>,
    /// Whether pods carry a metrics sidecar container.
    pub sidecar: bool,
    /// Whether pods have an init container.
    pub init_container: bool,
    /// The uid of the pods' owner, once the simulator holds it (the simulator serves
    /// no StatefulSets or DaemonSets, whose pods get a made-up uid).
    pub owner_uid: String,
}

impl Workload {
    /// The owner reference's kind and name for this workload's pods.
    pub fn owner(&self) -> (&'static str, String) {
        match self.kind {
            WorkloadKind::Deployment => (
                "ReplicaSet",
                format!("{}-{}", self.name, self.template_hash),
            ),
            WorkloadKind::StatefulSet => ("StatefulSet", self.name.clone()),
            WorkloadKind::DaemonSet => ("DaemonSet", self.name.clone()),
            WorkloadKind::Job => ("Job", self.name.clone()),
            WorkloadKind::CronJob => ("Job", format!("{}-{}", self.name, self.template_hash)),
        }
    }

    /// Creates the objects that own this workload's pods, as its controllers would
    /// have (none for StatefulSets and DaemonSets), and records the pods' owner's uid.
    fn create_owners(
        &mut self,
        sim: &Simulator,
        made: &mut GeneratedCluster,
    ) -> Result<(), ApiError> {
        let (ns, app) = (&self.namespace, &self.name);
        let owner: Option<OwnerRef> = match self.kind {
            WorkloadKind::Deployment => {
                let deployment = create_deployment(sim, ns, app, app)?;
                made.deployments += 1;
                Some(create_replica_set(
                    sim,
                    ns,
                    app,
                    &self.template_hash,
                    &deployment,
                )?)
            }
            WorkloadKind::Job => {
                made.jobs += 1;
                Some(create_job(sim, ns, app, app, None)?)
            }
            WorkloadKind::CronJob => {
                let cron_job = create_cron_job(sim, ns, app, app)?;
                made.cron_jobs += 1;
                made.jobs += 1;
                let job = format!("{app}-{}", self.template_hash);
                Some(create_job(sim, ns, &job, app, Some(&cron_job))?)
            }
            WorkloadKind::StatefulSet | WorkloadKind::DaemonSet => None,
        };
        if let Some(owner) = owner {
            self.owner_uid = owner.uid;
        }
        Ok(())
    }
}

/// One generated node, as pods need it.
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// Node name.
    pub name: String,
    /// InternalIP.
    pub ip: String,
}

const NAMESPACE_NAMES: [&str; 8] = [
    "default",
    "monitoring",
    "payments",
    "checkout",
    "search",
    "frontend",
    "data",
    "platform",
];
const APP_WORDS: [&str; 16] = [
    "api", "web", "cart", "auth", "billing", "catalog", "gateway", "worker", "search", "redis",
    "kafka", "ledger", "notify", "orders", "profile", "quotes",
];
const ZONES: [&str; 3] = ["us-east-1a", "us-east-1b", "us-east-1c"];

/// Lowercase hex of `n` random nibbles.
pub fn hex(rng: &mut fastrand::Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b"0123456789abcdef"[rng.usize(..16)]))
        .collect()
}

/// A `generateName`-style suffix of `n` characters.
pub fn suffix(rng: &mut fastrand::Rng, n: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..n)
        .map(|_| char::from(ALPHABET[rng.usize(..ALPHABET.len())]))
        .collect()
}

/// The pod IP for the `n`-th pod ever generated (unique, in 10.128.0.0/9).
pub fn pod_ip(n: u64) -> String {
    let n = n + 1;
    format!(
        "10.{}.{}.{}",
        128 + (n >> 16) % 128,
        (n >> 8) & 0xff,
        n & 0xff
    )
}

/// Fills `sim` with a cluster per `spec`. The endpoints controllers (if on)
/// run once at the end rather than after every pod, which keeps large
/// clusters fast to generate.
pub fn generate(sim: &Simulator, spec: &ClusterSpec) -> Result<GeneratedCluster, ApiError> {
    let mut rng = fastrand::Rng::with_seed(spec.seed);
    let controllers = sim.controllers_enabled();
    sim.set_controllers(false);
    let result = fill(sim, spec, &mut rng);
    sim.set_controllers(controllers);
    result
}

fn fill(
    sim: &Simulator,
    spec: &ClusterSpec,
    rng: &mut fastrand::Rng,
) -> Result<GeneratedCluster, ApiError> {
    let mut out = GeneratedCluster::default();
    let nodes: Vec<NodeInfo> = (0..spec.nodes.max(1))
        .map(|i| {
            let info = NodeInfo {
                name: format!("node-{i:03}"),
                ip: format!("10.0.{}.{}", i / 250, i % 250 + 2),
            };
            sim.apply(Resource::Nodes, node_object(rng, i, &info))?;
            Ok(info)
        })
        .collect::<Result<_, ApiError>>()?;
    out.nodes = nodes.len();
    for i in 0..spec.namespaces.max(1) {
        let name = NAMESPACE_NAMES
            .get(i)
            .map_or_else(|| format!("team-{i}"), |n| n.to_string());
        sim.apply(Resource::Namespaces, namespace_object(&name, i))?;
        out.namespaces.push(name);
    }
    let workload_count = (spec.pods / spec.pods_per_workload.max(1)).max(1);
    let mut workloads: Vec<Workload> = (0..workload_count)
        .map(|i| workload(rng, &out.namespaces[i % out.namespaces.len()], i))
        .collect();
    for w in &mut workloads {
        w.create_owners(sim, &mut out)?;
    }
    let mut ordinals = vec![0usize; workloads.len()];
    for p in 0..spec.pods {
        let w = p % workloads.len();
        let node = &nodes[rng.usize(..nodes.len())];
        let pod = pod_object(rng, &workloads[w], ordinals[w], node, p as u64);
        ordinals[w] += 1;
        sim.apply(Resource::Pods, pod)?;
        out.pods += 1;
    }
    for (i, w) in workloads.iter().enumerate() {
        sim.apply(Resource::Services, service_object(rng, w, i))?;
        out.services += 1;
        if w.kind == WorkloadKind::Deployment && rng.u8(..10) < 3 {
            sim.apply(Resource::Ingresses, ingress_object(rng, w))?;
            out.ingresses += 1;
        }
    }
    let web: Vec<(String, String)> = workloads
        .iter()
        .filter(|w| w.kind == WorkloadKind::Deployment)
        .map(|w| (w.namespace.clone(), w.name.clone()))
        .collect();
    out.routes = super::gateway_api::generate(sim, &out.namespaces, &web)?;
    out.monitors = super::monitors::generate(sim, &out.namespaces)?;
    for ns in &out.namespaces {
        // A selector-less service: no endpoints are derived for it.
        sim.apply(
            Resource::Services,
            json!({"metadata": {"name": "external-db", "namespace": ns, "labels": {"app": "external-db"}},
                   "spec": {"type": "ExternalName", "externalName": format!("db.{ns}.example.com")}}),
        )?;
        out.services += 1;
    }
    Ok(out)
}

fn node_object(rng: &mut fastrand::Rng, i: usize, info: &NodeInfo) -> Value {
    let zone = ZONES[i % ZONES.len()];
    let now = timestamp::now_rfc3339();
    let condition = |t: &str, status: &str, reason: &str| {
        json!({"type": t, "status": status, "reason": reason, "message": format!("kubelet reports {reason}"),
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    json!({
        "metadata": {
            "name": info.name,
            "labels": {
                "kubernetes.io/hostname": info.name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64",
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "us-east-1",
                "node.kubernetes.io/instance-type": if i.is_multiple_of(4) { "m5.2xlarge" } else { "m5.xlarge" },
                "node-role.kubernetes.io/worker": "",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "providerID": format!("aws:///{zone}/i-{}", hex(rng, 17)),
            "podCIDR": format!("10.{}.{}.0/24", 64 + i / 256, i % 256),
        },
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": info.ip},
                {"type": "Hostname", "address": info.name},
                {"type": "InternalDNS", "address": format!("{}.ec2.internal", info.name)},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("Ready", "True", "KubeletReady"),
            ],
            "capacity": {"cpu": "8", "memory": "32386524Ki", "pods": "110", "ephemeral-storage": "104845292Ki"},
            "allocatable": {"cpu": "7910m", "memory": "31369692Ki", "pods": "110", "ephemeral-storage": "95551679124"},
            "nodeInfo": {
                "kubeletVersion": "v1.32.0", "kubeProxyVersion": "v1.32.0",
                "containerRuntimeVersion": "containerd://1.7.22", "operatingSystem": "linux",
                "architecture": "amd64", "osImage": "Amazon Linux 2023",
                "kernelVersion": "6.1.112-122.189.amzn2023.x86_64",
                "machineID": hex(rng, 32), "systemUUID": hex(rng, 32), "bootID": hex(rng, 32),
            },
        },
    })
}

fn namespace_object(name: &str, i: usize) -> Value {
    json!({
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/metadata.name": name,
                "team": format!("team-{}", i % 4),
                "environment": if i.is_multiple_of(2) { "production" } else { "staging" },
            },
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

fn workload(rng: &mut fastrand::Rng, namespace: &str, i: usize) -> Workload {
    let kind = match rng.u8(..20) {
        0..=11 => WorkloadKind::Deployment,
        12..=14 => WorkloadKind::StatefulSet,
        15..=16 => WorkloadKind::DaemonSet,
        17 => WorkloadKind::Job,
        _ => WorkloadKind::CronJob,
    };
    let mut ports = vec![("http".to_string(), 8080)];
    if rng.bool() {
        ports.push(("metrics".to_string(), 9090));
    }
    Workload {
        namespace: namespace.to_string(),
        name: format!("{}-{i}", APP_WORDS[i % APP_WORDS.len()]),
        kind,
        template_hash: suffix(rng, 10),
        ports,
        sidecar: rng.u8(..10) < 4,
        init_container: rng.u8(..10) < 3,
        owner_uid: String::new(),
    }
}

/// A realistic pod of workload `w` on `node`; `ordinal` names StatefulSet
/// pods, `serial` picks its unique IP.
pub fn pod_object(
    rng: &mut fastrand::Rng,
    w: &Workload,
    ordinal: usize,
    node: &NodeInfo,
    serial: u64,
) -> Value {
    // The generator is seeded: the random draws are made in one fixed order.
    let (owner_kind, owner_name) = w.owner();
    let name = pod_name(rng, w, ordinal, &owner_name);
    let labels = pod_labels(rng, w, &name, &owner_name);
    let owner = owner_reference(rng, w, owner_kind, &owner_name);
    let annotations = pod_annotations(w);
    // 90% running and ready, then not-ready, pending (no IP) and completed.
    let (phase, ready, has_ip) = match rng.u8(..100) {
        0..=89 => ("Running", true, true),
        90..=94 => ("Running", false, true),
        95..=97 => ("Pending", false, false),
        _ => ("Succeeded", false, true),
    };
    let now = timestamp::now_rfc3339();
    let token_volume = format!("kube-api-access-{}", suffix(rng, 5));
    let containers = pod_containers(rng, w, &token_volume);
    let container_statuses = container_statuses(rng, &containers, phase, ready, &now);
    let condition = |t: &str, ok: bool| json!({"type": t, "status": if ok { "True" } else { "False" }, "lastProbeTime": null, "lastTransitionTime": now});
    let mut pod = json!({
        "metadata": {
            "name": name,
            "namespace": w.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
            "managedFields": managed_fields(w, &owner_name, &now),
        },
        "spec": pod_spec(w, node, containers, &token_volume),
        "status": {
            "phase": phase,
            "conditions": [
                condition("PodReadyToStartContainers", has_ip),
                condition("Initialized", phase != "Pending"),
                condition("Ready", ready),
                condition("ContainersReady", ready),
                condition("PodScheduled", true),
            ],
            "hostIP": node.ip,
            "hostIPs": [{"ip": node.ip}],
            "startTime": now,
            "containerStatuses": container_statuses,
            "qosClass": "Burstable",
        },
    });
    if w.kind == WorkloadKind::StatefulSet {
        pod["spec"]["hostname"] = json!(name);
        pod["spec"]["subdomain"] = json!(w.name);
    }
    if matches!(w.kind, WorkloadKind::Job | WorkloadKind::CronJob) {
        pod["spec"]["restartPolicy"] = json!("OnFailure");
    }
    if has_ip {
        let ip = pod_ip(serial);
        pod["status"]["podIP"] = json!(ip);
        pod["status"]["podIPs"] = json!([{"ip": ip}]);
    }
    if w.init_container {
        add_init_container(rng, &mut pod, &token_volume, &now);
    }
    pod
}

/// A pod's name as its controller gives it: a StatefulSet's ordinal, else a random
/// suffix on the owner's name.
fn pod_name(rng: &mut fastrand::Rng, w: &Workload, ordinal: usize, owner_name: &str) -> String {
    match w.kind {
        WorkloadKind::StatefulSet => format!("{}-{ordinal}", w.name),
        WorkloadKind::Deployment
        | WorkloadKind::DaemonSet
        | WorkloadKind::Job
        | WorkloadKind::CronJob => format!("{owner_name}-{}", suffix(rng, 5)),
    }
}

/// The app's labels and those its controller adds.
fn pod_labels(rng: &mut fastrand::Rng, w: &Workload, name: &str, owner_name: &str) -> Value {
    let mut labels = json!({
        "app": w.name,
        "app.kubernetes.io/name": w.name,
        "app.kubernetes.io/part-of": w.namespace,
        "version": format!("v1.{}.{}", rng.u8(..20), rng.u8(..10)),
    });
    match w.kind {
        WorkloadKind::Deployment => labels["pod-template-hash"] = json!(w.template_hash),
        WorkloadKind::StatefulSet => {
            labels["controller-revision-hash"] = json!(format!("{}-{}", w.name, w.template_hash));
            labels["statefulset.kubernetes.io/pod-name"] = json!(name);
        }
        WorkloadKind::DaemonSet => {
            labels["controller-revision-hash"] = json!(w.template_hash);
            labels["pod-template-generation"] = json!("1");
        }
        WorkloadKind::Job | WorkloadKind::CronJob => {
            labels["job-name"] = json!(owner_name);
            labels["batch.kubernetes.io/job-name"] = json!(owner_name);
        }
    }
    labels
}

/// The controller's owner reference, with the owner's uid (a random one when the
/// workload has no owner object of its own).
fn owner_reference(rng: &mut fastrand::Rng, w: &Workload, kind: &str, name: &str) -> Value {
    let api_version = match w.kind {
        WorkloadKind::Job | WorkloadKind::CronJob => "batch/v1",
        _ => "apps/v1",
    };
    let uid = if w.owner_uid.is_empty() {
        format!(
            "{}-{}-4{}-a{}-{}",
            hex(rng, 8),
            hex(rng, 4),
            hex(rng, 3),
            hex(rng, 3),
            hex(rng, 12)
        )
    } else {
        w.owner_uid.clone()
    };
    json!({
        "apiVersion": api_version, "kind": kind, "name": name,
        "uid": uid, "controller": true, "blockOwnerDeletion": true,
    })
}

/// The usual scrape annotations: apps with a `metrics` port ask to be scraped.
fn pod_annotations(w: &Workload) -> Value {
    let scrape = w.ports.iter().any(|(n, _)| n == "metrics");
    let mut annotations = json!({
        "prometheus.io/scrape": if scrape { "true" } else { "false" },
        "kubectl.kubernetes.io/default-container": w.name,
    });
    if scrape {
        annotations["prometheus.io/port"] = json!("9090");
        annotations["prometheus.io/path"] = json!("/metrics");
    }
    annotations
}

/// The app's container, its sidecar if it has one, and one pod in five a DNS cache.
fn pod_containers(rng: &mut fastrand::Rng, w: &Workload, token_volume: &str) -> Vec<Value> {
    let main_ports: Vec<Value> = w
        .ports
        .iter()
        .map(|(n, p)| json!({"name": n, "containerPort": p, "protocol": "TCP"}))
        .collect();
    let mut containers = vec![container(
        &w.name,
        &w.namespace,
        main_ports,
        8080,
        token_volume,
    )];
    if w.sidecar {
        let ports = vec![
            json!({"name": "http-envoy-prom", "containerPort": 15090, "protocol": "TCP"}),
            json!({"name": "admin", "containerPort": 15000, "protocol": "TCP"}),
        ];
        containers.push(container("envoy", "proxy", ports, 15000, token_volume));
    }
    if rng.u8(..10) < 2 {
        let ports = vec![json!({"name": "dns-udp", "containerPort": 5353, "protocol": "UDP"})];
        containers.push(container("dns-cache", "infra", ports, 8081, token_volume));
    }
    containers
}

/// Each container's status, as the kubelet reports it in the pod's phase.
fn container_statuses(
    rng: &mut fastrand::Rng,
    containers: &[Value],
    phase: &str,
    ready: bool,
    now: &str,
) -> Vec<Value> {
    containers
        .iter()
        .map(|c| {
            let cname = c["name"].as_str().unwrap_or("");
            let state = if phase == "Pending" {
                json!({"waiting": {"reason": "ContainerCreating"}})
            } else if phase == "Succeeded" {
                json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now,
                                      "containerID": format!("containerd://{}", hex(rng, 64))}})
            } else {
                json!({"running": {"startedAt": now}})
            };
            let mut status = json!({
                "name": cname, "ready": ready, "started": phase == "Running", "restartCount": rng.u8(..3),
                "image": c["image"], "imageID": format!("{}@sha256:{}", c["image"].as_str().unwrap_or(""), hex(rng, 64)),
                "state": state,
            });
            if phase != "Pending" {
                status["containerID"] = json!(format!("containerd://{}", hex(rng, 64)));
            }
            status
        })
        .collect()
}

/// The managed fields a real pod carries (discovery skips them; they make the objects
/// as large as real ones).
fn managed_fields(w: &Workload, owner_name: &str, now: &str) -> Value {
    json!([
        {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": now,
         "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:version": {}},
                           "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{owner_name}\"}}"): {}}},
            "f:spec": {"f:containers": {format!("k:{{\"name\":\"{}\"}}", w.name): {".": {}, "f:env": {}, "f:image": {},
                       "f:imagePullPolicy": {}, "f:livenessProbe": {}, "f:name": {}, "f:ports": {}, "f:readinessProbe": {},
                       "f:resources": {}, "f:terminationMessagePath": {}, "f:volumeMounts": {}}},
                       "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                       "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {}}}},
        {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": now, "fieldsType": "FieldsV1",
         "subresource": "status", "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {},
            "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}}}},
    ])
}

/// The pod's spec on its node, with the volumes and tolerations a real one has.
fn pod_spec(w: &Workload, node: &NodeInfo, containers: Vec<Value>, token_volume: &str) -> Value {
    json!({
        "containers": containers,
        "volumes": [
            {"name": "config", "configMap": {"name": format!("{}-config", w.name), "defaultMode": 420}},
            {"name": "data", "emptyDir": {}},
            {"name": token_volume, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ]}},
        ],
        "nodeName": node.name,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
        "schedulerName": "default-scheduler",
        "securityContext": {"runAsNonRoot": true, "fsGroup": 2000},
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "tolerations": [
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
    })
}

/// An init container that ran to completion, with its status.
fn add_init_container(rng: &mut fastrand::Rng, pod: &mut Value, token_volume: &str, now: &str) {
    let mut init = container(
        "init-schema",
        "migrate",
        vec![json!({"name": "init-http", "containerPort": 8079, "protocol": "TCP"})],
        8079,
        token_volume,
    );
    if let Some(c) = init.as_object_mut() {
        c.remove("livenessProbe");
        c.remove("readinessProbe");
    }
    pod["spec"]["initContainers"] = json!([init]);
    pod["status"]["initContainerStatuses"] = json!([{
        "name": "init-schema", "ready": true, "restartCount": 0, "image": "registry.example.com/migrate/init-schema:v1",
        "imageID": format!("registry.example.com/migrate/init-schema@sha256:{}", hex(rng, 64)),
        "containerID": format!("containerd://{}", hex(rng, 64)),
        "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}},
    }]);
}

fn container(
    name: &str,
    repo: &str,
    ports: Vec<Value>,
    probe_port: i64,
    token_volume: &str,
) -> Value {
    let probe = |path: &str| {
        json!({"httpGet": {"path": path, "port": probe_port, "scheme": "HTTP"}, "initialDelaySeconds": 5,
               "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3})
    };
    json!({
        "name": name,
        "image": format!("registry.example.com/{repo}/{name}:v1.4.2"),
        "imagePullPolicy": "IfNotPresent",
        "ports": ports,
        "env": [
            {"name": "APP_NAME", "value": name},
            {"name": "LOG_LEVEL", "value": "info"},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        ],
        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}},
        "livenessProbe": probe("/healthz"),
        "readinessProbe": probe("/ready"),
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/app", "readOnly": true},
            {"name": token_volume, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true},
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    })
}

fn service_object(rng: &mut fastrand::Rng, w: &Workload, i: usize) -> Value {
    let ports: Vec<Value> = w
        .ports
        .iter()
        .map(|(name, port)| {
            let (svc_port, target) = if name == "http" {
                (80, json!("http"))
            } else {
                (*port, json!(port))
            };
            json!({"name": name, "port": svc_port, "targetPort": target, "protocol": "TCP"})
        })
        .collect();
    let mut spec = json!({
        "selector": {"app": w.name},
        "ports": ports,
        "type": "ClusterIP",
        "clusterIP": format!("172.20.{}.{}", i / 250, i % 250 + 1),
        "sessionAffinity": "None",
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "internalTrafficPolicy": "Cluster",
    });
    if w.kind == WorkloadKind::StatefulSet {
        spec["clusterIP"] = json!("None");
        spec["publishNotReadyAddresses"] = json!(rng.bool());
    } else if rng.u8(..10) < 2 {
        spec["type"] = json!("NodePort");
        spec["externalTrafficPolicy"] = json!("Cluster");
        for (k, port) in spec["ports"]
            .as_array_mut()
            .into_iter()
            .flatten()
            .enumerate()
        {
            port["nodePort"] = json!(30000 + (i * 2 + k) % 2768);
        }
    }
    spec["clusterIPs"] = json!([spec["clusterIP"]]);
    json!({
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "labels": {"app": w.name, "app.kubernetes.io/name": w.name},
            "annotations": {"prometheus.io/probe": if rng.bool() { "true" } else { "false" }},
        },
        "spec": spec,
        "status": {"loadBalancer": {}},
    })
}

fn ingress_object(rng: &mut fastrand::Rng, w: &Workload) -> Value {
    let host = format!("{}.{}.example.com", w.name, w.namespace);
    let backend = json!({"service": {"name": w.name, "port": {"name": "http"}}});
    let mut ingress = json!({
        "metadata": {
            "name": w.name,
            "namespace": w.namespace,
            "labels": {"app": w.name},
            "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/"},
        },
        "spec": {
            "ingressClassName": "nginx",
            "rules": [
                {"host": host, "http": {"paths": [
                    {"path": "/", "pathType": "Prefix", "backend": backend},
                    {"path": "/api", "pathType": "Prefix", "backend": backend},
                ]}},
                {"host": format!("www.{host}"), "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}},
            ],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}},
    });
    if rng.bool() {
        ingress["spec"]["tls"] =
            json!([{"hosts": [host], "secretName": format!("{}-tls", w.name)}]);
    }
    ingress
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_realistic() {
        let spec = ClusterSpec {
            seed: 7,
            nodes: 3,
            pods: 40,
            namespaces: 2,
            pods_per_workload: 4,
        };
        let (a, b) = (
            Simulator::new(10_000, 1, true),
            Simulator::new(10_000, 1, true),
        );
        let ga = generate(&a, &spec).expect("generate");
        assert_eq!(generate(&b, &spec).ok(), Some(ga.clone()));
        assert_eq!(ga.pods, 40);
        let names = |s: &Simulator| {
            s.list(Resource::Pods, None)
                .iter()
                .map(|p| p["metadata"]["name"].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&a), names(&b));
        let pods = a.list(Resource::Pods, None);
        let avg = pods.iter().map(|p| p.to_string().len()).sum::<usize>() / pods.len();
        assert!((3000..8000).contains(&avg), "average pod size {avg}");
        // The controllers ran at the end: every selecting service has endpoints.
        assert_eq!(
            a.store().count(Resource::Endpoints),
            ga.services - ga.namespaces.len()
        );
    }
}
