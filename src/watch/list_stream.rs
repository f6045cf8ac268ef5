//! Decoding a LIST body while it arrives, item by item.
//!
//! A watch-cache LIST of a big cluster is one body of hundreds of megabytes (100,000
//! pods: ~500 MB). Buffering it whole, then decoding, holds the body and the decoded
//! objects at once. [`ListStream`] instead finds each item of `items` as its bytes
//! arrive (a byte scanner that tracks strings and nesting only), decodes it, and drops
//! its bytes: memory holds the decoded objects and one item's bytes, and decoding
//! overlaps the transfer. Items are decoded leniently, as [`super::decode_list_lenient`]
//! does: a bad item is skipped and reported, a broken envelope is an error.

use arcstr::ArcStr;
use serde::de::Error as _;

use super::ListPage;
use crate::error::DecodeError;
use crate::model::json::empty_str;
use crate::model::{Object, Role};

/// One item of a LIST, found but not decoded (see [`ListStream::defer_every`]).
#[derive(Debug, Clone)]
pub struct UndecodedItem {
    /// The list's role.
    pub role: Role,
    /// Its place in the list (from 0), for error messages.
    pub index: usize,
    /// Its JSON.
    pub json: Vec<u8>,
}

impl UndecodedItem {
    /// Decodes it, as [`ListStream`] would have.
    pub fn decode(&self) -> Result<Object, DecodeError> {
        decode_list_item(self.role, self.index, &self.json)
    }
}

/// Decodes item `index` of a LIST of `role`; an error says which item it was.
fn decode_list_item(role: Role, index: usize, json: &[u8]) -> Result<Object, DecodeError> {
    Object::decode(role, json).map_err(|e| DecodeError::ListItem {
        role,
        index,
        source: Box::new(e),
    })
}

/// Where in the envelope the scanner is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capture {
    /// Not inside a captured value.
    None,
    /// Inside `metadata`'s object.
    Metadata,
    /// Inside the `items` array, between items.
    Items,
    /// Inside one item.
    Item,
}

/// An incremental decoder of one LIST body of one role.
#[derive(Debug)]
pub struct ListStream {
    role: Role,
    /// Bytes not yet consumed; `pending[..scanned]` has been scanned.
    pending: Vec<u8>,
    scanned: usize,
    /// Offset in `pending` where the captured value (item or metadata) starts.
    start: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// At depth 1: the next string is a key (else a value).
    expect_key: bool,
    key_start: usize,
    key: Vec<u8>,
    capture: Capture,
    seen_object: bool,
    metadata: Option<Vec<u8>>,
    items: Vec<Object>,
    /// Items kept as bytes for the caller to decode elsewhere (see
    /// [`ListStream::defer_every`]).
    undecoded: Vec<UndecodedItem>,
    /// Every `defer_every`-th item is kept undecoded; 0: none.
    defer_every: usize,
    errors: Vec<DecodeError>,
    index: usize,
}

fn malformed(role: Role, why: &str) -> DecodeError {
    DecodeError::Json {
        role,
        source: serde_json::Error::custom(format!("list body: {why}")),
    }
}

impl ListStream {
    /// A decoder for a LIST of `role`.
    pub fn new(role: Role) -> ListStream {
        ListStream {
            role,
            pending: Vec::new(),
            scanned: 0,
            start: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            expect_key: true,
            key_start: 0,
            key: Vec::new(),
            capture: Capture::None,
            seen_object: false,
            metadata: None,
            items: Vec::new(),
            undecoded: Vec::new(),
            defer_every: 0,
            errors: Vec::new(),
            index: 0,
        }
    }

    /// From now on, keep every `n`-th item as bytes instead of decoding it (0: decode
    /// all), for [`ListStream::take_undecoded`]: how a caller has another thread decode
    /// part of a big LIST. Items left undecoded at [`ListStream::finish`] are decoded
    /// there, so a caller that never takes them loses nothing.
    pub fn defer_every(&mut self, n: usize) {
        self.defer_every = n;
    }

    /// Takes the items kept undecoded so far.
    pub fn take_undecoded(&mut self) -> Vec<UndecodedItem> {
        std::mem::take(&mut self.undecoded)
    }

