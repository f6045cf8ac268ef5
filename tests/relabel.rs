//! Relabelling against Prometheus' documented behaviour: the cases of Prometheus'
//! `model/relabel/relabel_test.go` (rewritten as YAML rules, the form users write) and
//! the checks its `relabel.Config.Validate` makes.

use kubesd::Labels;
use kubesd::relabel::{
    CompiledRule, Dialect, NameValidation, RelabelConfig, Relabeller, RuleOptions, ScrapeSettings,
    Target, compile_all, compile_all_with, process, relabel, relabel_steps, seeded, trace,
};

fn labels(pairs: &[(&str, &str)]) -> Labels {
    Labels::from_pairs(pairs.iter().copied())
}

fn rules(yaml: &str) -> Vec<kubesd::relabel::CompiledRule> {
    let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
    compile_all(&configs).expect("rules are valid")
}

/// A [`Relabeller`] gives what [`process`] gives: for the same label set again (its
/// names remembered by address), and for a copy of it (the same names in other
/// allocations, remembered by content).
fn assert_relabeller_agrees(input: &Labels, rules: &[CompiledRule], case: &str) {
    let scrape = ScrapeSettings::new("job");
    let want = process(input, &scrape, rules);
    let mut relabeller = Relabeller::new(std::sync::Arc::new(rules.to_vec()));
    let copy = Labels::from_pairs(
        input
            .iter()
            .map(|l| (l.name.to_string(), l.value.to_string())),
    );
    for (round, labels) in [input, input, &copy, &copy].into_iter().enumerate() {
        assert_eq!(
            relabeller.process(labels, &scrape),
            want,
            "{case}, round {round}"
        );
    }
    assert_object_relabelling_agrees(input, rules, case);
    assert_trace_agrees(input, rules, case);
}

/// A trace ([`trace`], [`relabel_steps`]) ends where [`process`] and [`relabel`] end:
/// the same target, the drop at the first step that does not keep, one step per rule.
fn assert_trace_agrees(input: &Labels, rules: &[CompiledRule], case: &str) {
    let scrape = ScrapeSettings::new("job");
    let traced = trace(input, &scrape, rules);
    assert_eq!(
        traced.target,
        process(input, &scrape, rules),
        "{case}: trace"
    );
    assert_eq!(traced.steps.len(), rules.len(), "{case}: a step per rule");
    assert_eq!(
        traced.dropped_by().is_some(),
        traced.target == Target::Dropped,
        "{case}: the drop is a step's"
    );
    assert_eq!(traced.discovered, seeded(input, &scrape), "{case}: seeded");
    let steps = relabel_steps(input, rules);
    let last = steps.last().map(|s| (s.keep, s.output.clone()));
    match (relabel(input, rules), last) {
        (Some(want), Some((keep, output))) => {
            assert!(keep, "{case}: kept");
            assert_eq!(output, want, "{case}: relabel_steps' last output");
        }
        (None, Some((keep, output))) => {
            assert!(!keep && output.is_empty(), "{case}: dropped, output empty");
        }
        (_, None) => assert!(rules.is_empty(), "{case}: no rules, no steps"),
    }
}

/// Prometheus' documented `relabel_steps` example: the rules as it shows them (defaults
/// filled in), each step's output, and the drop's empty output.
#[test]
fn relabel_steps_match_prometheus_documented_example() {
    let configs: Vec<RelabelConfig> = serde_norway::from_str(
        "- {target_label: env, replacement: development}\n- {source_labels: [__address__], regex: 'localhost:.*', action: drop}\n",
    )
    .expect("rules parse");
    let json: Vec<serde_json::Value> = configs.iter().map(RelabelConfig::prometheus_json).collect();
    assert_eq!(
        json,
        vec![
            serde_json::json!({"action": "replace", "regex": "(.*)", "replacement": "development", "separator": ";", "target_label": "env"}),
            serde_json::json!({"action": "drop", "regex": "localhost:.*", "replacement": "$1", "separator": ";", "source_labels": ["__address__"]}),
        ]
    );
    let input = labels(&[("__address__", "localhost:9090"), ("job", "prometheus")]);
    let steps = relabel_steps(&input, &compile_all(&configs).expect("rules are valid"));
    let env = labels(&[
        ("__address__", "localhost:9090"),
        ("env", "development"),
        ("job", "prometheus"),
    ]);
    assert_eq!((steps[0].keep, &steps[0].output), (true, &env));
    assert_eq!((steps[1].keep, steps[1].output.is_empty()), (false, true));
}

