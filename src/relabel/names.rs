//! Which label names relabelling may write.
//!
//! kubesd uses Prometheus' classic rule, `[a-zA-Z_][a-zA-Z0-9_]*`, not Prometheus 3's
//! UTF-8 names: kubesd's output is read by other programs (Prometheus 2, agents) that
//! reject a whole target list for one name outside the classic set, so a rule that could
//! write one is better refused at load time.

use std::sync::LazyLock;

use regex::Regex;

/// True if `name` is a valid label name: `[a-zA-Z_][a-zA-Z0-9_]*`.
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
