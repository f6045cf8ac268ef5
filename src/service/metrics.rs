//! The `kubesd run` service's own metrics: its config file and listener, what each job
//! discovers from, and the build. Made once by the run loop and handed to the web
//! guard and the `/metrics` handler, which renders them after the engine's
//! (`Discovery::metrics`).

use std::fmt::Write;
use std::sync::{Arc, Mutex};

use crate::build_info;
use crate::metrics::{Counter, Gauge, api_server_label, escape_label_value};
use crate::model::Role;
use crate::service::monitors::MonitorMetrics;

/// The service's metrics.
#[derive(Debug, Default)]
pub struct ServiceMetrics {
    /// 1 if the last load of the config file succeeded, 0 if it failed.
    pub config_last_reload_successful: Gauge,
    /// When the config file was last loaded successfully (Unix seconds).
    pub config_last_reload_success_timestamp_seconds: Gauge,
    /// 1 if the last read of the web config file succeeded, 0 if it failed.
    pub web_config_last_reload_successful: Gauge,
    /// Requests refused for missing or wrong credentials.
    pub http_unauthorized: Counter,
    /// Requests refused because their client failed too often lately.
    pub http_rate_limited: Counter,
    /// What each scrape job discovers: (job, role, API server label), set when a config
    /// is applied. Joins the per-job metrics (`job` label) to the discovery metrics
    /// (`api_server`, `role`), which count per watch, not per job: jobs that share a
    /// group share its watches.
    job_discoveries: Mutex<Vec<(String, Role, String)>>,
    /// The monitors' states and rejections (none without a `monitors:` section).
    pub monitors: Arc<MonitorMetrics>,
}

impl ServiceMetrics {
    /// Records what each job discovers, (job name, role, API server base URL), for
    /// `kubesd_job_discovery_info`; replaces what was set before.
    pub fn set_job_discoveries(
        &self,
        discoveries: impl IntoIterator<Item = (String, Role, String)>,
    ) {
        let mut list: Vec<(String, Role, String)> = discoveries
            .into_iter()
            .map(|(job, role, server)| (job, role, api_server_label(&server)))
            .collect();
        list.sort_by(|a, b| (&a.0, a.1.to_string(), &a.2).cmp(&(&b.0, b.1.to_string(), &b.2)));
        list.dedup();
        *self
            .job_discoveries
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = list;
    }

    /// Appends the service's metrics to `out` in Prometheus text format.
    pub fn render(&self, out: &mut String) {
        let gauges = [
            (
                "kubesd_config_last_reload_successful",
                "Whether the last configuration reload attempt was successful.",
                &self.config_last_reload_successful,
            ),
            (
                "kubesd_config_last_reload_success_timestamp_seconds",
                "Timestamp of the last successful configuration reload.",
                &self.config_last_reload_success_timestamp_seconds,
            ),
            (
                "kubesd_web_config_last_reload_successful",
                "Whether the last read of the web config file (--web.config.file) was successful.",
                &self.web_config_last_reload_successful,
            ),
        ];
        for (name, help, gauge) in gauges {
            let value = gauge.get();
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let counters = [
            (
                "kubesd_http_unauthorized_requests_total",
                "HTTP requests refused for missing or wrong credentials.",
                &self.http_unauthorized,
            ),
            (
                "kubesd_http_rate_limited_requests_total",
                "HTTP requests refused because their client failed authentication too often lately.",
                &self.http_rate_limited,
            ),
        ];
        for (name, help, counter) in counters {
            let value = counter.get();
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        self.render_job_discoveries(out);
        self.monitors.render(out);
        render_build_info(out);
    }

    /// `kubesd_job_discovery_info`: which role and API server each job discovers from.
    fn render_job_discoveries(&self, out: &mut String) {
        let discoveries = self
            .job_discoveries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if discoveries.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "# HELP kubesd_job_discovery_info The role and API server each scrape job discovers from (1 per pair).\n\
             # TYPE kubesd_job_discovery_info gauge"
        );
        for (job, role, server) in &discoveries {
            let _ = writeln!(
                out,
                "kubesd_job_discovery_info{{job=\"{}\",role=\"{role}\",api_server=\"{}\"}} 1",
                escape_label_value(job),
                escape_label_value(server)
            );
        }
    }
}

/// `kubesd_build_info`, as Prometheus' own build info metric.
fn render_build_info(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP kubesd_build_info A metric with a constant '1' value labeled by version, revision and build date of kubesd.\n\
         # TYPE kubesd_build_info gauge\n\
         kubesd_build_info{{version=\"{}\",revision=\"{}\",build_date=\"{}\"}} 1",
        escape_label_value(build_info::VERSION),
        escape_label_value(build_info::GIT_COMMIT),
        escape_label_value(build_info::BUILD_DATE),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_discoveries_join_jobs_to_api_servers_without_credentials() {
        let metrics = ServiceMetrics::default();
        metrics.set_job_discoveries([
            (
                "pods".to_string(),
                Role::Pod,
                "https://u:secret@10.0.0.1:6443".to_string(),
            ),
            (
                "pods".to_string(),
                Role::Pod,
                "https://u:secret@10.0.0.1:6443".to_string(),
            ),
            (
                "nodes".to_string(),
                Role::Node,
                "https://10.0.0.1:6443".to_string(),
            ),
        ]);
        let mut text = String::new();
        metrics.render(&mut text);
        assert!(text.contains(
            "kubesd_job_discovery_info{job=\"pods\",role=\"pod\",api_server=\"https://10.0.0.1:6443\"} 1\n"
        ));
        assert!(text.contains(
            "kubesd_job_discovery_info{job=\"nodes\",role=\"node\",api_server=\"https://10.0.0.1:6443\"} 1\n"
        ));
        assert_eq!(
            text.matches("kubesd_job_discovery_info{job=\"pods\"")
                .count(),
            1
        );
        assert!(!text.contains("secret"));
        assert!(text.contains("kubesd_build_info{version=\""));
        assert!(text.contains("kubesd_config_last_reload_successful 0\n"));
    }
}
