//! The commands README.md and docs/*.md give a reader are commands kubesd accepts.
//!
//! Every line of their ```sh blocks (continuations joined, comments dropped, split at
//! `|`, `&&` and `;`) is read as the shell would split it, and:
//! - a `kubesd …` or `cargo run … -- …` command is parsed with the binary's own clap
//!   definitions (`kubesd::cli::Cli`): the subcommand and every flag must exist and every
//!   value parse;
//! - the config file a `run` or `once` command names must exist and load as kubesd loads
//!   it at start (`load_config_with`, with that command's dialect and placeholder
//!   options; a `--kubeconfig` is not read, since it is the reader's own), with a job
//!   or a `monitors:` section;
//! - a `labels` command that names files is run, and must print targets;
//! - `cargo run --example X`, `cargo test --test X` and `cargo bench --bench X` must name
//!   an example, test or bench that exists, and every repository path a command names
//!   (`examples/…`, `deploy/…`, `scripts/…`) must exist;
//! - every `http://127.0.0.1:9097/sd/JOB` the documents show names a job of
//!   examples/simulator.yml, the quick start's config;
//! - every ```yaml block with `kubernetes_sd_configs` loads as a kubesd config;
//! - README's quick start runs: its `kubesd simulate` arguments start the simulator
//!   (on a free port), and `kubesd once` with examples/simulator.yml finds targets for
//!   every job.
//!
//! What this cannot check: that every command does what its comment says when run
//! (the long-running `run` and `demo` are not started here), commands of other
//! programs (`curl`, `kubectl`, `docker`, the cloud CLIs) beyond the repository paths
//! they name, and the Rust snippets (the example `examples/embed_agent.rs` is compiled
//! by `cargo test`).

#![cfg(feature = "cli")]

use std::path::Path;

use clap::Parser;
use kubesd::cli::{Cli, Command};
use kubesd::promconfig::{load_config, load_config_with, parse_config};

/// The documents whose commands are checked: README.md and every page under docs/.
fn documents() -> Vec<(String, String)> {
    let mut paths = vec!["README.md".to_string()];
    let mut pages: Vec<String> = std::fs::read_dir("docs")
        .expect("docs/ is in the repository")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("the document reads");
            (path, text)
        })
        .collect()
}

/// The bodies of a document's fenced blocks of `language`, with the line each starts on.
fn fenced_blocks(text: &str, language: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, line) in text.lines().enumerate() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut current, fence) {
            (None, Some(lang)) if lang.trim() == language => {
                current = Some((number + 2, String::new()));
            }
            (Some(_), Some(_)) => blocks.extend(current.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// A shell block's logical lines: `\` continuations joined, `#` comments dropped.
fn logical_lines(block: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut pending = String::new();
    for line in block.lines() {
        let line = strip_comment(line);
        match line.trim_end().strip_suffix('\\') {
            Some(head) => pending.push_str(head),
            None => {
                pending.push_str(&line);
                if !pending.trim().is_empty() {
                    lines.push(std::mem::take(&mut pending));
                }
                pending.clear();
            }
        }
    }
    lines
}

/// The line up to a `#` that starts a word outside quotes.
fn strip_comment(line: &str) -> String {
    let mut quote = None;
    let mut previous = ' ';
    for (at, c) in line.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '#') if previous.is_whitespace() => return line[..at].to_string(),
            _ => {}
        }
        previous = c;
    }
    line.to_string()
}

/// A logical line's commands, each as its words (quotes removed; `$(…)` kept whole).
fn commands(line: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut quote = None;
    let mut depth = 0usize;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => word.get_or_insert_default().push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_default();
            }
            (None, '$') if chars.peek() == Some(&'(') => {
                depth += 1;
                word.get_or_insert_default().push(c);
            }
            (None, ')') if depth > 0 => {
                depth -= 1;
                word.get_or_insert_default().push(c);
            }
            (None, c) if depth == 0 && (c.is_whitespace() || "|&;".contains(c)) => {
                words.extend(word.take());
                if !c.is_whitespace() && !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            (None, c) => word.get_or_insert_default().push(c),
        }
    }
    words.extend(word);
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

