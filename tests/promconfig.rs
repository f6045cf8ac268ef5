//! Loading a Prometheus config file: what is taken, what is ignored with a warning,
//! and how errors name the job and key.

use std::path::{Path, PathBuf};

use kubesd::Role;
use kubesd::promconfig::{LoadError, load_config, parse_config};

/// A fresh directory for one test's files.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "kubesd-promconfig-{test}-{}-{:x}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn parse(yaml: &str) -> Result<kubesd::promconfig::LoadedConfig, LoadError> {
    parse_config(yaml, Path::new("/etc/kubesd/prometheus.yml"))
}

const FULL: &str = r#"
global:
  scrape_interval: 15s
  external_labels: {cluster: prod}
rule_files: [rules/*.yml]
alerting:
  alertmanagers: [{static_configs: [{targets: ["am:9093"]}]}]
remote_write: [{url: "http://mimir/api/v1/push"}]
scrape_configs:
  - job_name: static
    static_configs: [{targets: ["localhost:9090"]}]
  - job_name: pods
    scrape_interval: 30s
    metrics_path: /metrics
    honor_labels: true
    tls_config: {insecure_skip_verify: true}
    metric_relabel_configs: [{source_labels: [__name__], regex: go_.*, action: drop}]
    kubernetes_sd_configs:
      - role: pod
        api_server: https://k8s.example:6443
        namespaces:
          names: [default, kube-system]
          own_namespace: false
        selectors:
          - role: pod
            label: app=web
            field: spec.nodeName=node-1
        attach_metadata: {node: true, namespace: true}
        bearer_token_file: secrets/token
        tls_config:
          ca_file: ca.pem
          cert_file: /abs/client.pem
          key_file: client-key.pem
          server_name: kubernetes
          insecure_skip_verify: false
        follow_redirects: false
      - role: endpointslice
        api_server: https://k8s.example:6443
        basic_auth: {username: u, password: p}
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: "true"
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - source_labels: [__address__]
        action: hashmod
        modulus: 4
        target_label: __tmp_shard
"#;

#[test]
fn loads_a_prometheus_config_as_is() {
    let loaded = parse(FULL).expect("loads");
    assert_eq!(loaded.jobs.len(), 1);
    let job = &loaded.jobs[0];
    assert_eq!(job.name, "pods");
    assert_eq!(job.sd_configs.len(), 2);
    assert_eq!(job.relabel.len(), 3);
    assert_eq!(job.rules.len(), 3);

    let sd = &job.sd_configs[0];
    assert_eq!(sd.role, Role::Pod);
    assert_eq!(sd.api_server.as_deref(), Some("https://k8s.example:6443"));
    assert_eq!(sd.namespaces.names, ["default", "kube-system"]);
    assert!(!sd.namespaces.own_namespace);
    assert_eq!(sd.selectors[0].field, "spec.nodeName=node-1");
    assert!(sd.attach_metadata.node && sd.attach_metadata.namespace);
    assert!(!sd.http.follow_redirects);
    // Relative names are taken from the config file's directory.
    assert_eq!(
        sd.http.bearer_token_file.as_deref(),
        Some(Path::new("/etc/kubesd/secrets/token"))
    );
    let tls = &sd.http.tls_config;
    assert_eq!(
        tls.ca_file.as_deref(),
        Some(Path::new("/etc/kubesd/ca.pem"))
    );
    assert_eq!(tls.cert_file.as_deref(), Some(Path::new("/abs/client.pem")));
    assert_eq!(
        tls.key_file.as_deref(),
        Some(Path::new("/etc/kubesd/client-key.pem"))
    );
    assert_eq!(tls.server_name.as_deref(), Some("kubernetes"));
    assert!(!tls.insecure_skip_verify);
    assert_eq!(job.sd_configs[1].role, Role::EndpointSlice);
    assert!(job.sd_configs[1].http.follow_redirects, "default is on");
    assert_eq!(
        job.sd_configs[1]
            .http
            .basic_auth
            .as_ref()
            .map(|b| b.username.as_str()),
        Some("u")
    );

    // One warning per ignored section, per ignored job key, and per ignored job.
    let w = &loaded.warnings;
    let expect = [
        "top-level section \"global\"",
        "top-level section \"rule_files\"",
        "top-level section \"alerting\"",
        "top-level section \"remote_write\"",
        "scrape_configs[0] (job \"static\"): ignoring the job",
        "scrape_configs[1] (job \"pods\"): ignoring \"scrape_interval\"",
        "scrape_configs[1] (job \"pods\"): ignoring \"metrics_path\"",
        "scrape_configs[1] (job \"pods\"): ignoring \"honor_labels\"",
        "scrape_configs[1] (job \"pods\"): ignoring \"tls_config\"",
        "scrape_configs[1] (job \"pods\"): ignoring \"metric_relabel_configs\"",
    ];
    for want in expect {
        assert_eq!(
            w.iter().filter(|m| m.contains(want)).count(),
            1,
            "{want} in {w:#?}"
        );
    }
    assert_eq!(w.len(), expect.len(), "{w:#?}");
}

#[test]
fn errors_name_the_job_and_key() {
    let cases = [
        (
            "scrape_configs:\n- job_name: a\n  kubernetes_sd_configs: [{role: pod}]\n- job_name: b\n  kubernetes_sd_configs: [{role: pod}]\n- job_name: pods\n  kubernetes_sd_configs: [{role: pod, api_sever: x}]",
            "scrape_configs[2] (job \"pods\"): kubernetes_sd_configs[0]: unknown key \"api_sever\"",
        ),
        (
            "scrape_configs: [{job_name: p, scrape_intervall: 5s, kubernetes_sd_configs: [{role: pod}]}]",
            "scrape_configs[0] (job \"p\"): scrape_intervall: unknown key \"scrape_intervall\"",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_config: [{role: pod}]}]",
            "scrape_configs[0] (job \"p\"): kubernetes_sd_config: unknown key",
        ),
        ("globall: {}", "(top level): unknown key \"globall\""),
        (
            "scrape_config_files: [a.yml]",
            "scrape_config_files: not supported",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pods}]}]",
            "scrape_configs[0] (job \"p\"): kubernetes_sd_configs[0].role: unknown variant `pods`",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: namespace}]}]",
            "kubernetes_sd_configs[0]: role:",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod, tls_config: {insecure_skip_verify: maybe}}]}]",
            "scrape_configs[0] (job \"p\"): kubernetes_sd_configs[0].tls_config: ",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod, tls_config: {ca_fil: x}}]}]",
            "kubernetes_sd_configs[0].tls_config: unknown field `ca_fil`",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod, namespaces: {own_namespace: yes please}}]}]",
            "kubernetes_sd_configs[0].namespaces: ",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{api_server: \"https://x\"}]}]",
            "kubernetes_sd_configs[0]: missing field `role`",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod}], relabel_configs: [{action: keep}, {action: replace}]}]",
            "scrape_configs[0] (job \"p\"): relabel_configs[1].target_label: ",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod}], relabel_configs: [{regex: \"(\"}]}]",
            "relabel_configs[0].regex: ",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod}], relabel_configs: [{source_label: [a]}]}]",
            "relabel_configs[0]: unknown field `source_label`",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod}]}, {job_name: p, static_configs: []}]",
            "scrape_configs[1] (job \"p\"): job_name: duplicate job name, first used by scrape_configs[0]",
        ),
        (
            "scrape_configs: [{kubernetes_sd_configs: [{role: pod}]}]",
            "scrape_configs[0]: job_name: missing",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: {role: pod}}]",
            "scrape_configs[0] (job \"p\"): kubernetes_sd_configs: expected a list",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod, api_server: \"https://x\", kubeconfig_file: k}]}]",
            "api_server and kubeconfig_file cannot both be set",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: pod, kubeconfig_file: k, bearer_token: t}]}]",
            "kubernetes_sd_configs[0]: kubeconfig_file: cannot be used with bearer_token",
        ),
        ("scrape_configs: [{job_name: p", "not valid YAML"),
    ];
    for (yaml, want) in cases {
        let err = match parse(yaml) {
            Ok(loaded) => panic!("{yaml}: loaded {loaded:?}"),
            Err(e) => e.to_string(),
        };
        assert!(
            err.starts_with("/etc/kubesd/prometheus.yml: "),
            "{yaml}: {err}"
        );
        assert!(err.contains(want), "{yaml}:\n got  {err}\n want {want}");
    }
}

#[test]
fn yaml_scalars_and_merge_keys() {
    let loaded = parse(
        r#"
scrape_configs:
  - job_name: anchors
    kubernetes_sd_configs:
      - &base
        role: service
        api_server: "https://k8s:6443"
        follow_redirects: no_this_is_a_string_in_yaml_1_2
"#,
    );
    // YAML 1.2: `no` is not a boolean; serde refuses the string for a bool field.
    let err = loaded.expect_err("string for a bool").to_string();
    assert!(
        err.contains("kubernetes_sd_configs[0].follow_redirects"),
        "{err}"
    );

    let loaded = parse(
        r#"
common: &common
  role: node
  api_server: "https://k8s:6443"
scrape_configs: []
"#,
    );
    assert!(
        loaded.is_err(),
        "unknown top-level key, even as an anchor holder"
    );

    let loaded = parse(
        r#"
scrape_configs:
  - job_name: a
    kubernetes_sd_configs:
      - &k8s {role: node, api_server: "https://k8s:6443", tls_config: {insecure_skip_verify: true}}
  - job_name: b
    kubernetes_sd_configs:
      - <<: *k8s
        role: ingress
    relabel_configs:
      - {target_label: port, replacement: 9100}
      - {source_labels: [a], regex: 1, action: keep}
"#,
    )
    .expect("loads");
    let b = &loaded.jobs[1];
    assert_eq!(b.sd_configs[0].role, Role::Ingress);
    assert!(b.sd_configs[0].http.tls_config.insecure_skip_verify);
    assert_eq!(b.relabel[0].replacement.as_deref(), Some("9100"));
    assert_eq!(b.relabel[1].regex.as_deref(), Some("1"));
}

#[test]
fn empty_and_jobless_files() {
    let empty = parse("").expect("an empty file is a valid config");
    assert!(empty.jobs.is_empty() && empty.warnings.is_empty());
    let none = parse("scrape_configs:\n").expect("null list");
    assert!(none.jobs.is_empty());
    let ignored =
        parse("scrape_configs: [{job_name: x, kubernetes_sd_configs: []}]").expect("loads");
    assert!(ignored.jobs.is_empty());
    assert_eq!(ignored.warnings.len(), 1, "{:?}", ignored.warnings);
}

#[test]
fn reads_the_file_and_its_kubeconfig() {
    let dir = temp_dir("kubeconfig");
    std::fs::write(
        dir.join("kube.yml"),
        r#"
apiVersion: v1
kind: Config
current-context: prod
contexts:
- name: prod
  context: {cluster: c1, user: u1}
clusters:
- name: c1
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority: ca.crt
users:
- name: u1
  user:
    tokenFile: token
"#,
    )
    .expect("write kubeconfig");
    let config = dir.join("kubesd.yml");
    std::fs::write(
        &config,
        "scrape_configs:\n- job_name: k\n  kubernetes_sd_configs:\n  - {role: pod, kubeconfig_file: kube.yml}\n",
    )
    .expect("write config");

    let loaded = load_config(&config).expect("loads");
    let sd = &loaded.jobs[0].sd_configs[0];
    assert_eq!(sd.api_server.as_deref(), Some("https://10.0.0.1:6443"));
    assert_eq!(sd.kubeconfig_file, None, "resolved into the config");
    assert_eq!(sd.http.bearer_token_file, Some(dir.join("token")));
    assert_eq!(sd.http.tls_config.ca_file, Some(dir.join("ca.crt")));

    // A missing kubeconfig names the job, the key and the file.
    std::fs::write(
        &config,
        "scrape_configs:\n- job_name: k\n  kubernetes_sd_configs:\n  - {role: pod, kubeconfig_file: nope.yml}\n",
    )
    .expect("write config");
    let err = load_config(&config)
        .expect_err("missing kubeconfig")
        .to_string();
    assert!(
        err.contains("(job \"k\"): kubernetes_sd_configs[0]: kubeconfig_file: kubeconfig ")
            && err.contains("nope.yml: cannot read"),
        "{err}"
    );

    let missing = load_config(&dir.join("absent.yml")).expect_err("no file");
    assert!(missing.to_string().contains("absent.yml: cannot read"));
    let _ = std::fs::remove_dir_all(&dir);
}
