//! `http_headers`, checked from the config alone: names valid and not among the headers
//! Prometheus reserves for itself, values valid header values. Reading the files some
//! values come from is I/O, done by the actors' HTTP client
//! (`kubesd_actors::http::read_http_headers`).

use std::collections::BTreeMap;

use ::http::header::{HeaderName, HeaderValue};

use super::HttpHeader;

/// Headers a config may not set, as in Prometheus (`reservedHeaders`): they carry
/// authentication, framing, or what the client decides itself.
const RESERVED: &[&str] = &[
    "authorization",
    "host",
    "content-encoding",
    "content-length",
    "content-type",
    "user-agent",
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "www-authenticate",
    "accept-encoding",
    "x-prometheus-remote-write-version",
    "x-prometheus-remote-read-version",
    "x-prometheus-scrape-timeout-seconds",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

/// Checks `http_headers` without reading files: names must be valid and not reserved,
/// values valid header values.
pub fn check_http_headers(headers: &BTreeMap<String, HttpHeader>) -> Result<(), String> {
    for (name, header) in headers {
        if HeaderName::try_from(name.as_str()).is_err() {
            return Err(format!("{name:?} is not a valid header name"));
        }
        if RESERVED.contains(&name.to_ascii_lowercase().as_str()) {
            return Err(format!("{name:?} is reserved: kubesd sets it itself"));
        }
        if header
            .values
            .iter()
            .any(|v| HeaderValue::try_from(v.as_str()).is_err())
            || header
                .secrets
                .iter()
                .any(|v| HeaderValue::try_from(v.expose()).is_err())
        {
            return Err(format!("{name:?}: a value is not a valid header value"));
        }
    }
    Ok(())
}
