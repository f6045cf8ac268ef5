//! [`translate`]: a monitor's checks, then its jobs, as prometheus-operator's config
//! generator makes them.

use super::error::MonitorError;
use super::monitor::{Monitor, Translated};
use super::settings::Settings;
use super::store::{CredentialStore, Credentials};
use super::{http, pod_monitor, probe, scrape_config, service_monitor};

/// Translates `monitor` as prometheus-operator does: checks it, then generates its
/// jobs. Credentials are read from `store`, in the monitor's namespace.
pub fn translate(
    monitor: &Monitor,
    settings: &Settings,
    store: &dyn CredentialStore,
) -> Result<Translated, MonitorError> {
    let (namespace, name) = monitor.namespace_and_name();
    let creds = Credentials { store, namespace };
    let fail = |reason| MonitorError {
        kind: monitor.kind(),
        namespace: namespace.to_string(),
        name: name.to_string(),
        reason: Box::new(reason),
    };
    let mut w = http::Writer {
        creds,
        warnings: Vec::new(),
    };
    let jobs = match monitor {
        Monitor::ServiceMonitor(m) => {
            service_monitor::check(m, settings, creds).map_err(fail)?;
            let endpoints = m.spec.endpoints.iter().enumerate();
            endpoints
                .map(|(i, ep)| service_monitor::job(m, ep, i, settings, &mut w))
                .collect::<Result<Vec<_>, _>>()
        }
        Monitor::PodMonitor(m) => {
            pod_monitor::check(m, settings, creds).map_err(fail)?;
            let endpoints = m.spec.pod_metrics_endpoints.iter().enumerate();
            endpoints
                .map(|(i, ep)| pod_monitor::job(m, ep, i, settings, &mut w))
                .collect::<Result<Vec<_>, _>>()
        }
        Monitor::Probe(p) => {
            probe::check(p, settings, creds).map_err(fail)?;
            probe::job(p, settings, &mut w).map(|j| vec![j])
        }
        Monitor::ScrapeConfig(c) => {
            scrape_config::check(c, settings, creds).map_err(fail)?;
            scrape_config::job(c, settings, &mut w).map(|j| vec![j])
        }
    }
    .map_err(fail)?;
    Ok(Translated {
        jobs,
        warnings: w.warnings,
    })
}
