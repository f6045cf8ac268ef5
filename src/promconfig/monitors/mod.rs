//! prometheus-operator's monitors turned into scrape jobs exactly as the operator's
//! config generator (`pkg/prometheus/promcfg.go`, 0.87) turns them, and as the
//! OpenTelemetry target allocator runs it (endpoint slices, credentials inline).
//!
//! [`translate`] is a pure function: a monitor, the `monitors:` section's
//! [`Settings`], and the Secrets and ConfigMaps it names (through a
//! [`CredentialStore`]) give its jobs, each a `scrape_configs` entry as the operator
//! writes it (job names `serviceMonitor/<namespace>/<name>/<endpoint>`,
//! `podMonitor/…/<endpoint>`, `probe/<namespace>/<name>`, `scrapeConfig/<namespace>/<name>`;
//! the generated relabelling in the operator's order), or a [`MonitorError`] naming the
//! monitor and why the operator would refuse it. [`jobs::load_jobs`] hands the entries
//! to kubesd's config loader, so a monitor's jobs run, are served and are listed as a
//! hand-written job is.
//!
//! The section itself is read by [`section`].

mod error;
mod http;
pub mod jobs;
mod monitor;
mod pod_monitor;
mod probe;
mod relabel;
mod scrape;
mod scrape_class;
mod scrape_config;
mod sd;
pub mod section;
mod selection;
mod service_monitor;
mod settings;
mod store;
mod translate;
mod validate;
mod yaml;

pub use error::{MonitorError, MonitorKind, Reason};
pub use kubesd_core::monitors as model;
pub use monitor::{GeneratedJob, Monitor, Translated};
pub use scrape_class::ScrapeClasses;
pub use selection::NamespaceLabels;
pub use settings::{EndpointRole, Settings};
pub use store::{CredentialStore, Credentials, MemoryStore};
pub use translate::translate;
