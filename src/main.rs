//! The `kubesd` binary.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubesd::cli;

/// Kubernetes service discovery for monitoring agents.
#[derive(Parser)]
#[command(name = "kubesd", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the targets (label sets) discovery makes of Kubernetes objects in JSON
    /// files, e.g. the output of `kubectl get pods -A -o json`.
    Labels(cli::labels::LabelsArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Labels(args) => match cli::labels::run(&args) {
            Ok(json) => print_stdout(&json),
            Err(e) => {
                eprintln!("kubesd labels: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Prints to standard output; a closed pipe (`| head`) ends quietly instead of panicking.
fn print_stdout(text: &str) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubesd: cannot write to standard output: {e}");
            ExitCode::FAILURE
        }
    }
}
