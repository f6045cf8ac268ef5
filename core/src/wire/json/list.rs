//! List bodies: `{"metadata": {"resourceVersion", "continue"}, "items": [...]}`.

use arcstr::ArcStr;
use std::fmt;

use serde::Deserialize;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::error::DecodeError;
use crate::model::json::{empty_str, nullable_str};
use crate::model::{Object, ObjectSeed, Role};

/// One page of a LIST response.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ListPage {
    /// The objects of the page.
    pub items: Vec<Object>,
    /// `metadata.resourceVersion`: where the following WATCH starts.
    pub resource_version: ArcStr,
    /// `metadata.continue`: present when more pages follow.
    pub continue_token: Option<String>,
}

#[derive(Deserialize, Default)]
struct ListMeta {
    #[serde(
        rename = "resourceVersion",
        default = "empty_str",
        deserialize_with = "nullable_str"
    )]
    resource_version: ArcStr,
    #[serde(rename = "continue", default)]
    continue_token: Option<String>,
}

/// Decodes a list body of `role`, rejecting it when any item is bad.
///
/// `items: null` is an empty list (as Go decodes it); a body that is not a JSON object
/// (empty, an array, `null`) is an error.
pub fn decode_list(role: Role, body: &[u8]) -> Result<ListPage, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let page = de
        .deserialize_map(ListVisitor { role })
        .and_then(|page| de.end().map(|()| page))
        .map_err(|source| DecodeError::Json { role, source })?;
    let mut items = Vec::with_capacity(page.items.len());
    for (index, item) in page.items.into_iter().enumerate() {
        items.push(item.validate().map_err(|e| DecodeError::ListItem {
            role,
            index,
            source: Box::new(e),
        })?);
    }
    Ok(ListPage { items, ..page })
}

/// Decodes a list body of `role`, skipping bad items and returning their errors.
///
/// What the engine uses: one malformed object in a cluster must not stop discovery of
/// all the others. The fast strict pass is tried first; only a page with a bad item is
/// parsed a second time, item by item.
pub fn decode_list_lenient(
    role: Role,
    body: &[u8],
) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
    match decode_list(role, body) {
        Ok(page) => return Ok((page, Vec::new())),
        Err(DecodeError::Json { .. }) | Err(DecodeError::ListItem { .. }) => {}
        Err(other) => return Err(other),
    }
    #[derive(Deserialize)]
    struct RawList<'a> {
        #[serde(default)]
        metadata: Option<ListMeta>,
        #[serde(borrow, default)]
        items: Option<Vec<&'a RawValue>>,
    }
    let raw: RawList =
        serde_json::from_slice(body).map_err(|source| DecodeError::Json { role, source })?;
    let meta = raw.metadata.unwrap_or_default();
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for (index, item) in raw.items.unwrap_or_default().into_iter().enumerate() {
        match Object::decode(role, item.get().as_bytes()) {
            Ok(object) => items.push(object),
            Err(e) => errors.push(DecodeError::ListItem {
                role,
                index,
                source: Box::new(e),
            }),
        }
    }
    let page = ListPage {
        items,
        resource_version: meta.resource_version,
        continue_token: meta.continue_token.filter(|c| !c.is_empty()),
    };
    Ok((page, errors))
}

struct ListVisitor {
    role: Role,
}

impl<'de> Visitor<'de> for ListVisitor {
    type Value = ListPage;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a {} list object", self.role)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ListPage, A::Error> {
        let mut page = ListPage {
            resource_version: empty_str(),
            ..ListPage::default()
        };
        while let Some(key) = map.next_key::<ListField>()? {
            match key {
                ListField::Metadata => {
                    let meta: Option<ListMeta> = map.next_value()?;
                    let meta = meta.unwrap_or_default();
                    page.resource_version = meta.resource_version;
                    page.continue_token = meta.continue_token.filter(|c| !c.is_empty());
                }
                ListField::Items => page.items = map.next_value_seed(ItemsSeed(self.role))?,
                ListField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(page)
    }
}

enum ListField {
    Metadata,
    Items,
    Other,
}

impl<'de> Deserialize<'de> for ListField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldVisitor;
        impl Visitor<'_> for FieldVisitor {
            type Value = ListField;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E>(self, v: &str) -> Result<ListField, E> {
                Ok(match v {
                    "metadata" => ListField::Metadata,
                    "items" => ListField::Items,
                    _ => ListField::Other,
                })
            }
        }
        d.deserialize_identifier(FieldVisitor)
    }
}

/// `items`: a sequence of objects of one role, or `null`.
struct ItemsSeed(Role);

impl<'de> DeserializeSeed<'de> for ItemsSeed {
    type Value = Vec<Object>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Object>, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for ItemsSeed {
    type Value = Vec<Object>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a list of {} objects", self.0)
    }
    fn visit_none<E>(self) -> Result<Vec<Object>, E> {
        Ok(Vec::new())
    }
    fn visit_unit<E>(self) -> Result<Vec<Object>, E> {
        Ok(Vec::new())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Vec<Object>, D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Object>, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(16));
        while let Some(item) = seq.next_element_seed(ObjectSeed(self.0))? {
            items.push(item);
        }
        Ok(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"{"kind":"PodList","metadata":{"resourceVersion":"7","continue":"abc"},
        "items":[{"metadata":{"name":"a","namespace":"n"}},{"metadata":{"name":"b","namespace":"n"}}]}"#;

    #[test]
    fn decodes_items_resource_version_and_continue() {
        let page = decode_list(Role::Pod, GOOD.as_bytes()).unwrap();
        assert_eq!(&*page.resource_version, "7");
        assert_eq!(page.continue_token.as_deref(), Some("abc"));
        let names: Vec<_> = page.items.iter().map(|o| o.key().to_string()).collect();
        assert_eq!(names, ["n/a", "n/b"]);
    }

    #[test]
    fn null_items_is_an_empty_list_but_a_null_body_is_an_error() {
        let page = decode_list(
            Role::Node,
            br#"{"metadata":{"resourceVersion":"1"},"items":null}"#,
        )
        .unwrap();
        assert!(page.items.is_empty());
        assert!(decode_list(Role::Node, b"null").is_err());
        assert!(decode_list(Role::Node, b"").is_err());
        assert!(decode_list(Role::Node, b"[1,23]").is_err());
    }

    #[test]
    fn strict_rejects_a_bad_item_and_lenient_skips_it() {
        let body = br#"{"metadata":{"resourceVersion":"9"},"items":[
            {"metadata":{"name":"ok","namespace":"n"}},
            {"metadata":{"namespace":"n"}},
            {"metadata":{"name":"p","namespace":"n"},"spec":{"containers":[{"name":"c","ports":[{"containerPort":"80"}]}]}}]}"#;
        let err = decode_list(Role::Pod, body).unwrap_err();
        assert!(err.to_string().contains("pod"), "{err}");
        let (page, errors) = decode_list_lenient(Role::Pod, body).unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(&*page.resource_version, "9");
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0].to_string().contains("metadata.name"),
            "{}",
            errors[0]
        );
        assert!(errors[1].to_string().contains("item 2"), "{}", errors[1]);
    }

    #[test]
    fn lenient_still_rejects_a_broken_envelope() {
        assert!(decode_list_lenient(Role::Pod, br#"{"items": [1,2,3]"#).is_err());
    }
}
