//! One LIST attempt as decoded items: its pages fetched in turn (a page's continue
//! token names the next), each body decoded as it arrives and handed on in parts, the
//! attempt held to its budget. A page's body is never held whole, and decoding overlaps
//! the transfer; the parts go to the group as they come, so that its labelling
//! overlaps the decoding (two cores busy, not one after the other).
//!
//! The budget is the attempt's, over all its pages: requests (pages and redirects,
//! `max_list_pages`, counted where they are sent), bytes (`max_list_body`), objects
//! (`max_list_objects`), time (`list_body_timeout`); and progress: each page must find
//! its next item within `watch_stall_timeout`, and a page that names a next one must
//! bring an object new to the attempt and a continue token it has not sent before.
//! (The API server fills every page but the last, so a page with nothing new is a
//! server that would page for ever.)

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::LocalBoxFuture;
use futures_util::stream::LocalBoxStream;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use super::failure::Failure;
use super::initial_events::ListBounds;
use super::received::{Item, ListEnd, Outbox, PART_OBJECTS, Received, Skipped, encoding_label};
use crate::error::DecodeError;
use crate::model::{Object, Role};
use crate::window::Window;
use crate::wire::json::{ListLimits, ListPage};
use crate::wire::{Encoding, ListDecoder};

/// A LIST page's response, its status a success.
pub struct PageBody {
    /// The encoding its `Content-Type` names.
    pub encoding: Encoding,
    /// Its `Content-Length`, if it said.
    pub length: Option<usize>,
    /// Its bytes as they arrive.
    pub body: LocalBoxStream<'static, Result<Bytes, String>>,
}

/// Fetches the page of a continue token (`None`: the first), or says why not.
pub type FetchPage =
    Box<dyn FnMut(Option<String>) -> LocalBoxFuture<'static, Result<PageBody, Failure>>>;

/// How to read one LIST attempt.
#[derive(Clone, Debug)]
pub struct ListReading {
    /// The role of its objects.
    pub role: Role,
    /// The limits of one item.
    pub limits: ListLimits,
    /// The attempt's bounds.
    pub bounds: ListBounds,
    /// How long a body may go without finding its next item (`watch_stall_timeout`).
    pub stall: Duration,
}

/// The items of one LIST attempt whose pages `fetch` brings, each part holding a permit
/// of `window`; its last is its end ([`Received::ListEnd`]) or the failure that ended
/// it.
pub fn read_list(
    fetch: FetchPage,
    reading: ListReading,
    window: Window,
) -> impl Stream<Item = Item> {
    let now = Instant::now();
    let reader = ListReader {
        fetch,
        deadline: now + reading.bounds.time,
        reading,
        out: Outbox::new(window),
        page: None,
        spent: Spent::default(),
        skipped: Skipped::default(),
    };
    futures_util::stream::unfold(reader, |mut reader| async move {
        let item = reader.next().await?;
        Some((item, reader))
    })
}

/// The state of one LIST attempt.
struct ListReader {
    fetch: FetchPage,
    reading: ListReading,
    /// When the attempt fails if it has not ended (moved on by waits for room).
    deadline: Instant,
    out: Outbox,
    /// The page being read; `None` between pages.
    page: Option<Page>,
    spent: Spent,
    skipped: Skipped,
}

/// One page's body being decoded.
struct Page {
    body: LocalBoxStream<'static, Result<Bytes, String>>,
    decoder: ListDecoder,
    /// Items found so far, and when that count last grew.
    progress: (usize, Instant),
    /// Objects of this page new to the attempt.
    new_objects: usize,
}

/// What the attempt has used of its budget.
#[derive(Default)]
struct Spent {
    /// Pages begun.
    pages: usize,
    bytes: usize,
    /// Items of the pages read whole.
    objects: usize,
    /// The continue token of the next page.
    next_token: Option<String>,
    /// The continue tokens sent so far.
    tokens: Vec<String>,
    /// The keys of the objects of the pages after the first, hashed: a page that names
    /// a next one must bring one not among them. (The first page's are not kept: a
    /// list of one page, the usual watch-cache read, pays nothing.)
    keys: Option<HashSet<u64>>,
}

impl ListReader {
    async fn next(&mut self) -> Option<Item> {
        loop {
            if !self.out.is_empty() {
                let asked = Instant::now();
                let item = self.out.pop().await;
                // Waiting for the group's room was ours, not the server's.
                let waited = asked.elapsed();
                self.deadline += waited;
                if let Some(page) = &mut self.page {
                    page.progress.1 += waited;
                }
                return item;
            }
            if self.out.is_closed() {
                return None;
            }
            if self.page.is_some() {
                self.read().await;
            } else {
                self.open().await;
            }
        }
    }

    /// Fetches the next page.
    async fn open(&mut self) {
        let token = self.spent.next_token.take();
        let fetch = (self.fetch)(token);
        let page = match tokio::time::timeout_at(self.deadline, fetch).await {
            Err(_) => return self.fail(self.over_time()),
            Ok(Err(failure)) => return self.fail(failure),
            Ok(Ok(page)) => page,
        };
        let left = self.reading.bounds.bytes.saturating_sub(self.spent.bytes);
        if let Some(length) = page.length
            && length > left
        {
            let why = format!(
                "the body is {length} bytes, over the limit of {} (max_list_body) for the list's pages",
                self.reading.bounds.bytes
            );
            return self.fail(Failure::BadBody(why));
        }
        self.out
            .push(Received::Opened(encoding_label(page.encoding)));
        if self.spent.pages == 0 {
            // The attempt starts at the group with its first body, even when the list
            // is empty.
            self.out.push(Received::Part(Vec::new()));
        }
        self.spent.pages += 1;
        let r = &self.reading;
        self.page = Some(Page {
            body: page.body,
            decoder: ListDecoder::new(page.encoding, r.role, r.limits),
            progress: (0, Instant::now()),
            new_objects: 0,
        });
    }

