//! One `relabel_configs` entry: as written ([`RelabelConfig`]), checked the way
//! Prometheus checks it, and compiled for use ([`CompiledRule`]).

use arcstr::ArcStr;
use std::fmt;

use regex::Regex;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::dialect::Dialect;
use super::graphite::GraphiteMatch;
use super::names::NameValidation;
use super::selector::SeriesSelector;

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Sets `target_label` to the expanded `replacement` if `regex` matches.
    Replace,
    /// Drops the target unless `regex` matches.
    Keep,
    /// Drops the target if `regex` matches.
    Drop,
    /// Drops the target unless the source value equals `target_label`'s value.
    KeepEqual,
    /// Drops the target if the source value equals `target_label`'s value.
    DropEqual,
    /// Sets `target_label` to a hash of the source value, modulo `modulus`.
    HashMod,
    /// Copies every label whose name matches `regex` to the name `replacement` expands to.
    LabelMap,
    /// Removes every label whose name matches `regex`.
    LabelDrop,
    /// Removes every label whose name does not match `regex`.
    LabelKeep,
    /// Sets `target_label` to the source value in lower case.
    Lowercase,
    /// Sets `target_label` to the source value in upper case.
    Uppercase,
    /// vmagent: keeps the target only if all `source_labels` have the same value.
    KeepIfEqual,
    /// vmagent: drops the target if all `source_labels` have the same value.
    DropIfEqual,
    /// vmagent: keeps the target only if `target_label`'s value contains each source
    /// label's value.
    KeepIfContains,
    /// vmagent: drops the target if `target_label`'s value contains each source label's
    /// value.
    DropIfContains,
    /// vmagent: `keep` on `__name__`. A discovered target has no `__name__`, so this keeps
    /// a target only if `regex` matches the empty string (a warning says so at load).
    KeepMetrics,
    /// vmagent: `drop` on `__name__`. A discovered target has no `__name__`, so this
    /// drops a target only if `regex` matches the empty string.
    DropMetrics,
    /// vmagent: renames every label by replacing each match of `regex` (unanchored) in
    /// its name with `replacement`.
    LabelMapAll,
    /// vmagent: writes the source value with each match of `regex` (unanchored)
    /// replaced by `replacement` to `target_label`.
    ReplaceAll,
    /// vmagent: sets `labels` from a glob `match` on `__name__`; as for `keep_metrics`,
    /// a discovered target has no `__name__`.
    Graphite,
}

impl Action {
    /// Every action, for parsing and error messages.
    const ALL: [Action; 20] = [
        Action::Replace,
        Action::Keep,
        Action::Drop,
        Action::KeepEqual,
        Action::DropEqual,
        Action::HashMod,
        Action::LabelMap,
        Action::LabelDrop,
        Action::LabelKeep,
        Action::Lowercase,
        Action::Uppercase,
        Action::KeepIfEqual,
        Action::DropIfEqual,
        Action::KeepIfContains,
        Action::DropIfContains,
        Action::KeepMetrics,
        Action::DropMetrics,
        Action::LabelMapAll,
        Action::ReplaceAll,
        Action::Graphite,
    ];

