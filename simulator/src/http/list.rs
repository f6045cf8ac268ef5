//! LIST: `GET` on a collection without `watch`, with the API server's
//! selector, pagination and resourceVersion semantics.
//!
//! - `resourceVersion` unset: the most recent state; `0`: any state (the
//!   current one, and like the real watch cache `limit` is ignored);
//!   `N` with `resourceVersionMatch=NotOlderThan` (or unset): current state,
//!   504 if `N` is in the future; `N` with `Exact`: the state at `N`, 410 if
//!   compacted away.
//! - `limit` + `continue`: the token encodes the list's resourceVersion, the
//!   store epoch and the last key, so every page is served from the same
//!   snapshot; a token whose snapshot left the history window gets 410 Expired.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::encoding::ResponseEncoding;
use super::request::Target;
use super::table::{self, IncludeObject};
use crate::error::ApiError;
use crate::protobuf;
use crate::selector::{FieldSelector, LabelSelector, Selector};
use crate::sim::Simulator;
use crate::store::ObjectKey;

/// The decoded form of a continue token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ContinueToken {
    rv: u64,
    epoch: u64,
    start: ObjectKey,
}

impl ContinueToken {
    /// Hex of the JSON form: opaque to clients, safe in a query string.
    fn encode(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        json.iter().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
    }

