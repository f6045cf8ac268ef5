//! Label and field selectors of `kubernetes_sd_config.selectors`.
//!
//! kubesd does not evaluate selectors: the API server does. It checks that each is
//! well-formed enough to send (so a typo fails at start, naming the field), and joins
//! the selectors of one role with `,`, which the API server reads as AND.

use serde::{Deserialize, Serialize};

use crate::model::Role;

/// One entry of `selectors`: label and field selectors for one role.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleSelector {
    /// The role these selectors restrict (the discovery role or one it depends on).
    pub role: String,
    /// A label selector, e.g. `app=web,tier!=cache,env in (prod,stage)`.
    #[serde(default)]
    pub label: String,
    /// A field selector, e.g. `spec.nodeName=node-1`.
    #[serde(default)]
    pub field: String,
}

/// A selector kubesd refuses to send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// `role` is not a role name.
    #[error("selectors[{index}].role: {source}")]
    Role {
        /// Position in `selectors`.
        index: usize,
        /// The unknown role.
        #[source]
        source: crate::model::UnknownRole,
    },
    /// A label or field selector that cannot be valid.
    #[error("selectors[{index}].{field}: {problem} in {selector:?}")]
    Syntax {
        /// Position in `selectors`.
        index: usize,
        /// `label` or `field`.
        field: &'static str,
        /// The selector as written.
        selector: String,
        /// What is wrong.
        problem: &'static str,
    },
}

impl RoleSelector {
    /// Checks the role name and the selectors' syntax; `index` is the entry's position,
    /// for error messages.
    pub fn validate(&self, index: usize) -> Result<Role, SelectorError> {
        let role: Role = self
            .role
            .parse()
            .map_err(|source| SelectorError::Role { index, source })?;
        for (field, selector) in [("label", &self.label), ("field", &self.field)] {
            if let Err(problem) = check_syntax(selector) {
                return Err(SelectorError::Syntax {
                    index,
                    field,
                    selector: selector.clone(),
                    problem,
                });
            }
        }
        Ok(role)
    }
}

/// A light syntax check: balanced parentheses, no empty terms, no characters that
/// cannot appear in a selector.
fn check_syntax(selector: &str) -> Result<(), &'static str> {
    let mut depth = 0i32;
    let mut term_len = 0usize;
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err("unbalanced ')'");
                }
            }
            ',' if depth == 0 => {
                if term_len == 0 {
                    return Err("empty term");
                }
                term_len = 0;
                continue;
            }
            c if c.is_control() => return Err("control character"),
            _ => {}
        }
        if !c.is_whitespace() {
            term_len += 1;
        }
    }
    if depth != 0 {
        return Err("unbalanced '('");
    }
    if term_len == 0 && !selector.trim().is_empty() {
        return Err("empty term");
    }
    Ok(())
}

/// The label and field selectors of all entries for `role`, each joined with `,`.
/// Entries whose role does not parse are ignored here (validation rejects them first).
pub fn selectors_for_role(role: Role, selectors: &[RoleSelector]) -> (String, String) {
    let mut labels = Vec::new();
    let mut fields = Vec::new();
    for s in selectors.iter().filter(|s| s.role.parse() == Ok(role)) {
        if !s.label.trim().is_empty() {
            labels.push(s.label.trim());
        }
        if !s.field.trim().is_empty() {
            fields.push(s.field.trim());
        }
    }
    (labels.join(","), fields.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(role: &str, label: &str, field: &str) -> RoleSelector {
        RoleSelector {
            role: role.into(),
            label: label.into(),
            field: field.into(),
        }
    }

    #[test]
    fn selectors_of_one_role_are_joined() {
        let s = [
            sel("pod", "app=web", ""),
            sel("node", "x=y", "metadata.name=n1"),
            sel("pod", "env in (a,b)", "spec.nodeName=n1"),
        ];
        assert_eq!(
            selectors_for_role(Role::Pod, &s),
            (
                "app=web,env in (a,b)".to_string(),
                "spec.nodeName=n1".to_string()
            )
        );
        assert_eq!(
            selectors_for_role(Role::Service, &s),
            (String::new(), String::new())
        );
    }

    #[test]
    fn validation_names_the_entry_and_field() {
        assert_eq!(sel("pod", "app in (a,b)", "").validate(0), Ok(Role::Pod));
        let err = sel("pods", "", "").validate(2).unwrap_err();
        assert!(err.to_string().starts_with("selectors[2].role"), "{err}");
        let err = sel("pod", "app in (a", "").validate(1).unwrap_err();
        assert!(
            err.to_string().contains("selectors[1].label")
                && err.to_string().contains("unbalanced"),
            "{err}"
        );
        let err = sel("pod", "", "a=b,,c=d").validate(0).unwrap_err();
        assert!(err.to_string().contains("selectors[0].field"), "{err}");
        assert!(sel("namespace", "", "").validate(0).is_err());
    }
}
