//! A secret string of a config: a token, a password, a client secret. Compared and
//! hashed like any string, never printed.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A secret string: compared and hashed like any string (groups are keyed by it), but
/// never printed.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("\"\"")
        } else {
            f.write_str("<secret>")
        }
    }
}

impl Secret {
    /// The secret's value, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}
