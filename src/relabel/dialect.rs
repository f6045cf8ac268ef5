//! Whose reading of a config kubesd follows where Prometheus and vmagent differ.
//!
//! Everything vmagent adds that Prometheus would reject (its actions, `if`, `regex` as a
//! list, `role: endpointslices`) is read in either dialect: no Prometheus config changes
//! meaning by it. The dialect decides only where the same text means different things:
//!
//! | where | `prometheus` | `victoriametrics` |
//! |---|---|---|
//! | `hashmod` | MD5, last 8 bytes | xxHash64 |
//! | `{{name}}` in a `replace` rule's `replacement` | literal text | the value of label `name` |
//! | `%{VAR}` in the config file | literal text (a warning names it) | the environment variable; unset is an error |

use serde::{Deserialize, Serialize};

/// A config dialect.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// Prometheus' meaning (the default).
    #[default]
    Prometheus,
    /// vmagent's meaning.
    VictoriaMetrics,
}

impl Dialect {
    /// The dialect's name, as the command line spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Prometheus => "prometheus",
            Dialect::VictoriaMetrics => "victoriametrics",
        }
    }
}

impl std::str::FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Dialect, String> {
        match s {
            "prometheus" => Ok(Dialect::Prometheus),
            "victoriametrics" => Ok(Dialect::VictoriaMetrics),
            other => Err(format!(
                "unknown config dialect {other:?}: expected prometheus or victoriametrics"
            )),
        }
    }
}
