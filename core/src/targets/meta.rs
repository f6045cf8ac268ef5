//! Labels every role derives from `metadata`, and from the related namespace and node.

use arcstr::ArcStr;

use super::context::TargetContext;
use crate::labels::{Labels, LabelsBuilder, LabelsMemo, prefixed_label_names};
use crate::model::{ObjectMeta, StringMap};

/// The four label-name prefixes of one kind's labels and annotations.
pub(super) struct MetaPrefixes {
    label: &'static str,
    label_present: &'static str,
    annotation: &'static str,
    annotation_present: &'static str,
}

macro_rules! prefixes {
    ($name:ident, $kind:literal) => {
        pub(super) const $name: MetaPrefixes = MetaPrefixes {
            label: concat!("__meta_kubernetes_", $kind, "_label_"),
            label_present: concat!("__meta_kubernetes_", $kind, "_labelpresent_"),
            annotation: concat!("__meta_kubernetes_", $kind, "_annotation_"),
            annotation_present: concat!("__meta_kubernetes_", $kind, "_annotationpresent_"),
        };
    };
}

prefixes!(POD, "pod");
prefixes!(NODE, "node");
prefixes!(SERVICE, "service");
prefixes!(ENDPOINTS, "endpoints");
prefixes!(ENDPOINTSLICE, "endpointslice");
prefixes!(INGRESS, "ingress");
prefixes!(NAMESPACE, "namespace");
prefixes!(GATEWAY, "gateway");
prefixes!(HTTPROUTE, "httproute");
prefixes!(GRPCROUTE, "grpcroute");

/// Adds `<prefix>_label_<name>`, `_labelpresent_<name>`, `_annotation_<name>` and
/// `_annotationpresent_<name>` for every label and annotation of `meta`.
///
/// One prefix at a time, the prefixes in name order: the API server sends maps sorted
/// by key, so the labels usually arrive sorted and the builder need not sort them (see
/// [`LabelsBuilder::finish`]). A name repeated within a block (two keys that sanitize
/// alike) keeps its relative order, so the last still wins.
pub(super) fn add_labels_and_annotations(
    b: &mut LabelsBuilder,
    p: &MetaPrefixes,
    meta: &ObjectMeta,
) {
    add_annotations(b, p, meta);
    add_labels(b, p, meta);
}

/// The `_annotation_` and `_annotationpresent_` half of [`add_labels_and_annotations`].
pub(super) fn add_annotations(b: &mut LabelsBuilder, p: &MetaPrefixes, meta: &ObjectMeta) {
    add_map(b, &meta.annotations, p.annotation, p.annotation_present);
}

/// The `_label_` and `_labelpresent_` half of [`add_labels_and_annotations`].
pub(super) fn add_labels(b: &mut LabelsBuilder, p: &MetaPrefixes, meta: &ObjectMeta) {
    add_map(b, &meta.labels, p.label, p.label_present);
}

fn add_map(b: &mut LabelsBuilder, map: &StringMap, prefix: &'static str, present: &'static str) {
    // Each block is put in name order here if need be (keys sorted by the API server
    // can be out of order once sanitized: `node-role.kubernetes.io/worker` sorts before
    // `node.kubernetes.io/instance-type`, but `node_role_…` after `node_kubernetes_…`),
    // so one such pair costs a sort of this block, not of the whole label set.
    let start = b.len();
    // Both names come from one look-up; the presence names wait for their block.
    let mut present_names = Vec::with_capacity(map.len());
    for (k, v) in map.iter() {
        let (name, present_name) = prefixed_label_names(prefix, present, k);
        b.add(name, ArcStr::clone(v));
        present_names.push(present_name);
    }
    b.sort_from(start);
    let start = b.len();
    for name in present_names {
        b.add(name, true_str());
    }
    b.sort_from(start);
}

/// With `attach_metadata.namespace`, adds the labels and annotations of namespace `ns`
/// (when it is in the cache).
pub(super) fn add_namespace_metadata(b: &mut LabelsBuilder, ctx: &TargetContext<'_>, ns: &str) {
    if !ctx.attach.namespace {
        return;
    }
    if let Some(namespace) = ctx.cache.namespace(ns) {
        b.add_all(metadata_labels(
            &namespace.metadata_labels,
            &NAMESPACE,
            &namespace.metadata,
        ));
    }
}

/// With `attach_metadata.node`, adds `__meta_kubernetes_node_name` and the labels and
/// annotations of node `name` (when it is in the cache): Prometheus' node labels of an
/// endpoint target, found through the address rather than a pod.
pub(super) fn add_node_metadata(b: &mut LabelsBuilder, ctx: &TargetContext<'_>, name: &str) {
    if !ctx.attach.node {
        return;
    }
    if let Some(node) = ctx.cache.node(name) {
        b.add_all(metadata_labels(
            &node.metadata_labels,
            &NODE,
            &node.metadata,
        ));
        b.add(
            arcstr::literal!("__meta_kubernetes_node_name"),
            ArcStr::clone(&node.metadata.name),
        );
    }
}

/// The labels and annotations of a node or namespace (`meta`, with `p`'s prefixes),
/// built once per object and kept in its `memo`: every pod on a node carries the same
/// ~20 node labels, which would otherwise be looked up and copied for each of them.
pub(super) fn metadata_labels<'a>(
    memo: &'a LabelsMemo,
    p: &MetaPrefixes,
    meta: &ObjectMeta,
) -> &'a Labels {
    memo.get_or_init(|| {
        let mut b = LabelsBuilder::new();
        add_labels_and_annotations(&mut b, p, meta);
        b.finish()
    })
}

/// `"true"`: a static string, no allocation or reference count.
pub(super) fn true_str() -> ArcStr {
    arcstr::literal!("true")
}

/// `"false"`: a static string, no allocation or reference count.
pub(super) fn false_str() -> ArcStr {
    arcstr::literal!("false")
}

/// The shared string for a boolean.
pub(super) fn bool_str(v: bool) -> ArcStr {
    if v { true_str() } else { false_str() }
}
