//! How the engine gets each URL's state: LIST requests, streaming lists, or whichever
//! costs the API server less, judged from its version ([`ListMode`],
//! `EngineOptions::list_mode`).

use std::fmt;
use std::str::FromStr;

use crate::api::ServerVersion;

/// How URL watchers list (`EngineOptions::list_mode`, `kubesd run --kubernetes.list-mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListMode {
    /// Chosen per API server from its `/version` ([`ListMode::streams_on`]): streaming
    /// lists only where they still spare the server (Kubernetes 1.32, which serves
    /// them by default but builds a LIST response whole); LIST and WATCH on 1.33 and
    /// later (LIST responses are encoded as they are written, and a protobuf LIST is
    /// the cheapest way to list), on older servers, and when the version cannot be read.
    #[default]
    Auto,
    /// LIST requests only, then a watch from the list's resourceVersion.
    List,
    /// Streaming lists (a watch with `sendInitialEvents=true`) whatever the server's
    /// version, for servers where they help. A server that shows it does not serve
    /// them is listed with LIST from then on; any other failure of one makes the next
    /// attempt a LIST (see RELIABILITY.md).
    Stream,
}

impl ListMode {
    /// Every mode, in the order the flag's help lists them.
    pub(crate) const ALL: [ListMode; 3] = [ListMode::Auto, ListMode::List, ListMode::Stream];

    /// The mode's name on the command line.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ListMode::Auto => "auto",
            ListMode::List => "list",
            ListMode::Stream => "stream",
        }
    }

    /// Whether a URL of a server at `version` (`None`: not known) starts with
    /// streaming lists in this mode.
    pub fn streams_on(self, version: Option<ServerVersion>) -> bool {
        match self {
            ListMode::List => false,
            ListMode::Stream => true,
            ListMode::Auto => version.is_some_and(|v| {
                v.serves_streaming_lists_by_default() && !v.streams_list_responses()
            }),
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
#[error("unknown list mode {0:?}: expected auto, list or stream")]
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
        let err = "streaming".parse::<ListMode>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown list mode \"streaming\": expected auto, list or stream"
        );
    }

    #[test]
    fn auto_streams_only_on_servers_that_serve_streaming_lists_but_build_lists_whole() {
        let v = |minor| Some(ServerVersion { major: 1, minor });
        assert!(!ListMode::Auto.streams_on(None));
        assert!(!ListMode::Auto.streams_on(v(31)));
        assert!(ListMode::Auto.streams_on(v(32)));
        assert!(!ListMode::Auto.streams_on(v(33)));
        assert!(!ListMode::Auto.streams_on(v(36)));
        assert!(ListMode::Stream.streams_on(None));
        assert!(ListMode::Stream.streams_on(v(36)));
        assert!(!ListMode::List.streams_on(v(32)));
    }
}