    /// Feeds the next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        self.pending.extend_from_slice(chunk);
        let mut i = self.scanned;
        let n = self.pending.len();
        while i < n {
            if self.capture == Capture::Item && !self.in_string {
                // Inside an item (almost all of a LIST's bytes) only strings and nesting
                // matter: a tight loop without the envelope's bookkeeping.
                match self.skip_in_item(i) {
                    Some(end) => {
                        self.decode_item(end);
                        self.capture = Capture::Items;
                        i = end + 1;
                        continue;
                    }
                    None => break,
                }
            }
            let b = self.pending[i];
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    if self.depth == 1 && self.expect_key {
                        self.key.clear();
                        self.key.extend_from_slice(&self.pending[self.key_start..i]);
                    }
                } else {
                    // Skip plain string bytes quickly.
                    let rest = &self.pending[i + 1..n];
                    let skip = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
                    i += skip;
                }
                i += 1;
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.key_start = i + 1;
                }
                b'{' | b'[' => {
                    if self.depth == 0 {
                        if b != b'{' || self.seen_object {
                            return Err(malformed(self.role, "not a JSON object"));
                        }
                        self.seen_object = true;
                    } else if self.depth == 1 {
                        match (&self.key[..], b) {
                            (b"metadata", b'{') => {
                                self.capture = Capture::Metadata;
                                self.start = i;
                            }
                            (b"items", b'[') => self.capture = Capture::Items,
                            _ => {}
                        }
                    } else if self.depth == 2 && self.capture == Capture::Items {
                        self.capture = Capture::Item;
                        self.start = i;
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    if self.depth == 0 {
                        return Err(malformed(self.role, "unbalanced brackets"));
                    }
                    self.depth -= 1;
                    match (self.depth, self.capture) {
                        (2, Capture::Item) => {
                            self.decode_item(i);
                            self.capture = Capture::Items;
                        }
                        (1, Capture::Metadata) => {
                            self.metadata = Some(self.pending[self.start..=i].to_vec());
                            self.capture = Capture::None;
                        }
                        (1, Capture::Items) => self.capture = Capture::None,
                        _ => {}
                    }
                }
                b':' if self.depth == 1 => self.expect_key = false,
                b',' if self.depth == 1 => self.expect_key = true,
                b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => {}
                _ if self.depth == 2 && self.capture == Capture::Items => {
                    // `null`, a number or a string as an item: not an object.
                    return Err(malformed(self.role, "an item is not an object"));
                }
                _ => {}
            }
            i += 1;
        }
        // Drop what no capture needs any more.
        let keep_from = match self.capture {
            Capture::Item | Capture::Metadata => self.start,
            _ if self.in_string && self.depth == 1 => self.key_start.min(n),
            _ => n,
        };
        self.pending.drain(..keep_from);
        self.scanned = n - keep_from;
        self.start -= keep_from.min(self.start);
        self.key_start -= keep_from.min(self.key_start);
        Ok(())
    }

    /// Scans an item's bytes from `i` (not inside a string) for the bracket that closes
    /// the item; returns its offset. At the end of the pending bytes, keeps the nesting
    /// and string state for the next chunk and returns `None`. Equivalent to the general
    /// loop for `Capture::Item`, which it replaces for speed.
    fn skip_in_item(&mut self, mut i: usize) -> Option<usize> {
        let p = &self.pending;
        let n = p.len();
        while i < n {
            match p[i] {
                b'"' => match string_end(p, i + 1) {
                    StringScan::Closed(quote) => i = quote,
                    StringScan::Open { escaped } => {
                        self.in_string = true;
                        self.escaped = escaped;
                        return None;
                    }
                },
                b'{' | b'[' => self.depth += 1,
                b'}' | b']' => {
                    // An item is entered at depth 2 and nested deeper, so this never
                    // underflows; depth 2 again is the item's end.
                    self.depth -= 1;
                    if self.depth == 2 {
                        return Some(i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        None
    }

    fn decode_item(&mut self, end: usize) {
        let json = &self.pending[self.start..=end];
        if self.defer_every > 0 && self.index % self.defer_every == self.defer_every - 1 {
            self.undecoded.push(UndecodedItem {
                role: self.role,
                index: self.index,
                json: json.to_vec(),
            });
        } else {
            match decode_list_item(self.role, self.index, json) {
                Ok(object) => self.items.push(object),
                Err(e) => self.errors.push(e),
            }
        }
        self.index += 1;
    }

    /// Takes the items decoded so far, so that a caller can hand a long list on in
    /// parts while the rest of the body is still arriving; [`ListStream::finish`] then
    /// returns only the items decoded after the last take.
    pub fn take_items(&mut self) -> Vec<Object> {
        std::mem::take(&mut self.items)
    }

    /// Items found so far, decoded or kept undecoded (since they were last taken).
    pub fn len(&self) -> usize {
        self.items.len() + self.undecoded.len()
    }

    /// True when no item is waiting to be taken.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.undecoded.is_empty()
    }

    /// The end of the body: the page (with any items still undecoded, decoded now), and
    /// the errors of skipped items.
    pub fn finish(mut self) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
        for item in std::mem::take(&mut self.undecoded) {
            match item.decode() {
                Ok(object) => self.items.push(object),
                Err(e) => self.errors.push(e),
            }
        }
        let trailing = self.pending[self.scanned.min(self.pending.len())..]
            .iter()
            .any(|b| !b.is_ascii_whitespace());
        if !self.seen_object || self.depth != 0 || self.in_string || trailing {
            return Err(malformed(self.role, "truncated or not a JSON object"));
        }
        #[derive(serde::Deserialize, Default)]
        struct Meta {
            #[serde(
                rename = "resourceVersion",
                default = "empty_str",
                deserialize_with = "crate::model::json::nullable_str"
            )]
            resource_version: ArcStr,
            #[serde(rename = "continue", default)]
            continue_token: Option<String>,
        }
        let meta: Meta = match &self.metadata {
            Some(bytes) => serde_json::from_slice(bytes).map_err(|source| DecodeError::Json {
                role: self.role,
                source,
            })?,
            None => Meta {
                resource_version: empty_str(),
                continue_token: None,
            },
        };
        Ok((
            ListPage {
                items: self.items,
                resource_version: meta.resource_version,
                continue_token: meta.continue_token.filter(|c| !c.is_empty()),
            },
            self.errors,
        ))
    }
}