/// [`Relabeller::process_object`] (the rules run once on the labels an object's targets
/// share) gives what [`process`] gives for each target: over every way of splitting
/// `input` into shared labels and a target's own, with the own labels as they are,
/// changed, and emptied, in three targets over one shared part.
fn assert_object_relabelling_agrees(input: &Labels, rules: &[CompiledRule], case: &str) {
    let scrape = ScrapeSettings::new("job");
    let all: Vec<(String, String)> = input
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect();
    let n = all.len();
    // Every subset of the labels as the own part, for small inputs; else each label
    // alone, the first half and all of them.
    let splits: Vec<Vec<bool>> = if n <= 6 {
        (0u32..1 << n)
            .map(|mask| (0..n).map(|i| mask & (1 << i) != 0).collect())
            .collect()
    } else {
        let mut splits: Vec<Vec<bool>> = (0..n).map(|k| (0..n).map(|i| i == k).collect()).collect();
        splits.push((0..n).map(|i| i < n / 2).collect());
        splits.push(vec![true; n]);
        splits
    };
    let mut relabeller = Relabeller::new(std::sync::Arc::new(rules.to_vec()));
    for own_mask in splits {
        let base = Labels::from_pairs(
            all.iter()
                .zip(&own_mask)
                .filter(|(_, own)| !**own)
                .map(|((k, v), _)| (k.as_str(), v.as_str())),
        );
        let own_values = |f: &dyn Fn(&str) -> String| {
            let mut b = kubesd::labels::LabelsBuilder::new();
            for ((k, v), own) in all.iter().zip(&own_mask) {
                if *own {
                    b.add(k.clone(), f(v));
                }
            }
            base.merged(b)
        };
        let targets = [
            own_values(&|v| v.to_string()),
            own_values(&|v| format!("{v}x")),
            own_values(&|_| String::new()),
        ];
        let want: Vec<Target> = targets.iter().map(|t| process(t, &scrape, rules)).collect();
        let mut got = Vec::new();
        relabeller.process_object(&targets, &scrape, |t| got.push(t));
        assert_eq!(got, want, "{case}, own part {own_mask:?}");
    }
}

/// `(input, rules, expected output or None for dropped)`.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static str,
    Option<&'static [(&'static str, &'static str)]>,
);