/// What a command asks of the repository, once its environment assignments are dropped.
enum Checked {
    /// `kubesd` arguments, the program name first.
    Kubesd(Vec<String>),
    /// A file that must exist, and why.
    Exists(String, &'static str),
}

/// The checks one command calls for.
fn checks(command: &[String]) -> Vec<Checked> {
    let words: Vec<&str> = command
        .iter()
        .map(String::as_str)
        .skip_while(|w| is_assignment(w) || *w == "eval")
        .collect();
    let mut found: Vec<Checked> = words
        .iter()
        .filter_map(|w| repository_path(w))
        .map(|path| Checked::Exists(path, "a path"))
        .collect();
    let following = |flag: &str| {
        words
            .iter()
            .position(|w| *w == flag)
            .map(|i| words.get(i + 1))
    };
    match words.as_slice() {
        ["kubesd", ..] => found.push(Checked::Kubesd(own(&words))),
        ["cargo", "run", rest @ ..] => {
            if let Some(name) = following("--example") {
                let name = name.expect("--example names an example");
                found.push(Checked::Exists(format!("examples/{name}.rs"), "an example"));
            } else if let Some(at) = rest.iter().position(|w| *w == "--") {
                let mut args = vec!["kubesd"];
                args.extend(&rest[at + 1..]);
                found.push(Checked::Kubesd(own(&args)));
            }
        }
        ["cargo", "test", ..] => {
            if let Some(name) = following("--test") {
                let name = name.expect("--test names a test");
                found.push(Checked::Exists(format!("tests/{name}.rs"), "a test"));
            }
        }
        ["cargo", "bench", ..] => {
            if let Some(name) = following("--bench") {
                let name = name.expect("--bench names a bench");
                found.push(Checked::Exists(format!("benches/{name}.rs"), "a bench"));
            }
        }
        _ => {}
    }
    found
}

fn own(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// `NAME=value`, as a shell reads an assignment before a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

/// The repository path a word names (`examples/…`, `$(scripts/… start)`), if any.
fn repository_path(word: &str) -> Option<String> {
    let word = word.trim_start_matches("$(");
    let path = word.split_whitespace().next()?.trim_end_matches(')');
    [
        "examples/",
        "deploy/",
        "scripts/",
        "tests/",
        "benches/",
        "docs/",
    ]
    .iter()
    .any(|dir| path.starts_with(dir))
    .then(|| path.trim_end_matches('/').to_string())
}

/// Parses `kubesd` arguments and checks what they name; returns the subcommand's name.
fn check_kubesd(args: &[String], place: &str) -> &'static str {
    let cli = Cli::try_parse_from(args)
        .unwrap_or_else(|e| panic!("{place}: kubesd refuses `{}`:\n{e}", args.join(" ")));
    match cli.command {
        Command::Run(run) => {
            check_config(&run.jobs, place);
            "run"
        }
        Command::Once(once) => {
            check_config(&once.jobs, place);
            "once"
        }
        Command::Labels(labels) => {
            if !labels.files.is_empty() {
                let printed = kubesd::cli::labels::run(&labels)
                    .unwrap_or_else(|e| panic!("{place}: `{}` fails: {e}", args.join(" ")));
                assert!(
                    printed.contains("__address__"),
                    "{place}: `{}` prints no target",
                    args.join(" ")
                );
            }
            "labels"
        }
        Command::Explain(explain) => {
            let loaded = load_config(&explain.config);
            assert!(
                loaded.is_ok(),
                "{place}: {} does not load",
                explain.config.display()
            );
            if !explain.files.is_empty() && explain.files.iter().all(|f| f.exists()) {
                let printed = kubesd::cli::explain::run(&explain)
                    .unwrap_or_else(|e| panic!("{place}: `{}` fails: {e}", args.join(" ")));
                assert!(
                    printed.contains("__address__"),
                    "{place}: `{}` explains no target",
                    args.join(" ")
                );
            }
            "explain"
        }
        Command::Demo(_) => "demo",
        Command::Simulate(_) => "simulate",
    }
}

/// The config file a `run` or `once` command names exists and loads.
fn check_config(jobs: &kubesd::cli::run::JobArgs, place: &str) {
    let mut options = jobs.load_options();
    // The reader's own kubeconfig is not this repository's to read.
    options.default_kubeconfig = None;
    let config = load_config_with(&jobs.config, &options)
        .unwrap_or_else(|e| panic!("{place}: {} does not load: {e}", jobs.config.display()));
    assert!(
        !config.jobs.is_empty() || config.monitors.is_some(),
        "{place}: {} has no job and no monitors section",
        jobs.config.display()
    );
}

#[test]
fn every_documented_command_is_accepted_and_names_what_exists() {
    let mut subcommands = std::collections::BTreeSet::new();
    let mut checked = 0;
    for (path, text) in documents() {
        for (start, block) in fenced_blocks(&text, "sh") {
            for line in logical_lines(&block) {
                let place = format!("{path}, the sh block at line {start}");
                for command in commands(&line) {
                    for check in checks(&command) {
                        checked += 1;
                        match check {
                            Checked::Kubesd(args) => {
                                subcommands.insert(check_kubesd(&args, &place));
                            }
                            Checked::Exists(file, what) => assert!(
                                Path::new(&file).exists(),
                                "{place}: `{line}` names {what}, {file}, that does not exist"
                            ),
                        }
                    }
                }
            }
        }
    }
    // Each subcommand is shown somewhere: the extraction found the documents' commands.
    assert_eq!(
        subcommands.into_iter().collect::<Vec<_>>(),
        ["demo", "explain", "labels", "once", "run", "simulate"]
    );
    assert!(
        checked >= 20,
        "only {checked} checks found in the documents"
    );
}

#[test]
fn the_documents_sd_urls_name_the_quick_start_jobs() {
    let config =
        load_config(Path::new("examples/simulator.yml")).expect("examples/simulator.yml loads");
    let jobs: Vec<&str> = config.jobs.iter().map(|j| j.name.as_str()).collect();
    let mut seen = 0;
    for (path, text) in documents() {
        for piece in text.split("http://127.0.0.1:9097/sd/").skip(1) {
            let name: String = piece
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "-_".contains(*c))
                .collect();
            if name.is_empty() {
                continue; // `/sd/<job>`, a placeholder
            }
            seen += 1;
            assert!(
                jobs.contains(&name.as_str()),
                "{path} reads /sd/{name}, not a job of examples/simulator.yml ({jobs:?})"
            );
        }
    }
    assert!(seen > 0, "no document reads the quick start's /sd");
}

