//! `metav1.ObjectMeta` and `metav1.ListMeta` in protobuf: the fields of metadata that
//! discovery reads (`name` 1, `namespace` 3, `uid` 5, `resourceVersion` 6, `labels`
//! 11, `annotations` 12, `ownerReferences` 13); `managedFields`, timestamps and the
//! rest are stepped over.

use arcstr::ArcStr;

use super::fields::{Repeated, for_each_field, string_map};
use super::reader::WireError;
use crate::model::{ObjectMeta, OwnerReference};

/// Decodes an `ObjectMeta`.
pub(crate) fn object_meta(bytes: &[u8]) -> Result<ObjectMeta, WireError> {
    const M: &str = "ObjectMeta";
    let mut meta = ObjectMeta::default();
    let mut labels = Repeated::default();
    let mut annotations = Repeated::default();
    let mut owners = Repeated::default();
    for_each_field(bytes, M, |f| {
        match f.number {
            1 => meta.name = f.unique("name")?,
            3 => meta.namespace = f.repeated("namespace")?,
            5 => meta.uid = f.unique("uid")?,
            6 => meta.resource_version = f.unique("resourceVersion")?,
            11 => labels.note(f),
            12 => annotations.note(f),
            13 => owners.note(f),
            _ => {}
        }
        Ok(())
    })?;
    meta.labels = string_map(bytes, M, labels)?;
    meta.annotations = string_map(bytes, M, annotations)?;
    meta.owner_references =
        owners.decode(bytes, M, |f| owner_reference(f.bytes("ownerReferences")?))?;
    Ok(meta)
}

fn owner_reference(bytes: &[u8]) -> Result<OwnerReference, WireError> {
    let mut owner = OwnerReference::default();
    for_each_field(bytes, "OwnerReference", |f| {
        match f.number {
            1 => owner.kind = f.enum_value("kind")?,
            3 => owner.name = f.repeated("name")?,
            6 => owner.controller = f.bool("controller")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(owner)
}

/// A bookmark's object: its `metadata.resourceVersion` (6), and whether its
/// annotations (12, map entries of `key` 1 and `value` 2) hold
/// `k8s.io/initial-events-end: "true"`, which ends a streaming list's initial events.
pub(crate) fn bookmark_of(object: &[u8]) -> Result<(ArcStr, bool), WireError> {
    let (mut version, mut initial_events_end) = (ArcStr::new(), false);
    for_each_field(object, "object", |f| {
        if f.number == 1 {
            for_each_field(f.bytes("metadata")?, "ObjectMeta", |m| {
                match m.number {
                    6 => version = m.unique("resourceVersion")?,
                    12 => initial_events_end |= is_initial_events_end(m.bytes("annotations")?)?,
                    _ => {}
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok((version, initial_events_end))
}

/// True for the annotation entry `k8s.io/initial-events-end: "true"`.
fn is_initial_events_end(entry: &[u8]) -> Result<bool, WireError> {
    let (mut key, mut value) = ("", "");
    for_each_field(entry, "annotations", |e| {
        match e.number {
            1 => key = e.str("key")?,
            2 => value = e.str("value")?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(key == "k8s.io/initial-events-end" && value == "true")
}

/// `ListMeta`: `resourceVersion` (2) and `continue` (3).
pub(crate) fn list_meta(bytes: &[u8]) -> Result<(ArcStr, Option<String>), WireError> {
    let (mut version, mut token) = (ArcStr::new(), None);
    for_each_field(bytes, "ListMeta", |f| {
        match f.number {
            2 => version = f.unique("resourceVersion")?,
            // An empty token is no token: Go's client tests `continue != ""`.
            3 => {
                token = Some(f.str("continue")?)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string)
            }
            _ => {}
        }
        Ok(())
    })?;
    Ok((version, token))
}
