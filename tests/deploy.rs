//! The configs that `deploy/` ships load in kubesd as they are: the ConfigMaps' config
//! files parse, with the jobs the Prometheus snippet (deploy/prometheus/http-sd.yml)
//! names, and the fleet example's scrapers ask kubesd for valid views. (The manifests
//! themselves are validated against Kubernetes' schemas by `.ci/validate-manifests`.)

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

/// The `key` entry of the ConfigMap in a (perhaps multi-document) manifest.
fn config_map_data(manifest: &str, key: &str) -> String {
    let text = std::fs::read_to_string(manifest).expect("the manifest is in the repository");
    for doc in serde_norway::Deserializer::from_str(&text) {
        let doc = <serde_norway::Value as serde::Deserialize>::deserialize(doc)
            .expect("the manifest is YAML");
        if doc["kind"] == "ConfigMap" {
            return doc["data"][key].as_str().expect("the entry").to_string();
        }
    }
    panic!("{manifest} has no ConfigMap");
}

/// The one `http_sd_configs` URL of a scraper's config (of its first job), its query as
/// kubesd reads it.
fn sd_query(scrape_config: &str) -> (String, String) {
    sd_queries(scrape_config).swap_remove(0)
}

/// The `http_sd_configs` URL of each job of a scraper's config, path and query.
fn sd_queries(scrape_config: &str) -> Vec<(String, String)> {
    let doc: serde_norway::Value = serde_norway::from_str(scrape_config).expect("YAML");
    let jobs = doc["scrape_configs"].as_sequence().expect("jobs");
    jobs.iter()
        .map(|job| {
            let url = job["http_sd_configs"][0]["url"].as_str().expect("a URL");
            let (path, query) = url.split_once('?').expect("a query");
            (path.to_string(), query.to_string())
        })
        .collect()
}

#[test]
fn the_fleet_example_loads_and_its_scrapers_ask_for_valid_views() {
    use kubesd::service::{ViewQuery, parse_view_query};
    let config = parse_config(
        &config_map_entry("deploy/fleet/configmap.yaml"),
        Path::new("/etc/kubesd/config/kubesd.yml"),
    )
    .expect("deploy/fleet/configmap.yaml's config loads");
    let membership = config.membership.expect("the membership section");
    assert_eq!(membership.namespace, "monitoring");
    assert_eq!(config.jobs[0].name, "kubernetes-pods");
    let monitors = config.monitors.expect("the monitors section");
    assert!(
        monitors.service_monitors.selector.is_some() && monitors.pod_monitors.selector.is_some()
    );

    // Each Prometheus replica's shard, as the init container expands $(SHARD).
    let prometheus = config_map_data("deploy/fleet/prometheus-shards.yaml", "prometheus.yml");
    let statefulset =
        std::fs::read_to_string("deploy/fleet/prometheus-shards.yaml").expect("manifest");
    assert!(
        statefulset.contains("replicas: 2 "),
        "two replicas, as shards=2"
    );
    // A monitor's job, its name percent-encoded in the path.
    let (path, _) = sd_queries(&prometheus.replace("$(SHARD)", "0")).swap_remove(1);
    let escaped = path.rsplit("/sd/").next().unwrap_or_default();
    assert_eq!(
        kubesd::service::job_name_of(&format!("{escaped}.json")).as_deref(),
        Some("serviceMonitor/shop/web/0"),
        "the job's name, percent-encoded"
    );
    for shard in 0..2 {
        let (path, query) = sd_query(&prometheus.replace("$(SHARD)", &shard.to_string()));
        assert!(path.ends_with("/sd/kubernetes-pods"), "{path}");
        assert_eq!(
            parse_view_query(&query),
            Ok(ViewQuery::Shard {
                index: shard,
                count: 2
            })
        );
    }

    // The DaemonSet agent's node, as vmagent expands %{NODE_NAME}.
    let agent = config_map_data("deploy/fleet/agent-daemonset.yaml", "scrape.yml");
    let (_, query) = sd_query(&agent.replace("%{NODE_NAME}", "node-7"));
    assert_eq!(
        parse_view_query(&query),
        Ok(ViewQuery::Node("node-7".into()))
    );
    let daemonset = std::fs::read_to_string("deploy/fleet/agent-daemonset.yaml").expect("manifest");
    assert!(daemonset.contains("fieldRef: {fieldPath: spec.nodeName}"));
}

#[test]
fn the_collector_example_polls_kubesd_as_its_target_allocator() {
    let collector = config_map_data("deploy/fleet/otel-collectors.yaml", "collector.yaml");
    let doc: serde_norway::Value = serde_norway::from_str(&collector).expect("YAML");
    let ta = &doc["receivers"]["prometheus"]["target_allocator"];
    assert_eq!(ta["endpoint"], "http://kubesd-fleet.monitoring.svc:9097");
    assert_eq!(ta["collector_id"], "${env:POD_NAME}");
    let service = std::fs::read_to_string("deploy/fleet/service.yaml").expect("the Service");
    assert!(service.contains("name: kubesd-fleet") && service.contains("port: 9097"));
    // The membership the manifest's comment gives loads, and names the collectors.
    let manifest =
        std::fs::read_to_string("deploy/fleet/otel-collectors.yaml").expect("the manifest");
    let section: String = manifest
        .lines()
        .skip_while(|l| !l.starts_with("#   membership:"))
        .take_while(|l| l.starts_with("#   "))
        .map(|l| format!("{}\n", &l[4..]))
        .collect();
    let config = parse_config(
        &format!("{section}scrape_configs: []\n"),
        Path::new("/etc/kubesd/config/kubesd.yml"),
    )
    .expect("the commented membership loads");
    let membership = config.membership.expect("a membership section");
    assert_eq!(
        membership.label_selector,
        "app.kubernetes.io/name=otel-collectors"
    );
    assert!(membership.zone_aware);
    assert!(manifest.contains("labels: {app.kubernetes.io/name: otel-collectors}"));
    assert!(manifest.contains("fieldRef: {fieldPath: metadata.name}"));
}
