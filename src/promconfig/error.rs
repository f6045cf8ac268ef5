//! Why a config file could not be loaded, naming the file and where in it.

use std::fmt;
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
    /// Keys or values kubesd refuses: every one found, so that one run shows them all.
    #[error("{path}: {}", Problems(problems))]
    Invalid {
        /// The config file.
        path: PathBuf,
        /// What is wrong, and where; never empty.
        problems: Vec<Problem>,
    },
}

/// One refused key or value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where: the job (or top-level section) and key, e.g.
    /// `scrape_configs[2] (job "pods"): kubernetes_sd_configs[0]`.
    pub at: String,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.problem)
    }
}

/// One problem on the same line as the file; several each on a line of their own.
struct Problems<'a>(&'a [Problem]);

impl fmt::Display for Problems<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} problems:", many.len())?;
                for p in many {
                    write!(f, "\n  {p}")?;
                }
                Ok(())
            }
        }
    }
}
