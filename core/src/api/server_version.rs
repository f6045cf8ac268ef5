//! An API server's version, as `GET /version` tells it: what `ListMode::Auto` chooses
//! the way of listing from.

use serde::Deserialize;

/// The Kubernetes minor release an API server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServerVersion {
    /// The major version (1).
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

/// The fields of `/version`'s body that are read.
#[derive(Deserialize)]
struct VersionInfo {
    #[serde(default, rename = "gitVersion")]
    git_version: String,
    #[serde(default)]
    major: String,
    #[serde(default)]
    minor: String,
}

impl ServerVersion {
    /// The version in a `/version` body: from `gitVersion` (`v1.33.5`, and forks'
    /// `v1.33.5+k3s1`, `v1.33.5-eks-1a2b3c`), else from `major` and `minor` (`"1"`,
    /// `"33+"`). `None` when neither can be read.
    pub fn parse(body: &[u8]) -> Option<ServerVersion> {
        let info: VersionInfo = serde_json::from_slice(body).ok()?;
        let from_git = info.git_version.strip_prefix('v').and_then(|rest| {
            let mut parts = rest.splitn(3, '.');
            Some(ServerVersion {
                major: leading_number(parts.next()?)?,
                minor: leading_number(parts.next()?)?,
            })
        });
        from_git.or_else(|| {
            Some(ServerVersion {
                major: leading_number(&info.major)?,
                minor: leading_number(&info.minor)?,
            })
        })
    }

    /// Whether the server encodes a LIST response as it writes it instead of building
    /// it whole (KEP-5116: `StreamingCollectionEncodingToJSON` and `…ToProtobuf`, on
    /// by default from 1.33).
    pub(crate) fn streams_list_responses(self) -> bool {
        (self.major, self.minor) >= (1, 33)
    }

    /// Whether the server serves streaming lists unless turned off (the `WatchList`
    /// feature, on by default from 1.32).
    pub(crate) fn serves_streaming_lists_by_default(self) -> bool {
        (self.major, self.minor) >= (1, 32)
    }
}

impl std::fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The decimal number `text` starts with (`"33+"` is 33).
fn leading_number(text: &str) -> Option<u32> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32) -> Option<ServerVersion> {
        Some(ServerVersion { major, minor })
    }

    #[test]
    fn versions_are_read_from_git_version_with_forks_suffixes() {
        let body = |git: &str| format!(r#"{{"major":"","minor":"","gitVersion":"{git}"}}"#);
        assert_eq!(ServerVersion::parse(body("v1.36.0").as_bytes()), v(1, 36));
        assert_eq!(
            ServerVersion::parse(body("v1.33.5+abc").as_bytes()),
            v(1, 33)
        );
        assert_eq!(
            ServerVersion::parse(body("v1.32.9-eks-113cf36").as_bytes()),
            v(1, 32)
        );
        assert_eq!(
            ServerVersion::parse(body("v1.34.1+k3s1").as_bytes()),
            v(1, 34)
        );
    }

    #[test]
    fn major_and_minor_are_the_fallback_and_anything_else_is_unknown() {
        let body = br#"{"major":"1","minor":"33+","gitVersion":"unknown"}"#;
        assert_eq!(ServerVersion::parse(body), v(1, 33));
        assert_eq!(ServerVersion::parse(b"<html>not json</html>"), None);
        assert_eq!(ServerVersion::parse(br#"{"kind":"PodList"}"#), None);
        assert_eq!(ServerVersion::parse(br#"{"gitVersion":"vX.Y"}"#), None);
    }

    #[test]
    fn lists_are_streamed_by_the_server_from_1_33() {
        let at = |minor| ServerVersion { major: 1, minor };
        assert!(!at(32).streams_list_responses());
        assert!(at(33).streams_list_responses());
        assert!(!at(31).serves_streaming_lists_by_default());
        assert!(at(32).serves_streaming_lists_by_default());
    }
}