    fn decode(token: &str) -> Result<ContinueToken, ApiError> {
        let invalid = || ApiError::bad_request("continue key is not valid");
        if !token.len().is_multiple_of(2) {
            return Err(invalid());
        }
        let bytes = (0..token.len())
            .step_by(2)
            .map(|i| {
                token
                    .get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(invalid)?;
        serde_json::from_slice(&bytes).map_err(|_| invalid())
    }
}

/// Parses `labelSelector` and `fieldSelector` for `target`.
pub fn parse_selector(
    target: &Target,
    query: &HashMap<String, String>,
) -> Result<Selector, ApiError> {
    let labels = LabelSelector::parse(query.get("labelSelector").map_or("", String::as_str))?;
    let fields = FieldSelector::parse(
        query.get("fieldSelector").map_or("", String::as_str),
        target.resource,
    )?;
    Ok(Selector { labels, fields })
}

/// Serves a LIST request.
pub fn serve(
    sim: &Simulator,
    req: &HttpRequest,
    target: &Target,
    query: &HashMap<String, String>,
) -> Result<HttpResponse, ApiError> {
    let selector = parse_selector(target, query)?;
    let store = sim.store();
    let asked = PageAsked::parse(query, store.current_rv(), store.epoch())?;
    let page = store.list_page(
        target.resource,
        target.namespace.as_deref(),
        asked.at,
        &selector,
        asked.after.as_ref(),
        asked.limit,
    )?;
    let continue_token = page.next.map(|start| {
        ContinueToken {
            rv: page.rv,
            epoch: page.epoch,
            start,
        }
        .encode()
    });
    let mut metadata = json!({"resourceVersion": page.rv.to_string()});
    if let Some(token) = &continue_token {
        metadata["continue"] = json!(token);
    }
    if table::wants_table(req) {
        let include = IncludeObject::parse(query.get("includeObject"));
        let t = table::table(
            target.resource,
            page.items.iter().map(|o| &**o),
            include,
            metadata,
        );
        return Ok(HttpResponse::Ok().json(t));
    }
    if ResponseEncoding::of(req, target.resource) == ResponseEncoding::Protobuf {
        return protobuf_list(target, &page.items, page.rv, continue_token.as_deref());
    }
    Ok(HttpResponse::Ok()
        .content_type("application/json")
        .body(json_list(target, &page.items, &metadata)))
}

/// Which page a LIST asks for, read from its query as the API server reads it.
struct PageAsked {
    /// The snapshot to serve from (resourceVersion, store epoch); `None`: the current.
    at: Option<(u64, u64)>,
    /// The key the page starts after (from a continue token).
    after: Option<ObjectKey>,
    limit: Option<usize>,
}

impl PageAsked {
    fn parse(
        query: &HashMap<String, String>,
        current_rv: u64,
        epoch: u64,
    ) -> Result<PageAsked, ApiError> {
        let limit = parse_limit(query.get("limit").map(String::as_str))?;
        let get = |name: &str| query.get(name).map(String::as_str).unwrap_or("");
        let (rv, rv_match, token) = (
            get("resourceVersion"),
            get("resourceVersionMatch"),
            get("continue"),
        );
        if !token.is_empty() {
            if !rv.is_empty() || !rv_match.is_empty() {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let token = ContinueToken::decode(token)?;
            return Ok(PageAsked {
                at: Some((token.rv, token.epoch)),
                after: Some(token.start),
                limit,
            });
        }
        Ok(match version_asked(rv, rv_match, current_rv)? {
            // "Any" version: served from the cache, which ignores limit.
            VersionAsked::Any => PageAsked {
                at: None,
                after: None,
                limit: None,
            },
            VersionAsked::Current => PageAsked {
                at: None,
                after: None,
                limit,
            },
            VersionAsked::Exact(r) => PageAsked {
                at: Some((r, epoch)),
                after: None,
                limit,
            },
        })
    }
}

/// `limit`: absent, empty and 0 mean no limit.
fn parse_limit(limit: Option<&str>) -> Result<Option<usize>, ApiError> {
    match limit {
        None | Some("") => Ok(None),
        Some(l) => match l.parse::<usize>() {
            Ok(0) => Ok(None),
            Ok(n) => Ok(Some(n)),
            Err(_) => Err(ApiError::bad_request(format!("invalid limit {l:?}"))),
        },
    }
}

/// Which state a LIST without a continue token asks for.
enum VersionAsked {
    /// `resourceVersion=0`: any state, from the watch cache.
    Any,
    /// The most recent state (unset, or `NotOlderThan` a version not in the future).
    Current,
    /// The state at this version (`Exact`).
    Exact(u64),
}

/// Reads `resourceVersion` and `resourceVersionMatch` as the API server does.
fn version_asked(rv: &str, rv_match: &str, current_rv: u64) -> Result<VersionAsked, ApiError> {
    let requested = match rv {
        "" => None,
        r => Some(
            r.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {r:?}")))?,
        ),
    };
    match (requested, rv_match) {
        (None, "") => Ok(VersionAsked::Current),
        (None, _) => Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        )),
        (Some(0), "" | "NotOlderThan") => Ok(VersionAsked::Any),
        (Some(r), "" | "NotOlderThan") if r > current_rv => {
            Err(ApiError::too_large_resource_version(r, current_rv))
        }
        (Some(_), "" | "NotOlderThan") => Ok(VersionAsked::Current),
        (Some(0), "Exact") => Err(ApiError::bad_request(
            "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
        )),
        (Some(r), "Exact") => Ok(VersionAsked::Exact(r)),
        (Some(_), other) => Err(ApiError::bad_request(format!(
            "unsupported resourceVersionMatch {other:?}"
        ))),
    }
}

/// A page in protobuf: the `k8s\0` envelope around the kind's list.
fn protobuf_list(
    target: &Target,
    items: &[Arc<Value>],
    rv: u64,
    continue_token: Option<&str>,
) -> Result<HttpResponse, ApiError> {
    let items = items
        .iter()
        .map(|item| protobuf::encode_fields(target.resource, item))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let body = protobuf::encode_list(
        target.resource,
        target.resource.api_version(),
        &items,
        &rv.to_string(),
        continue_token,
    );
    Ok(HttpResponse::Ok()
        .content_type(protobuf::CONTENT_TYPE)
        .body(body))
}

/// A page in JSON, written by hand so a big list is not first built as one large
/// `Value`.
fn json_list(target: &Target, items: &[Arc<Value>], metadata: &Value) -> String {
    let mut body = format!(
        "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{},\"items\":[",
        target.resource.list_kind(),
        target.resource.api_version(),
        metadata
    );
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&serde_json::to_string(&**item).unwrap_or_else(|_| "{}".into()));
    }
    body.push_str("]}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_token_round_trips_and_rejects_garbage() {
        let token = ContinueToken {
            rv: 42,
            epoch: 1,
            start: ("ns".into(), "pod-7".into()),
        };
        assert_eq!(ContinueToken::decode(&token.encode()), Ok(token));
        assert_eq!(ContinueToken::decode("zz").map_err(|e| e.code), Err(400));
        assert_eq!(ContinueToken::decode("abc").map_err(|e| e.code), Err(400));
    }
}
