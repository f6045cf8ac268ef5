//! The `kubesd` binary.

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use kubesd::cli;
use kubesd::cli::{Cli, Command};

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
