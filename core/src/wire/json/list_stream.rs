//! Decoding a LIST body while it arrives, item by item.
//!
//! A watch-cache LIST of a big cluster is one body of hundreds of megabytes (100,000
//! pods: ~500 MB). Buffering it whole, then decoding, holds the body and the decoded
//! objects at once. [`ListStream`] instead finds each item of `items` as its bytes
//! arrive (a byte scanner that tracks strings and nesting only), decodes it, and drops
//! its bytes: memory holds the decoded objects and one item's bytes, and decoding
//! overlaps the transfer. Items are decoded leniently, as [`super::decode_list_lenient`]
//! does: a bad item is skipped and reported, a broken envelope is an error.
//!
//! Nothing a server sends can make it hold more than one object's worth of bytes
//! ([`ListLimits`]): an item larger than `max_object` or nested deeper than `max_depth`
//! is skipped as it streams past (its bytes dropped, its brackets and strings still
//! followed so that the next item is found) and reported; the envelope's own strings
//! are kept only while short, and its `metadata` only up to `max_object`. A `kind`
//! other than the role's list kind (a `NodeList` from the pods URL) rejects the body.

use arcstr::ArcStr;
use serde::de::Error as _;

use super::ListPage;
use crate::error::DecodeError;
use crate::model::json::empty_str;
use crate::model::{Object, Role};

/// Decodes item `index` of a LIST of `role`; an error says which item it was.
fn decode_list_item(role: Role, index: usize, json: &[u8]) -> Result<Object, DecodeError> {
    Object::decode(role, json).map_err(|e| DecodeError::ListItem {
        role,
        index,
        source: Box::new(e),
    })
}

/// The limits a [`ListStream`] holds a body to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListLimits {
    /// The most bytes one item (or the list's `metadata`) may have.
    pub max_object: usize,
    /// The deepest nesting of arrays and objects allowed inside one item.
    pub max_depth: usize,
}

impl Default for ListLimits {
    /// The engine's defaults (see [`crate::config::EngineOptions`]).
    fn default() -> Self {
        ListLimits {
            max_object: 4 << 20,
            max_depth: 64,
        }
    }
}

/// The longest envelope string (a key, or a value such as `kind`) that is kept: the
/// keys and values the envelope is read for are short.
const MAX_ENVELOPE_STRING: usize = 256;

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
    /// Inside an item being skipped (too large or too deep): scanned, not kept.
    Skipped(SkipReason),
}

/// Why an item is being skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SkipReason {
    TooLarge,
    TooDeep,
}

/// An incremental decoder of one LIST body of one role.
#[derive(Debug)]
pub struct ListStream {
    role: Role,
    limits: ListLimits,
    /// The envelope string being scanned is longer than [`MAX_ENVELOPE_STRING`]: its
    /// bytes are not kept, and it matches no key or kind.
    string_dropped: bool,
    /// The envelope's `kind`, once seen.
    kind: Option<Vec<u8>>,
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
    /// A decoder for a LIST of `role`, with the default [`ListLimits`].
    pub fn new(role: Role) -> ListStream {
        ListStream::with_limits(role, ListLimits::default())
    }

    /// A decoder for a LIST of `role` held to `limits`.
    pub(crate) fn with_limits(role: Role, limits: ListLimits) -> ListStream {
        ListStream {
            role,
            limits,
            string_dropped: false,
            kind: None,
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
            errors: Vec::new(),
            index: 0,
        }
    }

    /// Feeds the next bytes of the body.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        self.pending.extend_from_slice(chunk);
        let mut i = self.scanned;
        let n = self.pending.len();
        while i < n {
            if matches!(self.capture, Capture::Item | Capture::Skipped(_)) && !self.in_string {
                // Inside an item (almost all of a LIST's bytes) only strings and nesting
                // matter: a tight loop without the envelope's bookkeeping.
                match self.skip_in_item(i) {
                    Some(end) => {
                        self.end_item(end);
                        self.capture = Capture::Items;
                        i = end + 1;
                        continue;
                    }
                    None => break,
                }
            }
            let b = self.pending[i];
            if self.in_string {
                i = self.string_byte(i, n)?;
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    self.string_dropped = false;
                    self.key_start = i + 1;
                }
                b'{' | b'[' => self.open(i, b)?,
                b'}' | b']' => self.close(i)?,
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
        self.keep_only_needed(n)
    }

