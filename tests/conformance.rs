//! The conformance corpus: every case in `tests/conformance/*.json` (or in the folder
//! named by `KUBESD_CONFORMANCE_DIR`), and every decode case in its `decode/lists.json`.
//!
//! Each case's objects are decoded with kubesd's own decoder; the objects of the roles
//! it depends on fill a cache; the labels kubesd generates for `objects[role]`, in the
//! semantics of the case's file (`"semantics"`, VictoriaMetrics' when absent), must equal
//! `expected` as multisets, with empty values dropped on both sides (the corpus README
//! is the contract). A new case file in the folder is picked up with no code change.
//!
//! The corpus runs twice: as JSON, and turned into protobuf by the simulator's encoder
//! (each object as a one-item LIST body and as a watch frame, both decoded by kubesd's
//! protobuf decoder, which must agree with each other and give the same targets).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use kubesd::model::{Object, Role};
use kubesd::simulator::{Resource, protobuf};
use kubesd::targets::{AttachMetadata, ObjectCache, Semantics, TargetContext, target_labels};
use kubesd::wire::json::{decode_bookmark, decode_list};
use kubesd::wire::proto::{self, FrameBuffer};
use serde::Deserialize;

type LabelMap = BTreeMap<String, String>;

#[derive(Deserialize)]
struct CaseFile {
    #[serde(default)]
    source: String,
    /// Whose semantics the file's cases follow; VictoriaMetrics' when absent.
    #[serde(default = "victoriametrics")]
    semantics: Semantics,
    cases: Vec<Case>,
}

fn victoriametrics() -> Semantics {
    Semantics::VictoriaMetrics
}

/// Kinds a case may list that kubesd never reads (Prometheus reads a pod's Deployment
/// and CronJob names from its ReplicaSet and Job): accepted, and left out of the cache.
const UNREAD_KINDS: [&str; 2] = ["deployment", "cronjob"];

#[derive(Deserialize)]
struct Case {
    name: String,
    role: String,
    #[serde(default)]
    attach_metadata: AttachMetadata,
    objects: BTreeMap<String, Vec<serde_json::Value>>,
    expected: Vec<BTreeMap<String, String>>,
    #[serde(default)]
    notes: Vec<String>,
}

#[derive(Deserialize)]
struct DecodeFile {
    cases: Vec<DecodeCase>,
}

#[derive(Deserialize)]
struct DecodeCase {
    name: String,
    kind: String,
    role: Option<String>,
    input: String,
    expect_error: bool,
    expected_resource_version: Option<String>,
}

fn corpus_dir() -> PathBuf {
    match std::env::var_os("KUBESD_CONFORMANCE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/conformance"),
    }
}

fn parse_role(name: &str) -> Result<Role, String> {
    Role::ALL
        .into_iter()
        .find(|r| r.as_str() == name)
        .ok_or_else(|| format!("unknown kind {name:?} in objects"))
}

fn decode(role: Role, json: &serde_json::Value) -> Result<Object, String> {
    let bytes = serde_json::to_vec(json).map_err(|e| e.to_string())?;
    Object::decode(role, &bytes).map_err(|e| e.to_string())
}

/// Decodes `json` as kubesd reads it in protobuf: encoded by the simulator as a LIST
/// body and as an `ADDED` watch frame, each decoded; both must give the same object.
/// A kind the API server serves in JSON only (a custom resource) is read as JSON, as
/// kubesd reads such a response whatever it asked for.
fn decode_protobuf(role: Role, json: &serde_json::Value) -> Result<Object, String> {
    let resource = Resource::from(role);
    if !protobuf::has_schema(resource) {
        return decode(role, json);
    }
    let item = protobuf::encode_fields(resource, json).map_err(|e| e.to_string())?;
    let (api_version, _) = protobuf::schema_of(resource, json).ok_or("no protobuf schema")?;
    let list = protobuf::encode_list(resource, &api_version, &[item], "7", None);
    let (mut page, errors) = proto::decode_list(role, &list).map_err(|e| e.to_string())?;
    if let Some(error) = errors.first() {
        return Err(error.to_string());
    }
    let listed = page.items.pop().ok_or("the list decoded empty")?;
    let object = protobuf::encode_object(resource, json).map_err(|e| e.to_string())?;
    let stream = protobuf::encode_watch_frame("ADDED", &object);
    let mut frames = Vec::new();
    FrameBuffer::new(1 << 20)
        .push(&stream, |f| frames.push(proto::decode_event(role, f)))
        .map_err(|e| e.to_string())?;
    match frames.pop() {
        Some(Ok(kubesd::wire::json::WatchEvent::Added(watched))) if watched == listed => Ok(listed),
        other => Err(format!(
            "the watch frame decoded to {other:?}, the list to {listed:?}"
        )),
    }
}

