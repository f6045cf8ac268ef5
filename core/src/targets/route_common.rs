//! Labels every target of a route carries, whatever its kind: the namespace, the
//! route's name, its labels and annotations, and (with `attach_metadata.namespace`) its
//! namespace's.

use arcstr::ArcStr;

use super::context::TargetContext;
use super::meta::{MetaPrefixes, add_labels_and_annotations, add_namespace_metadata};
use crate::labels::{Labels, LabelsBuilder};
use crate::model::{ObjectMeta, ParentReference};

/// The label names that differ between the route kinds.
pub(super) struct RouteNames {
    /// `__meta_kubernetes_<kind>_name`.
    pub name: &'static str,
    /// `__meta_kubernetes_<kind>_parent_ref_name` (Prometheus' draft).
    pub parent_ref_name: &'static str,
    /// The kind's label and annotation prefixes.
    pub prefixes: &'static MetaPrefixes,
}

/// The labels shared by every target of a route with `meta` and `parents`.
pub(super) fn route_common_labels(
    names: &RouteNames,
    meta: &ObjectMeta,
    parents: &[ParentReference],
    ctx: &TargetContext<'_>,
) -> Labels {
    let mut b = LabelsBuilder::new();
    b.add(
        arcstr::literal!("__meta_kubernetes_namespace"),
        ArcStr::clone(&meta.namespace),
    );
    b.add(names.name, ArcStr::clone(&meta.name));
    // The draft names the first parent only, and only in Prometheus' semantics.
    if !ctx.semantics.routes_follow_listeners()
        && let Some(first) = parents.first()
    {
        b.add(names.parent_ref_name, ArcStr::clone(&first.name));
    }
    add_labels_and_annotations(&mut b, names.prefixes, meta);
    add_namespace_metadata(&mut b, ctx, &meta.namespace);
    b.finish()
}

/// A route's own hostnames, or one empty hostname when it lists none (Prometheus'
/// draft: the route still gives its targets, with an empty address).
pub(super) fn own_hostnames(hostnames: &[ArcStr]) -> Vec<ArcStr> {
    if hostnames.is_empty() {
        vec![arcstr::literal!("")]
    } else {
        hostnames.to_vec()
    }
}
