//! `Status`: how the API server reports an error, as an HTTP body or in an `ERROR`
//! watch event.

use serde::Deserialize;

use crate::model::json::null_default;

/// A Kubernetes `Status` object (`kind: Status`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct Status {
    /// The HTTP-like code: 410 means the requested resourceVersion is gone.
    #[serde(default, deserialize_with = "null_default")]
    pub code: u16,
    /// A machine-readable reason, e.g. `Expired` or `Gone`.
    #[serde(default, deserialize_with = "null_default")]
    pub reason: String,
    /// A human-readable message.
    #[serde(default, deserialize_with = "null_default")]
    pub message: String,
}

impl Status {
    /// True when the client's resourceVersion (or continue token) is too old: the
    /// client must relist. Servers say so with code 410, or with reason `Expired`/`Gone`.
    pub fn is_gone(&self) -> bool {
        self.code == 410 || self.reason == "Expired" || self.reason == "Gone"
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}
