//! `http_headers`: headers added to every request to the API server, as Prometheus'
//! `http_config` defines them (values, secret values, and files whose content is a
//! value), and the headers it reserves for itself.

use std::collections::BTreeMap;

use awc::http::header::{HeaderName, HeaderValue};

use crate::config::HttpHeader;

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

/// Every header to send: each value of each header, files read now (their content,
/// trimmed of surrounding white space). Errors name the header and file, never a value.
pub fn read_http_headers(
    headers: &BTreeMap<String, HttpHeader>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut out = Vec::new();
    for (name, header) in headers {
        let header_name = HeaderName::try_from(name.as_str())
            .map_err(|_| format!("http_headers: {name:?} is not a valid header name"))?;
        let mut values: Vec<String> = header.values.clone();
        values.extend(header.secrets.iter().map(|s| s.expose().to_string()));
        for file in &header.files {
            let text = std::fs::read_to_string(file).map_err(|e| {
                format!(
                    "http_headers.{name}.files: cannot read {}: {e}",
                    file.display()
                )
            })?;
            values.push(text.trim().to_string());
        }
        for value in values {
            let value = HeaderValue::try_from(value)
                .map_err(|_| format!("http_headers.{name}: a value is not a valid header value"))?;
            out.push((header_name.clone(), value));
        }
    }
    Ok(out)
}
