//! A Probe's job, as `generateProbeConfig` writes it, after the checks of `checkProbe`.

use kubesd_core::monitors::{Probe, ProbeSpec, ScrapeClass};
use serde_norway::Value;

use super::error::Reason;
use super::http::Writer;
use super::monitor::GeneratedJob;
use super::relabel::{job_name_rule, monitor_rules, rule, selector_rules, sharding_rules};
use super::scrape::{limits, metric_relabelings, scheme};
use super::scrape_class::{merge_safe_authorization, merge_safe_tls};
use super::sd::kubernetes_sd;
use super::service_monitor::copy;
use super::settings::Settings;
use super::store::Credentials;
use super::validate::{check_interval, check_relabelings};
use super::yaml::{Map, list, sorted, strings};

/// The checks the operator makes before it accepts the probe.
pub fn check(p: &Probe, settings: &Settings, creds: Credentials<'_>) -> Result<(), Reason> {
    let spec = &p.spec;
    if let Some(class) = spec.limits.scrape_class.as_deref()
        && !class.is_empty()
        && !settings.classes.contains(class)
    {
        return Err(Reason::UnknownScrapeClass(class.to_string()));
    }
    if spec.targets.static_config.is_none() && spec.targets.ingress.is_none() {
        return Err(Reason::invalid(
            "targets",
            "at least one of .spec.targets.staticConfig and .spec.targets.ingress is required",
        ));
    }
    let token = &spec.bearer_token_secret;
    if !token.name.is_empty() && !token.key.is_empty() {
        creds.secret_key(token, "bearerTokenSecret")?;
    }
    creds.check_basic_auth(spec.basic_auth.as_ref(), "basicAuth")?;
    creds.check_safe_tls(spec.tls_config.as_ref(), "tlsConfig")?;
    creds.check_authorization(spec.authorization.as_ref(), "authorization")?;
    creds.check_oauth2(spec.oauth2.as_ref(), "oauth2")?;
    check_interval(
        &spec.interval,
        &spec.scrape_timeout,
        &settings.scrape_interval,
    )
    .map_err(|why| Reason::invalid("interval", why))?;
    check_relabelings(&spec.metric_relabelings)
        .map_err(|why| Reason::invalid("metricRelabelings", why))?;
    if let Some(s) = &spec.targets.static_config {
        check_relabelings(&s.relabeling_configs)
            .map_err(|why| Reason::invalid("targets.staticConfig.relabelingConfigs", why))?;
    }
    if let Some(ingress) = &spec.targets.ingress {
        check_relabelings(&ingress.relabeling_configs)
            .map_err(|why| Reason::invalid("targets.ingress.relabelingConfigs", why))?;
    }
    creds.check_proxy(&spec.prober.proxy, "prober")?;
    check_prober_url(&spec.prober.url).map_err(|why| {
        Reason::invalid(
            "prober.url",
            format!(
                "{:?} is invalid, it should be of the format `hostname` or `hostname:port`: {why}",
                spec.prober.url
            ),
        )
    })
}

/// `host` or `host:port`, as govalidator's `IsHost` and `IsPort` read them.
fn check_prober_url(url: &str) -> Result<(), String> {
    let mut parts = url.split(':');
    let host = parts.next().unwrap_or_default();
    if !is_host(host) {
        return Err(format!("invalid host: {host:?}"));
    }
    if let Some(port) = parts.next() {
        let valid = port.parse::<u32>().is_ok_and(|p| (1..=65535).contains(&p));
        if !valid {
            return Err(format!("invalid port: {port:?}"));
        }
    }
    Ok(())
}

