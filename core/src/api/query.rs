//! Query strings of LIST and WATCH requests.

use super::paths::{ApiGroupVersion, ResourceUrl};

/// Parameters of one LIST request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// `resourceVersion`: `Some("0")` reads from the API server's watch cache (cheap,
    /// possibly slightly stale); `None` is a consistent read from etcd (a quorum read).
    pub resource_version: Option<String>,
    /// `limit`, page size; ignored by the server for watch-cache reads.
    pub limit: Option<u32>,
    /// `continue`, the token of the previous page.
    pub continue_token: Option<String>,
}

/// Parameters of one WATCH request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchQuery {
    /// The resourceVersion to watch from (the list's, or the last event's).
    pub resource_version: String,
    /// `timeoutSeconds`: the server ends the stream cleanly after this long.
    pub timeout_seconds: u32,
    /// A streaming list: `sendInitialEvents=true` with
    /// `resourceVersionMatch=NotOlderThan`, so that the stream starts with the
    /// current state as `ADDED` events, ended by a bookmark annotated
    /// `k8s.io/initial-events-end` (`resource_version` may then be empty).
    pub send_initial_events: bool,
}

fn encode(pairs: &[(&str, &str)]) -> String {
    let mut s = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

fn selector_pairs(url: &ResourceUrl) -> Vec<(&'static str, &str)> {
    let mut pairs = Vec::new();
    if !url.label_selector.is_empty() {
        pairs.push(("labelSelector", url.label_selector.as_str()));
    }
    if !url.field_selector.is_empty() {
        pairs.push(("fieldSelector", url.field_selector.as_str()));
    }
    pairs
}

impl ResourceUrl {
    /// Path and query of a LIST request.
    pub fn list_path(&self, version: ApiGroupVersion, q: &ListQuery) -> String {
        let limit = q.limit.map(|l| l.to_string());
        let mut pairs = selector_pairs(self);
        if let Some(rv) = &q.resource_version {
            pairs.push(("resourceVersion", rv));
            if rv == "0" {
                pairs.push(("resourceVersionMatch", "NotOlderThan"));
            }
        }
        if let Some(limit) = &limit {
            pairs.push(("limit", limit));
        }
        if let Some(token) = &q.continue_token {
            pairs.push(("continue", token));
        }
        with_query(self.path(version), &pairs)
    }

    /// Path and query of a WATCH request, with bookmarks asked for.
    pub fn watch_path(&self, version: ApiGroupVersion, q: &WatchQuery) -> String {
        let timeout = q.timeout_seconds.to_string();
        let mut pairs = selector_pairs(self);
        pairs.extend([
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", q.resource_version.as_str()),
            ("timeoutSeconds", timeout.as_str()),
        ]);
        if q.send_initial_events {
            pairs.extend([
                ("sendInitialEvents", "true"),
                ("resourceVersionMatch", "NotOlderThan"),
            ]);
        }
        with_query(self.path(version), &pairs)
    }
}

fn with_query(path: String, pairs: &[(&str, &str)]) -> String {
    if pairs.is_empty() {
        path
    } else {
        format!("{path}?{}", encode(pairs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    fn url() -> ResourceUrl {
        ResourceUrl {
            role: Role::Pod,
            namespace: Some("ns1".into()),
            label_selector: "app in (a,b),tier!=db".into(),
            field_selector: "spec.nodeName=n1".into(),
        }
    }

    #[test]
    fn list_and_watch_queries_are_encoded() {
        let list = url().list_path(
            ApiGroupVersion::Current,
            &ListQuery {
                resource_version: Some("0".into()),
                limit: Some(500),
                continue_token: Some("a b".into()),
            },
        );
        assert_eq!(
            list,
            "/api/v1/namespaces/ns1/pods?labelSelector=app+in+%28a%2Cb%29%2Ctier%21%3Ddb\
             &fieldSelector=spec.nodeName%3Dn1&resourceVersion=0&resourceVersionMatch=NotOlderThan\
             &limit=500&continue=a+b"
        );
        let watch = url().watch_path(
            ApiGroupVersion::Current,
            &WatchQuery {
                resource_version: "42".into(),
                timeout_seconds: 300,
                send_initial_events: false,
            },
        );
        assert!(
            watch.ends_with(
                "&watch=1&allowWatchBookmarks=true&resourceVersion=42&timeoutSeconds=300"
            ),
            "{watch}"
        );
        let streaming = url().watch_path(
            ApiGroupVersion::Current,
            &WatchQuery {
                resource_version: String::new(),
                timeout_seconds: 300,
                send_initial_events: true,
            },
        );
        assert!(
            streaming.ends_with(
                "&watch=1&allowWatchBookmarks=true&resourceVersion=&timeoutSeconds=300\
                 &sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            ),
            "{streaming}"
        );
        let plain = ResourceUrl {
            role: Role::Node,
            namespace: None,
            label_selector: String::new(),
            field_selector: String::new(),
        };
        assert_eq!(
            plain.list_path(ApiGroupVersion::Current, &ListQuery::default()),
            "/api/v1/nodes"
        );
    }
}
