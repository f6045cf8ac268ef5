//! Loading a Prometheus config file: what is taken, what is ignored with a warning,
//! and how errors name the job and key.

use std::path::{Path, PathBuf};

use kubesd::promconfig::{LoadError, LoadOptions, load_config, parse_config, parse_config_with};
use kubesd::relabel::Dialect;
use kubesd::{Role, Semantics};

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

    // Seeded from the job (and `global`): read, not ignored.
    assert_eq!(&*job.scrape.scrape_interval, "30s");
    assert_eq!(&*job.scrape.scrape_timeout, "10s");
    assert_eq!(&*job.scrape.metrics_path, "/metrics");

    // One warning per ignored section, per ignored job key, and per ignored job.
    let w = &loaded.warnings;
    let expect = [
        "ignoring global \"external_labels\"",
        "top-level section \"rule_files\"",
        "top-level section \"alerting\"",
        "top-level section \"remote_write\"",
        "scrape_configs[0] (job \"static\"): ignoring the job",
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
            "scrape_config_files: a.yml",
            "scrape_config_files: expected a list",
        ),
        (
            "scrape_config_files: [\"[\"]",
            "scrape_config_files \"[\": not a valid glob",
        ),
        (
            "global: {scrape_interval: 10s, scrape_timeout: 20s}",
            "global.scrape_timeout: 20s is greater than scrape_interval 10s",
        ),
        (
            "scrape_configs: [{job_name: p, scrape_interval: 5x, kubernetes_sd_configs: [{role: pod}]}]",
            "scrape_configs[0] (job \"p\"): scrape_interval: \"5x\" is not a duration",
        ),
        (
            "scrape_configs: [{job_name: p, scheme: ftp, kubernetes_sd_configs: [{role: pod}]}]",
            "scrape_configs[0] (job \"p\"): scheme: \"ftp\" is not http or https",
        ),
        (
            "scrape_configs: [{job_name: p, metric_name_validation_scheme: legacy, kubernetes_sd_configs: [{role: pod}], relabel_configs: [{target_label: a-b}]}]",
            "relabel_configs[0].target_label: \"a-b\" is invalid",
        ),
        (
            "scrape_configs: [{job_name: p, kubernetes_sd_configs: [{role: podz}]}]",
            "scrape_configs[0] (job \"p\"): kubernetes_sd_configs[0].role: unknown variant `podz`",
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
            "kubernetes_sd_configs[0]: kubeconfig_file: cannot be used with client settings (bearer_token",
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

#[test]
fn every_error_is_reported_at_once() {
    let yaml = r#"
globall: {}
scrape_configs:
  - job_name: a
    kubernetes_sd_configs: [{role: pod, api_sever: x}]
    relabel_configs: [{action: keep_if_equal, source_labels: [x]}, {regex: "("}]
  - job_name: b
    scrape_intervall: 5s
    kubernetes_sd_configs: [{role: podz}]
  - job_name: a
    kubernetes_sd_configs: [{role: node}]
"#;
    let err = parse(yaml).expect_err("invalid").to_string();
    let want = [
        "7 problems:",
        "\n  (top level): unknown key \"globall\"",
        "\n  scrape_configs[0] (job \"a\"): relabel_configs[0].source_labels: at least two are required",
        "\n  scrape_configs[0] (job \"a\"): relabel_configs[1].regex: ",
        "\n  scrape_configs[0] (job \"a\"): kubernetes_sd_configs[0]: unknown key \"api_sever\"",
        "\n  scrape_configs[1] (job \"b\"): scrape_intervall: unknown key",
        "\n  scrape_configs[1] (job \"b\"): kubernetes_sd_configs[0].role: unknown variant `podz`",
        "\n  scrape_configs[2] (job \"a\"): job_name: duplicate job name, first used by scrape_configs[0]",
    ];
    for w in want {
        assert!(err.contains(w), "want {w:?} in:\n{err}");
    }
    let dup = parse("scrape_configs: [{job_name: a, kubernetes_sd_configs: [{role: pod}]}, {job_name: a, kubernetes_sd_configs: [{role: pod, api_sever: x}]}]")
        .expect_err("invalid")
        .to_string();
    assert!(
        dup.contains("2 problems:") && dup.contains("duplicate job name"),
        "{dup}"
    );
}

#[test]
fn scrape_config_files_are_read_as_prometheus_reads_them() {
    let dir = temp_dir("scrape-config-files");
    std::fs::create_dir_all(dir.join("jobs")).expect("dir");
    std::fs::write(
        dir.join("main.yml"),
        "global: {scrape_interval: 20s}\nscrape_config_files: [jobs/*.yml, absent/*.yml]\nscrape_configs:\n- {job_name: main, kubernetes_sd_configs: [{role: node, api_server: \"https://k:6443\"}]}\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("jobs/b.yml"),
        "scrape_configs:\n- {job_name: b, kubernetes_sd_configs: [{role: pod, api_server: \"https://k:6443\", bearer_token_file: token}]}\n",
    )
    .expect("write");
    std::fs::write(
        dir.join("jobs/a.yml"),
        "scrape_configs:\n- {job_name: a, scrape_interval: 1m, kubernetes_sd_configs: [{role: service, api_server: \"https://k:6443\"}]}\n",
    )
    .expect("write");
    let loaded = load_config(&dir.join("main.yml")).expect("loads");
    let names: Vec<&str> = loaded.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        ["main", "a", "b"],
        "main first, then the files in order"
    );
    // Relative names are taken from the including file's own directory; `global`
    // applies to the files' jobs too.
    let b = &loaded.jobs[2];
    assert_eq!(
        b.sd_configs[0].http.bearer_token_file,
        Some(dir.join("jobs/token"))
    );
    assert_eq!(&*b.scrape.scrape_interval, "20s");
    assert_eq!(&*loaded.jobs[1].scrape.scrape_interval, "1m");

    // A duplicate name across files, and a file with more than scrape_configs.
    std::fs::write(
        dir.join("jobs/c.yml"),
        "global: {}\nscrape_configs:\n- {job_name: main, kubernetes_sd_configs: [{role: pod}]}\n",
    )
    .expect("write");
    let err = load_config(&dir.join("main.yml"))
        .expect_err("invalid")
        .to_string();
    assert!(err.contains("2 problems:"), "{err}");
    assert!(
        err.contains(
            "jobs/c.yml: unknown key \"global\": a scrape config file holds only scrape_configs"
        ),
        "{err}"
    );
    assert!(
        err.contains("jobs/c.yml: scrape_configs[0] (job \"main\"): job_name: duplicate job name, first used by scrape_configs[0]"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn placeholders_follow_the_options() {
    let yaml = r#"
scrape_configs:
  - job_name: node-local
    kubernetes_sd_configs:
      - role: pod
        api_server: "https://k:6443"
        selectors: [{role: pod, field: "spec.nodeName=$(NODE_NAME)"}]
    relabel_configs:
      - {target_label: shard, replacement: "%{SHARD}"}
"#;
    let env = |name: &str| match name {
        "NODE_NAME" => Some("node-7".to_string()),
        "SHARD" => Some("3".to_string()),
        _ => None,
    };
    let path = Path::new("/etc/kubesd/prometheus.yml");
    // Prometheus' reading: both kinds stay as written, each named in a warning.
    let plain = parse_config_with(yaml, path, &LoadOptions::default(), &env).expect("loads");
    assert_eq!(
        plain.jobs[0].sd_configs[0].selectors[0].field,
        "spec.nodeName=$(NODE_NAME)"
    );
    assert_eq!(
        plain.jobs[0].relabel[0].replacement.as_deref(),
        Some("%{SHARD}")
    );
    assert!(
        plain
            .warnings
            .iter()
            .any(|w| w.contains("$(NODE_NAME)") && w.contains("--config.expand-reloader-vars")),
        "{:?}",
        plain.warnings
    );
    assert!(
        plain.warnings.iter().any(|w| w.contains("%{SHARD}")),
        "{:?}",
        plain.warnings
    );

    let options = LoadOptions {
        dialect: Dialect::VictoriaMetrics,
        expand_reloader_vars: true,
        ..LoadOptions::default()
    };
    let expanded = parse_config_with(yaml, path, &options, &env).expect("loads");
    assert_eq!(
        expanded.jobs[0].sd_configs[0].selectors[0].field,
        "spec.nodeName=node-7"
    );
    assert_eq!(
        expanded.jobs[0].relabel[0].replacement.as_deref(),
        Some("3")
    );
    assert!(expanded.warnings.is_empty(), "{:?}", expanded.warnings);
}

#[test]
fn a_default_kubeconfig_serves_jobs_that_name_no_server_outside_a_cluster() {
    let dir = temp_dir("default-kubeconfig");
    let kubeconfig = dir.join("config");
    std::fs::write(
        &kubeconfig,
        "current-context: c\ncontexts: [{name: c, context: {cluster: k, user: u}}]\nclusters: [{name: k, cluster: {server: \"https://10.9.9.9:6443\"}}]\nusers: [{name: u, user: {token: t}}]\n",
    )
    .expect("write");
    let yaml = "scrape_configs:\n- {job_name: a, kubernetes_sd_configs: [{role: pod}, {role: node, bearer_token: own}, {role: service, api_server: \"https://other:6443\"}]}\n";
    let options = LoadOptions {
        default_kubeconfig: Some(kubeconfig.clone()),
        ..LoadOptions::default()
    };
    let path = dir.join("kubesd.yml");
    let outside = parse_config_with(yaml, &path, &options, &|_| None).expect("loads");
    let sds = &outside.jobs[0].sd_configs;
    assert_eq!(sds[0].api_server.as_deref(), Some("https://10.9.9.9:6443"));
    assert_eq!(sds[0].http.bearer_token.expose(), "t");
    assert_eq!(
        sds[1].api_server, None,
        "its own client settings: in-cluster as written"
    );
    assert_eq!(sds[2].api_server.as_deref(), Some("https://other:6443"));
    let in_pod = |name: &str| (name == "KUBERNETES_SERVICE_HOST").then(|| "10.96.0.1".to_string());
    let inside = parse_config_with(yaml, &path, &options, &in_pod).expect("loads");
    assert_eq!(
        inside.jobs[0].sd_configs[0].api_server, None,
        "in a pod: the pod's cluster"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vmagent_and_operator_syntax_loads() {
    let yaml = r#"
global: {scrape_interval: 10s}
scrape_configs:
  - job_name: serviceMonitor/default/app/0
    honor_labels: false
    stream_parse: true
    headers: ["X-Scope-OrgID: 1"]
    kubernetes_sd_configs:
      - role: endpointslices
        api_server: "https://k:6443"
        enable_http2: false
        http_headers: {X-Tenant: {values: [a]}}
        proxy_url: "http://proxy:3128"
        no_proxy: "localhost"
        proxy_connect_header: {X-Proxy-Token: [s]}
        tls_config: {min_version: TLS12, max_version: TLS13, ca: "-----BEGIN CERTIFICATE-----"}
    relabel_configs:
      - {action: keep_if_equal, source_labels: [a, b]}
      - {if: '{__meta_kubernetes_pod_name=~"test-.*"}', action: drop}
      - {action: keep, source_labels: [c], regex: [x, y]}
      - {target_label: ns-key, replacement: v}
      - {action: keep_metrics, regex: "up"}
  - job_name: oauth
    kubernetes_sd_configs:
      - role: pod
        api_server: "https://k:6443"
        oauth2: {client_id: id, client_secret_file: secret, token_url: "https://idp/token", scopes: [a], endpoint_params: {aud: k8s}}
        http_headers: {X-Tenant: {files: [tenant]}}
"#;
    let loaded = parse(yaml).expect("loads");
    let job = &loaded.jobs[0];
    assert_eq!(job.sd_configs[0].role, Role::EndpointSlice);
    assert!(!job.sd_configs[0].http.enable_http2);
    assert_eq!(job.relabel[2].regex.as_deref(), Some("x|y"));
    let w = loaded.warnings.join("\n");
    assert!(
        w.contains("relabel_configs[3].target_label \"ns-key\" is not a classic label name"),
        "{w}"
    );
    assert!(
        w.contains("relabel_configs[4]: action keep_metrics reads __name__"),
        "{w}"
    );
    assert!(w.contains("ignoring \"stream_parse\""), "{w}");
    // Their files, like every file name, are taken from the config file's directory.
    let http = &loaded.jobs[1].sd_configs[0].http;
    let secret = http
        .oauth2
        .as_ref()
        .and_then(|o| o.client_secret_file.as_deref());
    assert_eq!(secret, Some(Path::new("/etc/kubesd/secret")));
    assert_eq!(
        http.http_headers["X-Tenant"].files,
        [Path::new("/etc/kubesd/tenant")]
    );
}

#[test]
fn gateway_api_roles_load_in_both_dialects() {
    // vmagent spells its roles `httproute` and `grpcroute`, as kubesd does; `gateway`
    // is Prometheus' draft's.
    let yaml = r#"
scrape_configs:
  - job_name: routes
    kubernetes_sd_configs:
      - role: httproute
        api_server: "https://k:6443"
        namespaces: {names: [shop]}
        selectors:
          - {role: httproute, label: "probe=true"}
          - {role: gateway, field: "metadata.name=edge"}
        attach_metadata: {namespace: true}
  - job_name: grpc
    kubernetes_sd_configs: [{role: grpcroute, api_server: "https://k:6443"}]
  - job_name: listeners
    kubernetes_sd_configs: [{role: gateway, api_server: "https://k:6443"}]
"#;
    let path = Path::new("/etc/kubesd/prometheus.yml");
    for dialect in [Dialect::Prometheus, Dialect::VictoriaMetrics] {
        let options = LoadOptions {
            dialect,
            ..LoadOptions::default()
        };
        let loaded = parse_config_with(yaml, path, &options, &|_| None).expect("loads");
        let roles: Vec<Role> = loaded.jobs.iter().map(|j| j.sd_configs[0].role).collect();
        assert_eq!(roles, [Role::HttpRoute, Role::GrpcRoute, Role::Gateway]);
        let sd = &loaded.jobs[0].sd_configs[0];
        assert_eq!(
            sd.watched_roles(Semantics::VictoriaMetrics),
            [
                Role::HttpRoute,
                Role::Gateway,
                Role::Service,
                Role::Namespace
            ]
        );
        // Prometheus' draft reads the route alone.
        assert_eq!(
            sd.watched_roles(Semantics::Prometheus),
            [Role::HttpRoute, Role::Namespace]
        );
    }
    let wrong = r#"
scrape_configs:
  - job_name: listeners
    kubernetes_sd_configs:
      - role: gateway
        api_server: "https://k:6443"
        selectors: [{role: httproute, label: "a=b"}]
"#;
    let err = parse(wrong).expect_err("a gateway job does not watch routes");
    assert!(err.to_string().contains("selectors[0].role"), "{err}");
}