/// An IP address or a DNS name as govalidator's `rxDNSName` reads one: labels of
/// letters, digits, `_` and `-` (not first), at most 63 long, an optional trailing `.`
/// or `_`.
fn is_host(host: &str) -> bool {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    if host.is_empty() || host.replace('.', "").len() > 255 {
        return false;
    }
    let name = host.strip_suffix(['.', '_']).unwrap_or(host);
    let label_ok = |label: &str| {
        let mut chars = label.chars();
        let first = chars.next();
        first.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            && label.len() <= 63
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    name.split('.').all(label_ok)
}

/// The probe's job.
pub fn job(p: &Probe, settings: &Settings, w: &mut Writer<'_>) -> Result<GeneratedJob, Reason> {
    let (ns, name) = (&p.metadata.namespace, &p.metadata.name);
    let spec = &p.spec;
    let class = settings
        .classes
        .for_monitor(spec.limits.scrape_class.as_deref());
    let job_name = format!("probe/{ns}/{name}");
    let mut cfg = Map::new();
    cfg.put("job_name", job_name.as_str());
    cfg.put("honor_timestamps", true);
    cfg.put("metrics_path", spec.prober.path.as_str());
    if !spec.interval.is_empty() {
        cfg.put("scrape_interval", spec.interval.as_str());
    }
    if !spec.scrape_timeout.is_empty() {
        cfg.put("scrape_timeout", spec.scrape_timeout.as_str());
    }
    scheme(&mut cfg, spec.prober.scheme.as_ref());
    params(&mut cfg, spec);
    limits(&mut cfg, &spec.limits, class);
    let mut rules = vec![job_name_rule()];
    if !spec.job_name.is_empty() {
        rules.push(rule(&[
            ("target_label", "job".into()),
            ("replacement", spec.job_name.as_str().into()),
        ]));
    }
    w.proxy(&mut cfg, &spec.prober.proxy);
    rules.extend(targets(&mut cfg, p, class)?);
    rules.extend(sharding_rules(settings.shards, "__param_target"));
    cfg.put("relabel_configs", list(rules));
    w.tls(
        &mut cfg,
        merge_safe_tls(spec.tls_config.as_ref(), class).as_ref(),
    );
    w.bearer_token(&mut cfg, Some(&spec.bearer_token_secret));
    w.basic_auth(&mut cfg, spec.basic_auth.as_ref());
    w.oauth2(&mut cfg, spec.oauth2.as_ref());
    let authorization = merge_safe_authorization(spec.authorization.as_ref(), class);
    w.authorization(&mut cfg, authorization.as_ref());
    metric_relabelings(&mut cfg, class, &spec.metric_relabelings);
    Ok(GeneratedJob {
        name: job_name,
        config: cfg.into(),
    })
}

/// What to probe: the static targets (which win), else the Ingresses' discovery; and
/// the rules that make each a probe of its URL through the prober, then the class's
/// and the probe's own rules.
fn targets(cfg: &mut Map, p: &Probe, class: &ScrapeClass) -> Result<Vec<Value>, Reason> {
    let spec = &p.spec;
    let mut rules = Vec::new();
    if let Some(s) = &spec.targets.static_config {
        let mut labels = s.labels.clone().unwrap_or_default();
        labels
            .entry("namespace".into())
            .or_insert_with(|| p.metadata.namespace.clone());
        let mut config = Map::new();
        config.put("targets", strings(&s.targets));
        config.put("labels", sorted(&labels));
        cfg.put("static_configs", list(vec![config.into()]));
        rules.extend(prober_rules(spec, "__address__"));
        rules.extend(monitor_rules(&class.relabelings));
        rules.extend(monitor_rules(&s.relabeling_configs));
    } else if let Some(ingress) = &spec.targets.ingress {
        rules.extend(selector_rules(&ingress.selector, "ingress"));
        let ns = &p.metadata.namespace;
        let sd = kubernetes_sd(&ingress.namespace_selector, ns, "ingress", None, None)?;
        cfg.put("kubernetes_sd_configs", sd);
        rules.extend(ingress_rules(spec));
        rules.extend(monitor_rules(&class.relabelings));
        rules.extend(monitor_rules(&ingress.relabeling_configs));
    }
    Ok(rules)
}

/// `params`: `module` first when set, then the others (a `module` among them dropped
/// when `module` is set).
fn params(cfg: &mut Map, spec: &ProbeSpec) {
    let mut params = Map::new();
    if !spec.module.is_empty() {
        params.put("module", strings(&[spec.module.as_str()]));
    }
    for p in &spec.params {
        if !spec.module.is_empty() && p.name == "module" {
            continue;
        }
        params.put(&p.name, strings(&p.values));
    }
    if !params.is_empty() {
        cfg.put("params", params);
    }
}

/// The target into `__param_target` (from `source`) and `instance`, the prober into
/// `__address__`.
fn prober_rules(spec: &ProbeSpec, source: &str) -> Vec<Value> {
    let mut rules = Vec::new();
    if source == "__address__" {
        rules.push(copy("__address__", "__param_target"));
    }
    rules.push(copy("__param_target", "instance"));
    rules.push(rule(&[
        ("target_label", "__address__".into()),
        ("replacement", spec.prober.url.as_str().into()),
    ]));
    rules
}

/// An Ingress' URL into `__param_target`, its namespace and name as labels, then the
/// prober's rules.
fn ingress_rules(spec: &ProbeSpec) -> Vec<Value> {
    let mut rules = vec![
        rule(&[
            (
                "source_labels",
                strings(&[
                    "__meta_kubernetes_ingress_scheme",
                    "__address__",
                    "__meta_kubernetes_ingress_path",
                ]),
            ),
            ("separator", ";".into()),
            ("regex", "(.+);(.+);(.+)".into()),
            ("target_label", "__param_target".into()),
            ("replacement", "${1}://${2}${3}".into()),
            ("action", "replace".into()),
        ]),
        copy("__meta_kubernetes_namespace", "namespace"),
        copy("__meta_kubernetes_ingress_name", "ingress"),
        rule(&[
            ("source_labels", strings(&["__address__"])),
            ("separator", ";".into()),
            ("regex", "(.*)".into()),
            ("target_label", "__tmp_ingress_address".into()),
            ("replacement", "$1".into()),
            ("action", "replace".into()),
        ]),
    ];
    rules.extend(prober_rules(spec, "__param_target"));
    rules
}
