//! `kubesd explain`: the offline twin of the status page. Reads a config file and
//! Kubernetes objects (files, or `kubectl get … -o json` on standard input; a List or
//! single objects), and prints, for each job and each of its `kubernetes_sd_configs`,
//! every target its role makes of those objects with its relabelling trace: what each
//! rule changed, and which rule kept or dropped the target.
//!
//! Every object of the role is explained: `namespaces` and `selectors` are the API
//! server's filters, and the objects given are taken as what it would list.

use std::fmt::Write;
use std::path::PathBuf;

use super::labels::{LabelsError, decode_objects, read_inputs};
use crate::labels::Labels;
use crate::model::Object;
use crate::promconfig::{self, load_config};
use crate::relabel::{RelabelConfig, Target, Trace, trace};
use crate::targets::{ObjectCache, Semantics, TargetContext, target_labels};

/// Arguments of `kubesd explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The config file (Prometheus' format, as `kubesd run` reads it).
    #[arg(long)]
    pub config: PathBuf,
    /// Whose target semantics to follow: prometheus or victoriametrics.
    #[arg(long, default_value_t = Semantics::Prometheus)]
    pub semantics: Semantics,
    /// Only this job (default: every job).
    #[arg(long)]
    pub job: Option<String>,
    /// Leave out `__meta_*` labels from the discovered labels printed.
    #[arg(long)]
    pub hide_meta: bool,
    /// JSON files with objects or lists of any kind; `-` or none reads standard input.
    pub files: Vec<PathBuf>,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The config file could not be loaded.
    #[error("{0}")]
    Config(String),
    /// The objects could not be read.
    #[error(transparent)]
    Objects(#[from] LabelsError),
    /// `--job` names no job of the config.
    #[error("the config has no job named {0:?}")]
    NoSuchJob(String),
}

/// Runs the command, returning the text to print.
pub fn run(args: &ExplainArgs) -> Result<String, ExplainError> {
    let config = load_config(&args.config).map_err(|e| ExplainError::Config(e.to_string()))?;
    let mut cache = ObjectCache::default();
    let mut objects: Vec<Object> = Vec::new();
    for (path, bytes) in &read_inputs(&args.files)? {
        for object in decode_objects(path, bytes)? {
            objects.push(object.clone());
            cache.insert(object);
        }
    }
    objects.sort_by_key(|o| (o.role(), o.key()));
    let jobs: Vec<&promconfig::Job> = config
        .jobs
        .iter()
        .filter(|j| args.job.as_ref().is_none_or(|name| *name == j.name))
        .collect();
    if let (Some(name), true) = (&args.job, jobs.is_empty()) {
        return Err(ExplainError::NoSuchJob(name.clone()));
    }
    let mut out = String::new();
    for job in jobs {
        for (index, sd) in job.sd_configs.iter().enumerate() {
            let _ = writeln!(
                out,
                "job {:?}, kubernetes_sd_configs[{index}], role {}",
                job.name, sd.role
            );
            let ctx = TargetContext {
                attach: sd.attach_metadata,
                semantics: args.semantics,
                cache: &cache,
            };
            let mut any = false;
            for object in objects.iter().filter(|o| o.role() == sd.role) {
                for labels in target_labels(object, &ctx) {
                    any = true;
                    explain_target(&mut out, job, object, &labels, args.hide_meta);
                }
            }
            if !any {
                let _ = writeln!(out, "  no {} among the objects given", sd.role);
            }
            out.push('\n');
        }
    }
    Ok(out)
}

/// One target's trace.
fn explain_target(
    out: &mut String,
    job: &promconfig::Job,
    object: &Object,
    labels: &Labels,
    hide_meta: bool,
) {
    let traced = trace(labels, &job.scrape, &job.rules);
    let address = labels.get("__address__").unwrap_or("");
    let _ = writeln!(out, "  {} {} → {}", object.role(), object.key(), address);
    let shown = traced
        .discovered
        .iter()
        .filter(|l| !(hide_meta && l.name.starts_with("__meta_")));
    let _ = writeln!(out, "    discovered: {}", pairs(shown));
    write_steps(out, &job.relabel, &traced);
    let outcome = match (&traced.target, traced.dropped_by()) {
        (Target::Keep(kept), _) => format!("kept: {}", pairs(kept.iter())),
        (Target::NoAddress, _) => "not scraped: no __address__ after relabelling".into(),
        (Target::Dropped, Some(i)) => {
            format!("dropped by rule {i}: {}", rule_text(job.relabel.get(i)))
        }
        (Target::Dropped, None) => "dropped".into(),
    };
    let _ = writeln!(out, "    => {outcome}");
}

/// Each rule with what it changed, up to the one that dropped the target.
fn write_steps(out: &mut String, rules: &[RelabelConfig], traced: &Trace) {
    let mut before = traced.discovered.clone();
    for step in &traced.steps {
        let rule = rule_text(rules.get(step.rule));
        if !step.keep {
            let _ = writeln!(out, "    rule {}: {rule}: DROP", step.rule);
            return;
        }
        let _ = writeln!(
            out,
            "    rule {}: {rule}: {}",
            step.rule,
            changes(&before, &step.output)
        );
        before = step.output.clone();
    }
}

