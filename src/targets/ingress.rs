//! Role `ingress`: one target per rule path, at the rule's host.

use std::sync::Arc;

use super::TargetContext;
use super::meta::{INGRESS, add_labels_and_annotations, add_namespace_metadata};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{Ingress, IngressTls};

/// The targets of an ingress.
pub(super) fn ingress_targets(ing: &Ingress, ctx: &TargetContext<'_>) -> Vec<Labels> {
    let mut common = LabelsBuilder::new();
    common.add(
        "__meta_kubernetes_namespace",
        Arc::clone(&ing.metadata.namespace),
    );
    common.add(
        "__meta_kubernetes_ingress_name",
        Arc::clone(&ing.metadata.name),
    );
    common.add(
        "__meta_kubernetes_ingress_class_name",
        Arc::clone(&ing.spec.ingress_class_name),
    );
    add_labels_and_annotations(&mut common, &INGRESS, &ing.metadata);
    add_namespace_metadata(&mut common, ctx, &ing.metadata.namespace);
    let common = common.finish();

    let mut targets = Vec::new();
    for rule in &ing.spec.rules {
        let scheme = if is_tls_host(&rule.host, &ing.spec.tls) {
            "https"
        } else {
            "http"
        };
        let root: Arc<str> = Arc::from("/");
        let paths: Vec<Arc<str>> = if rule.http.paths.is_empty() {
            vec![Arc::clone(&root)]
        } else {
            rule.http
                .paths
                .iter()
                .map(|p| {
                    if p.path.is_empty() {
                        Arc::clone(&root)
                    } else {
                        Arc::clone(&p.path)
                    }
                })
                .collect()
        };
        for path in paths {
            let mut b = LabelsBuilder::new();
            b.add("__address__", Arc::clone(&rule.host));
            b.add("__meta_kubernetes_ingress_scheme", scheme);
            b.add("__meta_kubernetes_ingress_host", Arc::clone(&rule.host));
            b.add("__meta_kubernetes_ingress_path", path);
            targets.push(common.merged(b));
        }
    }
    targets
}

/// True when a TLS entry covers `host`, literally or by a `*.` wildcard for one label.
fn is_tls_host(host: &str, tls: &[IngressTls]) -> bool {
    tls.iter().flat_map(|t| t.hosts.iter()).any(|pattern| {
        if &**pattern == host {
            return true;
        }
        match (pattern.strip_prefix("*."), host.split_once('.')) {
            (Some(suffix), Some((_, rest))) => suffix == rest,
            _ => false,
        }
    })
}