/// Where a JSON string's scan stopped.
enum StringScan {
    /// At the closing quote, at this offset.
    Closed(usize),
    /// The bytes ended inside the string (`escaped`: right after a backslash).
    Open { escaped: bool },
}

/// Finds the end of the string whose contents start at `from`.
fn string_end(p: &[u8], mut from: usize) -> StringScan {
    let n = p.len();
    loop {
        // Most strings in a pod are short: look at a few bytes before paying for a
        // vectorised search.
        let stop = (from + 16).min(n);
        while from < stop && p[from] != b'"' && p[from] != b'\\' {
            from += 1;
        }
        if from == stop && stop < n {
            from += memchr::memchr2(b'"', b'\\', &p[from..]).unwrap_or(n - from);
        }
        if from >= n {
            return StringScan::Open { escaped: false };
        }
        if p[from] == b'"' {
            return StringScan::Closed(from);
        }
        // A backslash: the next byte is escaped, whatever it is.
        if from + 1 >= n {
            return StringScan::Open { escaped: true };
        }
        from += 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::decode_list_lenient;

    fn in_chunks(role: Role, body: &[u8], size: usize) -> Result<(ListPage, usize), DecodeError> {
        let mut s = ListStream::new(role);
        for c in body.chunks(size) {
            s.push(c)?;
        }
        let (page, errors) = s.finish()?;
        Ok((page, errors.len()))
    }

    /// Decodes `body` in chunks of `size`, leaving every `every`-th item undecoded;
    /// with `take`, takes those after each chunk and decodes them as a group would.
    /// Returns the objects sorted by key, and the number of errors.
    fn deferring(body: &[u8], size: usize, every: usize, take: bool) -> (Vec<Object>, usize) {
        let mut s = ListStream::new(Role::Pod);
        s.defer_every(every);
        let (mut objects, mut errors) = (Vec::new(), 0);
        for c in body.chunks(size) {
            s.push(c).expect("valid envelope");
            if take {
                objects.extend(s.take_items());
                for item in s.take_undecoded() {
                    match item.decode() {
                        Ok(o) => objects.push(o),
                        Err(_) => errors += 1,
                    }
                }
            }
        }
        let (page, rest) = s.finish().expect("valid envelope");
        objects.extend(page.items);
        objects.sort_by_key(|o| o.key());
        (objects, errors + rest.len())
    }

    #[test]
    fn same_as_the_buffered_decoder_at_any_chunking() {
        let body = br#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"tok"},"items":[{"metadata":{"name":"a","namespace":"n","annotations":{"x":"}]{[\"\\"}}},{"metadata":{"namespace":"n"}},{"metadata":{"name":"b","namespace":"n"},"status":{"podIP":"10.0.0.1"}}]}"#;
        let (want, want_errors) = decode_list_lenient(Role::Pod, body).unwrap();
        for size in [1, 2, 3, 7, 16, 64, body.len()] {
            let (page, errors) = in_chunks(Role::Pod, body, size).unwrap();
            assert_eq!(page, want, "chunk size {size}");
            assert_eq!(errors, want_errors.len(), "chunk size {size}");
        }
        assert_eq!(want.items.len(), 2);
        assert_eq!(&*want.resource_version, "77");
    }

    /// Random bodies full of what trips a scanner (escaped quotes and backslashes,
    /// brackets inside strings, long and short strings, bad items), cut at random:
    /// always the buffered decoder's result.
    #[test]
    fn same_as_the_buffered_decoder_on_random_bodies_and_cuts() {
        let mut rng = fastrand::Rng::with_seed(11);
        let pieces = [
            "a",
            "\\\"",
            "\\\\",
            "}",
            "]",
            "{[",
            "\\u00e9",
            "x".repeat(40).leak(),
            "\\n",
            " ",
            "ü",
            "\\/",
        ];
        for round in 0..300 {
            let mut items = Vec::new();
            for k in 0..rng.usize(0..6) {
                let value: String = (0..rng.usize(0..8))
                    .map(|_| pieces[rng.usize(..pieces.len())])
                    .collect();
                let item = match rng.u8(..10) {
                    0 => r#"{"metadata":{"namespace":"n"}}"#.to_string(), // no name: a bad item
                    1 => format!(r#"{{"metadata":{{"name":"p{k}","annotations":{{"a":1}}}}}}"#),
                    _ => format!(
                        r#"{{"metadata":{{"name":"p{k}","namespace":"n","annotations":{{"v":"{value}","w":[]}}}},"spec":{{"containers":[{{"name":"c","ports":[{{"containerPort":80}}]}}]}},"status":{{"podIP":"10.0.0.1"}}}}"#
                    ),
                };
                items.push(item);
            }
            let body = format!(
                r#"{{"metadata":{{"resourceVersion":"{round}"}},"items":[{}]}}"#,
                items.join(",")
            );
            let (want, want_errors) =
                decode_list_lenient(Role::Pod, body.as_bytes()).expect("valid envelope");
            // Some items left undecoded for the caller (taken or not), any chunking:
            // the same objects and errors, in another order.
            let every = rng.usize(1..4);
            let size = rng.usize(1..200);
            for take in [true, false] {
                let (objects, errors) = deferring(body.as_bytes(), size, every, take);
                let mut want_objects = want.items.clone();
                want_objects.sort_by_key(|o| o.key());
                assert_eq!(
                    objects, want_objects,
                    "round {round}, every {every}, take {take}"
                );
                assert_eq!(errors, want_errors.len(), "round {round}, every {every}");
            }
            for size in [1, 2, 3, rng.usize(4..40), rng.usize(40..400), body.len()] {
                let (page, errors) =
                    in_chunks(Role::Pod, body.as_bytes(), size).expect("valid envelope");
                assert_eq!(page, want, "round {round}, chunk size {size}: {body}");
                assert_eq!(
                    errors,
                    want_errors.len(),
                    "round {round}, chunk size {size}"
                );
            }
        }
    }

    #[test]
    fn metadata_after_items_and_null_items() {
        let body = br#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"5"}}"#;
        let (page, _) = in_chunks(Role::Node, body, 5).unwrap();
        assert_eq!(page.items.len(), 1);
        assert_eq!(&*page.resource_version, "5");
        let (page, _) = in_chunks(Role::Node, br#"{"items":null,"metadata":{}}"#, 4).unwrap();
        assert!(page.items.is_empty());
    }

    #[test]
    fn broken_envelopes_are_errors() {
        for body in [
            &b""[..],
            b"[]",
            b"null",
            br#"{"items":[{"metadata":{"name":"a"}}"#,
            br#"{"items":[1]}"#,
            br#"{"items":[]}}"#,
        ] {
            assert!(
                in_chunks(Role::Pod, body, 3).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
