//! `http_headers`: headers added to every request to the API server, as Prometheus'
//! `http_config` defines them (values, secret values, and files whose content is a
//! value). The config checks them beforehand ([`crate::config::check_http_headers`]).

use std::collections::BTreeMap;

use awc::http::header::{HeaderName, HeaderValue};

use crate::config::HttpHeader;

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
