//! A LIST body in protobuf: the envelope (kind `<Kind>List`), whose `raw` is the list:
//! `metadata` 1 (`ListMeta`) and `items` 2, every List type of the API numbered alike.
//! Items are decoded leniently, as the JSON path's are: a bad item is skipped and
//! reported; a broken envelope or list is an error.

use super::envelope::Envelope;
use super::fields::for_each_field;
use super::meta::list_meta;
use super::object::decode_object;
use crate::error::DecodeError;
use crate::model::Role;
use crate::wire::json::ListPage;

/// Decodes a protobuf LIST body of `role`: the page, and the errors of the items that
/// were skipped.
pub fn decode_list(role: Role, body: &[u8]) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
    let protobuf = |source| DecodeError::Protobuf { role, source };
    let envelope = Envelope::open(body).map_err(protobuf)?;
    if !envelope.kind.is_empty() && envelope.kind.strip_suffix("List") != Some(role.kind()) {
        return Err(DecodeError::WrongKind {
            role,
            kind: envelope.kind.to_string(),
        });
    }
    let mut page = ListPage::default();
    let mut errors = Vec::new();
    let mut index = 0;
    for_each_field(envelope.raw, "List", |f| {
        match f.number {
            1 => (page.resource_version, page.continue_token) = list_meta(f.bytes("metadata")?)?,
            2 => {
                let item = f.bytes("items")?;
                match decode_object(role, envelope.api_version, "", item) {
                    Ok(object) => page.items.push(object),
                    Err(e) => errors.push(DecodeError::ListItem {
                        role,
                        index,
                        source: Box::new(e),
                    }),
                }
                index += 1;
            }
            _ => {}
        }
        Ok(())
    })
    .map_err(protobuf)?;
    Ok((page, errors))
}
