//! Which encoding a response is in, from its `Content-Type`, and what kubesd asks for.
//!
//! The API server answers a request that accepts protobuf in protobuf for its
//! built-in kinds, and in JSON for what it cannot encode so (custom resources,
//! aggregated APIs, an older server): the answer's `Content-Type` decides, per
//! response, never the request.

/// The `Accept` header of a LIST or WATCH that prefers protobuf.
pub const ACCEPT_PROTOBUF: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The media type of Kubernetes' protobuf.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The encoding of one response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// `application/json` (lists) or newline-delimited JSON events (watches).
    Json,
    /// `application/vnd.kubernetes.protobuf`: an envelope (lists) or length-prefixed
    /// frames (watches, `;stream=watch`).
    Protobuf,
}

/// A `Content-Type` kubesd cannot decode (an HTML error page from a proxy, YAML).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unsupported Content-Type {0:?}: expected application/json or application/vnd.kubernetes.protobuf"
)]
pub struct UnknownContentType(pub String);

impl Encoding {
    /// The encoding a `Content-Type` names. A response without one is JSON, as the
    /// API server's answers always were before kubesd asked for protobuf.
    pub fn of_content_type(content_type: Option<&str>) -> Result<Encoding, UnknownContentType> {
        let Some(value) = content_type else {
            return Ok(Encoding::Json);
        };
        let media_type = value.split(';').next().unwrap_or("").trim();
        if media_type.eq_ignore_ascii_case(PROTOBUF) {
            Ok(Encoding::Protobuf)
        } else if media_type.eq_ignore_ascii_case("application/json") {
            Ok(Encoding::Json)
        } else {
            Err(UnknownContentType(value.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_type_names_the_encoding_and_anything_else_is_refused() {
        let of = Encoding::of_content_type;
        assert_eq!(of(Some("application/json")), Ok(Encoding::Json));
        assert_eq!(
            of(Some("application/json; charset=utf-8")),
            Ok(Encoding::Json)
        );
        assert_eq!(of(None), Ok(Encoding::Json));
        assert_eq!(of(Some(PROTOBUF)), Ok(Encoding::Protobuf));
        assert_eq!(
            of(Some("application/vnd.kubernetes.protobuf;stream=watch")),
            Ok(Encoding::Protobuf)
        );
        let err = of(Some("text/html")).unwrap_err();
        assert!(err.to_string().contains("text/html"), "{err}");
        assert!(of(Some("application/yaml")).is_err());
    }
}
