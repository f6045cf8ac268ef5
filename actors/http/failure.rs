//! Why a request to the API server, or the stream it answered with, failed: the
//! client classifies every answer that is not what was asked for into one
//! [`Failure`], with the server's own words where it sent any.

use std::time::Duration;

use crate::error::DecodeError;
use crate::wire::Status;

/// Why a LIST attempt or a watch (a streaming list included) failed.
#[derive(Debug)]
pub enum Failure {
    /// 410 Gone, as the HTTP status or an `ERROR` event: the resourceVersion (or
    /// continue token) is older than the server keeps.
    Gone {
        /// The server's message.
        message: String,
    },
    /// Any other non-2xx answer.
    Status {
        /// The HTTP status.
        code: u16,
        /// The server's requested delay (`Retry-After`).
        retry_after: Option<Duration>,
        /// The server's `Status` message, or the start of its body, in words.
        message: String,
    },
    /// The connection failed or timed out, or the body broke off or ended early.
    Transport(String),
    /// No credential to send (a kubeconfig credential plugin failed, or has not
    /// answered yet); no request was made.
    Credentials(String),
    /// A body that made no progress for `watch_stall_timeout`: a LIST's next item, or
    /// a watch line left incomplete.
    Stalled,
    /// A list that is not a whole list of the role: another kind, truncated,
    /// undecodable, mostly rejected, or over one of the attempt's bounds (bytes,
    /// objects, time). In words.
    BadBody(String),
    /// A LIST attempt that would not end: over its budget of requests, pages that
    /// came round again or brought nothing new, or a redirect back to a URL it had
    /// already asked for. In words.
    Endless(String),
    /// A watch event that could not be accepted: the stream ends there.
    Rejected(DecodeError),
    /// An `ERROR` event other than 410.
    ErrorEvent(Status),
    /// The answer to a streaming list shows that the server does not serve them: it
    /// ignored `sendInitialEvents`, ended the stream at once, stayed silent, or
    /// answered an old etcd's 500 as its first event. In words.
    NotServed(String),
}

/// Turns a non-2xx answer into a [`Failure`], with the server's `Status` message (or
/// the start of a plain-text body) in words.
pub fn classify(code: u16, retry_after: Option<Duration>, body: Option<&[u8]>) -> Failure {
    let parsed = body.and_then(Status::from_body);
    let message = match (&parsed, body) {
        (Some(s), _) if !s.message.is_empty() => s.message.clone(),
        (Some(s), _) => s.reason.clone(),
        (None, Some(body)) => plain_text(body),
        (None, None) => String::new(),
    };
    if code == 410 || parsed.as_ref().is_some_and(|s| s.code == 410) {
        return Failure::Gone { message };
    }
    Failure::Status {
        code,
        retry_after,
        message,
    }
}

/// The start of a body as one line of printable text (a proxy's HTML error page, or
/// whatever else a server sent instead of a `Status`).
pub fn plain_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(200)]);
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    out.truncate(out.trim_end().len());
    out
}

/// "403 Forbidden: <the server's message>".
pub fn status_words(code: u16, message: &str) -> String {
    let name = awc::http::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    match (name.is_empty(), message.is_empty()) {
        (_, false) => format!("{code} {name}: {message}"),
        (false, true) => format!("{code} {name}"),
        (true, true) => format!("status {code}"),
    }
}

/// A `Status` in words: its message, or its code and reason.
pub fn status_text(status: &Status) -> String {
    if status.message.is_empty() {
        format!("{} {}", status.code, status.reason)
    } else {
        format!("{} {}", status.code, status.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_body_gives_its_message_and_410_is_gone_by_status_or_body() {
        let body = br#"{"kind":"Status","code":403,"message":"pods is forbidden"}"#;
        assert!(matches!(
            classify(403, None, Some(body)),
            Failure::Status { code: 403, retry_after: None, message } if message == "pods is forbidden"
        ));
        let gone = br#"{"kind":"Status","code":410,"reason":"Expired"}"#;
        assert!(matches!(
            classify(200, None, Some(gone)),
            Failure::Gone { message } if message == "Expired"
        ));
        assert!(matches!(classify(410, None, None), Failure::Gone { .. }));
        let html = b"<html>\n<body>Bad Gateway</body></html>";
        assert!(matches!(classify(502, None, Some(html)),
            Failure::Status { message, .. } if message == "<html> <body>Bad Gateway</body></html>"));
    }

    #[test]
    fn statuses_are_named_with_the_servers_message() {
        assert_eq!(status_words(403, "no"), "403 Forbidden: no");
        assert_eq!(status_words(503, ""), "503 Service Unavailable");
        assert_eq!(status_words(599, ""), "status 599");
    }
}