    /// A byte at `i` inside a string of the envelope; returns where to read next.
    /// Plain string bytes are skipped in one search.
    #[inline]
    fn string_byte(&mut self, i: usize, n: usize) -> Result<usize, DecodeError> {
        let b = self.pending[i];
        if self.escaped {
            self.escaped = false;
        } else if b == b'\\' {
            self.escaped = true;
        } else if b == b'"' {
            self.in_string = false;
            if self.depth == 1 {
                self.envelope_string_end(i)?;
            }
        } else {
            // The next quote or backslash, or the end of what is pending.
            let rest = &self.pending[i + 1..n];
            return Ok(i + 1 + memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len()));
        }
        Ok(i + 1)
    }

    /// An opening bracket `b` at `i`: the body's object, the envelope's `metadata` or
    /// `items`, or an item's start.
    #[inline]
    fn open(&mut self, i: usize, b: u8) -> Result<(), DecodeError> {
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
        Ok(())
    }

    /// A closing bracket at `i`: the envelope's `metadata` is kept whole, `items` ends.
    #[inline]
    fn close(&mut self, i: usize) -> Result<(), DecodeError> {
        if self.depth == 0 {
            return Err(malformed(self.role, "unbalanced brackets"));
        }
        self.depth -= 1;
        match (self.depth, self.capture) {
            (1, Capture::Metadata) => {
                self.metadata = Some(self.pending[self.start..=i].to_vec());
                self.capture = Capture::None;
            }
            (1, Capture::Items) => self.capture = Capture::None,
            _ => {}
        }
        Ok(())
    }

    /// After scanning the `n` bytes pending: applies the size limits to what is being
    /// captured and drops the bytes no capture needs any more.
    fn keep_only_needed(&mut self, n: usize) -> Result<(), DecodeError> {
        // An item past the size limit is skipped from here on: its bytes so far are
        // dropped below and the rest is only scanned.
        if self.capture == Capture::Item && n - self.start > self.limits.max_object {
            self.capture = Capture::Skipped(SkipReason::TooLarge);
        }
        if self.capture == Capture::Metadata && n - self.start > self.limits.max_object {
            return Err(malformed(
                self.role,
                "metadata larger than the object size limit",
            ));
        }
        if self.in_string
            && self.depth == 1
            && !self.string_dropped
            && n - self.key_start.min(n) > MAX_ENVELOPE_STRING
        {
            self.string_dropped = true;
        }
        // Drop what no capture needs any more.
        let keep_from = match self.capture {
            Capture::Item | Capture::Metadata => self.start,
            _ if self.in_string && self.depth == 1 && !self.string_dropped => self.key_start.min(n),
            _ => n,
        };
        self.pending.drain(..keep_from);
        self.scanned = n - keep_from;
        self.start -= keep_from.min(self.start);
        self.key_start -= keep_from.min(self.key_start);
        Ok(())
    }

    /// A string of the envelope (depth 1) closed at `quote`: a key is remembered, and
    /// the value of `kind` checked against the role's list kind.
    fn envelope_string_end(&mut self, quote: usize) -> Result<(), DecodeError> {
        let text: &[u8] = if self.string_dropped {
            b""
        } else {
            &self.pending[self.key_start.min(quote)..quote]
        };
        if self.expect_key {
            self.key.clear();
            self.key.extend_from_slice(text);
            return Ok(());
        }
        if self.key == b"kind" {
            let want = self.role.kind();
            let matches = text.strip_suffix(b"List") == Some(want.as_bytes());
            if !matches && !text.is_empty() || self.string_dropped {
                return Err(DecodeError::WrongKind {
                    role: self.role,
                    kind: String::from_utf8_lossy(text).into_owned(),
                });
            }
            self.kind = Some(text.to_vec());
        }
        Ok(())
    }

    /// Scans an item's bytes from `i` (not inside a string) for the bracket that closes
    /// the item; returns its offset. At the end of the pending bytes, keeps the nesting
    /// and string state for the next chunk and returns `None`. Equivalent to the general
    /// loop for `Capture::Item`, which it replaces for speed. An item nested deeper than
    /// the limit is from then on skipped.
    fn skip_in_item(&mut self, mut i: usize) -> Option<usize> {
        let p = &self.pending;
        let n = p.len();
        // Items start at depth 2.
        let too_deep = self.limits.max_depth.saturating_add(2);
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
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth > too_deep && self.capture == Capture::Item {
                        self.capture = Capture::Skipped(SkipReason::TooDeep);
                    }
                }
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

    /// The item that started at `self.start` ends at `end`: decoded, or, if it was
    /// being skipped, reported.
    fn end_item(&mut self, end: usize) {
        let skipped = match self.capture {
            Capture::Skipped(SkipReason::TooLarge) => Some(DecodeError::TooLarge {
                role: self.role,
                limit: self.limits.max_object,
            }),
            Capture::Skipped(SkipReason::TooDeep) => Some(DecodeError::TooDeep {
                role: self.role,
                limit: self.limits.max_depth,
            }),
            _ => None,
        };
        match skipped {
            Some(source) => {
                self.errors.push(DecodeError::ListItem {
                    role: self.role,
                    index: self.index,
                    source: Box::new(source),
                });
                self.index += 1;
            }
            None => self.decode_item(end),
        }
    }

    /// How many items have been found so far (decoded or skipped): how
    /// a caller sees that a body makes progress.
    pub(crate) fn items_seen(&self) -> usize {
        self.index
    }

    fn decode_item(&mut self, end: usize) {
        let json = &self.pending[self.start..=end];
        match decode_list_item(self.role, self.index, json) {
            Ok(object) => self.items.push(object),
            Err(e) => self.errors.push(e),
        }
        self.index += 1;
    }

    /// Takes the items decoded so far, so that a caller can hand a long list on in
    /// parts while the rest of the body is still arriving; [`ListStream::finish`] then
    /// returns only the items decoded after the last take.
    pub(crate) fn take_items(&mut self) -> Vec<Object> {
        std::mem::take(&mut self.items)
    }

    /// Items decoded so far (since they were last taken).
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// The end of the body: the page, and the errors of skipped items.
    pub fn finish(self) -> Result<(ListPage, Vec<DecodeError>), DecodeError> {
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
        // Most strings in a pod are short: look at their first bytes a word at a time
        // before paying for a vectorised search's set-up.
        let stop = (from + 32).min(n);
        from = quote_or_backslash(p, from, stop);
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

/// The first `"` or `\\` in `p[from..stop]`, or `stop`: eight bytes at a time.
///
/// A word's bytes equal to a byte `c` are the zero bytes of `word ^ c*0x01..01`; the
/// lowest zero byte of `v` is the lowest high bit of `(v - 0x01..01) & !v & 0x80..80`
/// (a borrow can only flag bytes above a true zero, never below it), so the lowest bit
/// of both masks together is the first quote or backslash.
fn quote_or_backslash(p: &[u8], mut from: usize, stop: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGHS: u64 = ONES << 7;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    while let Some(bytes) = p.get(from..from + 8).filter(|_| from + 8 <= stop) {
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        let word = u64::from_le_bytes(word);
        let (q, b) = (word ^ QUOTES, word ^ BACKSLASHES);
        let found = ((q.wrapping_sub(ONES) & !q) | (b.wrapping_sub(ONES) & !b)) & HIGHS;
        if found != 0 {
            return from + (found.trailing_zeros() / 8) as usize;
        }
        from += 8;
    }
    while from < stop && p[from] != b'"' && p[from] != b'\\' {
        from += 1;
    }
    from
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::json::decode_list_lenient;

    /// The word-at-a-time search finds what a byte-by-byte one finds, wherever the
    /// quotes, backslashes and look-alike bytes (0x22 ± 1, 0x5c ± 1, high bytes) fall.
    #[test]
    fn the_word_search_finds_the_first_quote_or_backslash() {
        let alphabet = [
            b'a', b'"', b'\\', 0x21, 0x23, 0x5b, 0x5d, 0x00, 0x01, 0xa2, 0xdc, 0xff,
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..4_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 40) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let r = seed.rotate_left(i as u32 * 5);
                    // Mostly plain bytes, as in a string.
                    if r.is_multiple_of(5) {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    } else {
                        b'x'
                    }
                })
                .collect();
            for from in 0..=len {
                for stop in from..=len {
                    let naive = (from..stop)
                        .find(|&i| bytes[i] == b'"' || bytes[i] == b'\\')
                        .unwrap_or(stop);
                    assert_eq!(
                        quote_or_backslash(&bytes, from, stop),
                        naive,
                        "{bytes:?} {from}..{stop}"
                    );
                }
            }
        }
    }

    fn in_chunks(role: Role, body: &[u8], size: usize) -> Result<(ListPage, usize), DecodeError> {
        let mut s = ListStream::new(role);
        for c in body.chunks(size) {
            s.push(c)?;
        }
        let (page, errors) = s.finish()?;
        Ok((page, errors.len()))
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

    /// Feeds `body` in chunks of `size` with small limits; returns the page, the
    /// rejected items' reasons, and the most bytes held at once.
    fn limited(
        body: &[u8],
        size: usize,
    ) -> (Result<(ListPage, Vec<DecodeError>), DecodeError>, usize) {
        let limits = ListLimits {
            max_object: 200,
            max_depth: 8,
        };
        let mut s = ListStream::with_limits(Role::Pod, limits);
        let mut held = 0;
        for c in body.chunks(size) {
            if let Err(e) = s.push(c) {
                return (Err(e), held);
            }
            held = held.max(s.pending.len());
        }
        (s.finish(), held)
    }

    #[test]
    fn an_item_too_large_or_too_deep_is_skipped_as_it_streams_and_the_rest_kept() {
        let big = format!(
            r#"{{"metadata":{{"name":"big","namespace":"n","annotations":{{"a":"{}"}}}}}}"#,
            "x".repeat(100_000)
        );
        let deep = format!(
            r#"{{"metadata":{{"name":"deep","namespace":"n","labels":{}}}}}"#,
            format_args!("{}1{}", "[".repeat(100_000), "]".repeat(100_000))
        );
        let small = r#"{"metadata":{"name":"ok","namespace":"n"}}"#;
        let body = format!(
            r#"{{"kind":"PodList","metadata":{{"resourceVersion":"3"}},"items":[{big},{small},{deep},{small}]}}"#
        );
        for size in [7, 1000, 65536] {
            let (result, held) = limited(body.as_bytes(), size);
            let (page, errors) = result.expect("the envelope is fine");
            assert_eq!(page.items.len(), 2, "chunk size {size}");
            let reasons: Vec<_> = errors.iter().map(|e| e.reason()).collect();
            assert_eq!(
                reasons,
                [
                    crate::metrics::RejectReason::TooLarge,
                    crate::metrics::RejectReason::TooDeep
                ],
                "chunk size {size}"
            );
            assert!(errors[0].to_string().contains("item 0"), "{}", errors[0]);
            assert!(held <= 200 + size, "held {held} bytes at chunk size {size}");
        }
    }

    #[test]
    fn a_list_of_another_kind_is_refused_and_long_envelope_strings_are_not_kept() {
        let nodes = br#"{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"name":"n1"}}]}"#;
        let (result, _) = limited(nodes, 5);
        let err = result.expect_err("a NodeList is not a list of pods");
        assert!(err.to_string().contains("NodeList"), "{err}");
        assert_eq!(err.reason(), crate::metrics::RejectReason::WrongKind);
        // The kind after the items is found at the end.
        let late = br#"{"items":[{"metadata":{"name":"n1"}}],"kind":"NodeList"}"#;
        assert!(limited(late, 5).0.is_err());
        // A 1 MB key or value is scanned, not kept.
        let long = format!(
            r#"{{"kind":"PodList","{}":"{}","metadata":{{"resourceVersion":"4"}},"items":[]}}"#,
            "k".repeat(1 << 20),
            "v".repeat(1 << 20)
        );
        let (result, held) = limited(long.as_bytes(), 4096);
        assert_eq!(&*result.expect("valid").0.resource_version, "4");
        assert!(held < 2 * 4096, "held {held}");
        // A kind too long to keep is not the role's.
        let long_kind = format!(r#"{{"kind":"{}","items":[]}}"#, "P".repeat(1 << 20));
        assert!(limited(long_kind.as_bytes(), 4096).0.is_err());
        // metadata over the object limit: the list cannot be trusted.
        let fat_meta = format!(
            r#"{{"metadata":{{"resourceVersion":"4","x":"{}"}},"items":[]}}"#,
            "m".repeat(1000)
        );
        assert!(limited(fat_meta.as_bytes(), 64).0.is_err());
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
