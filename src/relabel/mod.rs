//! Prometheus `relabel_configs`: the rules a scrape job applies to each discovered
//! target's labels, with Prometheus' exact semantics, so a Prometheus config's rules
//! mean the same in kubesd.
//!
//! - [`RelabelConfig`] is one rule as written in YAML; [`RelabelConfig::compile`] checks
//!   it as Prometheus does and turns it into a [`CompiledRule`].
//! - [`relabel`] applies rules to one label set: the raw Prometheus `relabel.Process`.
//! - [`process`] adds the steps Prometheus wraps around it for a scrape target (the
//!   `job` label before, the `__address__` check and `__meta_*` removal after).

mod apply;
mod config;
mod names;
mod target;
mod template;

pub use apply::relabel;
pub use config::{Action, CompiledRule, RelabelConfig, RelabelError, compile_all};
pub use names::is_valid_label_name;
pub use target::{Target, process, process_with_job};