    /// The action's name as configs spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Replace => "replace",
            Action::Keep => "keep",
            Action::Drop => "drop",
            Action::KeepEqual => "keepequal",
            Action::DropEqual => "dropequal",
            Action::HashMod => "hashmod",
            Action::LabelMap => "labelmap",
            Action::LabelDrop => "labeldrop",
            Action::LabelKeep => "labelkeep",
            Action::Lowercase => "lowercase",
            Action::Uppercase => "uppercase",
            Action::KeepIfEqual => "keep_if_equal",
            Action::DropIfEqual => "drop_if_equal",
            Action::KeepIfContains => "keep_if_contains",
            Action::DropIfContains => "drop_if_contains",
            Action::KeepMetrics => "keep_metrics",
            Action::DropMetrics => "drop_metrics",
            Action::LabelMapAll => "labelmap_all",
            Action::ReplaceAll => "replace_all",
            Action::Graphite => "graphite",
        }
    }

    /// The action called `name`, in any case (Prometheus lower-cases it first).
    pub fn parse(name: &str) -> Option<Action> {
        let lower = name.to_lowercase();
        Action::ALL.into_iter().find(|a| a.as_str() == lower)
    }

    /// True for the actions that write `target_label` and so require it.
    fn needs_target(self) -> bool {
        matches!(
            self,
            Action::Replace
                | Action::HashMod
                | Action::Lowercase
                | Action::Uppercase
                | Action::KeepEqual
                | Action::DropEqual
                | Action::KeepIfContains
                | Action::DropIfContains
                | Action::ReplaceAll
        )
    }

    /// True for the actions only vmagent has.
    pub fn is_vmagent_only(self) -> bool {
        matches!(
            self,
            Action::KeepIfEqual
                | Action::DropIfEqual
                | Action::KeepIfContains
                | Action::DropIfContains
                | Action::KeepMetrics
                | Action::DropMetrics
                | Action::LabelMapAll
                | Action::ReplaceAll
                | Action::Graphite
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Action {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Action {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        Action::parse(&name)
            .ok_or_else(|| de::Error::custom(format!("unknown relabel action {name:?}")))
    }
}

/// The default `separator`.
pub const DEFAULT_SEPARATOR: &str = ";";
/// The default `regex`.
pub const DEFAULT_REGEX: &str = "(.*)";
/// The default `replacement`.
pub const DEFAULT_REPLACEMENT: &str = "$1";

/// One `relabel_configs` entry as written. Unset fields take Prometheus' defaults when
/// compiled; `regex` and `source_labels` stay optional because Prometheus' checks tell
/// "unset" from "set to the default".
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelabelConfig {
    /// Labels whose values are joined with `separator` into the source value.
    #[serde(default)]
    pub source_labels: Option<Vec<String>>,
    /// Placed between the source labels' values (default `;`).
    #[serde(default, deserialize_with = "scalar_string")]
    pub separator: Option<String>,
    /// Matched against the source value, fully anchored (default `(.*)`). vmagent's
    /// list form (`regex: [a, b]`) is read as the alternatives joined with `|`.
    #[serde(default, deserialize_with = "regex_string")]
    pub regex: Option<String>,
    /// For `hashmod`: the modulus.
    #[serde(default)]
    pub modulus: Option<u64>,
    /// The label the action writes or compares with.
    #[serde(default, deserialize_with = "scalar_string")]
    pub target_label: Option<String>,
    /// What `replace` writes and the name `labelmap` copies to (default `$1`).
    #[serde(default, deserialize_with = "scalar_string")]
    pub replacement: Option<String>,
    /// The action (default `replace`).
    #[serde(default)]
    pub action: Option<Action>,
    /// vmagent's `if`: series selectors (one, or a list meaning any of them); the rule
    /// applies only to targets they match (`keep` drops the others).
    #[serde(default, rename = "if", deserialize_with = "one_or_many")]
    pub if_selectors: Option<Vec<String>>,
    /// vmagent's `match`, for `action: graphite`.
    #[serde(default, rename = "match")]
    pub graphite_match: Option<String>,
    /// vmagent's `labels`, for `action: graphite`: label name to template.
    #[serde(default)]
    pub labels: Option<std::collections::BTreeMap<String, String>>,
}

/// A string, or a list of strings (vmagent's `if`).
fn one_or_many<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(Some(match OneOrMany::deserialize(d) {
        Ok(OneOrMany::One(s)) => vec![s],
        Ok(OneOrMany::Many(v)) => v,
        Err(_) => {
            return Err(de::Error::custom(
                "expected a series selector or a list of them",
            ));
        }
    }))
}

/// `regex`: a scalar as [`scalar_string`] reads it, or vmagent's list of alternatives,
/// joined with `|`.
fn regex_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ScalarOrList {
        #[serde(deserialize_with = "scalar_string")]
        Scalar(Option<String>),
        List(Vec<Scalar>),
    }
    #[derive(Deserialize)]
    struct Scalar(#[serde(deserialize_with = "scalar_string")] Option<String>);
    match ScalarOrList::deserialize(d) {
        Ok(ScalarOrList::Scalar(s)) => Ok(s),
        Ok(ScalarOrList::List(items)) => Ok(Some(
            items
                .into_iter()
                .map(|Scalar(s)| s.unwrap_or_default())
                .collect::<Vec<_>>()
                .join("|"),
        )),
        Err(_) => Err(de::Error::custom("expected a string or a list of strings")),
    }
}

/// A string field that, as in Prometheus (Go's YAML decoder), also takes a number or a
/// boolean as its text (`replacement: 9100`), and null as empty.
fn scalar_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct ScalarVisitor;
    impl Visitor<'_> for ScalarVisitor {
        type Value = Option<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Some(String::new()))
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Some(String::new()))
        }
    }
    d.deserialize_any(ScalarVisitor)
}

