//! How the engine gets each URL's state: streaming lists where the API server serves
//! them, or LIST requests only ([`ListMode`], `EngineOptions::list_mode`).

use std::fmt;
use std::str::FromStr;

/// How URL watchers list (`EngineOptions::list_mode`, `kubesd run --kubernetes.list-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListMode {
    /// Streaming lists (a watch with `sendInitialEvents=true`, served from the API
    /// server's watch cache without building one big response) where the server serves
    /// them; a URL whose server refuses, ignores or cuts them falls back to LIST and
    /// WATCH, and stays there.
    #[default]
    Auto,
    /// LIST requests only, then a watch from the list's resourceVersion: for servers
    /// or proxies where a streaming list attempt is itself unwelcome.
    List,
}

impl ListMode {
    /// Every mode, in the order the flag's help lists them.
    pub const ALL: [ListMode; 2] = [ListMode::Auto, ListMode::List];

    /// The mode's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ListMode::Auto => "auto",
            ListMode::List => "list",
        }
    }
}

impl fmt::Display for ListMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a list mode kubesd does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown list mode {0:?}: expected auto or list")]
pub struct UnknownListMode(pub String);

impl FromStr for ListMode {
    type Err = UnknownListMode;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ListMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownListMode(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_back_as_written_and_unknown_ones_are_named() {
        for mode in ListMode::ALL {
            assert_eq!(mode.to_string().parse::<ListMode>(), Ok(mode));
        }
        let err = "stream".parse::<ListMode>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown list mode \"stream\": expected auto or list"
        );
    }
}
