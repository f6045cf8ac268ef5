//! What a request asks for: the resource its path addresses and its query.

use std::collections::HashMap;

use actix_web::HttpRequest;

use crate::resource::Resource;

/// The resource a request addresses, parsed from its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The resource type.
    pub resource: Resource,
    /// `namespaces/{ns}/` in the path, if present.
    pub namespace: Option<String>,
    /// The object name, for single-object requests.
    pub name: Option<String>,
}

/// Splits `/api/v1/...` or `/apis/{g}/{v}/...` into resource, namespace, name.
pub fn parse_target(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (prefix, rest) = match segments.as_slice() {
        ["api", "v1", rest @ ..] => ("/api/v1".to_string(), rest),
        ["apis", group, version, rest @ ..] => (format!("/apis/{group}/{version}"), rest),
        _ => return None,
    };
    let (namespace, plural, name) = match rest {
        [plural] => (None, *plural, None),
        [plural, name] => (None, *plural, Some(*name)),
        ["namespaces", ns, plural] => (Some(*ns), *plural, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name)),
        _ => return None,
    };
    let resource = Resource::from_path(&prefix, plural)?;
    // Scope rules: a cluster-scoped resource never sits under a namespace,
    // and a namespaced object can only be addressed within its namespace.
    if !resource.namespaced() && namespace.is_some() {
        return None;
    }
    if resource.namespaced() && namespace.is_none() && name.is_some() {
        return None;
    }
    if name.is_some_and(str::is_empty) || namespace.is_some_and(str::is_empty) {
        return None;
    }
    Some(Target {
        resource,
        namespace: namespace.map(str::to_string),
        name: name.map(str::to_string),
    })
}

/// The query string as a map (last value wins, as Go's `Get` does for the first).
pub fn query_params(req: &HttpRequest) -> HashMap<String, String> {
    form_urlencoded::parse(req.query_string().as_bytes())
        .into_owned()
        .collect()
}

/// Kubernetes boolean query parameters accept `true` and `1`.
pub fn is_true(value: Option<&String>) -> bool {
    matches!(value.map(String::as_str), Some("true" | "1"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_with_scope_rules() {
        let t = parse_target("/api/v1/namespaces/ns/pods/p");
        assert_eq!(
            t,
            Some(Target {
                resource: Resource::Pods,
                namespace: Some("ns".into()),
                name: Some("p".into())
            })
        );
        assert_eq!(
            parse_target("/api/v1/namespaces/ns").map(|t| t.resource),
            Some(Resource::Namespaces)
        );
        assert_eq!(
            parse_target("/apis/discovery.k8s.io/v1/endpointslices").map(|t| t.name),
            Some(None)
        );
        assert_eq!(parse_target("/api/v1/pods/p"), None);
        assert_eq!(parse_target("/api/v1/namespaces/ns/nodes"), None);
        assert_eq!(parse_target("/api/v1/ingresses"), None);
    }
}
