//! Logging for the `kubesd` binary: to stderr, through `tracing`, in the format
//! `--log.format` names. Colour only when stderr is a terminal, so that `kubectl logs`
//! and files carry no escape codes.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use super::logfmt::{LogfmtEvents, LogfmtFields};

/// How log lines are written (`--log.format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `key=value` pairs, one event a line (as Prometheus' `--log.format=logfmt`).
    #[default]
    Logfmt,
    /// One JSON object a line, for log pipelines that parse JSON.
    Json,
    /// tracing's human-readable format (colour when stderr is a terminal).
    Text,
}

/// The filter when `RUST_LOG` is unset: warnings, and kubesd's own information.
const DEFAULT_FILTER: &str = "warn,kubesd=info";

/// Installs the process-wide subscriber: `RUST_LOG` picks what, `format` how.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    let ansi = std::io::stderr().is_terminal();
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Logfmt => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(LogfmtEvents)
                    .fmt_fields(LogfmtFields)
                    .with_writer(std::io::stderr),
            )
            .init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_writer(std::io::stderr),
            )
            .init(),
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(ansi)
                    .with_writer(std::io::stderr),
            )
            .init(),
    }
}
