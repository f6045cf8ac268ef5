//! A ServiceMonitor's jobs, one per endpoint, as `generateServiceMonitorConfig` writes
//! them, after the checks of `checkServiceMonitor`.

use kubesd_core::monitors::{Endpoint, IntOrString, ScrapeClass, ServiceMonitor};
use serde_norway::Value;

use super::error::Reason;
use super::http::Writer;
use super::monitor::GeneratedJob;
use super::relabel::{
    job_name_rule, monitor_rules, rule, running_filter, sanitize, selector_rules, sharding_rules,
};
use super::scrape::{
    EndpointScrape, body_size_limit, endpoint_scrape, honor, limits, metric_relabelings,
};
use super::scrape_class::{merge_attach_metadata, merge_safe_authorization, merge_tls};
use super::sd::{kubernetes_sd, role_selector};
use super::settings::{EndpointRole, Settings};
use super::store::Credentials;
use super::validate::{check_interval, check_relabelings};
use super::yaml::{Map, list, strings};

/// The checks the operator makes before it accepts the monitor.
pub fn check(
    m: &ServiceMonitor,
    settings: &Settings,
    creds: Credentials<'_>,
) -> Result<(), Reason> {
    m.spec.selector.check().map_err(|source| Reason::Selector {
        field: "selector".into(),
        source,
    })?;
    for (i, ep) in m.spec.endpoints.iter().enumerate() {
        let at = |field: &str| format!("endpoints[{i}].{field}");
        if let Some(sel) = ep
            .bearer_token_secret
            .as_ref()
            .filter(|s| !s.name.is_empty())
        {
            creds.secret_key(sel, &at("bearerTokenSecret"))?;
        }
        creds.check_basic_auth(ep.basic_auth.as_ref(), &at("basicAuth"))?;
        creds.check_tls(ep.tls_config.as_ref(), &at("tlsConfig"))?;
        creds.check_oauth2(ep.oauth2.as_ref(), &at("oauth2"))?;
        creds.check_authorization(ep.authorization.as_ref(), &at("authorization"))?;
        check_interval(&ep.interval, &ep.scrape_timeout, &settings.scrape_interval)
            .map_err(|why| Reason::invalid(format!("endpoints[{i}]"), why))?;
        check_relabelings(&ep.relabelings)
            .map_err(|why| Reason::invalid(at("relabelings"), why))?;
        check_relabelings(&ep.metric_relabelings)
            .map_err(|why| Reason::invalid(at("metricRelabelings"), why))?;
        creds.check_proxy(&ep.proxy, &format!("endpoints[{i}]"))?;
    }
    if let Some(class) = m.spec.limits.scrape_class.as_deref()
        && !class.is_empty()
        && !settings.classes.contains(class)
    {
        return Err(Reason::UnknownScrapeClass(class.to_string()));
    }
    Ok(())
}