/// What changed from `before` to `after`: labels set, changed and removed.
fn changes(before: &Labels, after: &Labels) -> String {
    let mut parts = Vec::new();
    for label in after.iter() {
        if before.get(&label.name) != Some(label.value.as_str()) {
            parts.push(format!("{}={:?}", label.name, label.value.as_str()));
        }
    }
    for label in before.iter() {
        if after.get(&label.name).is_none() {
            parts.push(format!("-{}", label.name));
        }
    }
    if parts.is_empty() {
        "keep, no change".into()
    } else {
        format!("keep, {}", parts.join(" "))
    }
}

/// A rule in one line: its action and the fields that say what it matches.
fn rule_text(rule: Option<&RelabelConfig>) -> String {
    let Some(rule) = rule else {
        return String::new();
    };
    let json = rule.prometheus_json();
    let mut text = json["action"].as_str().unwrap_or("replace").to_string();
    // The defaults (`regex` `(.*)`, `replacement` `$1`) say nothing: left out.
    let defaults = [("regex", "(.*)"), ("replacement", "$1")];
    for field in [
        "source_labels",
        "regex",
        "target_label",
        "replacement",
        "modulus",
        "if",
    ] {
        let Some(value) = json.get(field) else {
            continue;
        };
        if !defaults.contains(&(field, value.as_str().unwrap_or_default())) {
            let _ = write!(text, " {field}={value}");
        }
    }
    text
}

/// Labels as `name="value"` pairs.
fn pairs<'a>(labels: impl Iterator<Item = &'a crate::labels::Label>) -> String {
    labels
        .map(|l| format!("{}={:?}", l.name, l.value.as_str()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of this test's own, removed when dropped.
    struct Dir(PathBuf);

    impl Dir {
        fn new(test: &str) -> Dir {
            let name = format!("kubesd-explain-{test}-{}", std::process::id());
            let dir = std::env::temp_dir().join(name);
            std::fs::create_dir_all(&dir).expect("temp dir");
            Dir(dir)
        }

        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::write(&path, text).expect("temp file");
            path
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const CONFIG: &str = r#"
scrape_configs:
  - job_name: pods
    kubernetes_sd_configs: [{role: pod, api_server: "https://k:6443"}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        regex: "true"
        action: keep
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
  - job_name: nodes
    kubernetes_sd_configs: [{role: node, api_server: "https://k:6443"}]
"#;

    const PODS: &str = r#"{"kind":"PodList","apiVersion":"v1","items":[
        {"metadata":{"name":"kept","namespace":"ns","uid":"1",
                     "annotations":{"prometheus.io/scrape":"true"}},
         "spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]},
         "status":{"podIP":"10.1.0.1","phase":"Running"}},
        {"metadata":{"name":"quiet","namespace":"ns","uid":"2"},
         "spec":{"containers":[{"name":"c","ports":[{"containerPort":80}]}]},
         "status":{"podIP":"10.1.0.2","phase":"Running"}}]}"#;

    fn args(dir: &Dir, job: Option<&str>) -> ExplainArgs {
        ExplainArgs {
            config: dir.write("kubesd.yml", CONFIG),
            semantics: Semantics::Prometheus,
            job: job.map(String::from),
            hide_meta: true,
            files: vec![dir.write("pods.json", PODS)],
        }
    }

    #[test]
    fn each_target_says_which_rule_kept_or_dropped_it() {
        let dir = Dir::new("trace");
        let out = run(&args(&dir, None)).expect("explains");
        let kept = out.split("pod ns/kept").nth(1).expect("the kept pod");
        let kept = kept.split("  pod ").next().unwrap_or(kept);
        assert!(kept.contains("rule 0: keep"), "{out}");
        assert!(kept.contains("rule 1: replace source_labels=[\"__meta_kubernetes_pod_name\"] target_label=\"pod\": keep, pod=\"kept\""), "{out}");
        assert!(
            kept.contains("=> kept: __address__=\"10.1.0.1:80\" job=\"pods\" pod=\"kept\""),
            "{out}"
        );
        let quiet = out.split("pod ns/quiet").nth(1).expect("the quiet pod");
        assert!(quiet.contains("rule 0: keep"), "{out}");
        assert!(quiet.contains(": DROP\n"), "{out}");
        assert!(quiet.contains("=> dropped by rule 0: keep source_labels=[\"__meta_kubernetes_pod_annotation_prometheus_io_scrape\"] regex=\"true\""), "{out}");
        assert!(
            !quiet.contains("rule 1"),
            "nothing runs after the drop: {out}"
        );
        assert!(out.contains("job \"nodes\", kubernetes_sd_configs[0], role node\n  no node among the objects given"), "{out}");
        assert!(!out.contains("discovered: __meta_"), "--hide-meta: {out}");
    }

    #[test]
    fn a_job_can_be_picked_and_an_unknown_one_is_an_error() {
        let dir = Dir::new("job");
        let out = run(&args(&dir, Some("nodes"))).expect("explains");
        assert!(!out.contains("job \"pods\""), "{out}");
        let err = run(&args(&dir, Some("absent"))).expect_err("no such job");
        assert!(err.to_string().contains("\"absent\""), "{err}");
    }
}