    /// Reads the next piece of the page's body, or its end.
    async fn read(&mut self) {
        let Some(page) = &mut self.page else {
            return;
        };
        let stalls = page.progress.1 + self.reading.stall;
        let next = tokio::time::timeout_at(stalls.min(self.deadline), page.body.next()).await;
        let piece = match next {
            Err(_) if Instant::now() >= self.deadline => return self.fail(self.over_time()),
            Err(_) => return self.fail(Failure::Stalled),
            Ok(None) => return self.end_page(),
            Ok(Some(Err(e))) => {
                return self.fail(Failure::Transport(format!("reading the body: {e}")));
            }
            Ok(Some(Ok(piece))) => piece,
        };
        if let Err(failure) = self.decode(&piece) {
            self.fail(failure);
        }
    }

    /// Decodes one piece of the page, handing on a part once there are enough objects.
    fn decode(&mut self, piece: &[u8]) -> Result<(), Failure> {
        let bounds = self.reading.bounds;
        let Some(page) = &mut self.page else {
            return Ok(());
        };
        self.spent.bytes += piece.len();
        if self.spent.bytes > bounds.bytes {
            return Err(Failure::BadBody(format!(
                "the body exceeds the limit of {} bytes (max_list_body) for the list's pages",
                bounds.bytes
            )));
        }
        page.decoder.push(piece).map_err(bad_body)?;
        let seen = page.decoder.items_seen();
        if self.spent.objects + seen > bounds.objects {
            return Err(Failure::BadBody(format!(
                "its items passed max_list_objects ({})",
                bounds.objects
            )));
        }
        if seen != page.progress.0 {
            page.progress = (seen, Instant::now());
        }
        if page.decoder.len() >= PART_OBJECTS {
            let objects = page.decoder.take_items();
            self.hand_on(objects);
        }
        Ok(())
    }

    /// Hands `objects` on as a part, counting the ones new to the attempt.
    fn hand_on(&mut self, objects: Vec<Object>) {
        if let (Some(keys), Some(page)) = (&mut self.spent.keys, &mut self.page) {
            let hasher = foldhash::fast::FixedState::default();
            for object in &objects {
                let key = object.key();
                if keys.insert(hasher.hash_one((&*key.namespace, &*key.name))) {
                    page.new_objects += 1;
                }
            }
        }
        if !objects.is_empty() {
            self.out.push(Received::Part(objects));
        }
    }

    /// The page's body ended: its rest goes on, and the attempt ends or goes on.
    fn end_page(&mut self) {
        let Some(page) = &mut self.page else {
            return;
        };
        let rest = page.decoder.take_items();
        self.hand_on(rest);
        let Some(page) = self.page.take() else {
            return;
        };
        let seen = page.decoder.items_seen();
        let new_objects = if self.spent.keys.is_some() {
            page.new_objects
        } else {
            seen
        };
        let (list, skipped) = match finish_page(page.decoder) {
            Ok(done) => done,
            Err(failure) => return self.fail(failure),
        };
        for e in &skipped {
            self.skipped.add(e);
        }
        self.spent.objects += seen;
        if let Err(failure) = self.next_page(list, new_objects) {
            self.fail(failure);
        }
    }

    /// After a page: the next one, or the list's end.
    fn next_page(&mut self, page: ListPage, new_objects: usize) -> Result<(), Failure> {
        let Some(token) = page.continue_token else {
            self.report_skipped();
            self.out.push(Received::ListEnd(ListEnd {
                resource_version: page.resource_version,
                rest: Vec::new(),
            }));
            self.out.close();
            return Ok(());
        };
        if self.spent.tokens.contains(&token) {
            let why = "its pages came round again: a continue token repeated";
            return Err(Failure::Endless(why.into()));
        }
        if new_objects == 0 {
            let why = "its pages brought nothing new: one named a next page with no object the list had not had";
            return Err(Failure::Endless(why.into()));
        }
        self.spent.tokens.push(token.clone());
        self.spent.keys.get_or_insert_with(HashSet::new);
        self.spent.next_token = Some(token);
        Ok(())
    }

    /// The attempt took longer than `list_body_timeout`.
    fn over_time(&self) -> Failure {
        Failure::BadBody(format!(
            "the list was not read within {} s (list_body_timeout)",
            self.reading.bounds.time.as_secs()
        ))
    }

    fn report_skipped(&mut self) {
        if self.skipped.total > 0 {
            self.out
                .push(Received::Skipped(std::mem::take(&mut self.skipped)));
        }
    }

    /// The attempt ends with `failure`, reporting what it skipped.
    fn fail(&mut self, failure: Failure) {
        self.page = None;
        self.report_skipped();
        self.out.fail(failure);
    }
}

/// The page a LIST body made, with the items it skipped; a body whose items were
/// mostly rejected (more of them than were accepted) is not a list of the role.
fn finish_page(list: ListDecoder) -> Result<(ListPage, Vec<DecodeError>), Failure> {
    let seen = list.items_seen();
    let (page, errors) = list.finish().map_err(bad_body)?;
    if let Some(first) = errors.first()
        && errors.len() * 2 > seen
    {
        return Err(Failure::BadBody(format!(
            "{} of its {seen} items were rejected, the first: {first}",
            errors.len()
        )));
    }
    Ok((page, errors))
}

/// A LIST body that could not be read as a list of the role.
fn bad_body(e: DecodeError) -> Failure {
    Failure::BadBody(e.to_string())
}

#[cfg(test)]
#[path = "list_reader_tests.rs"]
mod tests;