/// The job of endpoint `i`.
pub fn job(
    m: &ServiceMonitor,
    ep: &Endpoint,
    i: usize,
    settings: &Settings,
    w: &mut Writer<'_>,
) -> Result<GeneratedJob, Reason> {
    let (ns, name) = (&m.metadata.namespace, &m.metadata.name);
    let spec = &m.spec;
    let class = settings
        .classes
        .for_monitor(spec.limits.scrape_class.as_deref());
    let job_name = format!("serviceMonitor/{ns}/{name}/{i}");
    let mut cfg = Map::new();
    cfg.put("job_name", job_name.as_str());
    honor(
        &mut cfg,
        ep.honor_labels,
        ep.honor_timestamps,
        ep.track_timestamps_staleness,
    );
    let role = settings
        .role
        .or_monitor(spec.service_discovery_role.as_deref());
    let attach = merge_attach_metadata(spec.attach_metadata.as_ref(), class);
    let by_role = role_selector(spec.selector_mechanism.as_deref());
    let roles = [role.role(), "service"];
    let sd = kubernetes_sd(
        &spec.namespace_selector,
        ns,
        role.role(),
        attach.as_ref(),
        by_role.then_some((&spec.selector, &roles[..])),
    )?;
    cfg.put("kubernetes_sd_configs", sd);
    scrape_settings(&mut cfg, ep);
    client(&mut cfg, ep, class, w);
    let mut rules = vec![job_name_rule()];
    if !by_role {
        rules.extend(selector_rules(&spec.selector, "service"));
    }
    rules.extend(port_rule(ep, role));
    rules.extend(identity_rules(role));
    if ep.filter_running.unwrap_or(true) {
        rules.push(running_filter());
    }
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
fn scrape_settings(cfg: &mut Map, ep: &Endpoint) {
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
fn client(cfg: &mut Map, ep: &Endpoint, class: &ScrapeClass, w: &mut Writer<'_>) {
    cfg.put_some("follow_redirects", ep.follow_redirects);
    cfg.put_some("enable_http2", ep.enable_http2);
    w.proxy(cfg, &ep.proxy);
    w.oauth2(cfg, ep.oauth2.as_ref());
    w.tls(cfg, merge_tls(ep.tls_config.as_ref(), class).as_ref());
    if !ep.bearer_token_file.is_empty() {
        cfg.put("bearer_token_file", ep.bearer_token_file.as_str());
    }
    w.bearer_token(cfg, ep.bearer_token_secret.as_ref());
    w.basic_auth(cfg, ep.basic_auth.as_ref());
    let authorization = merge_safe_authorization(ep.authorization.as_ref(), class);
    w.authorization(cfg, authorization.as_ref());
}

/// The object whose labels name an endpoint's port and target in `role`.
fn endpoint_object(role: EndpointRole) -> &'static str {
    match role {
        EndpointRole::EndpointSlice => "endpointslice",
        EndpointRole::Endpoints => "endpoint",
    }
}

/// Keeps the endpoint's port: by the Service port's name, else the pod's container
/// port by name or number.
fn port_rule(ep: &Endpoint, role: EndpointRole) -> Option<Value> {
    if !ep.port.is_empty() {
        let label = format!("__meta_kubernetes_{}_port_name", endpoint_object(role));
        return Some(keep(&label, ep.port.as_str().into()));
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

/// The target's `node` or `pod` (from the endpoint's target), `namespace`, `service`,
/// `pod` and `container`.
fn identity_rules(role: EndpointRole) -> Vec<Value> {
    let object = endpoint_object(role);
    let kind_and_name = [
        format!("__meta_kubernetes_{object}_address_target_kind"),
        format!("__meta_kubernetes_{object}_address_target_name"),
    ];
    let mut rules = Vec::new();
    for (kind, label) in [("Node", "node"), ("Pod", "pod")] {
        rules.push(rule(&[
            ("source_labels", strings(&kind_and_name)),
            ("separator", ";".into()),
            ("regex", format!("{kind};(.*)").into()),
            ("replacement", "${1}".into()),
            ("target_label", label.into()),
        ]));
    }
    for (source, target) in [
        ("__meta_kubernetes_namespace", "namespace"),
        ("__meta_kubernetes_service_name", "service"),
        ("__meta_kubernetes_pod_name", "pod"),
        ("__meta_kubernetes_pod_container_name", "container"),
    ] {
        rules.push(copy(source, target));
    }
    rules
}

/// The monitor's target labels, `job` (the Service's name, or `jobLabel`'s value) and
/// `endpoint`.
fn label_rules(m: &ServiceMonitor, ep: &Endpoint) -> Vec<Value> {
    let mut rules = Vec::new();
    for label in &m.spec.target_labels {
        rules.push(copy_label("service", label));
    }
    for label in &m.spec.pod_target_labels {
        rules.push(copy_label("pod", label));
    }
    rules.push(rule(&[
        (
            "source_labels",
            strings(&["__meta_kubernetes_service_name"]),
        ),
        ("target_label", "job".into()),
        ("replacement", "${1}".into()),
    ]));
    if !m.spec.job_label.is_empty() {
        rules.push(job_label("service", &m.spec.job_label));
    }
    let endpoint = if ep.port.is_empty() {
        ep.target_port
            .as_ref()
            .map(IntOrString::text)
            .filter(|t| !t.is_empty())
    } else {
        Some(ep.port.clone())
    };
    if let Some(endpoint) = endpoint {
        rules.push(rule(&[
            ("target_label", "endpoint".into()),
            ("replacement", endpoint.into()),
        ]));
    }
    rules
}

/// Keeps the targets whose `label` matches `regex`.
pub fn keep(label: &str, regex: Value) -> Value {
    rule(&[
        ("action", "keep".into()),
        ("source_labels", strings(&[label])),
        ("regex", regex),
    ])
}

/// Copies `source` into `target`.
pub fn copy(source: &str, target: &str) -> Value {
    rule(&[
        ("source_labels", strings(&[source])),
        ("target_label", target.into()),
    ])
}

/// Copies the `object`'s (`service` or `pod`) label `label` onto the target, when set.
pub fn copy_label(object: &str, label: &str) -> Value {
    let name = sanitize(label);
    rule(&[
        (
            "source_labels",
            strings(&[format!("__meta_kubernetes_{object}_label_{name}")]),
        ),
        ("target_label", name.into()),
        ("regex", "(.+)".into()),
        ("replacement", "${1}".into()),
    ])
}

/// `job` from the `object`'s label `label`, when set.
pub fn job_label(object: &str, label: &str) -> Value {
    rule(&[
        (
            "source_labels",
            strings(&[format!(
                "__meta_kubernetes_{object}_label_{}",
                sanitize(label)
            )]),
        ),
        ("target_label", "job".into()),
        ("regex", "(.+)".into()),
        ("replacement", "${1}".into()),
    ])
}