/// A rule Prometheus would refuse, naming its position and field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("relabel_configs[{index}].{field}: {problem}")]
pub struct RelabelError {
    /// The rule's position in `relabel_configs`.
    pub index: usize,
    /// The field at fault.
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
}

/// A checked rule, ready to apply: defaults filled in, the regex compiled.
#[derive(Clone, Debug)]
pub struct CompiledRule {
    /// Labels whose values make the source value.
    pub(super) source_labels: Vec<ArcStr>,
    /// Joins the source values.
    pub(super) separator: String,
    /// The anchored regex.
    pub(super) regex: Regex,
    /// The regex unanchored, for `replace_all` and `labelmap_all`, which replace every
    /// match.
    pub(super) unanchored: Option<Regex>,
    /// For `hashmod`.
    pub(super) modulus: u64,
    /// The label written or compared with; may hold `$` references for `replace`.
    pub(super) target_label: String,
    /// The replacement template.
    pub(super) replacement: String,
    /// The action (`keep_metrics` and `drop_metrics` compiled to `keep` and `drop` on
    /// `__name__`, as vmagent does).
    pub(super) action: Action,
    /// vmagent's `if`: the rule applies only to targets this matches.
    pub(super) if_selector: Option<SeriesSelector>,
    /// For `graphite`: the match template and the labels it sets.
    pub(super) graphite: Option<GraphiteRule>,
    /// Whose rules the config follows, where Prometheus and vmagent differ.
    pub(super) dialect: Dialect,
    /// Which names the rule may write.
    pub(super) names: NameValidation,
    /// A `replace` that copies its one source label's value as it is (regex `(.*)`,
    /// replacement `$1`) to this fixed target label.
    pub(super) copy_to: Option<ArcStr>,
}

/// How a rule is read and checked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleOptions {
    /// Whose meaning to follow where Prometheus and vmagent differ.
    pub dialect: Dialect,
    /// The job's `metric_name_validation_scheme`.
    pub names: NameValidation,
}

impl CompiledRule {
    /// The rule's action.
    pub fn action(&self) -> Action {
        self.action
    }

    /// True if what this rule does can depend on the *value* of label `name`: it reads
    /// it as a source, compares with it (`keepequal`, `dropequal`, `keep_if_contains`,
    /// `drop_if_contains`), or copies it under
    /// a new name (`labelmap`). Writing or deleting the label does not count. Rules
    /// that never read `job` give the same targets for every job name but in their
    /// `job` label, which lets jobs that differ only in name share their work.
    /// Conservative: a rule with vmagent's `if`, a `graphite` rule or a `{{label}}`
    /// template is taken to read every label.
    pub fn reads_label(&self, name: &str) -> bool {
        let matches_anywhere = |r: &Regex| r.is_match(name);
        self.if_selector.is_some()
            || self.graphite.is_some()
            || self.replacement.contains("{{")
            || self.source_labels.iter().any(|s| s.as_str() == name)
            || (matches!(
                self.action,
                Action::KeepEqual
                    | Action::DropEqual
                    | Action::KeepIfEqual
                    | Action::DropIfEqual
                    | Action::KeepIfContains
                    | Action::DropIfContains
            ) && self.target_label == name)
            || (self.action == Action::LabelMap && self.regex.is_match(name))
            || (self.action == Action::LabelMapAll
                && self.unanchored.as_ref().is_none_or(matches_anywhere))
    }
}

