//! The `kubesd` binary.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kubesd::cli;
use kubesd::cli::logging::LogFormat;

/// Kubernetes service discovery for monitoring agents.
#[derive(Parser)]
#[command(name = "kubesd", version = kubesd::build_info::LONG_VERSION, about)]
struct Cli {
    /// How log lines are written to stderr (`RUST_LOG` picks which).
    #[arg(long = "log.format", value_enum, default_value_t, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the targets (label sets) discovery makes of Kubernetes objects in JSON
    /// files, e.g. the output of `kubectl get pods -A -o json`.
    Labels(cli::labels::LabelsArgs),
    /// Explain a config's relabelling on Kubernetes objects in JSON files (or
    /// `kubectl get … -o json` on standard input): each job's targets, what each rule
    /// changed, and which rule kept or dropped each target.
    Explain(cli::explain::ExplainArgs),
    /// Run the demo: the simulator with a generated, churning cluster, discovered by
    /// several jobs, with a live summary and the HTTP SD endpoints.
    Demo(cli::demo::DemoArgs),
    /// Discover the jobs of a Prometheus-style config file and serve their targets over
    /// HTTP SD (/sd/{job}), with /metrics, /healthz and /ready.
    Run(cli::run::RunArgs),
    /// Sync the jobs of a config file once, print their targets as JSON, and exit.
    Once(cli::run::OnceArgs),
    /// Serve the built-in Kubernetes API simulator with a generated cluster, for kubectl,
    /// Prometheus, vmagent or kubesd to discover from.
    Simulate(cli::simulate::SimulateArgs),
}

/// mimalloc: objects decoded on the watcher thread are freed on the group's, which
/// glibc's malloc serialises on its arena locks; mimalloc frees them without a lock.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli::logging::init(cli.log_format);
    match cli.command {
        Command::Simulate(args) => run_async(cli::simulate::run(args), "kubesd simulate"),
        Command::Demo(args) => run_async(cli::demo::run(args), "kubesd demo"),
        Command::Run(args) => run_async(cli::run::run(args), "kubesd run"),
        Command::Once(args) => run_async(cli::run::once(args), "kubesd once"),
        Command::Explain(args) => match cli::explain::run(&args) {
            Ok(text) => print_stdout(text.trim_end()),
            Err(e) => {
                eprintln!("kubesd explain: {e}");
                ExitCode::FAILURE
            }
        },
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

/// Runs `fut` in an actix system; an error is printed with the command's name.
fn run_async(fut: impl std::future::Future<Output = Result<(), String>>, name: &str) -> ExitCode {
    let system = actix_rt::System::new();
    let result = system.block_on(fut);
    // Stop the system and let it finish inside its runtime: dropping it with actors
    // that never got to start would start them with no timer driver left.
    system.block_on(async { actix_rt::System::current().stop() });
    let _ = system.run();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}
