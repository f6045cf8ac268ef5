//! The requests of one LIST attempt, counted against its budget: every page and every
//! redirect is a request the API server (or whatever stands in front of it) serves,
//! so one attempt makes at most `EngineOptions::max_list_pages` of them. Redirects are
//! followed here, by hand, rather than by awc, so that each hop is counted and a
//! redirect back to a URL the attempt already asked for ends it at once, not after
//! ten hops.

use awc::http::StatusCode;
use awc::http::header::{ACCEPT, AUTHORIZATION, LOCATION, USER_AGENT};
use std::time::Duration;

use super::failure::Failure;
use super::user_agent::user_agent;

/// What awc's send of a LIST request gave: the response (its body decoded as its
/// `Content-Encoding` says), or why there is none. (Named through the future: awc does
/// not export the body's type.)
pub type Sent = <awc::SendClientRequest as std::future::Future>::Output;

/// What one LIST attempt has asked for so far.
#[derive(Debug, Default)]
pub struct RequestsMade {
    /// Requests made: pages and redirects.
    pub requests: usize,
    /// Every URL asked for, in order.
    pub urls: Vec<String>,
}

/// Sends the requests of LIST attempts: one awc client that does not follow
/// redirects, and what every request carries.
#[derive(Clone)]
pub struct ListRequests {
    /// A client of the endpoint's settings, redirects off.
    pub client: awc::Client,
    /// The `Authorization` header's value, sent only to the API server's own origin.
    pub authorization: Option<String>,
    /// The `Accept` header's value: the encodings asked for
    /// (`EngineOptions::encoding`).
    pub accept: &'static str,
    /// `scheme://host:port` of the API server.
    pub origin: String,
    /// Follow redirects (the job's `follow_redirects`).
    pub follow_redirects: bool,
    /// The attempt's budget of requests.
    pub max_requests: usize,
    /// How long to wait for a response head.
    pub timeout: Duration,
}

impl ListRequests {
    /// Sends a GET for `url` within `attempt`'s budget, following redirects; the
    /// answer that is not a redirect (or a redirect not to follow), or the error that
    /// ended the attempt.
    pub async fn send(&self, mut url: String, attempt: &mut RequestsMade) -> Result<Sent, Failure> {
        loop {
            if attempt.urls.contains(&url) {
                return Err(Failure::Endless(format!(
                    "redirected back to {url}, which this attempt already asked for"
                )));
            }
            if attempt.requests >= self.max_requests {
                return Err(Failure::Endless(format!(
                    "the attempt made {} requests (pages and redirects) without ending (max_list_pages)",
                    self.max_requests
                )));
            }
            attempt.requests += 1;
            let sent = self.get(&url).send().await;
            attempt.urls.push(url);
            let Ok(resp) = &sent else {
                return Ok(sent);
            };
            let location = resp
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| self.follow_redirects && is_followed(resp.status()));
            let Some(location) = location else {
                return Ok(sent);
            };
            let from = attempt.urls.last().map_or("", String::as_str);
            url = resolve(from, location);
        }
    }

    fn get(&self, url: &str) -> awc::ClientRequest {
        let mut req = self
            .client
            .get(url)
            .insert_header((ACCEPT, self.accept))
            .insert_header((USER_AGENT, user_agent()))
            .timeout(self.timeout);
        // Credentials go to the API server only, never to another origin a redirect
        // points at (as Go's HTTP client does).
        if let Some(value) = &self.authorization
            && origin(url) == self.origin
        {
            req = req.insert_header((AUTHORIZATION, value.as_str()));
        }
        req
    }
}

/// The redirect statuses a GET follows.
fn is_followed(status: StatusCode) -> bool {
    matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308)
}

/// `scheme://authority` of `url`.
pub fn origin(url: &str) -> &str {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let end = url[after_scheme..]
        .find('/')
        .map_or(url.len(), |i| after_scheme + i);
    &url[..end]
}

/// `location` (absolute, or relative to `from`) as an absolute URL.
fn resolve(from: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_string();
    }
    if location.starts_with('/') {
        return format!("{}{location}", origin(from));
    }
    let path = from.split(['?', '#']).next().unwrap_or(from);
    let dir = path.rfind('/').map_or(path, |i| &path[..=i]);
    format!("{dir}{location}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_resolve_against_the_url_they_answered() {
        let from = "http://127.0.0.1:8080/api/v1/pods?limit=500";
        assert_eq!(origin(from), "http://127.0.0.1:8080");
        assert_eq!(resolve(from, "https://other/x"), "https://other/x");
        assert_eq!(
            resolve(from, "/api/v1/pods?x=1"),
            "http://127.0.0.1:8080/api/v1/pods?x=1"
        );
        assert_eq!(resolve(from, "nodes"), "http://127.0.0.1:8080/api/v1/nodes");
    }
}