#[test]
fn prometheus_relabel_cases() {
    let cases: &[Case] = &[
        (
            &[("a", "foo"), ("b", "bar"), ("c", "baz")],
            r#"[{source_labels: [a], regex: "f(.*)", target_label: d, replacement: "ch${1}-ch${1}"}]"#,
            Some(&[("a", "foo"), ("b", "bar"), ("c", "baz"), ("d", "choo-choo")]),
        ),
        (
            &[("a", "foo"), ("b", "bar"), ("c", "baz")],
            r#"
- {source_labels: [a, b], regex: "f(.*);(.*)r", target_label: a, replacement: "b${1}${2}m"}
- {source_labels: [c, a], regex: "(b).*b(.*)ba(.*)", target_label: d, replacement: "$1$2$2$3"}
"#,
            Some(&[("a", "boobam"), ("b", "bar"), ("c", "baz"), ("d", "boooom")]),
        ),
        (
            &[("a", "foo")],
            r#"
- {source_labels: [a], regex: ".*o.*", action: drop}
- {source_labels: [a], regex: "f(.*)", target_label: d, replacement: "ch$1-ch$1"}
"#,
            None,
        ),
        (
            &[("a", "foo"), ("b", "bar")],
            r#"[{source_labels: [a], regex: ".*o.*", action: drop}]"#,
            None,
        ),
        (
            &[("a", "abc")],
            r#"[{source_labels: [a], regex: ".*(b).*", target_label: d}]"#,
            Some(&[("a", "abc"), ("d", "b")]),
        ),
        (
            &[("a", "foo")],
            r#"[{source_labels: [a], regex: no-match, action: drop}]"#,
            Some(&[("a", "foo")]),
        ),
        // Anchored: "f|o" must match the whole value.
        (
            &[("a", "foo")],
            r#"[{source_labels: [a], regex: "f|o", action: drop}]"#,
            Some(&[("a", "foo")]),
        ),
        (
            &[("a", "foo")],
            r#"[{source_labels: [a], regex: no-match, action: keep}]"#,
            None,
        ),
        (
            &[("a", "foo")],
            r#"[{source_labels: [a], regex: "f.*", action: keep}]"#,
            Some(&[("a", "foo")]),
        ),
        // No replacement without a match.
        (
            &[("a", "boo")],
            r#"[{source_labels: [a], regex: f, target_label: b, replacement: bar}]"#,
            Some(&[("a", "boo")]),
        ),
        (
            &[("a", "foo"), ("b", "bar"), ("c", "baz")],
            r#"[{source_labels: [c], target_label: d, action: hashmod, modulus: 1000}]"#,
            Some(&[("a", "foo"), ("b", "bar"), ("c", "baz"), ("d", "976")]),
        ),
        (
            &[("a", "foo\nbar")],
            r#"[{source_labels: [a], target_label: b, action: hashmod, modulus: 1000}]"#,
            Some(&[("a", "foo\nbar"), ("b", "734")]),
        ),
        (
            &[("a", "foo"), ("b1", "bar"), ("b2", "baz")],
            r#"[{regex: "(b.*)", replacement: "bar_${1}", action: labelmap}]"#,
            Some(&[
                ("a", "foo"),
                ("b1", "bar"),
                ("b2", "baz"),
                ("bar_b1", "bar"),
                ("bar_b2", "baz"),
            ]),
        ),
        (
            &[
                ("a", "foo"),
                ("__meta_my_bar", "aaa"),
                ("__meta_my_baz", "bbb"),
                ("__meta_other", "ccc"),
            ],
            r#"[{regex: "__meta_(my.*)", replacement: "${1}", action: labelmap}]"#,
            Some(&[
                ("a", "foo"),
                ("__meta_my_bar", "aaa"),
                ("__meta_my_baz", "bbb"),
                ("__meta_other", "ccc"),
                ("my_bar", "aaa"),
                ("my_baz", "bbb"),
            ]),
        ),
        // The target label computed from the match.
        (
            &[("a", "some-name-value")],
            r#"[{source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${2}", target_label: "${1}"}]"#,
            Some(&[("a", "some-name-value"), ("name", "value")]),
        ),
        // An empty replacement writes nothing (and would remove the target).
        (
            &[("a", "some-name-value")],
            r#"[{source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${3}", target_label: "${1}"}]"#,
            Some(&[("a", "some-name-value")]),
        ),
        // A target label that expands to empty or to a non-name is skipped.
        (
            &[("a", "some-name-0")],
            r#"
- {source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${1}", target_label: "${3}"}
- {source_labels: [a], regex: "some-([^-]+)-([^,]+)", replacement: "${1}", target_label: "${2}"}
- {source_labels: [a], regex: "some-([^-]+)(-[^,]+)", replacement: "${1}", target_label: "${2}"}
"#,
            Some(&[("a", "some-name-0")]),
        ),
        (
            &[("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar")],
            r#"
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)path:(/[^,]+).*", replacement: "${1}", target_label: __metrics_path__}
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)job:([^,]+).*", replacement: "${1}", target_label: job}
- {source_labels: [__meta_sd_tags], regex: "(?:.+,|^)label:([^=]+)=([^,]+).*", replacement: "${2}", target_label: "${1}"}
"#,
            Some(&[
                ("__meta_sd_tags", "path:/secret,job:some-job,label:foo=bar"),
                ("__metrics_path__", "/secret"),
                ("job", "some-job"),
                ("foo", "bar"),
            ]),
        ),
        // prometheus/prometheus#12283: a dropped label written again is seen by later rules.
        (
            &[
                ("__meta_kubernetes_pod_container_port_name", "foo"),
                ("__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"),
            ],
            r#"
- {regex: "^__meta_kubernetes_pod_container_port_name$", action: labeldrop}
- {source_labels: [__meta_kubernetes_pod_annotation_XXX_metrics_port], regex: "(.+)", replacement: metrics, target_label: __meta_kubernetes_pod_container_port_name}
- {source_labels: [__meta_kubernetes_pod_container_port_name], regex: "^metrics$", action: keep}
"#,
            Some(&[
                ("__meta_kubernetes_pod_annotation_XXX_metrics_port", "9091"),
                ("__meta_kubernetes_pod_container_port_name", "metrics"),
            ]),
        ),
        (
            &[("a", "foo"), ("b1", "bar"), ("b2", "baz")],
            r#"[{regex: "(b.*)", action: labelkeep}]"#,
            Some(&[("b1", "bar"), ("b2", "baz")]),
        ),
        (
            &[("a", "foo"), ("b1", "bar"), ("b2", "baz")],
            r#"[{regex: "(b.*)", action: labeldrop}]"#,
            Some(&[("a", "foo")]),
        ),
        (
            &[("foo", "bAr123Foo")],
            r#"
- {source_labels: [foo], action: uppercase, target_label: foo_uppercase}
- {source_labels: [foo], action: Lowercase, target_label: foo_lowercase}
"#,
            Some(&[
                ("foo", "bAr123Foo"),
                ("foo_lowercase", "bar123foo"),
                ("foo_uppercase", "BAR123FOO"),
            ]),
        ),
        (
            &[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ],
            r#"[{source_labels: [__tmp_port], action: keepequal, target_label: __port1}]"#,
            Some(&[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ]),
        ),
        (
            &[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ],
            r#"[{source_labels: [__tmp_port], action: dropequal, target_label: __port1}]"#,
            None,
        ),
        (
            &[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ],
            r#"[{source_labels: [__tmp_port], action: dropequal, target_label: __port2}]"#,
            Some(&[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ]),
        ),
        (
            &[
                ("__tmp_port", "1234"),
                ("__port1", "1234"),
                ("__port2", "5678"),
            ],
            r#"[{source_labels: [__tmp_port], action: keepequal, target_label: __port2}]"#,
            None,
        ),
        // Beyond Prometheus' table, from its documentation:
        // the defaults copy one label to another (regex (.*), replacement $1);
        (
            &[("a", "x")],
            r#"[{source_labels: [a], target_label: b}]"#,
            Some(&[("a", "x"), ("b", "x")]),
        ),
        // a static replacement sets a label whatever the source (absent reads as empty);
        (
            &[("a", "x")],
            r#"[{target_label: env, replacement: prod}]"#,
            Some(&[("a", "x"), ("env", "prod")]),
        ),
        // an empty result removes the target label;
        (
            &[("a", "x"), ("b", "y")],
            r#"[{source_labels: [nope], target_label: b}]"#,
            Some(&[("a", "x")]),
        ),
        // absent source labels join as empty strings around the separator;
        (
            &[("a", "x"), ("c", "z")],
            r#"[{source_labels: [a, b, c], separator: "/", target_label: d}]"#,
            Some(&[("a", "x"), ("c", "z"), ("d", "x//z")]),
        ),
        // `.` matches a newline (Prometheus anchors as ^(?s:regex)$);
        (
            &[("a", "line1\nline2")],
            r#"[{source_labels: [a], regex: "line1.line2", action: keep}]"#,
            Some(&[("a", "line1\nline2")]),
        ),
        // the usual address rewrite: host from __address__, port from an annotation;
        (
            &[
                ("__address__", "10.0.0.1:80"),
                (
                    "__meta_kubernetes_pod_annotation_prometheus_io_port",
                    "9102",
                ),
            ],
            r#"
- source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
  action: replace
  regex: '([^:]+)(?::\d+)?;(\d+)'
  replacement: $1:$2
  target_label: __address__
"#,
            Some(&[
                ("__address__", "10.0.0.1:9102"),
                (
                    "__meta_kubernetes_pod_annotation_prometheus_io_port",
                    "9102",
                ),
            ]),
        ),
        // a number is taken as its text, as Go's YAML decoder does.
        (
            &[("a", "x")],
            r#"[{target_label: port, replacement: 9100}]"#,
            Some(&[("a", "x"), ("port", "9100")]),
        ),
        // input labels with empty values are absent.
        (
            &[("a", ""), ("b", "y")],
            r#"[{source_labels: [a], regex: "", action: keep}]"#,
            Some(&[("b", "y")]),
        ),
        // ... and are not copied by labelmap (which would remove the copy's target).
        (
            &[("a", "x"), ("l_a", ""), ("l_b", "y")],
            r#"[{regex: "l_(.*)", replacement: "$1", action: labelmap}]"#,
            Some(&[("a", "x"), ("b", "y"), ("l_b", "y")]),
        ),
        // ... nor kept by labelkeep, nor read as set by keepequal.
        (
            &[("a", ""), ("b", "")],
            r#"
- {source_labels: [a], target_label: b, action: keepequal}
- {regex: "a", action: labelkeep}
"#,
            Some(&[]),
        ),
    ];
    for (i, (input, yaml, want)) in cases.iter().enumerate() {
        let got = relabel(&labels(input), &rules(yaml));
        let want = want.map(labels);
        assert_eq!(got, want, "case {i}: {yaml}");
        assert_relabeller_agrees(&labels(input), &rules(yaml), &format!("case {i}: {yaml}"));
    }
}

