//! What translation takes from the `monitors:` section, besides the monitor itself.

use super::scrape_class::ScrapeClasses;

/// Which role a ServiceMonitor's endpoints are discovered with (the Prometheus
/// resource's `serviceDiscoveryRole`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EndpointRole {
    /// `endpoints`.
    Endpoints,
    /// `endpointslice`, the target allocator's choice.
    #[default]
    EndpointSlice,
}

impl EndpointRole {
    /// The `kubernetes_sd_configs` role.
    pub fn role(self) -> &'static str {
        match self {
            EndpointRole::Endpoints => "endpoints",
            EndpointRole::EndpointSlice => "endpointslice",
        }
    }

    /// The role a monitor's `serviceDiscoveryRole` names, else `self`.
    pub fn or_monitor(self, monitor: Option<&str>) -> EndpointRole {
        match monitor {
            Some("EndpointSlice") => EndpointRole::EndpointSlice,
            Some(_) => EndpointRole::Endpoints,
            None => self,
        }
    }
}

/// The section's settings translation reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// The default scrape interval (a monitor's timeout must not exceed it).
    pub scrape_interval: String,
    /// The default role of ServiceMonitors.
    pub role: EndpointRole,
    /// The scrape classes.
    pub classes: ScrapeClasses,
    /// How many shards the jobs' own relabelling splits targets into: 1 for kubesd's
    /// jobs (a fleet reads shards as views); more only to compare with a sharded
    /// Prometheus' generated config.
    pub shards: u32,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            scrape_interval: "30s".into(),
            role: EndpointRole::default(),
            classes: ScrapeClasses::default(),
            shards: 1,
        }
    }
}