/// A kubeconfig for the documents' `kubeconfig_file: /etc/kubesd/kubeconfig`, which
/// kubesd reads when it loads the config.
const KUBECONFIG: &str = "apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: \"https://10.0.0.1:6443\"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
";

#[test]
fn every_documented_config_loads() {
    // The documents' files under /etc/kubesd/ are read from a directory of the test's
    // own; the config is otherwise the document's, byte for byte.
    let dir = std::env::temp_dir().join(format!("kubesd-docs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    std::fs::write(dir.join("kubeconfig"), KUBECONFIG).expect("the kubeconfig is written");
    let etc = format!("{}/", dir.display());
    let mut loaded = 0;
    for (path, text) in documents() {
        for (start, block) in fenced_blocks(&text, "yaml") {
            if !block.contains("kubernetes_sd_configs") {
                continue;
            }
            let block = block.replace("/etc/kubesd/", &etc);
            parse_config(&block, &dir.join("kubesd.yml")).unwrap_or_else(|e| {
                panic!("{path}: the config at line {start} does not load: {e}")
            });
            loaded += 1;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(loaded > 0, "no document shows a config");
}

#[test]
fn the_example_config_is_the_one_deploy_ships() {
    let deployed = std::fs::read_to_string("deploy/configmap.yaml").expect("the ConfigMap");
    let doc: serde_norway::Value = serde_norway::from_str(&deployed).expect("YAML");
    let entry = doc["data"]["kubesd.yml"]
        .as_str()
        .expect("a kubesd.yml entry");
    let shipped = parse_config(entry, Path::new("/etc/kubesd/config/kubesd.yml"))
        .expect("deploy/configmap.yaml's config loads");
    let example = load_config(Path::new("examples/kubesd.yml")).expect("examples/kubesd.yml loads");
    let names = |c: &kubesd::promconfig::LoadedConfig| -> Vec<String> {
        c.jobs.iter().map(|j| j.name.clone()).collect()
    };
    assert_eq!(names(&example), names(&shipped));
    let strip = |text: &str| -> Vec<String> {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let example_text = std::fs::read_to_string("examples/kubesd.yml").expect("the example");
    assert_eq!(
        strip(&example_text),
        strip(entry),
        "examples/kubesd.yml and deploy/configmap.yaml's kubesd.yml say the same"
    );
}

/// The first command of README.md's sh blocks that runs `kubesd <subcommand>`.
fn readme_command(subcommand: &str) -> Vec<String> {
    let readme = std::fs::read_to_string("README.md").expect("README.md reads");
    fenced_blocks(&readme, "sh")
        .iter()
        .flat_map(|(_, block)| logical_lines(block))
        .flat_map(|line| commands(&line))
        .flat_map(|command| checks(&command))
        .find_map(|check| match check {
            Checked::Kubesd(args) if args.get(1).map(String::as_str) == Some(subcommand) => {
                Some(args)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("README.md runs no `kubesd {subcommand}`"))
}

/// README's quick start, run: its `kubesd simulate` (on a port of the test's own, and
/// without churn, which only the long-running command starts), then `kubesd once`
/// with examples/simulator.yml pointed at that port, in place of the long-running
/// `kubesd run` with the same config; every job must sync with targets.
#[actix_rt::test]
async fn the_quick_start_discovers_the_simulator() {
    let mut simulate = readme_command("simulate");
    let at = simulate
        .iter()
        .position(|w| w == "--listen")
        .expect("--listen")
        + 1;
    assert_eq!(
        simulate[at], "127.0.0.1:6443",
        "the port examples/simulator.yml names"
    );
    simulate[at] = "127.0.0.1:0".to_string();
    let Command::Simulate(args) = Cli::try_parse_from(&simulate).expect("parses").command else {
        panic!("not a simulate command");
    };
    let running = kubesd::cli::simulate::start(&args)
        .await
        .expect("the simulator starts");

    let dir = std::env::temp_dir().join(format!("kubesd-quick-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let example = std::fs::read_to_string("examples/simulator.yml").expect("the example");
    assert!(example.contains("http://127.0.0.1:6443"));
    let config = dir.join("simulator.yml");
    std::fs::write(
        &config,
        example.replace("http://127.0.0.1:6443", &running.url()),
    )
    .expect("the config is written");
    let out = dir.join("sd");
    let once = ["kubesd", "once", "--config"]
        .map(String::from)
        .into_iter()
        .chain([
            config.display().to_string(),
            "--output-dir".to_string(),
            out.display().to_string(),
        ]);
    let Command::Once(args) = Cli::try_parse_from(once).expect("parses").command else {
        panic!("not a once command");
    };
    let outcome = kubesd::cli::run::once(args).await;
    running.stop().await;
    outcome.expect("kubesd once syncs every job of the quick start");

    let jobs = load_config(&config).expect("the config loads").jobs;
    for job in &jobs {
        let file = out.join(format!("{}.json", job.name));
        let text = std::fs::read_to_string(&file).expect("kubesd once wrote the job's file");
        let groups: Vec<serde_json::Value> = serde_json::from_str(&text).expect("file SD JSON");
        let targets: usize = groups
            .iter()
            .map(|g| g["targets"].as_array().map_or(0, Vec::len))
            .sum();
        assert!(
            targets > 0,
            "job {} found no target in the simulator",
            job.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