/// Compiles `rules` in order, in Prometheus' dialect with its legacy name checks (the
/// strictest); the first invalid one is the error.
pub fn compile_all(rules: &[RelabelConfig]) -> Result<Vec<CompiledRule>, RelabelError> {
    compile_all_with(
        rules,
        RuleOptions {
            dialect: Dialect::Prometheus,
            names: NameValidation::Legacy,
        },
    )
}

/// Compiles `rules` in order, as `options` say; the first invalid one is the error.
pub fn compile_all_with(
    rules: &[RelabelConfig],
    options: RuleOptions,
) -> Result<Vec<CompiledRule>, RelabelError> {
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| r.compile_with(i, options))
        .collect()
}

impl RelabelConfig {
    /// `separator`, or its default.
    fn separator_or_default(&self) -> &str {
        self.separator.as_deref().unwrap_or(DEFAULT_SEPARATOR)
    }

    /// `replacement`, or its default.
    fn replacement_or_default(&self) -> &str {
        self.replacement.as_deref().unwrap_or(DEFAULT_REPLACEMENT)
    }

    /// `target_label`, or `""` when not set.
    fn target_or_empty(&self) -> &str {
        self.target_label.as_deref().unwrap_or("")
    }

    /// `source_labels`, or none when not set.
    fn sources_or_empty(&self) -> &[String] {
        self.source_labels.as_deref().unwrap_or(&[])
    }

    /// The rule as Prometheus shows it in JSON (`relabel_steps`' `rule`): the fields of
    /// [`RelabelConfig::prometheus_fields`], and `regex` always (its default when not
    /// written: Go's JSON encoder writes a struct even when empty).
    pub fn prometheus_json(&self) -> serde_json::Value {
        let mut rule = serde_json::Map::new();
        for (name, value) in self.prometheus_fields() {
            rule.insert(name.into(), value);
        }
        rule.entry("regex").or_insert_with(|| DEFAULT_REGEX.into());
        serde_json::Value::Object(rule)
    }

