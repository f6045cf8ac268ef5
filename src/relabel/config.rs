//! One `relabel_configs` entry: as written ([`RelabelConfig`]), checked the way
//! Prometheus checks it, and compiled for use ([`CompiledRule`]).

use arcstr::ArcStr;
use std::fmt;

use regex::Regex;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize};

use super::names::{is_valid_label_name, is_valid_name_template};

/// What a rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
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
}

impl Action {
    /// Every action, for parsing and error messages.
    const ALL: [Action; 11] = [
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
        )
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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
    /// Matched against the source value, fully anchored (default `(.*)`).
    #[serde(default, deserialize_with = "scalar_string")]
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
    /// For `hashmod`.
    pub(super) modulus: u64,
    /// The label written or compared with; may hold `$` references for `replace`.
    pub(super) target_label: String,
    /// The replacement template.
    pub(super) replacement: String,
    /// The action.
    pub(super) action: Action,
}

impl CompiledRule {
    /// The rule's action.
    pub fn action(&self) -> Action {
        self.action
    }

    /// True if what this rule does can depend on the *value* of label `name`: it reads
    /// it as a source, compares with it (`keepequal`, `dropequal`), or copies it under
    /// a new name (`labelmap`). Writing or deleting the label does not count. Rules
    /// that never read `job` give the same targets for every job name but in their
    /// `job` label, which lets jobs that differ only in name share their work.
    pub fn reads_label(&self, name: &str) -> bool {
        self.source_labels.iter().any(|s| s.as_str() == name)
            || (matches!(self.action, Action::KeepEqual | Action::DropEqual)
                && self.target_label == name)
            || (self.action == Action::LabelMap && self.regex.is_match(name))
    }
}

/// Compiles `rules` in order; the first invalid one is the error.
pub fn compile_all(rules: &[RelabelConfig]) -> Result<Vec<CompiledRule>, RelabelError> {
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| r.compile(i))
        .collect()
}

impl RelabelConfig {
    /// Checks this rule as Prometheus does (`relabel.Config.Validate` plus the label-name
    /// checks of its YAML decoding) and compiles it. `index` is its position in
    /// `relabel_configs`, for the error.
    pub fn compile(&self, index: usize) -> Result<CompiledRule, RelabelError> {
        let err = |field: &'static str, problem: String| RelabelError {
            index,
            field,
            problem,
        };
        let action = self.action.unwrap_or(Action::Replace);
        let separator = self.separator.as_deref().unwrap_or(DEFAULT_SEPARATOR);
        let replacement = self.replacement.as_deref().unwrap_or(DEFAULT_REPLACEMENT);
        let target = self.target_label.as_deref().unwrap_or("");
        let modulus = self.modulus.unwrap_or(0);
        let pattern = self.regex.as_deref().unwrap_or(DEFAULT_REGEX);

        let mut source_labels = Vec::new();
        for (i, name) in self.source_labels.iter().flatten().enumerate() {
            // Reading any name is harmless (an absent label reads as empty), so unlike
            // written names these are not held to the classic rule; only empty is refused.
            if name.is_empty() {
                return Err(err("source_labels", format!("[{i}] is empty")));
            }
            source_labels.push(ArcStr::from(name.as_str()));
        }
        // Prometheus anchors the regex and lets `.` match newlines: `^(?s:regex)$`.
        let regex = Regex::new(&format!("^(?s:{pattern})$"))
            .map_err(|e| err("regex", format!("{pattern:?} does not compile: {e}")))?;

        if action == Action::HashMod && modulus == 0 {
            return Err(err(
                "modulus",
                "hashmod requires a modulus greater than 0".into(),
            ));
        }
        if action.needs_target() && target.is_empty() {
            return Err(err(
                "target_label",
                format!("the {action} action requires target_label"),
            ));
        }
        let target_ok = match action {
            // Only `replace` may compute its target from the match.
            Action::Replace if target.contains('$') => is_valid_name_template(target),
            _ if action.needs_target() => is_valid_label_name(target),
            _ => true,
        };
        if !target_ok {
            return Err(err(
                "target_label",
                format!("{target:?} is invalid for the {action} action"),
            ));
        }
        if matches!(
            action,
            Action::Lowercase | Action::Uppercase | Action::KeepEqual | Action::DropEqual
        ) && replacement != DEFAULT_REPLACEMENT
        {
            return Err(err(
                "replacement",
                format!("cannot be set for the {action} action"),
            ));
        }
        if action == Action::LabelMap && !is_valid_name_template(replacement) {
            return Err(err(
                "replacement",
                format!("{replacement:?} is invalid for the labelmap action"),
            ));
        }
        if matches!(action, Action::KeepEqual | Action::DropEqual) {
            // Prometheus: "requires only 'source_labels' and 'target_label'". Any regex
            // set, even `(.*)`, counts, as it does there.
            let extra = [
                (self.regex.is_some(), "regex"),
                (modulus != 0, "modulus"),
                (separator != DEFAULT_SEPARATOR, "separator"),
                (replacement != DEFAULT_REPLACEMENT, "replacement"),
            ];
            if let Some((_, field)) = extra.iter().find(|(set, _)| *set) {
                return Err(err(
                    field,
                    format!("the {action} action takes only source_labels and target_label"),
                ));
            }
        }
        if matches!(action, Action::LabelDrop | Action::LabelKeep) {
            let extra = [
                (self.source_labels.is_some(), "source_labels"),
                (!target.is_empty(), "target_label"),
                (modulus != 0, "modulus"),
                (separator != DEFAULT_SEPARATOR, "separator"),
                (replacement != DEFAULT_REPLACEMENT, "replacement"),
            ];
            if let Some((_, field)) = extra.iter().find(|(set, _)| *set) {
                return Err(err(field, format!("the {action} action takes only regex")));
            }
        }
        Ok(CompiledRule {
            source_labels,
            separator: separator.to_string(),
            regex,
            modulus,
            target_label: target.to_string(),
            replacement: replacement.to_string(),
            action,
        })
    }
}
