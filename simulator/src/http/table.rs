//! Server-side printing: the `meta.k8s.io/v1` `Table` that kubectl asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) in `get`, with
//! NAME and AGE columns (plus STATUS for pods), one row per object.
//!
//! Each row embeds the object as `PartialObjectMetadata` (the default) or in
//! full with `includeObject=Object`; kubectl reads the namespace column from it.

use actix_web::HttpRequest;
use actix_web::http::header;
use serde_json::{Value, json};

use crate::resource::Resource;
use crate::timestamp;

/// Whether the client asked for a Table (it lists it first in `Accept`).
pub fn wants_table(req: &HttpRequest) -> bool {
    req.headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .and_then(|accept| accept.split(',').next())
        .is_some_and(|first| first.contains("as=Table") && first.contains("g=meta.k8s.io"))
}

/// Whether rows embed full objects (`includeObject=Object`) or metadata only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// `PartialObjectMetadata` (the server default).
    Metadata,
    /// The whole object.
    Object,
    /// No object.
    None,
}

impl IncludeObject {
    /// Parses the `includeObject` query parameter.
    pub fn parse(value: Option<&String>) -> IncludeObject {
        match value.map(String::as_str) {
            Some("Object") => IncludeObject::Object,
            Some("None") => IncludeObject::None,
            _ => IncludeObject::Metadata,
        }
    }
}

/// A Table of `objects`, with list metadata `metadata`.
pub fn table<'a>(
    resource: Resource,
    objects: impl IntoIterator<Item = &'a Value>,
    include: IncludeObject,
    metadata: Value,
) -> Value {
    let now = timestamp::unix_now();
    let mut columns = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace.", "priority": 0})];
    if resource == Resource::Pods {
        columns.push(json!({"name": "Status", "type": "string", "format": "",
            "description": "The phase of the pod.", "priority": 0}));
    }
    columns.push(json!({"name": "Age", "type": "string", "format": "",
        "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
        "priority": 0}));
    let rows: Vec<Value> = objects
        .into_iter()
        .map(|object| {
            let mut cells = vec![
                object
                    .pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
            ];
            if resource == Resource::Pods {
                cells.push(
                    object
                        .pointer("/status/phase")
                        .cloned()
                        .unwrap_or(json!("Unknown")),
                );
            }
            let created = object
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(timestamp::parse_rfc3339);
            cells.push(json!(
                created.map_or("<unknown>".to_string(), |t| age(now.saturating_sub(t)))
            ));
            let mut row = json!({"cells": cells});
            match include {
                IncludeObject::Object => {
                    let mut full = object.clone();
                    full["kind"] = json!(resource.kind());
                    full["apiVersion"] = json!(resource.api_version());
                    row["object"] = full;
                }
                IncludeObject::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
                    });
                }
                IncludeObject::None => {}
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

/// kubectl-style short age: `42s`, `5m`, `3h`, `12d`.
fn age(secs: u64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_table_has_name_status_age() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "creationTimestamp": "2020-01-01T00:00:00Z"},
                         "status": {"phase": "Running"}});
        let t = table(Resource::Pods, [&pod], IncludeObject::Metadata, json!({}));
        assert_eq!(t["columnDefinitions"].as_array().map(Vec::len), Some(3));
        assert_eq!(t["rows"][0]["cells"][0], "p");
        assert_eq!(t["rows"][0]["cells"][1], "Running");
        assert_eq!(t["rows"][0]["object"]["metadata"]["namespace"], "ns");
        assert_eq!(age(59), "59s");
        assert_eq!(age(7200), "120m");
        assert_eq!(age(86_400 * 3), "3d");
    }
}
