//! Environment placeholders in the config text, expanded before it is parsed, as the
//! programs that write them expect:
//!
//! - `%{VAR}`: vmagent expands these everywhere in its config file (`lib/envtemplate`);
//!   one whose variable is unset stays as written. kubesd does the same in the
//!   `victoriametrics` dialect; in the `prometheus` dialect, where the text means itself,
//!   they stay and a warning names them.
//! - `$(VAR)`: prometheus-operator's config reloader expands these (`$(SHARD)`,
//!   `$(POD_NAME)`, `$(NODE_NAME)`) before Prometheus reads the file. kubesd does so when
//!   asked (`--config.expand-reloader-vars`); a placeholder left in the text, because
//!   the option is off or its variable unset, is named in a warning: in a regex or
//!   selector it would silently match nothing it was meant to.

use std::collections::BTreeSet;

/// The text with placeholders expanded, and one warning per kind of placeholder left.
pub struct Expanded {
    /// The config text to parse.
    pub text: String,
    /// Warnings for the caller to log.
    pub warnings: Vec<String>,
}

/// Expands `%{VAR}` (if `percent`) and `$(VAR)` (if `reloader`) in `text`, reading
/// variables through `env`.
pub fn expand_placeholders(
    text: &str,
    percent: bool,
    reloader: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Expanded {
    let percent_kind = Kind {
        open: "%{",
        close: "}",
        valid: is_env_name_or_any,
        expand: percent,
        why_not: "vmagent's %{VAR} placeholders are expanded only with --config.dialect \
                  victoriametrics",
    };
    let reloader_kind = Kind {
        open: "$(",
        close: ")",
        valid: is_env_name,
        expand: reloader,
        why_not: "prometheus-operator's reloader expands these; pass \
                  --config.expand-reloader-vars to have kubesd do it",
    };
    let mut warnings = Vec::new();
    let (text, warning) = percent_kind.apply(text, env);
    warnings.extend(warning);
    let (text, warning) = reloader_kind.apply(&text, env);
    warnings.extend(warning);
    Expanded { text, warnings }
}

/// One kind of placeholder: how it is written, and whether to expand it.
struct Kind {
    open: &'static str,
    close: &'static str,
    valid: fn(&str) -> bool,
    expand: bool,
    /// Why placeholders stay when `expand` is off.
    why_not: &'static str,
}

impl Kind {
    /// `text` with this kind's placeholders expanded (if on), and a warning naming those
    /// left.
    fn apply(&self, text: &str, env: &dyn Fn(&str) -> Option<String>) -> (String, Option<String>) {
        let mut left = BTreeSet::new();
        let text = replace(text, self.open, self.close, self.valid, |name| {
            let value = if self.expand { env(name) } else { None };
            if value.is_none() {
                left.insert(format!("{}{name}{}", self.open, self.close));
            }
            value
        });
        let warning = (!left.is_empty()).then(|| {
            let why = if self.expand {
                "their environment variables are not set"
            } else {
                self.why_not
            };
            format!(
                "placeholders left unexpanded ({why}): {}",
                left.into_iter().collect::<Vec<_>>().join(", ")
            )
        });
        (text, warning)
    }
}

/// The reloader's variable names: `[a-zA-Z_0-9]+`.
fn is_env_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// vmagent takes anything between `%{` and `}` as the name; a name with a newline is
/// not meant as one.
fn is_env_name_or_any(name: &str) -> bool {
    !name.is_empty() && !name.contains('\n')
}

/// `text` with each `open NAME close` for which `valid(NAME)` and `value(NAME)` is
/// `Some` replaced by that value.
fn replace(
    text: &str,
    open: &str,
    close: &str,
    valid: fn(&str) -> bool,
    mut value: impl FnMut(&str) -> Option<String>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(open) {
        out.push_str(&rest[..start]);
        let after = &rest[start + open.len()..];
        match after.find(close).map(|end| &after[..end]) {
            Some(name) if valid(name) => {
                match value(name) {
                    Some(v) => out.push_str(&v),
                    None => {
                        out.push_str(open);
                        out.push_str(name);
                        out.push_str(close);
                    }
                }
                rest = &after[name.len() + close.len()..];
            }
            _ => {
                out.push_str(open);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "SHARD" => Some("2".into()),
            "NODE_NAME" => Some("node-7".into()),
            _ => None,
        }
    }

    #[test]
    fn reloader_placeholders_only_when_asked() {
        let text =
            "regex: $(SHARD);|.+;.+\nfield: spec.nodeName=$(NODE_NAME) $(POD_NAME) $(bad-name)";
        let off = expand_placeholders(text, false, false, &env);
        assert_eq!(off.text, text);
        assert_eq!(off.warnings.len(), 1);
        assert!(
            off.warnings[0].contains("$(NODE_NAME), $(POD_NAME), $(SHARD)")
                && off.warnings[0].contains("--config.expand-reloader-vars"),
            "{:?}",
            off.warnings
        );
        let on = expand_placeholders(text, false, true, &env);
        assert_eq!(
            on.text,
            "regex: 2;|.+;.+\nfield: spec.nodeName=node-7 $(POD_NAME) $(bad-name)"
        );
        assert!(
            on.warnings[0].contains("are not set): $(POD_NAME)"),
            "{:?}",
            on.warnings
        );
    }

    #[test]
    fn percent_placeholders_as_vmagent() {
        let text = "a: %{NODE_NAME}\nb: %{UNSET}\nc: 100%{\n";
        let vm = expand_placeholders(text, true, false, &env);
        assert_eq!(vm.text, "a: node-7\nb: %{UNSET}\nc: 100%{\n");
        assert!(vm.warnings[0].contains("%{UNSET}"), "{:?}", vm.warnings);
        let prom = expand_placeholders(text, false, false, &env);
        assert_eq!(prom.text, text);
        assert!(prom.warnings[0].contains("%{NODE_NAME}, %{UNSET}"));
    }
}