#[test]
fn labelmap_collisions_follow_prometheus_builder_order() {
    // Untouched labels are visited in name order, then labels rules wrote in the order
    // they were written; the last visited wins.
    let collision = rules(
        r#"
- {source_labels: [x_a], target_label: x_a, replacement: written}
- {regex: "[xy]_(.*)", replacement: "$1", action: labelmap}
"#,
    );
    let input = labels(&[("x_a", "1"), ("y_a", "2")]);
    let got = relabel(&input, &collision).expect("kept");
    // y_a (untouched) is visited before x_a (written by the first rule), so x_a wins.
    assert_eq!(got.get("a"), Some("written"));
    let with_address = labels(&[("__address__", "h:1"), ("x_a", "1"), ("y_a", "2")]);
    assert_relabeller_agrees(&with_address, &collision, "labelmap collision");
}

#[test]
fn invalid_rules_name_the_field() {
    let cases = [
        (r#"[{action: replace}]"#, "relabel_configs[0].target_label"),
        (
            r#"[{action: lowercase}]"#,
            "relabel_configs[0].target_label",
        ),
        (
            r#"[{action: lowercase, target_label: "${3}"}]"#,
            "relabel_configs[0].target_label: \"${3}\" is invalid",
        ),
        (
            r#"[{source_labels: [a], regex: "some-([^-]+)", replacement: "${1}", target_label: "0${3}"}]"#,
            "relabel_configs[0].target_label: \"0${3}\" is invalid",
        ),
        (
            r#"[{target_label: "-${3}"}]"#,
            "\"-${3}\" is invalid for the replace action",
        ),
        (
            r#"[{target_label: "a-b", replacement: x}]"#,
            "relabel_configs[0].target_label",
        ),
        (
            r#"[{action: hashmod, target_label: a}]"#,
            "relabel_configs[0].modulus",
        ),
        (
            r#"[{action: hashmod, target_label: a, modulus: 0}]"#,
            "relabel_configs[0].modulus",
        ),
        (
            r#"[{action: keep}, {regex: "(", action: drop}]"#,
            "relabel_configs[1].regex",
        ),
        (
            r#"[{action: labelmap, replacement: "a-$1"}]"#,
            "relabel_configs[0].replacement",
        ),
        (
            r#"[{action: uppercase, target_label: a, replacement: x}]"#,
            "relabel_configs[0].replacement",
        ),
        (
            r#"[{action: keepequal, target_label: a, regex: "(.*)"}]"#,
            "relabel_configs[0].regex",
        ),
        (
            r#"[{action: dropequal, target_label: a, separator: ","}]"#,
            "relabel_configs[0].separator",
        ),
        (
            r#"[{action: labeldrop, regex: a, source_labels: [b]}]"#,
            "relabel_configs[0].source_labels",
        ),
        (
            r#"[{action: labelkeep, regex: a, target_label: b}]"#,
            "relabel_configs[0].target_label",
        ),
        (
            r#"[{action: labelkeep, regex: a, replacement: b}]"#,
            "relabel_configs[0].replacement",
        ),
        (
            r#"[{source_labels: [""], action: keep}]"#,
            "relabel_configs[0].source_labels",
        ),
    ];
    for (yaml, want) in cases {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("parses");
        let err = compile_all(&configs).expect_err(yaml).to_string();
        assert!(err.contains(want), "{yaml}: {err}");
    }
    // Rejected while decoding: an unknown action, an unknown field.
    for yaml in [r#"[{action: explode}]"#, r#"[{regexp: a}]"#] {
        assert!(
            serde_norway::from_str::<Vec<RelabelConfig>>(yaml).is_err(),
            "{yaml}"
        );
    }
}

#[test]
fn process_adds_job_and_strips_meta_and_tmp_labels() {
    let pods = ScrapeSettings::new("pods");
    let input = labels(&[
        ("__address__", "10.0.0.1:8080"),
        ("__meta_kubernetes_namespace", "default"),
        ("__meta_kubernetes_pod_name", "web-0"),
    ]);
    let rules = rules(
        r#"
- {source_labels: [__meta_kubernetes_namespace], target_label: namespace}
- {source_labels: [job], target_label: __tmp_job}
- {target_label: __scheme__, replacement: https}
"#,
    );
    let got = process(&input, &pods, &rules);
    // `__tmp_*` never leaves; `__scheme__` does, as it differs from the default.
    let want = labels(&[
        ("__address__", "10.0.0.1:8080"),
        ("__scheme__", "https"),
        ("job", "pods"),
        ("namespace", "default"),
    ]);
    assert_eq!(got, Target::Keep(want));

    // A job label the target already has is kept.
    let with_job = labels(&[("__address__", "a:1"), ("job", "mine")]);
    assert_eq!(
        process(&with_job, &pods, &[]),
        Target::Keep(labels(&[("__address__", "a:1"), ("job", "mine")]))
    );

    let drop_all = self::rules(r#"[{source_labels: [job], regex: pods, action: drop}]"#);
    assert_eq!(process(&input, &pods, &drop_all), Target::Dropped);
    // An empty input label is absent: the job's seed takes its place.
    let empty_job = labels(&[("__address__", "a:1"), ("job", "")]);
    let Target::Keep(seeded) = process(&empty_job, &pods, &[]) else {
        panic!("kept");
    };
    assert_eq!(seeded.get("job"), Some(pods.job_name.as_str()));
    assert_relabeller_agrees(&empty_job, &[], "empty job label");

    let no_address = self::rules(r#"[{regex: __address__, action: labeldrop}]"#);
    assert_eq!(process(&input, &pods, &no_address), Target::NoAddress);
}

/// One example of `tests/relabel_cases/vmagent-docs.yml`.
#[derive(serde::Deserialize)]
struct VmagentCase {
    name: String,
    rules: Vec<RelabelConfig>,
    labels: std::collections::BTreeMap<String, String>,
    expect: Option<std::collections::BTreeMap<String, String>>,
}

/// vmagent's own actions, `if` and `regex` lists, against the examples of vmagent's
/// relabelling documentation, in the victoriametrics dialect.
#[test]
fn vmagent_documented_examples() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/relabel_cases/vmagent-docs.yml"
    );
    let text = std::fs::read_to_string(path).expect("examples file");
    let cases: Vec<VmagentCase> = serde_norway::from_str(&text).expect("examples parse");
    assert!(cases.len() >= 20, "{} examples", cases.len());
    let options = RuleOptions {
        dialect: Dialect::VictoriaMetrics,
        names: NameValidation::Utf8,
    };
    for case in cases {
        let compiled =
            compile_all_with(&case.rules, options).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let input = Labels::from_pairs(case.labels.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let got = relabel(&input, &compiled).map(|l| {
            l.iter()
                .map(|l| (l.name.to_string(), l.value.to_string()))
                .collect::<std::collections::BTreeMap<_, _>>()
        });
        assert_eq!(got, case.expect, "{}", case.name);
        assert_relabeller_agrees(&input, &compiled, &case.name);
    }
}

/// Where the dialects read the same rule differently, each gets its own meaning.
#[test]
fn dialects_differ_where_documented() {
    let yaml = r#"
- {source_labels: [a], target_label: h, modulus: 1000, action: hashmod}
- {target_label: r, replacement: "{{a}}-x"}
"#;
    let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
    let input = labels(&[("a", "baz")]);
    let run = |dialect| {
        let options = RuleOptions {
            dialect,
            names: NameValidation::Utf8,
        };
        relabel(&input, &compile_all_with(&configs, options).expect("valid")).expect("kept")
    };
    let prom = run(Dialect::Prometheus);
    // Prometheus' own expected value (MD5), and `{{a}}` left as text.
    assert_eq!(prom.get("h"), Some("976"));
    assert_eq!(prom.get("r"), Some("{{a}}-x"));
    let vm = run(Dialect::VictoriaMetrics);
    assert_eq!(
        vm.get("h"),
        Some(
            kubesd::relabel::hash_mod_xxhash("baz", 1000)
                .to_string()
                .as_str()
        )
    );
    assert_eq!(vm.get("r"), Some("baz-x"));
}

/// vmagent's checks of its own actions, naming the field.
#[test]
fn invalid_vmagent_rules_name_the_field() {
    let cases = [
        (
            r#"[{action: keep_if_equal, source_labels: [a]}]"#,
            "relabel_configs[0].source_labels",
        ),
        (
            r#"[{action: keep_if_equal, source_labels: [a, b], regex: x}]"#,
            "relabel_configs[0].regex",
        ),
        (
            r#"[{action: drop_if_contains, source_labels: [a]}]"#,
            "relabel_configs[0].target_label",
        ),
        (
            r#"[{action: replace_all, target_label: a}]"#,
            "relabel_configs[0].source_labels",
        ),
        (r#"[{action: keep_metrics}]"#, "relabel_configs[0].regex"),
        (
            r#"[{action: drop_metrics, regex: a, source_labels: [b]}]"#,
            "relabel_configs[0].source_labels",
        ),
        (
            r#"[{action: graphite, labels: {a: b}}]"#,
            "relabel_configs[0].match",
        ),
        (
            r#"[{action: graphite, match: "a.*"}]"#,
            "relabel_configs[0].labels",
        ),
        (
            r#"[{action: graphite, match: "a.*", labels: {a: b}, target_label: c}]"#,
            "relabel_configs[0].target_label",
        ),
        (
            r#"[{action: replace, target_label: a, match: "a.*"}]"#,
            "relabel_configs[0].match: applies only to action graphite",
        ),
        (
            r#"[{action: keep, if: '{a=~"("}'}]"#,
            "relabel_configs[0].if",
        ),
        (r#"[{action: keep, if: 'a{'}]"#, "relabel_configs[0].if"),
    ];
    for (yaml, want) in cases {
        let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect(yaml);
        let err = compile_all(&configs).expect_err(yaml).to_string();
        assert!(err.contains(want), "{yaml}: {err}");
    }
}

/// The job's scrape settings are seeded before the rules (Prometheus' `PopulateLabels`),
/// so rules read them; afterwards only what a scraper needs is served.
#[test]
fn scrape_settings_are_seeded_and_served_where_they_differ() {
    let mut scrape = ScrapeSettings::new("blackbox");
    scrape.metrics_path = "/probe".into();
    scrape.params = vec![("__param_module".into(), "http_2xx".into())];
    scrape.scrape_interval = "30s".into();
    let rules = rules(
        r#"
- {source_labels: [__metrics_path__], target_label: metrics_path}
- {source_labels: [__scrape_interval__], target_label: interval}
- {source_labels: [__address__], target_label: __param_target}
- {target_label: __address__, replacement: "blackbox:9115"}
- {source_labels: [__scheme__], target_label: __tmp_scheme}
"#,
    );
    let input = labels(&[
        ("__address__", "web:80"),
        ("__meta_kubernetes_service_name", "web"),
    ]);
    let want = labels(&[
        ("__address__", "blackbox:9115"),
        ("__metrics_path__", "/probe"),
        ("__param_module", "http_2xx"),
        ("__param_target", "web:80"),
        ("interval", "30s"),
        ("job", "blackbox"),
        ("metrics_path", "/probe"),
    ]);
    assert_eq!(process(&input, &scrape, &rules), Target::Keep(want));

    // A rule that changes the interval or the scheme is served; the defaults are not.
    let changed = self::rules(
        r#"
- {target_label: __scrape_interval__, replacement: 5m}
- {target_label: __scheme__, replacement: https}
"#,
    );
    let plain = ScrapeSettings::new("p");
    let got = process(&labels(&[("__address__", "a:1")]), &plain, &changed);
    let want = labels(&[
        ("__address__", "a:1"),
        ("__scheme__", "https"),
        ("__scrape_interval__", "5m"),
        ("job", "p"),
    ]);
    assert_eq!(got, Target::Keep(want));
    // A target's own `__metrics_path__` wins over the job's.
    let own = labels(&[("__address__", "a:1"), ("__metrics_path__", "/custom")]);
    let got = process(&own, &scrape, &[]);
    let Target::Keep(got) = got else {
        panic!("kept")
    };
    assert_eq!(got.get("__metrics_path__"), Some("/custom"));
}
