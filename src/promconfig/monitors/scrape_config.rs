//! A ScrapeConfig's job, as `generateScrapeConfig` writes it, after the checks of
//! `checkScrapeConfig`: static, file, HTTP and Kubernetes discovery.

use kubesd_core::api::RoleSelector;
use kubesd_core::monitors::{
    FileSdConfig, HttpSdConfig, KubernetesSdConfig, ScrapeConfig, ScrapeConfigSpec, StaticConfig,
};
use serde_norway::Value;

use super::error::Reason;
use super::http::Writer;
use super::monitor::GeneratedJob;
use super::relabel::{job_name_rule, monitor_rules, rule, sharding_rules_if_missing};
use super::scrape::{limits, metric_relabelings, scheme};
use super::scrape_class::{merge_safe_authorization, merge_safe_tls};
use super::settings::Settings;
use super::store::Credentials;
use super::validate::{check_interval, check_relabelings};
use super::yaml::{Map, list, sorted, strings};

/// The checks the operator makes before it accepts the ScrapeConfig.
pub fn check(c: &ScrapeConfig, settings: &Settings, creds: Credentials<'_>) -> Result<(), Reason> {
    let spec = &c.spec;
    let unsupported = spec.unsupported_discovery();
    if !unsupported.is_empty() {
        return Err(Reason::UnsupportedDiscovery(
            unsupported.into_iter().map(String::from).collect(),
        ));
    }
    if let Some(class) = spec.limits.scrape_class.as_deref()
        && !class.is_empty()
        && !settings.classes.contains(class)
    {
        return Err(Reason::UnknownScrapeClass(class.to_string()));
    }
    check_relabelings(&spec.relabelings).map_err(|why| Reason::invalid("relabelings", why))?;
    creds.check_basic_auth(spec.basic_auth.as_ref(), "basicAuth")?;
    creds.check_authorization(spec.authorization.as_ref(), "authorization")?;
    creds.check_oauth2(spec.oauth2.as_ref(), "oauth2")?;
    creds.check_safe_tls(spec.tls_config.as_ref(), "tlsConfig")?;
    let interval = spec.scrape_interval.as_deref().unwrap_or_default();
    let timeout = spec.scrape_timeout.as_deref().unwrap_or_default();
    check_interval(interval, timeout, &settings.scrape_interval)
        .map_err(|why| Reason::invalid("scrapeTimeout", why))?;
    creds.check_proxy(&spec.proxy, "proxyConfig")?;
    check_relabelings(&spec.metric_relabelings)
        .map_err(|why| Reason::invalid("metricRelabelings", why))?;
    for (i, s) in spec.static_configs.iter().enumerate() {
        if s.labels.iter().flatten().any(|(name, _)| name.is_empty()) {
            return Err(Reason::invalid(
                format!("staticConfigs[{i}]"),
                "invalid label in map: an empty name",
            ));
        }
    }
    for (i, h) in spec.http_sd_configs.iter().enumerate() {
        let at = format!("httpSDConfigs[{i}]");
        creds.check_basic_auth(h.basic_auth.as_ref(), &format!("{at}.basicAuth"))?;
        creds.check_authorization(h.authorization.as_ref(), &format!("{at}.authorization"))?;
        creds.check_oauth2(h.oauth2.as_ref(), &format!("{at}.oauth2"))?;
        creds.check_safe_tls(h.tls_config.as_ref(), &format!("{at}.tlsConfig"))?;
        creds.check_proxy(&h.proxy, &at)?;
    }
    for (i, k) in spec.kubernetes_sd_configs.iter().enumerate() {
        check_kubernetes_sd(k, &format!("kubernetesSDConfigs[{i}]"), creds)?;
    }
    Ok(())
}

