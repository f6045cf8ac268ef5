//! A PodMonitor's jobs, one per endpoint, as `generatePodMonitorConfig` writes them,
//! after the checks of `checkPodMonitor`.

use kubesd_core::monitors::{HttpConfig, IntOrString, PodMetricsEndpoint, PodMonitor, ScrapeClass};
use serde_norway::Value;

use super::error::Reason;
use super::http::Writer;
use super::monitor::GeneratedJob;
use super::relabel::{
    job_name_rule, monitor_rules, rule, running_filter, selector_rules, sharding_rules,
};
use super::scrape::{
    EndpointScrape, body_size_limit, endpoint_scrape, honor, limits, metric_relabelings,
};
use super::scrape_class::{merge_attach_metadata, merge_safe_authorization, merge_safe_tls};
use super::sd::{kubernetes_sd, role_selector};
use super::service_monitor::{copy, copy_label, job_label, keep};
use super::settings::Settings;
use super::store::Credentials;
use super::validate::{check_interval, check_relabelings};
use super::yaml::{Map, list};

/// The checks the operator makes before it accepts the monitor.
pub fn check(m: &PodMonitor, settings: &Settings, creds: Credentials<'_>) -> Result<(), Reason> {
    m.spec.selector.check().map_err(|source| Reason::Selector {
        field: "selector".into(),
        source,
    })?;
    for (i, ep) in m.spec.pod_metrics_endpoints.iter().enumerate() {
        let at = format!("podMetricsEndpoints[{i}]");
        check_interval(&ep.interval, &ep.scrape_timeout, &settings.scrape_interval)
            .map_err(|why| Reason::invalid(at.as_str(), why))?;
        check_relabelings(&ep.relabelings)
            .map_err(|why| Reason::invalid(format!("{at}.relabelings"), why))?;
        check_relabelings(&ep.metric_relabelings)
            .map_err(|why| Reason::invalid(format!("{at}.metricRelabelings"), why))?;
        check_http_config(&ep.http, &at, creds)?;
    }
    if let Some(class) = m.spec.limits.scrape_class.as_deref()
        && !class.is_empty()
        && !settings.classes.contains(class)
    {
        return Err(Reason::UnknownScrapeClass(class.to_string()));
    }
    Ok(())
}

/// `HTTPConfig.Validate` (one way to authenticate), then every reference.
fn check_http_config(http: &HttpConfig, at: &str, creds: Credentials<'_>) -> Result<(), Reason> {
    let ways = [
        ("authorization", http.authorization.is_some()),
        ("basicAuth", http.basic_auth.is_some()),
        ("bearerTokenSecret", http.bearer_token_secret.is_some()),
        ("oauth2", http.oauth2.is_some()),
    ];
    let set: Vec<&str> = ways.iter().filter(|(_, on)| *on).map(|(w, _)| *w).collect();
    if let [first, second, ..] = set[..] {
        return Err(Reason::invalid(
            at,
            format!("{first} and {second} cannot be configured at the same time"),
        ));
    }
    if let Some(sel) = &http.bearer_token_secret
        && !sel.name.is_empty()
        && !sel.key.is_empty()
    {
        creds.secret_key(sel, &format!("{at}.bearerTokenSecret"))?;
    }
    creds.check_basic_auth(http.basic_auth.as_ref(), &format!("{at}.basicAuth"))?;
    creds.check_safe_tls(http.tls_config.as_ref(), &format!("{at}.tlsConfig"))?;
    creds.check_oauth2(http.oauth2.as_ref(), &format!("{at}.oauth2"))?;
    creds.check_authorization(http.authorization.as_ref(), &format!("{at}.authorization"))?;
    creds.check_proxy(&http.proxy, &format!("{at}.proxyConfig"))
}

