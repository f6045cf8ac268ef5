//! Why a config file could not be loaded, naming the file and where in it.

use std::path::PathBuf;

/// A config file kubesd cannot run.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Read {
        /// The config file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not YAML.
    #[error("{path}: not valid YAML: {message}")]
    Syntax {
        /// The config file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key or value kubesd refuses.
    #[error("{path}: {at}: {problem}")]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// Where: the job (or top-level section) and key, e.g.
        /// `scrape_configs[2] (job "pods"): kubernetes_sd_configs[0]`.
        at: String,
        /// What is wrong.
        problem: String,
    },
}