/// One Kubernetes discovery: its references, and selectors for roles its role reads.
fn check_kubernetes_sd(
    k: &KubernetesSdConfig,
    at: &str,
    creds: Credentials<'_>,
) -> Result<(), Reason> {
    creds.check_basic_auth(k.basic_auth.as_ref(), &format!("{at}.basicAuth"))?;
    creds.check_authorization(k.authorization.as_ref(), &format!("{at}.authorization"))?;
    creds.check_oauth2(k.oauth2.as_ref(), &format!("{at}.oauth2"))?;
    creds.check_safe_tls(k.tls_config.as_ref(), &format!("{at}.tlsConfig"))?;
    creds.check_proxy(&k.proxy, at)?;
    let own = k.namespaces.as_ref().and_then(|n| n.own_namespace) == Some(true);
    if k.api_server.is_some() && own {
        return Err(Reason::invalid(
            at,
            "cannot use 'apiServer' and 'namespaces.ownNamespace' simultaneously",
        ));
    }
    let role = k.role.to_lowercase();
    let allowed: &[&str] = match role.as_str() {
        "pod" => &["pod"],
        "service" => &["service"],
        "endpointslice" => &["pod", "service", "endpointslice"],
        "endpoints" => &["pod", "service", "endpoints"],
        "node" => &["node"],
        "ingress" => &["ingress"],
        _ if k.selectors.is_empty() => &[],
        _ => {
            return Err(Reason::invalid(
                at,
                format!(
                    "invalid role: {:?}, expecting one of: pod, service, endpoints, \
                     endpointslice, node or ingress",
                    k.role
                ),
            ));
        }
    };
    for (j, s) in k.selectors.iter().enumerate() {
        let selector_role = s.role.to_lowercase();
        if !allowed.contains(&selector_role.as_str()) {
            return Err(Reason::invalid(
                format!("{at}.selectors[{j}]"),
                format!(
                    "{} role supports only {} selectors",
                    k.role,
                    allowed.join(", ")
                ),
            ));
        }
        let check = RoleSelector {
            role: selector_role,
            label: s.label.clone().unwrap_or_default(),
            field: s.field.clone().unwrap_or_default(),
        };
        check
            .validate(j)
            .map_err(|e| Reason::invalid(at, e.to_string()))?;
    }
    Ok(())
}

/// The ScrapeConfig's job.
pub fn job(
    c: &ScrapeConfig,
    settings: &Settings,
    w: &mut Writer<'_>,
) -> Result<GeneratedJob, Reason> {
    let (ns, name) = (&c.metadata.namespace, &c.metadata.name);
    let spec = &c.spec;
    let class = settings
        .classes
        .for_monitor(spec.limits.scrape_class.as_deref());
    let job_name = format!("scrapeConfig/{ns}/{name}");
    let mut cfg = Map::new();
    cfg.put("job_name", job_name.as_str());
    let mut rules = vec![job_name_rule()];
    rules.extend(monitor_rules(&class.relabelings));
    if let Some(job) = &spec.job_name {
        rules.push(rule(&[
            ("target_label", "job".into()),
            ("action", "replace".into()),
            ("replacement", job.as_str().into()),
        ]));
    }
    scrape_settings(&mut cfg, spec);
    w.proxy(&mut cfg, &spec.proxy);
    w.basic_auth(&mut cfg, spec.basic_auth.as_ref());
    let authorization = merge_safe_authorization(spec.authorization.as_ref(), class);
    w.authorization(&mut cfg, authorization.as_ref());
    w.oauth2(&mut cfg, spec.oauth2.as_ref());
    w.tls(
        &mut cfg,
        merge_safe_tls(spec.tls_config.as_ref(), class).as_ref(),
    );
    limits(&mut cfg, &spec.limits, class);
    discovery(&mut cfg, spec, w);
    rules.extend(monitor_rules(&spec.relabelings));
    if settings.shards != 1 {
        let sharding = sharding_rules_if_missing(&rules, settings.shards);
        rules.extend(sharding);
    }
    cfg.put("relabel_configs", list(rules));
    metric_relabelings(&mut cfg, class, &spec.metric_relabelings);
    if let Some(scheme) = &spec.name_validation_scheme {
        cfg.put("metric_name_validation_scheme", scheme.to_lowercase());
    }
    let escaping = spec.name_escaping_scheme.as_deref().and_then(|s| match s {
        "AllowUTF8" => Some("allow-utf-8"),
        "Underscores" => Some("underscores"),
        "Dots" => Some("dots"),
        "Values" => Some("values"),
        _ => None,
    });
    cfg.put_some("metric_name_escaping_scheme", escaping);
    Ok(GeneratedJob {
        name: job_name,
        config: cfg.into(),
    })
}

