//! Prometheus `relabel_configs`: the rules a scrape job applies to each discovered
//! target's labels, with Prometheus' exact semantics, so a Prometheus config's rules
//! mean the same in kubesd.
//!
//! - [`RelabelConfig`] is one rule as written in YAML; [`RelabelConfig::compile`] checks
//!   it as Prometheus does and turns it into a [`CompiledRule`].
//! - vmagent's additions are read too (its actions, `if` selectors, `regex` lists);
//!   where the two disagree, the [`Dialect`] decides.
//! - [`relabel`] applies rules to one label set: the raw Prometheus `relabel.Process`.
//! - [`process`] adds the steps Prometheus wraps around it for a scrape target (the
//!   job's scrape settings seeded before; the `__address__` check and the removal of
//!   `__meta_*`, `__tmp_*` and defaults after).
//! - [`trace`] and [`relabel_steps`] run the rules one by one, recording each rule's
//!   output: why a target was kept or dropped.
//! - [`Relabeller`] is [`process`] for many targets: it remembers what `labelmap`,
//!   `labeldrop` and `labelkeep` decide for each label name, and tells a change its
//!   rules cannot see ([`Visibility`]) from one they must relabel.

mod apply;
pub(crate) mod by_address;
mod config;
mod dialect;
mod graphite;
mod left_alone;
mod memo;
mod name_memo;
mod names;
mod selector;
mod shared;
mod target;
mod template;
mod trace;
mod visibility;

pub use apply::{hash_mod, hash_mod_xxhash, prometheus_hash, relabel};
pub use by_address::MAX_NAMES;
pub use config::{
    Action, CompiledRule, RelabelConfig, RelabelError, RuleOptions, compile_all, compile_all_with,
};
pub use dialect::Dialect;
pub use memo::Relabeller;
pub use names::{NameValidation, is_valid_label_name};
pub use target::{
    ADDRESS_LABEL, PARAM_PREFIX, SCRAPE_INTERVAL_LABEL, SCRAPE_TIMEOUT_LABEL, ScrapeSettings,
    Target, process,
};
pub use trace::{Step, Trace, relabel_steps, seeded, trace};
pub use visibility::{ReadableMeta, Visibility};
