//! The `kubesd` command line: one module per subcommand.

pub mod demo;
pub mod explain;
pub mod labels;
pub mod logfmt;
pub mod logging;
pub mod run;
pub mod simulate;

use clap::{Parser, Subcommand};

use logging::LogFormat;

// The `kubesd` binary's arguments, here rather than in main.rs so that
// tests/docs_commands.rs parses the documents' commands with the same definitions.
// (The doc comment below is `kubesd --help`'s text.)
/// Kubernetes service discovery for monitoring agents.
#[derive(Parser)]
#[command(name = "kubesd", version = crate::build_info::LONG_VERSION, about)]
pub struct Cli {
    /// How log lines are written to stderr (`RUST_LOG` picks which).
    #[arg(long = "log.format", value_enum, default_value_t, global = true)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands of `kubesd`.
#[derive(Subcommand)]
pub enum Command {
    /// Print the targets (label sets) discovery makes of Kubernetes objects in JSON
    /// files, e.g. the output of `kubectl get pods -A -o json`.
    Labels(labels::LabelsArgs),
    /// Explain a config's relabelling on Kubernetes objects in JSON files (or
    /// `kubectl get … -o json` on standard input): each job's targets, what each rule
    /// changed, and which rule kept or dropped each target.
    Explain(explain::ExplainArgs),
    /// Run the demo: the simulator with a generated, churning cluster, discovered by
    /// several jobs, with a live summary and the HTTP SD endpoints.
    Demo(demo::DemoArgs),
    /// Discover the jobs of a Prometheus-style config file and serve their targets over
    /// HTTP SD (/sd/{job}), with /metrics, /healthz and /ready.
    Run(run::RunArgs),
    /// Sync the jobs of a config file once, print their targets as JSON, and exit.
    Once(run::OnceArgs),
    /// Serve the built-in Kubernetes API simulator with a generated cluster, for kubectl,
    /// Prometheus, vmagent or kubesd to discover from.
    Simulate(simulate::SimulateArgs),
}
