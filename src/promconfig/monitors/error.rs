//! Why a monitor yields no jobs: the monitor (kind, namespace, name) and the reason, in
//! a sentence naming the field at fault.

use std::fmt;

use kubesd_core::monitors::SelectorError;

/// The four kinds of monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MonitorKind {
    /// `ServiceMonitor`.
    ServiceMonitor,
    /// `PodMonitor`.
    PodMonitor,
    /// `Probe`.
    Probe,
    /// `ScrapeConfig`.
    ScrapeConfig,
}

impl fmt::Display for MonitorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MonitorKind::ServiceMonitor => "ServiceMonitor",
            MonitorKind::PodMonitor => "PodMonitor",
            MonitorKind::Probe => "Probe",
            MonitorKind::ScrapeConfig => "ScrapeConfig",
        })
    }
}

/// A monitor that cannot be translated; the other monitors are not affected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{kind} {namespace}/{name}: {reason}")]
pub struct MonitorError {
    /// Its kind.
    pub kind: MonitorKind,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Why (boxed: errors travel through `Result`s of every monitor).
    pub reason: Box<Reason>,
}

/// Why a monitor cannot be translated. `field` is where in its spec, e.g.
/// `endpoints[0].basicAuth.password`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Reason {
    /// A label selector Kubernetes would refuse.
    #[error("{field}: invalid label selector: {source}")]
    Selector {
        /// The selector's field.
        field: String,
        /// What is wrong.
        source: SelectorError,
    },
    /// A Secret it names does not exist.
    #[error("{field}: secret {namespace}/{name} not found")]
    SecretNotFound {
        /// The field naming it.
        field: String,
        /// The Secret's namespace (the monitor's).
        namespace: String,
        /// The Secret's name.
        name: String,
    },
    /// A ConfigMap it names does not exist.
    #[error("{field}: configmap {namespace}/{name} not found")]
    ConfigMapNotFound {
        /// The field naming it.
        field: String,
        /// The ConfigMap's namespace (the monitor's).
        namespace: String,
        /// The ConfigMap's name.
        name: String,
    },
    /// The Secret or ConfigMap exists without the key it names.
    #[error("{field}: {problem}")]
    Key {
        /// The field naming it.
        field: String,
        /// Which key of which object, and what is wrong with it.
        problem: String,
    },
    /// A scrape class the section does not define.
    #[error("scrapeClass: scrape class {0:?} is not one of the section's scrape_classes")]
    UnknownScrapeClass(String),
    /// Discovery mechanisms kubesd does not run (a ScrapeConfig's `consulSDConfigs`, ...).
    #[error("{}: kubesd discovers only static, file, HTTP and Kubernetes targets", .0.join(", "))]
    UnsupportedDiscovery(Vec<String>),
    /// Any other value prometheus-operator refuses.
    #[error("{field}: {problem}")]
    Invalid {
        /// The field at fault.
        field: String,
        /// What is wrong, as the operator says it.
        problem: String,
    },
}

impl Reason {
    /// A short name of the reason's kind, for the `reason` label of metrics.
    pub fn label(&self) -> &'static str {
        match self {
            Reason::Selector { .. } => "invalid_selector",
            Reason::SecretNotFound { .. } => "secret_not_found",
            Reason::ConfigMapNotFound { .. } => "configmap_not_found",
            Reason::Key { .. } => "key",
            Reason::UnknownScrapeClass(_) => "unknown_scrape_class",
            Reason::UnsupportedDiscovery(_) => "unsupported_discovery",
            Reason::Invalid { .. } => "invalid",
        }
    }

    /// An [`Reason::Invalid`] at `field`.
    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Reason {
        Reason::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}
