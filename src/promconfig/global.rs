//! The `global` section's settings that scrape jobs take their defaults from.

use std::time::Duration;

use serde_norway::Mapping;

use crate::relabel::NameValidation;

/// The `global` settings a job's own take their defaults from.
#[derive(Clone, Debug)]
pub struct GlobalScrape {
    /// `global.scrape_interval` (default 1m).
    pub scrape_interval: Duration,
    /// `global.scrape_timeout` (default 10s).
    pub scrape_timeout: Duration,
    /// `global.metric_name_validation_scheme` (default `utf8`, as Prometheus 3).
    pub names: NameValidation,
    /// `global.keep_dropped_targets` (default 0: every dropped target is kept).
    pub keep_dropped_targets: u64,
    /// The section as written, for the defaults a job is shown with as Prometheus
    /// fills them in (`scrape_protocols`, limits, histogram settings).
    pub written: Mapping,
}

impl Default for GlobalScrape {
    fn default() -> GlobalScrape {
        GlobalScrape {
            scrape_interval: Duration::from_secs(60),
            scrape_timeout: Duration::from_secs(10),
            names: NameValidation::Utf8,
            keep_dropped_targets: 0,
            written: Mapping::new(),
        }
    }
}
