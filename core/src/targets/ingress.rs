//! Role `ingress`: one target per rule path, at the rule's host.

use arcstr::ArcStr;
use std::collections::HashSet;

use super::context::TargetContext;
use super::meta::{INGRESS, add_labels_and_annotations, add_namespace_metadata};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{Ingress, IngressTls};

/// The targets of an ingress.
pub(super) fn ingress_targets(ing: &Ingress, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let mut common = LabelsBuilder::new();
    common.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&ing.metadata.namespace),
    );
    common.add(
        arcstr::literal!("__meta_kubernetes_ingress_name"),
        ArcStr::clone(&ing.metadata.name),
    );
    common.add(
        arcstr::literal!("__meta_kubernetes_ingress_class_name"),
        ArcStr::clone(&ing.spec.ingress_class_name),
    );
    add_labels_and_annotations(&mut common, &INGRESS, &ing.metadata);
    add_namespace_metadata(&mut common, ctx, &ing.metadata.namespace);
    let common = common.finish();

    let tls = TlsHosts::new(&ing.spec.tls, ctx.semantics.bare_wildcard_tls_host());
    let root_without_paths = ctx.semantics.empty_http_rule_gives_root();
    let mut targets = Vec::new();
    for rule in &ing.spec.rules {
        let scheme = if tls.covers(&rule.host) {
            "https"
        } else {
            "http"
        };
        let root: ArcStr = ArcStr::from("/");
        let paths: Vec<ArcStr> = match &rule.http {
            None => vec![ArcStr::clone(&root)],
            Some(http) if http.paths.is_empty() && root_without_paths => {
                vec![ArcStr::clone(&root)]
            }
            Some(http) => http
                .paths
                .iter()
                .map(|p| {
                    if p.path.is_empty() {
                        ArcStr::clone(&root)
                    } else {
                        ArcStr::clone(&p.path)
                    }
                })
                .collect(),
        };
        for path in paths {
            let mut b = LabelsBuilder::new();
            b.add(arcstr::literal!("__address__"), ArcStr::clone(&rule.host));
            b.add(arcstr::literal!("__meta_kubernetes_ingress_scheme"), scheme);
            b.add(
                arcstr::literal!("__meta_kubernetes_ingress_host"),
                ArcStr::clone(&rule.host),
            );
            b.add(arcstr::literal!("__meta_kubernetes_ingress_path"), path);
            targets.push(common.merged(b));
        }
    }
    targets
}

/// The hosts an ingress' TLS entries cover: exact names, and the suffixes of `*.`
/// wildcards (which cover exactly one more label). Built once per ingress, so rules ×
/// TLS hosts costs rules + hosts (found by `tests/huge_objects.rs`).
struct TlsHosts<'a> {
    exact: HashSet<&'a str>,
    wildcard_suffixes: HashSet<&'a str>,
    /// A bare `*` is listed and covers every one-label host.
    bare_wildcard: bool,
}

impl<'a> TlsHosts<'a> {
    /// The hosts of `tls`; `bare_wildcard`: whether a bare `*` is a pattern (the
    /// semantics' choice).
    fn new(tls: &'a [IngressTls], bare_wildcard: bool) -> TlsHosts<'a> {
        let mut hosts = TlsHosts {
            exact: HashSet::new(),
            wildcard_suffixes: HashSet::new(),
            bare_wildcard: false,
        };
        for pattern in tls.iter().flat_map(|t| t.hosts.iter()) {
            hosts.exact.insert(&**pattern);
            hosts.bare_wildcard |= bare_wildcard && &**pattern == "*";
            if let Some(suffix) = pattern.strip_prefix("*.") {
                hosts.wildcard_suffixes.insert(suffix);
            }
        }
        hosts
    }

    /// True when a TLS entry covers `host`, literally or by a `*.` wildcard.
    fn covers(&self, host: &str) -> bool {
        self.exact.contains(host)
            || (self.bare_wildcard && !host.contains('.'))
            || host
                .split_once('.')
                .is_some_and(|(_, rest)| self.wildcard_suffixes.contains(rest))
    }
}
