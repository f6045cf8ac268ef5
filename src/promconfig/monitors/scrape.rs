//! The scrape settings every kind writes alike: honouring labels and timestamps, the
//! limits, native histograms, protocols, the body size limit and the metric
//! relabelling, in the operator's order.

use std::collections::BTreeMap;

use kubesd_core::monitors::{RelabelConfig, ScrapeClass, ScrapeLimits};
use serde_norway::Value;

use super::relabel::monitor_rules;
use super::scrape_class::merge_fallback_protocol;
use super::yaml::{Map, list, sorted, strings};

/// The scrape settings a ServiceMonitor's and a PodMonitor's endpoints both carry.
pub struct EndpointScrape<'a> {
    /// `interval`, empty when not set.
    pub interval: &'a str,
    /// `scrapeTimeout`, empty when not set.
    pub scrape_timeout: &'a str,
    /// `path`, empty when not set.
    pub path: &'a str,
    /// `params`.
    pub params: Option<&'a BTreeMap<String, Vec<String>>>,
    /// `scheme`.
    pub scheme: Option<&'a String>,
}

/// `scrape_interval`, `scrape_timeout`, `metrics_path`, `params` and `scheme` of an
/// endpoint, each when set.
pub fn endpoint_scrape(cfg: &mut Map, ep: EndpointScrape<'_>) {
    if !ep.interval.is_empty() {
        cfg.put("scrape_interval", ep.interval);
    }
    if !ep.scrape_timeout.is_empty() {
        cfg.put("scrape_timeout", ep.scrape_timeout);
    }
    if !ep.path.is_empty() {
        cfg.put("metrics_path", ep.path);
    }
    if let Some(params) = ep.params {
        cfg.put("params", sorted(params));
    }
    scheme(cfg, ep.scheme);
}

/// `honor_labels`, then `honor_timestamps` and `track_timestamps_staleness` when set.
pub fn honor(cfg: &mut Map, labels: bool, timestamps: Option<bool>, staleness: Option<bool>) {
    cfg.put("honor_labels", labels);
    cfg.put_some("honor_timestamps", timestamps);
    cfg.put_some("track_timestamps_staleness", staleness);
}

/// The limits, native histogram settings, `scrape_protocols` and
/// `fallback_scrape_protocol` (the class's when the monitor sets none).
pub fn limits(cfg: &mut Map, limits: &ScrapeLimits, class: &ScrapeClass) {
    cfg.put_some("sample_limit", limits.sample_limit);
    cfg.put_some("target_limit", limits.target_limit);
    cfg.put_some("label_limit", limits.label_limit);
    cfg.put_some("label_name_length_limit", limits.label_name_length_limit);
    cfg.put_some("label_value_length_limit", limits.label_value_length_limit);
    cfg.put_some("keep_dropped_targets", limits.keep_dropped_targets);
    let h = &limits.histograms;
    cfg.put_some(
        "native_histogram_bucket_limit",
        h.native_histogram_bucket_limit,
    );
    if let Some(factor) = &h.native_histogram_min_bucket_factor {
        cfg.put_some("native_histogram_min_bucket_factor", factor.as_f64());
    }
    // Prometheus 3's name for `scrapeClassicHistograms`.
    cfg.put_some(
        "always_scrape_classic_histograms",
        h.scrape_classic_histograms,
    );
    cfg.put_some(
        "convert_classic_histograms_to_nhcb",
        h.convert_classic_histograms_to_nhcb,
    );
    if !limits.scrape_protocols.is_empty() {
        cfg.put("scrape_protocols", strings(&limits.scrape_protocols));
    }
    cfg.put_some(
        "fallback_scrape_protocol",
        merge_fallback_protocol(limits.fallback_scrape_protocol.as_ref(), class),
    );
}

/// `body_size_limit`, when set.
pub fn body_size_limit(cfg: &mut Map, limit: Option<&String>) {
    if let Some(limit) = limit.filter(|l| !l.is_empty()) {
        cfg.put("body_size_limit", limit.as_str());
    }
}

/// `metric_relabel_configs`: the class's rules, then the monitor's; none if both are
/// empty.
pub fn metric_relabelings(cfg: &mut Map, class: &ScrapeClass, own: &[RelabelConfig]) {
    let mut rules = monitor_rules(&class.metric_relabelings);
    rules.extend(monitor_rules(own));
    if !rules.is_empty() {
        cfg.put("metric_relabel_configs", list(rules));
    }
}

/// `scheme` in lower case, when set.
pub fn scheme(cfg: &mut Map, scheme: Option<&String>) {
    if let Some(scheme) = scheme {
        cfg.put("scheme", Value::from(scheme.to_lowercase()));
    }
}