/// The job of endpoint `i`.
pub fn job(
    m: &PodMonitor,
    ep: &PodMetricsEndpoint,
    i: usize,
    settings: &Settings,
    w: &mut Writer<'_>,
) -> Result<GeneratedJob, Reason> {
    let (ns, name) = (&m.metadata.namespace, &m.metadata.name);
    let spec = &m.spec;
    let class = settings
        .classes
        .for_monitor(spec.limits.scrape_class.as_deref());
    let job_name = format!("podMonitor/{ns}/{name}/{i}");
    let mut cfg = Map::new();
    cfg.put("job_name", job_name.as_str());
    honor(
        &mut cfg,
        ep.honor_labels,
        ep.honor_timestamps,
        ep.track_timestamps_staleness,
    );
    let attach = merge_attach_metadata(spec.attach_metadata.as_ref(), class);
    let by_role = role_selector(spec.selector_mechanism.as_deref());
    let sd = kubernetes_sd(
        &spec.namespace_selector,
        ns,
        "pod",
        attach.as_ref(),
        by_role.then_some((&spec.selector, &["pod"][..])),
    )?;
    cfg.put("kubernetes_sd_configs", sd);
    scrape_settings(&mut cfg, ep);
    client(&mut cfg, &ep.http, class, w);
    let mut rules = vec![job_name_rule()];
    if ep.filter_running.unwrap_or(true) {
        rules.push(running_filter());
    }
    if !by_role {
        rules.extend(selector_rules(&spec.selector, "pod"));
    }
    rules.extend(port_rule(ep));
    rules.extend(label_rules(m, ep));
    rules.extend(monitor_rules(&class.relabelings));
    rules.extend(monitor_rules(&ep.relabelings));
    rules.extend(sharding_rules(settings.shards, "__address__"));
    cfg.put("relabel_configs", list(rules));
    limits(&mut cfg, &spec.limits, class);
    body_size_limit(&mut cfg, spec.body_size_limit.as_ref());
    metric_relabelings(&mut cfg, class, &ep.metric_relabelings);
    Ok(GeneratedJob {
        name: job_name,
        config: cfg.into(),
    })
}

/// The endpoint's own scrape settings (see [`endpoint_scrape`]).
fn scrape_settings(cfg: &mut Map, ep: &PodMetricsEndpoint) {
    let settings = EndpointScrape {
        interval: &ep.interval,
        scrape_timeout: &ep.scrape_timeout,
        path: &ep.path,
        params: ep.params.as_ref(),
        scheme: ep.scheme.as_ref(),
    };
    endpoint_scrape(cfg, settings);
}

/// The scrape's HTTP client, merged with the scrape class's.
fn client(cfg: &mut Map, http: &HttpConfig, class: &ScrapeClass, w: &mut Writer<'_>) {
    cfg.put_some("follow_redirects", http.follow_redirects);
    cfg.put_some("enable_http2", http.enable_http2);
    w.tls(
        cfg,
        merge_safe_tls(http.tls_config.as_ref(), class).as_ref(),
    );
    w.bearer_token(cfg, http.bearer_token_secret.as_ref());
    w.basic_auth(cfg, http.basic_auth.as_ref());
    w.oauth2(cfg, http.oauth2.as_ref());
    w.proxy(cfg, &http.proxy);
    let authorization = merge_safe_authorization(http.authorization.as_ref(), class);
    w.authorization(cfg, authorization.as_ref());
}

/// Keeps the endpoint's container port: by name, else by number (`portNumber`, else
/// the deprecated `targetPort`).
fn port_rule(ep: &PodMetricsEndpoint) -> Option<Value> {
    if let Some(port) = ep.port.as_deref().filter(|p| !p.is_empty()) {
        return Some(keep(
            "__meta_kubernetes_pod_container_port_name",
            port.into(),
        ));
    }
    if let Some(number) = ep.port_number.filter(|n| *n != 0) {
        return Some(keep(
            "__meta_kubernetes_pod_container_port_number",
            number.into(),
        ));
    }
    match ep.target_port.as_ref()? {
        IntOrString::Str(s) if !s.is_empty() => Some(keep(
            "__meta_kubernetes_pod_container_port_name",
            s.as_str().into(),
        )),
        IntOrString::Int(n) if *n != 0 => Some(keep(
            "__meta_kubernetes_pod_container_port_number",
            (*n).into(),
        )),
        _ => None,
    }
}

/// `namespace`, `container`, `pod`, the monitor's pod labels, `job` (the monitor's
/// `namespace/name`, or `jobLabel`'s value) and `endpoint`.
fn label_rules(m: &PodMonitor, ep: &PodMetricsEndpoint) -> Vec<Value> {
    let mut rules = Vec::new();
    for (source, target) in [
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_pod_container_name", "container"),
        ("__meta_kubernetes_pod_name", "pod"),
    ] {
        rules.push(copy(source, target));
    }
    for label in &m.spec.pod_target_labels {
        rules.push(copy_label("pod", label));
    }
    let (ns, name) = (&m.metadata.namespace, &m.metadata.name);
    rules.push(rule(&[
        ("target_label", "job".into()),
        ("replacement", format!("{ns}/{name}").into()),
    ]));
    if !m.spec.job_label.is_empty() {
        rules.push(job_label("pod", &m.spec.job_label));
    }
    let endpoint = match ep.port.as_deref().filter(|p| !p.is_empty()) {
        Some(port) => Some(port.to_string()),
        None => ep
            .target_port
            .as_ref()
            .map(IntOrString::text)
            .filter(|t| !t.is_empty()),
    };
    if let Some(endpoint) = endpoint {
        rules.push(rule(&[
            ("target_label", "endpoint".into()),
            ("replacement", endpoint.into()),
        ]));
    }
    rules
}