    /// The rule's fields as Prometheus writes them back, in its order: `separator`,
    /// `replacement` and `action` filled in with their defaults; `source_labels`,
    /// `separator`, `modulus`, `target_label` and `replacement` left out when empty;
    /// `regex` only when written (Prometheus' YAML encoder leaves the default one out);
    /// vmagent's `if`, `match` and `labels` when written.
    pub fn prometheus_fields(&self) -> Vec<(&'static str, serde_json::Value)> {
        let mut fields: Vec<(&'static str, serde_json::Value)> = Vec::new();
        if !self.sources_or_empty().is_empty() {
            fields.push(("source_labels", self.sources_or_empty().into()));
        }
        let separator = self.separator_or_default();
        if !separator.is_empty() {
            fields.push(("separator", separator.into()));
        }
        if let Some(regex) = &self.regex {
            fields.push(("regex", regex.as_str().into()));
        }
        if let Some(modulus) = self.modulus.filter(|m| *m != 0) {
            fields.push(("modulus", modulus.into()));
        }
        if !self.target_or_empty().is_empty() {
            fields.push(("target_label", self.target_or_empty().into()));
        }
        let replacement = self.replacement_or_default();
        if !replacement.is_empty() {
            fields.push(("replacement", replacement.into()));
        }
        let action = self.action.unwrap_or(Action::Replace);
        fields.push(("action", action.as_str().into()));
        if let Some(selectors) = &self.if_selectors {
            fields.push(("if", selectors.clone().into()));
        }
        if let Some(glob) = &self.graphite_match {
            fields.push(("match", glob.clone().into()));
        }
        if let Some(labels) = &self.labels {
            let labels = labels.iter().map(|(k, v)| (k.clone(), v.clone().into()));
            fields.push(("labels", serde_json::Map::from_iter(labels).into()));
        }
        fields
    }

    /// [`RelabelConfig::compile_with`] in Prometheus' dialect with its legacy name
    /// checks.
    pub fn compile(&self, index: usize) -> Result<CompiledRule, RelabelError> {
        self.compile_with(
            index,
            RuleOptions {
                dialect: Dialect::Prometheus,
                names: NameValidation::Legacy,
            },
        )
    }

    /// Checks this rule as Prometheus does (`relabel.Config.Validate` plus the label-name
    /// checks of its YAML decoding), or for vmagent's own actions as vmagent does, and
    /// compiles it. `index` is its position in `relabel_configs`, for the error.
    pub fn compile_with(
        &self,
        index: usize,
        options: RuleOptions,
    ) -> Result<CompiledRule, RelabelError> {
        let RuleOptions { dialect, names } = options;
        let err = |field: &'static str, problem: String| RelabelError {
            index,
            field,
            problem,
        };
        let action = self.action.unwrap_or(Action::Replace);
        let separator = self.separator_or_default();
        let replacement = self.replacement_or_default();
        let target = self.target_or_empty();
        let modulus = self.modulus.unwrap_or(0);
        let pattern = self.regex.as_deref().unwrap_or(DEFAULT_REGEX);

        let source_labels = self
            .source_label_names()
            .map_err(|p| err("source_labels", p))?;
        let (regex, unanchored) = compile_regex(pattern, action).map_err(|p| err("regex", p))?;
        let if_selector = match &self.if_selectors {
            Some(list) => Some(SeriesSelector::parse_all(list).map_err(|e| err("if", e))?),
            None => None,
        };

        if action.is_vmagent_only() {
            check_vmagent_action(self, action, names)
                .map_err(|(field, problem)| err(field, problem))?;
        } else {
            check_prometheus_action(self, action, names)
                .map_err(|(field, problem)| err(field, problem))?;
        }
        let graphite = self
            .graphite(action)
            .map_err(|(field, problem)| err(field, problem))?;
        // vmagent compiles these to keep and drop on the metric name.
        let (action, source_labels) = match action {
            Action::KeepMetrics => (Action::Keep, vec![arcstr::literal!("__name__")]),
            Action::DropMetrics => (Action::Drop, vec![arcstr::literal!("__name__")]),
            other => (other, source_labels),
        };
        let copy_to = (action == Action::Replace
            && pattern == DEFAULT_REGEX
            && replacement == DEFAULT_REPLACEMENT
            && source_labels.len() == 1
            && !target.contains('$')
            && names.is_valid(target))
        .then(|| ArcStr::from(target));
        Ok(CompiledRule {
            source_labels,
            separator: separator.to_string(),
            regex,
            unanchored,
            modulus,
            target_label: target.to_string(),
            replacement: replacement.to_string(),
            action,
            if_selector,
            graphite,
            dialect,
            names,
            copy_to,
        })
    }

    /// `source_labels` as shared names. Reading any name is harmless (an absent label
    /// reads as empty), so unlike written names these are not held to the classic
    /// rule; only an empty one is refused.
    fn source_label_names(&self) -> Result<Vec<ArcStr>, String> {
        let mut names = Vec::new();
        for (i, name) in self.source_labels.iter().flatten().enumerate() {
            if name.is_empty() {
                return Err(format!("[{i}] is empty"));
            }
            names.push(ArcStr::from(name.as_str()));
        }
        Ok(names)
    }

    /// `match` and `labels`, which only action `graphite` takes (both or neither).
    fn graphite(&self, action: Action) -> Result<Option<GraphiteRule>, FieldProblem> {
        if action != Action::Graphite && (self.graphite_match.is_some() || self.labels.is_some()) {
            let field = if self.graphite_match.is_some() {
                "match"
            } else {
                "labels"
            };
            return Err((
                field,
                format!("applies only to action graphite, not to {action}"),
            ));
        }
        Ok(match (&self.graphite_match, &self.labels) {
            (Some(m), Some(labels)) => Some((
                GraphiteMatch::new(m),
                labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            )),
            _ => None,
        })
    }
}