fn without_empty_values(m: &BTreeMap<String, String>) -> LabelMap {
    m.iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// How a case's objects are decoded: from their JSON, or through protobuf.
type Decoder = fn(Role, &serde_json::Value) -> Result<Object, String>;

/// Runs one case; `Err` explains the mismatch.
fn run_case(case: &Case, semantics: Semantics, decode: Decoder) -> Result<(), String> {
    let role = parse_role(&case.role)?;
    let mut cache = ObjectCache::default();
    let mut subjects = Vec::new();
    for (kind, objects) in &case.objects {
        if UNREAD_KINDS.contains(&kind.as_str()) {
            continue;
        }
        let kind = parse_role(kind)?;
        for json in objects {
            let object = decode(kind, json).map_err(|e| format!("decoding a {kind}: {e}"))?;
            if kind == role {
                subjects.push(object.clone());
            }
            cache.insert(object);
        }
    }
    let mut expected: Vec<LabelMap> = case.expected.iter().map(without_empty_values).collect();
    expected.sort();
    // The engine's groups label with only what the role reads (`for_role`): the same
    // targets as the case's own settings.
    for attach in [case.attach_metadata, case.attach_metadata.for_role(role)] {
        let ctx = TargetContext {
            attach,
            semantics,
            cache: &cache,
        };
        let mut actual = label_maps(&subjects, &ctx);
        actual.sort();
        if actual != expected {
            return Err(diff(&expected, &actual));
        }
    }
    Ok(())
}

/// The targets of `subjects`, each as its non-empty labels.
fn label_maps(subjects: &[Object], ctx: &TargetContext<'_>) -> Vec<LabelMap> {
    subjects
        .iter()
        .flat_map(|o| target_labels(o, ctx))
        .map(|labels| {
            labels
                .iter()
                .filter(|l| !l.value.is_empty())
                .map(|l| (l.name.to_string(), l.value.to_string()))
                .collect()
        })
        .collect()
}

/// A per-label explanation of how two multisets of targets differ.
fn diff(expected: &[LabelMap], actual: &[LabelMap]) -> String {
    let mut missing: Vec<&LabelMap> = expected.iter().collect();
    let mut extra: Vec<&LabelMap> = Vec::new();
    for a in actual {
        match missing.iter().position(|e| *e == a) {
            Some(i) => {
                missing.remove(i);
            }
            None => extra.push(a),
        }
    }
    let mut out = format!(
        "{} expected targets, {} produced; {} expected not produced, {} produced not expected\n",
        expected.len(),
        actual.len(),
        missing.len(),
        extra.len()
    );
    // Pair each missing target with the extra one it shares most labels with.
    for e in &missing {
        let best = extra
            .iter()
            .enumerate()
            .max_by_key(|(_, a)| e.iter().filter(|(k, v)| a.get(*k) == Some(*v)).count())
            .map(|(i, _)| i);
        match best {
            Some(i) => {
                let a = extra.remove(i);
                out += &format!("  target {}:\n", e.get("__address__").map_or("?", |s| s));
                for (k, v) in e.iter() {
                    match a.get(k) {
                        Some(av) if av == v => {}
                        Some(av) => out += &format!("    ~ {k}: expected {v:?}, got {av:?}\n"),
                        None => out += &format!("    - {k}={v:?} (missing)\n"),
                    }
                }
                for (k, v) in a.iter().filter(|(k, _)| !e.contains_key(*k)) {
                    out += &format!("    + {k}={v:?} (unexpected)\n");
                }
            }
            None => out += &format!("  missing target: {e:?}\n"),
        }
    }
    for a in extra {
        out += &format!("  unexpected target: {a:?}\n");
    }
    out
}

fn run_decode_case(case: &DecodeCase) -> Result<(), String> {
    let outcome: Result<String, String> = match case.kind.as_str() {
        "list" => {
            let role = parse_role(case.role.as_deref().ok_or("list case without role")?)?;
            decode_list(role, case.input.as_bytes())
                .map(|page| page.resource_version.to_string())
                .map_err(|e| e.to_string())
        }
        "bookmark" => decode_bookmark(case.input.as_bytes())
            .map(|rv| rv.to_string())
            .map_err(|e| e.to_string()),
        other => return Err(format!("unknown decode case kind {other:?}")),
    };
    match (outcome, case.expect_error) {
        (Err(_), true) => Ok(()),
        (Ok(rv), true) => Err(format!(
            "decoded (resourceVersion {rv:?}) but must be rejected"
        )),
        (Err(e), false) => Err(format!("rejected but must decode: {e}")),
        (Ok(rv), false) => match &case.expected_resource_version {
            Some(want) if *want != rv => Err(format!("resourceVersion {rv:?}, expected {want:?}")),
            _ => Ok(()),
        },
    }
}

#[test]
fn conformance_corpus() {
    run_corpus(decode, true);
}

#[test]
fn conformance_corpus_in_protobuf() {
    run_corpus(decode_protobuf, false);
}

/// Runs every case file with `decode`, and the decode cases (JSON only) when
/// `with_decode_cases`.
fn run_corpus(decode: Decoder, with_decode_cases: bool) {
    let dir = corpus_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| {
            panic!(
                "cannot read the conformance corpus at {}: {e}",
                dir.display()
            )
        })
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no *.json case files in {}",
        dir.display()
    );

    let (mut passed, mut failed) = (0usize, 0usize);
    let mut report = String::new();
    for path in &files {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file: CaseFile =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for case in &file.cases {
            match run_case(case, file.semantics, decode) {
                Ok(()) => passed += 1,
                Err(why) => {
                    failed += 1;
                    report += &format!(
                        "FAIL {file_name} [{} {}] {} ({})\n{why}",
                        file.semantics, case.role, case.name, file.source
                    );
                    for note in &case.notes {
                        report += &format!("  note: {note}\n");
                    }
                }
            }
        }
    }
    let decode_path = dir.join("decode/lists.json");
    if with_decode_cases && decode_path.is_file() {
        let text = std::fs::read_to_string(&decode_path)
            .unwrap_or_else(|e| panic!("{}: {e}", decode_path.display()));
        let file: DecodeFile = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: {e}", decode_path.display()));
        for case in &file.cases {
            match run_decode_case(case) {
                Ok(()) => passed += 1,
                Err(why) => {
                    failed += 1;
                    report += &format!("FAIL decode/lists.json {}: {why}\n", case.name);
                }
            }
        }
    }
    // Written straight to stderr so the summary shows even when the test passes.
    let mut err = std::io::stderr();
    let _ = writeln!(err, "{report}conformance: {passed} passed, {failed} failed");
    assert_eq!(failed, 0, "{failed} conformance cases failed (see above)");
}
