//! A protobuf LIST body decoded while it arrives, item by item, as
//! [`crate::wire::json::ListStream`] does for JSON: memory holds the decoded objects and at
//! most one item's bytes, never the body.
//!
//! The body is `k8s\0`, then the envelope's fields; its `raw` field (2) is the list,
//! whose length comes first, then its own fields: `metadata` (1) and one `items` (2)
//! per object, each length-prefixed. So the stream reads the envelope's fields, enters
//! `raw` knowing how many bytes it spans, and takes each item once all its bytes are
//! in. An item longer than `max_object` is skipped as it streams past and reported.

use super::envelope::MAGIC;
use super::meta::list_meta;
use super::object::decode_object;
use super::reader::{Reader, VarintError, WireError, read_varint};
use crate::error::DecodeError;
use crate::model::{Object, Role};
use crate::wire::json::ListPage;

/// Where in the body the stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Before the four magic bytes.
    Magic,
    /// Among the envelope's fields (before or after `raw`).
    Envelope,
    /// Inside `raw`, with this many of its bytes still to come.
    List { remaining: u64 },
    /// Stepping over a field too large to hold: `left` of its bytes still to come,
    /// then `remaining` of `raw`'s.
    Skipping { left: u64, remaining: u64 },
}

/// An incremental decoder of one protobuf LIST body of one role.
#[derive(Debug)]
pub struct ProtoListStream {
    role: Role,
    max_object: usize,
    stage: Stage,
    /// Bytes received and not consumed; `pending[pos..]` is still to be read.
    pending: Vec<u8>,
    pos: usize,
    api_version: String,
    has_raw: bool,
    /// The envelope named a list of another kind.
    wrong_kind: Option<String>,
    page: ListPage,
    errors: Vec<DecodeError>,
    index: usize,
}

/// What reading at the current position gave.
enum Step {
    /// Read this many bytes; go on.
    Consumed(usize),
    /// More bytes are needed.
    NeedMore,
}

impl ProtoListStream {
    /// A decoder for a LIST of `role` whose items may have at most `max_object` bytes.
    pub fn new(role: Role, max_object: usize) -> ProtoListStream {
        ProtoListStream {
            role,
            max_object,
            stage: Stage::Magic,
            pending: Vec::new(),
            pos: 0,
            api_version: String::new(),
            has_raw: false,
            wrong_kind: None,
            page: ListPage::default(),
            errors: Vec::new(),
            index: 0,
        }
    }

