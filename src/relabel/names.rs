//! Which label names relabelling may write, under Prometheus' two validation schemes.
//!
//! Prometheus 3 checks names as UTF-8 by default (`metric_name_validation_scheme:
//! utf8`): any non-empty name, such as prometheus-operator's `ns-key`. The `legacy`
//! scheme is the classic `[a-zA-Z_][a-zA-Z0-9_]*`. kubesd follows the job's scheme, and
//! the loader warns about a rule that writes a name outside the classic set, because
//! programs before Prometheus 3 reject a whole target list for one such name.

use std::sync::LazyLock;

use regex::Regex;

/// How label names are checked: Prometheus' `metric_name_validation_scheme`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NameValidation {
    /// `utf8`, Prometheus 3's default: any non-empty name.
    #[default]
    Utf8,
    /// `legacy`: `[a-zA-Z_][a-zA-Z0-9_]*`, and templates that can only expand to one.
    Legacy,
}

impl NameValidation {
    /// True if `name` is a label name under this scheme.
    pub fn is_valid(self, name: &str) -> bool {
        match self {
            NameValidation::Utf8 => !name.is_empty(),
            NameValidation::Legacy => is_valid_label_name(name),
        }
    }

    /// True if `template` (holding `$` references) may name a label under this scheme.
    pub fn is_valid_template(self, template: &str) -> bool {
        match self {
            NameValidation::Utf8 => !template.is_empty(),
            NameValidation::Legacy => is_valid_name_template(template),
        }
    }
}

/// True if `name` is a classic label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
pub fn is_valid_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True if `template` can only expand to a label name: label-name characters and `$1`,
/// `${1}`, `$name`, `${name}` references, not starting with a digit. Prometheus' check
/// for a `replace` `target_label` and a `labelmap` `replacement` that contain `$`.
pub fn is_valid_name_template(template: &str) -> bool {
    // Prometheus' own pattern, with Go's ASCII-only `\w` spelled out (the regex crate's
    // `\w` is Unicode).
    static TEMPLATE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"^(?:(?:[a-zA-Z_]|\$(?:\{[0-9A-Za-z_]+\}|[0-9A-Za-z_]+))+[0-9A-Za-z_]*)+$")
            .expect("a constant pattern compiles")
    });
    TEMPLATE.is_match(template)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_names() {
        for ok in ["a", "_", "__address__", "foo_Bar9"] {
            assert!(is_valid_label_name(ok), "{ok}");
        }
        for bad in ["", "9a", "a-b", "a.b", "ä", "a b"] {
            assert!(!is_valid_label_name(bad), "{bad}");
        }
    }

    /// Prometheus' `TestTargetLabelValidity` cases.
    #[test]
    fn name_templates() {
        let cases = [
            ("-label", false),
            ("label", true),
            ("label${1}", true),
            ("${1}label", true),
            ("${1}", true),
            ("${", false),
            ("$", false),
            ("${}", false),
            ("foo${", false),
            ("$1", true),
            ("asd$2asd", true),
            ("-foo${1}bar-", false),
            ("_${1}_", true),
            ("foo${bar}foo", true),
        ];
        for (template, valid) in cases {
            assert_eq!(is_valid_name_template(template), valid, "{template}");
        }
    }
}