/// The scrape keys a ScrapeConfig writes as Prometheus names them.
fn scrape_settings(cfg: &mut Map, spec: &ScrapeConfigSpec) {
    cfg.put_some("honor_timestamps", spec.honor_timestamps);
    cfg.put_some(
        "track_timestamps_staleness",
        spec.track_timestamps_staleness,
    );
    cfg.put_some("honor_labels", spec.honor_labels);
    cfg.put_some("metrics_path", spec.metrics_path.clone());
    if !spec.params.is_empty() {
        cfg.put("params", sorted(&spec.params));
    }
    cfg.put_some("enable_compression", spec.enable_compression);
    cfg.put_some("enable_http2", spec.enable_http2);
    cfg.put_some("scrape_interval", spec.scrape_interval.clone());
    cfg.put_some("scrape_timeout", spec.scrape_timeout.clone());
    scheme(cfg, spec.scheme.as_ref());
}

/// `static_configs`, `file_sd_configs`, `http_sd_configs` and `kubernetes_sd_configs`.
fn discovery(cfg: &mut Map, spec: &ScrapeConfigSpec, w: &mut Writer<'_>) {
    if !spec.static_configs.is_empty() {
        let configs = spec.static_configs.iter().map(static_config).collect();
        cfg.put("static_configs", list(configs));
    }
    if !spec.file_sd_configs.is_empty() {
        let configs = spec.file_sd_configs.iter().map(file_sd).collect();
        cfg.put("file_sd_configs", list(configs));
    }
    if !spec.http_sd_configs.is_empty() {
        let configs = spec.http_sd_configs.iter().map(|h| http_sd(h, w)).collect();
        cfg.put("http_sd_configs", list(configs));
    }
    if !spec.kubernetes_sd_configs.is_empty() {
        let configs = spec
            .kubernetes_sd_configs
            .iter()
            .map(|k| kubernetes_sd(k, w))
            .collect();
        cfg.put("kubernetes_sd_configs", list(configs));
    }
}

fn static_config(s: &StaticConfig) -> Value {
    let mut out = Map::new();
    out.put("targets", strings(&s.targets));
    out.put("labels", sorted(s.labels.iter().flatten()));
    out.into()
}

fn file_sd(f: &FileSdConfig) -> Value {
    let mut out = Map::new();
    out.put("files", strings(&f.files));
    out.put_some("refresh_interval", f.refresh_interval.clone());
    out.into()
}

fn http_sd(h: &HttpSdConfig, w: &mut Writer<'_>) -> Value {
    let mut out = Map::new();
    w.basic_auth(&mut out, h.basic_auth.as_ref());
    w.safe_authorization(&mut out, h.authorization.as_ref());
    w.safe_tls(&mut out, h.tls_config.as_ref());
    w.proxy(&mut out, &h.proxy);
    w.oauth2(&mut out, h.oauth2.as_ref());
    out.put("url", h.url.as_str());
    out.put_some("refresh_interval", h.refresh_interval.clone());
    out.put_some("follow_redirects", h.follow_redirects);
    out.put_some("enable_http2", h.enable_http2);
    out.into()
}

fn kubernetes_sd(k: &KubernetesSdConfig, w: &mut Writer<'_>) -> Value {
    let mut out = Map::new();
    out.put_some("api_server", k.api_server.clone());
    out.put("role", k.role.to_lowercase());
    w.basic_auth(&mut out, k.basic_auth.as_ref());
    w.safe_authorization(&mut out, k.authorization.as_ref());
    w.oauth2(&mut out, k.oauth2.as_ref());
    w.proxy(&mut out, &k.proxy);
    out.put_some("follow_redirects", k.follow_redirects);
    out.put_some("enable_http2", k.enable_http2);
    w.safe_tls(&mut out, k.tls_config.as_ref());
    if let Some(namespaces) = &k.namespaces {
        let mut ns = Map::new();
        ns.put("names", strings(&namespaces.names));
        ns.put_some("own_namespace", namespaces.own_namespace);
        out.put("namespaces", ns);
    }
    if !k.selectors.is_empty() {
        let selectors = k
            .selectors
            .iter()
            .map(|s| {
                let mut sel = Map::new();
                sel.put("role", s.role.to_lowercase());
                sel.put_some("label", s.label.clone());
                sel.put_some("field", s.field.clone());
                sel.into()
            })
            .collect();
        out.put("selectors", list(selectors));
    }
    let role = k.role.to_lowercase();
    if let Some(attach) = &k.attach_metadata
        && matches!(role.as_str(), "pod" | "endpoints" | "endpointslice")
    {
        let mut meta = Map::new();
        meta.put("node", attach.node.map_or(Value::Null, Value::from));
        out.put("attach_metadata", meta);
    }
    out.into()
}