    /// Feeds the next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        // Taken out while read, so that reading may update the rest of `self`.
        let mut pending = std::mem::take(&mut self.pending);
        pending.extend_from_slice(chunk);
        let result = self.read(&pending);
        // Keep only what is still to be read.
        pending.drain(..self.pos);
        self.pos = 0;
        self.pending = pending;
        result
    }

    /// Reads as far as `pending` allows.
    fn read(&mut self, pending: &[u8]) -> Result<(), DecodeError> {
        loop {
            let step = self.step(&pending[self.pos..]);
            match step.map_err(|source| DecodeError::Protobuf {
                role: self.role,
                source,
            })? {
                Step::Consumed(n) => self.pos += n,
                Step::NeedMore => return Ok(()),
            }
            if let Some(kind) = self.wrong_kind.take() {
                return Err(DecodeError::WrongKind {
                    role: self.role,
                    kind,
                });
            }
        }
    }

    /// Reads one piece at the current position.
    fn step(&mut self, rest: &[u8]) -> Result<Step, WireError> {
        let role = self.role;
        match self.stage {
            Stage::Magic => {
                if rest.len() < MAGIC.len() {
                    return Ok(Step::NeedMore);
                }
                if &rest[..4] != MAGIC {
                    return Err(WireError::NoMagic);
                }
                self.stage = Stage::Envelope;
                Ok(Step::Consumed(4))
            }
            Stage::Skipping { left, remaining } => {
                let n = (rest.len() as u64).min(left);
                if n == 0 {
                    return Ok(Step::NeedMore);
                }
                self.stage = match left - n {
                    0 => Stage::List { remaining },
                    left => Stage::Skipping { left, remaining },
                };
                Ok(Step::Consumed(n as usize))
            }
            Stage::Envelope => self.envelope_field(rest),
            Stage::List { remaining: 0 } => {
                self.stage = Stage::Envelope;
                Ok(Step::Consumed(0))
            }
            Stage::List { remaining } => self.list_field(role, remaining, rest),
        }
    }

    /// One field of the envelope: `raw` is entered, `typeMeta` read, others stepped
    /// over once whole.
    fn envelope_field(&mut self, rest: &[u8]) -> Result<Step, WireError> {
        let Some(header) = field_header(rest, "runtime.Unknown")? else {
            return Ok(Step::NeedMore);
        };
        if header.number == 2 && header.length.is_some() {
            self.has_raw = true;
            self.stage = Stage::List {
                remaining: header.length.unwrap_or(0),
            };
            return Ok(Step::Consumed(header.size));
        }
        let length = header.length.unwrap_or(0);
        if length > self.max_object as u64 {
            return Err(WireError::FieldTooLarge {
                message: "runtime.Unknown",
                length,
            });
        }
        let whole = header.size + length as usize;
        if rest.len() < whole {
            return Ok(Step::NeedMore);
        }
        if header.number == 1 {
            self.type_meta(&rest[header.size..whole])?;
        }
        Ok(Step::Consumed(whole))
    }

    /// The envelope's `typeMeta`: the list's kind is checked against the role.
    fn type_meta(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        let mut fields = Reader::new(bytes, "runtime.TypeMeta");
        while let Some((number, value)) = fields.next_field()? {
            match number {
                1 => self.api_version = value.str("runtime.TypeMeta", "apiVersion", 1)?.to_string(),
                2 => {
                    let kind = value.str("runtime.TypeMeta", "kind", 2)?;
                    if !kind.is_empty() && kind.strip_suffix("List") != Some(self.role.kind()) {
                        self.wrong_kind = Some(kind.to_string());
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// One field of the list (`metadata`, an item, or another to step over).
    fn list_field(&mut self, role: Role, remaining: u64, rest: &[u8]) -> Result<Step, WireError> {
        let Some(header) = field_header(rest, "List")? else {
            return Ok(Step::NeedMore);
        };
        let length = header.length.unwrap_or(0);
        let whole = header.size as u64 + length;
        if whole > remaining {
            return Err(WireError::Truncated {
                message: "List",
                at: self.pos,
            });
        }
        let after = remaining - whole;
        if length > self.max_object as u64 {
            if header.number != 2 {
                // The list's metadata (or an unknown field) that large is no list.
                return Err(WireError::FieldTooLarge {
                    message: "List",
                    length,
                });
            }
            self.reject(DecodeError::TooLarge {
                role,
                limit: self.max_object,
            });
            self.stage = Stage::Skipping {
                left: length,
                remaining: after,
            };
            return Ok(Step::Consumed(header.size));
        }
        let whole = whole as usize;
        if rest.len() < whole {
            return Ok(Step::NeedMore);
        }
        let value = &rest[header.size..whole];
        match (header.number, header.length.is_some()) {
            (1, true) => (self.page.resource_version, self.page.continue_token) = list_meta(value)?,
            (2, true) => match decode_object(role, &self.api_version, "", value) {
                Ok(object) => {
                    self.page.items.push(object);
                    self.index += 1;
                }
                Err(e) => self.reject(e),
            },
            _ => {}
        }
        self.stage = Stage::List { remaining: after };
        Ok(Step::Consumed(whole))
    }

    /// Reports the current item as skipped.
    fn reject(&mut self, source: DecodeError) {
        self.errors.push(DecodeError::ListItem {
            role: self.role,
            index: self.index,
            source: Box::new(source),
        });
        self.index += 1;
    }

    /// How many items have been found so far (decoded or skipped).
    pub(crate) fn items_seen(&self) -> usize {
        self.index
    }

    /// Takes the items decoded so far.
    pub(crate) fn take_items(&mut self) -> Vec<Object> {
        std::mem::take(&mut self.page.items)
    }

    /// How many decoded items are waiting to be taken.
    pub(crate) fn len(&self) -> usize {
        self.page.items.len()
    }

    /// Ends the body: the page (with the items not taken yet) and the errors of the
    /// items skipped. A body cut before its end, or of another kind, is an error.
    pub fn finish(self) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
        let cut = |message| DecodeError::Protobuf {
            role: self.role,
            source: WireError::Truncated {
                message,
                at: self.pending.len(),
            },
        };
        match self.stage {
            Stage::Envelope if self.pending.is_empty() && self.has_raw => {
                Ok((self.page, self.errors))
            }
            Stage::Envelope if self.pending.is_empty() => Err(DecodeError::Protobuf {
                role: self.role,
                source: WireError::Missing {
                    message: "runtime.Unknown",
                    name: "raw",
                },
            }),
            Stage::Magic if self.pending.is_empty() => Err(DecodeError::Protobuf {
                role: self.role,
                source: WireError::NoMagic,
            }),
            Stage::Magic | Stage::Envelope => Err(cut("runtime.Unknown")),
            Stage::List { .. } | Stage::Skipping { .. } => Err(cut("List")),
        }
    }
}

/// A field's number, the size of its tag (and length prefix), and its value's length
/// if it is length-delimited (else the whole field is the header).
struct FieldHeader {
    number: u64,
    size: usize,
    length: Option<u64>,
}

/// The header of the field at the start of `bytes`; `None` while incomplete.
fn field_header(bytes: &[u8], message: &'static str) -> Result<Option<FieldHeader>, WireError> {
    let varint = |bytes: &[u8], at: usize| match read_varint(bytes) {
        Ok(v) => Ok(Some(v)),
        Err(VarintError::Truncated) => Ok(None),
        Err(VarintError::TooLong) => Err(WireError::BadVarint { message, at }),
    };
    let Some((tag, tag_size)) = varint(bytes, 0)? else {
        return Ok(None);
    };
    let (number, wire_type) = (tag >> 3, (tag & 7) as u8);
    let rest = &bytes[tag_size..];
    let fixed = |size: usize| {
        (rest.len() >= size).then_some(FieldHeader {
            number,
            size: tag_size + size,
            length: None,
        })
    };
    Ok(match wire_type {
        0 => varint(rest, tag_size)?.map(|(_, size)| FieldHeader {
            number,
            size: tag_size + size,
            length: None,
        }),
        1 => fixed(8),
        5 => fixed(4),
        2 => varint(rest, tag_size)?.map(|(length, size)| FieldHeader {
            number,
            size: tag_size + size,
            length: Some(length),
        }),
        _ => {
            return Err(WireError::UnsupportedWireType {
                message,
                field: number,
                wire_type,
            });
        }
    })
}
