//! The configs that `deploy/` ships load in kubesd as they are: the ConfigMaps' config
//! files parse, with the jobs the Prometheus snippet (deploy/prometheus/http-sd.yml)
//! names. (The manifests themselves are validated against Kubernetes' schemas by
//! `.ci/validate-manifests`.)

use std::path::Path;

use kubesd::promconfig::{LoadOptions, parse_config, parse_config_with};

/// The `kubesd.yml` entry of a ConfigMap manifest.
fn config_map_entry(manifest: &str) -> String {
    let text = std::fs::read_to_string(manifest).expect("the manifest is in the repository");
    let doc: serde_norway::Value = serde_norway::from_str(&text).expect("the manifest is YAML");
    doc["data"]["kubesd.yml"]
        .as_str()
        .expect("the ConfigMap has a kubesd.yml entry")
        .to_string()
}

#[test]
fn the_deployment_config_loads_with_the_jobs_prometheus_is_pointed_at() {
    let config = parse_config(
        &config_map_entry("deploy/configmap.yaml"),
        Path::new("/etc/kubesd/config/kubesd.yml"),
    )
    .expect("deploy/configmap.yaml's config loads");
    let names: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "kubernetes-nodes",
            "kubernetes-service-endpoints",
            "kubernetes-pods"
        ]
    );
    let snippet = std::fs::read_to_string("deploy/prometheus/http-sd.yml").expect("snippet");
    for name in names {
        assert!(
            snippet.contains(&format!("/sd/{name}\n")),
            "deploy/prometheus/http-sd.yml reads job {name}"
        );
    }
}

#[test]
fn the_daemonset_config_watches_only_its_own_nodes_pods() {
    // As deploy/daemonset/daemonset.yaml runs it: --config.expand-reloader-vars, with
    // NODE_NAME from the downward API.
    let options = LoadOptions {
        expand_reloader_vars: true,
        ..LoadOptions::default()
    };
    let env = |name: &str| (name == "NODE_NAME").then(|| "node-7".to_string());
    let config = parse_config_with(
        &config_map_entry("deploy/daemonset/configmap.yaml"),
        Path::new("/etc/kubesd/config/kubesd.yml"),
        &options,
        &env,
    )
    .expect("deploy/daemonset/configmap.yaml's config loads");
    let selectors: Vec<&str> = config
        .jobs
        .iter()
        .flat_map(|j| &j.sd_configs)
        .flat_map(|sd| &sd.selectors)
        .map(|s| s.field.as_str())
        .collect();
    assert_eq!(selectors, ["spec.nodeName=node-7"]);
    let daemonset =
        std::fs::read_to_string("deploy/daemonset/daemonset.yaml").expect("the DaemonSet");
    assert!(daemonset.contains("- --config.expand-reloader-vars\n"));
    assert!(daemonset.contains("fieldRef: {fieldPath: spec.nodeName}"));
}