/// The rule's regex as Prometheus compiles it, anchored and with `.` matching newlines
/// (`^(?s:regex)$`), and unanchored too for the actions that find every match.
fn compile_regex(pattern: &str, action: Action) -> Result<(Regex, Option<Regex>), String> {
    let compile = |source: String| {
        Regex::new(&source).map_err(|e| format!("{pattern:?} does not compile: {e}"))
    };
    let regex = compile(format!("^(?s:{pattern})$"))?;
    let unanchored = if matches!(action, Action::ReplaceAll | Action::LabelMapAll) {
        Some(compile(format!("(?s:{pattern})"))?)
    } else {
        None
    };
    Ok((regex, unanchored))
}

/// A `graphite` rule's match template and the labels it sets.
type GraphiteRule = (GraphiteMatch, Vec<(String, String)>);

/// A rule's field at fault and what is wrong with it.
type FieldProblem = (&'static str, String);

/// Prometheus' checks of a rule with one of its own actions.
fn check_prometheus_action(
    rule: &RelabelConfig,
    action: Action,
    names: NameValidation,
) -> Result<(), FieldProblem> {
    if action == Action::HashMod && rule.modulus.unwrap_or(0) == 0 {
        return Err((
            "modulus",
            "hashmod requires a modulus greater than 0".into(),
        ));
    }
    check_prometheus_target(action, rule.target_or_empty(), names)?;
    check_prometheus_replacement(action, rule.replacement_or_default(), names)?;
    check_prometheus_unused_fields(rule, action)
}

/// Prometheus' checks of a rule's `target_label`: present where the action writes one,
/// and a valid label name (or, for `replace`, a valid template).
fn check_prometheus_target(
    action: Action,
    target: &str,
    names: NameValidation,
) -> Result<(), FieldProblem> {
    if action.needs_target() && target.is_empty() {
        return Err((
            "target_label",
            format!("the {action} action requires target_label"),
        ));
    }
    let target_ok = match action {
        // Only `replace` may compute its target from the match.
        Action::Replace if target.contains('$') => names.is_valid_template(target),
        _ if action.needs_target() => names.is_valid(target),
        _ => true,
    };
    if !target_ok {
        return Err((
            "target_label",
            format!("{target:?} is invalid for the {action} action"),
        ));
    }
    Ok(())
}

/// Prometheus' checks of a rule's `replacement`: left alone by the actions that do not
/// use it, a valid template for `labelmap`.
fn check_prometheus_replacement(
    action: Action,
    replacement: &str,
    names: NameValidation,
) -> Result<(), FieldProblem> {
    if matches!(
        action,
        Action::Lowercase | Action::Uppercase | Action::KeepEqual | Action::DropEqual
    ) && replacement != DEFAULT_REPLACEMENT
    {
        return Err((
            "replacement",
            format!("cannot be set for the {action} action"),
        ));
    }
    if action == Action::LabelMap && !names.is_valid_template(replacement) {
        return Err((
            "replacement",
            format!("{replacement:?} is invalid for the labelmap action"),
        ));
    }
    Ok(())
}

/// Prometheus' checks that the actions taking only some fields have no other set.
fn check_prometheus_unused_fields(
    rule: &RelabelConfig,
    action: Action,
) -> Result<(), FieldProblem> {
    let separator = rule.separator_or_default();
    let replacement = rule.replacement_or_default();
    let target = rule.target_or_empty();
    let modulus = rule.modulus.unwrap_or(0);
    if matches!(action, Action::KeepEqual | Action::DropEqual) {
        // Prometheus: "requires only 'source_labels' and 'target_label'". Any regex
        // set, even `(.*)`, counts, as it does there.
        let extra = [
            (rule.regex.is_some(), "regex"),
            (modulus != 0, "modulus"),
            (separator != DEFAULT_SEPARATOR, "separator"),
            (replacement != DEFAULT_REPLACEMENT, "replacement"),
        ];
        if let Some((_, field)) = extra.iter().find(|(set, _)| *set) {
            return Err((
                field,
                format!("the {action} action takes only source_labels and target_label"),
            ));
        }
    }
    if matches!(action, Action::LabelDrop | Action::LabelKeep) {
        let extra = [
            (rule.source_labels.is_some(), "source_labels"),
            (!target.is_empty(), "target_label"),
            (modulus != 0, "modulus"),
            (separator != DEFAULT_SEPARATOR, "separator"),
            (replacement != DEFAULT_REPLACEMENT, "replacement"),
        ];
        if let Some((_, field)) = extra.iter().find(|(set, _)| *set) {
            return Err((field, format!("the {action} action takes only regex")));
        }
    }
    Ok(())
}

/// A problem of `field` for `action`: "`what` for the ACTION action".
fn action_problem(field: &'static str, what: &str, action: Action) -> FieldProblem {
    (field, format!("{what} for the {action} action"))
}

/// vmagent's checks of a rule with one of its own actions (`parseRelabelConfig`), plus
/// the label-name check kubesd makes of every name a rule writes.
fn check_vmagent_action(
    rule: &RelabelConfig,
    action: Action,
    names: NameValidation,
) -> Result<(), FieldProblem> {
    let sources = rule.sources_or_empty();
    let target = rule.target_or_empty();
    let fail = |field, what| Err(action_problem(field, what, action));
    match action {
        Action::KeepIfEqual | Action::DropIfEqual => {
            if sources.len() < 2 {
                return fail("source_labels", "at least two are required");
            }
            if !target.is_empty() {
                return fail("target_label", "cannot be set");
            }
            if rule.regex.is_some() {
                return fail("regex", "cannot be set");
            }
        }
        Action::KeepIfContains | Action::DropIfContains => {
            if target.is_empty() {
                return fail("target_label", "is required");
            }
            if sources.is_empty() {
                return fail("source_labels", "at least one is required");
            }
            if rule.regex.is_some() {
                return fail("regex", "cannot be set");
            }
        }
        Action::KeepMetrics | Action::DropMetrics => {
            if rule.regex.as_deref().unwrap_or("").is_empty() && rule.if_selectors.is_none() {
                return fail("regex", "a non-empty regex is required");
            }
            if !sources.is_empty() {
                return fail("source_labels", "cannot be set (it reads __name__)");
            }
        }
        Action::ReplaceAll => {
            if sources.is_empty() {
                return fail("source_labels", "at least one is required");
            }
            if !names.is_valid(target) {
                return Err((
                    "target_label",
                    format!("{target:?} is invalid for the {action} action"),
                ));
            }
        }
        Action::LabelMapAll => {}
        Action::Graphite => check_vmagent_graphite(rule, action, names)?,
        _ => {}
    }
    Ok(())
}

/// vmagent's checks of a `graphite` rule: a match template and labels to set, nothing
/// else.
fn check_vmagent_graphite(
    rule: &RelabelConfig,
    action: Action,
    names: NameValidation,
) -> Result<(), FieldProblem> {
    let sources = rule.sources_or_empty();
    let target = rule.target_or_empty();
    let fail = |field, what| Err(action_problem(field, what, action));
    if rule.graphite_match.as_deref().unwrap_or("").is_empty() {
        return fail("match", "is required");
    }
    let labels = rule.labels.as_ref().filter(|l| !l.is_empty());
    let Some(labels) = labels else {
        return fail("labels", "at least one is required");
    };
    if let Some(bad) = labels.keys().find(|k| !names.is_valid(k)) {
        return Err(("labels", format!("{bad:?} is not a valid label name")));
    }
    let extra = [
        (!sources.is_empty(), "source_labels"),
        (!target.is_empty(), "target_label"),
        (rule.replacement.is_some(), "replacement"),
        (rule.regex.is_some(), "regex"),
    ];
    if let Some((_, field)) = extra.iter().find(|(set, _)| *set) {
        return fail(field, "cannot be set");
    }
    Ok(())
}
