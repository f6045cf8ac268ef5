//! The listeners a route attaches to, and the hostnames each of them admits.
//!
//! A route's `parentRefs` are resolved through the group's cache (so each look-up is a
//! dependency: a Gateway's change recomputes exactly the routes that read it). A Gateway
//! parent gives its listeners, narrowed by the reference's `sectionName` (a listener's
//! name) and `port` when set; a Service parent gives its ports as listeners with no
//! hostname. The Gateway API's rules decide the rest: a reference without `namespace`
//! means the route's namespace, one without `kind` means a Gateway, and a `*.` wildcard
//! covers one or more leading labels.

use arcstr::ArcStr;

use super::context::TargetContext;
use crate::model::ParentReference;

/// One listener a route is attached to (a Gateway listener, or a Service port).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AttachedListener {
    /// The listener's hostname pattern; empty admits every hostname.
    pub hostname: ArcStr,
    /// `HTTP`, `HTTPS`, … (a Service port's `TCP`, `UDP`, `SCTP`).
    pub protocol: ArcStr,
}

/// The listeners `refs` name, in reference then listener order; references to objects
/// not in the cache (or of other kinds) give none.
pub(super) fn attached_listeners(
    route_namespace: &ArcStr,
    refs: &[ParentReference],
    ctx: &TargetContext<'_>,
) -> Vec<AttachedListener> {
    let mut out = Vec::new();
    for r in refs {
        let namespace = if r.namespace.is_empty() {
            route_namespace
        } else {
            &r.namespace
        };
        match &*r.kind {
            "" | "Gateway" => gateway_listeners(r, namespace, ctx, &mut out),
            "Service" => service_listeners(r, namespace, ctx, &mut out),
            _ => {}
        }
    }
    out
}

fn gateway_listeners(
    r: &ParentReference,
    namespace: &str,
    ctx: &TargetContext<'_>,
    out: &mut Vec<AttachedListener>,
) {
    let Some(gateway) = ctx.cache.gateway(namespace, &r.name) else {
        return;
    };
    out.extend(
        gateway
            .spec
            .listeners
            .iter()
            .filter(|l| selected(r, &l.name, l.port))
            .map(|l| AttachedListener {
                hostname: ArcStr::clone(&l.hostname),
                protocol: ArcStr::clone(&l.protocol),
            }),
    );
}

fn service_listeners(
    r: &ParentReference,
    namespace: &str,
    ctx: &TargetContext<'_>,
    out: &mut Vec<AttachedListener>,
) {
    let Some(service) = ctx.cache.service(namespace, &r.name) else {
        return;
    };
    out.extend(
        service
            .spec
            .ports
            .iter()
            .filter(|p| selected(r, &p.name, p.port))
            .map(|p| AttachedListener {
                hostname: arcstr::literal!(""),
                protocol: ArcStr::clone(&p.protocol),
            }),
    );
}

/// True when the reference's `sectionName` and `port` (each when set) select a listener
/// (or port) called `name` on `port`.
fn selected(r: &ParentReference, name: &str, port: i64) -> bool {
    (r.section_name.is_empty() || *r.section_name == *name) && (r.port == 0 || r.port == port)
}

/// The hostnames of a route (`route_hostnames`) that a listener with hostname pattern
/// `listener` admits, each as the more specific of the two names. A route without
/// hostnames takes the listener's, when that names one host (a wildcard or an empty
/// hostname gives no address to probe).
pub(super) fn admitted_hostnames(listener: &ArcStr, route_hostnames: &[ArcStr]) -> Vec<ArcStr> {
    if route_hostnames.is_empty() {
        let concrete = !listener.is_empty() && !listener.starts_with("*.");
        return concrete
            .then(|| ArcStr::clone(listener))
            .into_iter()
            .collect();
    }
    route_hostnames
        .iter()
        .filter_map(|h| intersection(listener, h))
        .collect()
}

/// The hostname both a listener's pattern and a route's hostname admit, if any: the
/// route's when the listener's covers it, the listener's when the route's covers it.
fn intersection(listener: &ArcStr, route: &ArcStr) -> Option<ArcStr> {
    if listener.is_empty() || listener == route || covers(listener, route) {
        Some(ArcStr::clone(route))
    } else if covers(route, listener) {
        Some(ArcStr::clone(listener))
    } else {
        None
    }
}

/// True when `pattern` is a `*.` wildcard whose suffix `host` ends with, after at least
/// one more label (`*.example.com` covers `a.example.com` and `a.b.example.com`, not
/// `example.com`).
fn covers(pattern: &str, host: &str) -> bool {
    pattern.strip_prefix('*').is_some_and(|suffix| {
        suffix.starts_with('.') && host.len() > suffix.len() && host.ends_with(suffix)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(listener: &str, route: &[&str]) -> Vec<String> {
        let route: Vec<ArcStr> = route.iter().map(|h| ArcStr::from(*h)).collect();
        admitted_hostnames(&ArcStr::from(listener), &route)
            .iter()
            .map(|h| h.to_string())
            .collect()
    }

    #[test]
    fn listener_patterns_admit_route_hostnames_as_the_gateway_api_says() {
        assert_eq!(hosts("", &["foo"]), ["foo"]);
        assert_eq!(hosts("localhost", &["localhost"]), ["localhost"]);
        assert!(hosts("localhost", &["localhost2"]).is_empty());
        assert!(hosts("*.foo", &["bar"]).is_empty());
        assert!(hosts("foo.baz", &["foo.bar"]).is_empty());
        assert!(hosts("a.x.yyy", &["b.x.yyy"]).is_empty());
        assert_eq!(
            hosts("*.x.yyy", &["b.x.yyy", "a.x.yyy", "z.y.yyy"]),
            ["b.x.yyy", "a.x.yyy"]
        );
        assert_eq!(hosts("*.x.yyy", &["a.b.x.yyy"]), ["a.b.x.yyy"]);
        assert!(hosts("*.x.yyy", &["x.yyy"]).is_empty());
        assert_eq!(hosts("a.x.yyy", &["*.x.yyy"]), ["a.x.yyy"]);
        assert_eq!(hosts("*.x.yyy", &["*.x.yyy"]), ["*.x.yyy"]);
    }

    #[test]
    fn a_route_without_hostnames_takes_a_concrete_listener_hostname() {
        assert_eq!(hosts("a.example.com", &[]), ["a.example.com"]);
        assert!(hosts("*.example.com", &[]).is_empty());
        assert!(hosts("", &[]).is_empty());
    }
}
