//! A watch response's body as decoded items: its bytes framed into events (JSON lines
//! or protobuf frames, as its `Content-Type` said), each event decoded, and the pieces
//! that arrived together made one batch of [`Received::Events`]. For a streaming list
//! the events up to the initial-events-end bookmark are a list instead
//! ([`InitialEvents`]): [`Received::Part`]s and its [`Received::ListEnd`].
//!
//! The reader keeps the stream's clocks, counted only while it waits for the server
//! (not while it waits for room in the window): a line left incomplete for
//! `watch_stall_timeout` ends the stream as [`Failure::Stalled`]; a watch open
//! `healthy_after` at an event boundary is [`Received::Healthy`]; one open past its
//! `timeoutSeconds` and a margin ends as [`StreamEnd::Expired`]; a streaming list whose
//! bookmark does not come in time fails.

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream::LocalBoxStream;
use futures_util::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;

use super::failure::Failure;
use super::initial_events::{InitialEvents, ListBounds, Step};
use super::received::{Item, ListEnd, Outbox, Received, StreamEnd};
use crate::error::DecodeError;
use crate::model::Role;
use crate::window::Window;
use crate::wire::json::WatchEvent;
use crate::wire::{Encoding, EventFraming, decode_event_in};

/// At most this many pieces of a stream that are ready at once make one batch (no
/// timer: a piece is never held back waiting for more).
///
/// awc hands a busy stream over in pieces the size of its read buffer, a few pod events
/// each; one batch per piece would mean one message, and often one wake-up of the
/// group's thread, per few events. A few pieces per batch amortise that; more would
/// only delay the first of them.
pub const READY_PIECES_PER_BATCH: usize = 4;

/// How to read one watch response.
#[derive(Clone, Debug)]
pub struct WatchReading {
    /// The role of its objects.
    pub role: Role,
    /// The encoding its `Content-Type` names.
    pub encoding: Encoding,
    /// The largest event accepted (`max_event_size`).
    pub max_event: usize,
    /// How long a line may stay incomplete (`watch_stall_timeout`); for a streaming
    /// list, also how long it may send nothing before its bookmark.
    pub stall: Duration,
    /// How long a watch is open before it counts as healthy.
    pub healthy_after: Duration,
    /// When the watch is ended by the reader if the server has not ended it.
    pub lasts: Duration,
    /// A streaming list, held to these bounds: its initial events are a list.
    pub initial_events: Option<ListBounds>,
}

/// The items of a watch response's `body`, each part and batch holding a permit of
/// `window`. A body error breaks the stream.
pub fn read_watch<S, E>(body: S, reading: WatchReading, window: Window) -> impl Stream<Item = Item>
where
    S: Stream<Item = Result<Bytes, E>> + 'static,
    E: std::fmt::Display,
{
    let reader = WatchReader::new(body.map(|r| r.map_err(|e| e.to_string())), reading, window);
    futures_util::stream::unfold(reader, |mut reader| async move {
        let item = reader.next().await?;
        Some((item, reader))
    })
}

/// The state of one watch response being read.
struct WatchReader {
    body: LocalBoxStream<'static, Result<Bytes, String>>,
    framing: EventFraming,
    events: Events,
    clocks: Clocks,
}

/// Decoded events on their way out.
struct Events {
    role: Role,
    encoding: Encoding,
    /// The batch being read.
    batch: Vec<WatchEvent>,
    /// A streaming list's initial events, until its bookmark.
    initial: Option<InitialEvents>,
    out: Outbox,
}

/// The deadlines of one stream.
struct Clocks {
    stall: Duration,
    /// When the watch counts as healthy, until it has.
    healthy_at: Option<Instant>,
    /// When the reader ends the watch.
    expires: Instant,
    /// A streaming list's: it fails at this time without its bookmark.
    list_due: Option<Instant>,
    /// The incomplete line pending (by the count of events before it), and since when.
    partial: Option<(u64, Instant)>,
    /// When the last event completed (a streaming list that sends nothing for `stall`
    /// is not served).
    last_event: Instant,
}

impl WatchReader {
    fn new(
        body: impl Stream<Item = Result<Bytes, String>> + 'static,
        reading: WatchReading,
        window: Window,
    ) -> WatchReader {
        let now = Instant::now();
        WatchReader {
            body: body.boxed_local(),
            framing: EventFraming::new(reading.encoding, reading.max_event),
            events: Events {
                role: reading.role,
                encoding: reading.encoding,
                batch: Vec::new(),
                initial: reading.initial_events.map(InitialEvents::new),
                out: Outbox::new(window),
            },
            clocks: Clocks {
                stall: reading.stall,
                healthy_at: Some(now + reading.healthy_after),
                expires: now + reading.lasts,
                list_due: reading.initial_events.map(|b| now + b.time),
                partial: None,
                last_event: now,
            },
        }
    }

    async fn next(&mut self) -> Option<Item> {
        loop {
            if !self.events.out.is_empty() {
                let asked = Instant::now();
                let item = self.events.out.pop().await;
                // Waiting for the group's room was ours, not the server's.
                self.clocks.shift(asked.elapsed());
                return item;
            }
            if self.events.out.is_closed() {
                return None;
            }
            self.read().await;
        }
    }

    /// Reads what the body has ready (at least one piece), or meets a deadline.
    async fn read(&mut self) {
        let pending = !self.framing.pending().is_empty();
        let listing = self.events.initial.is_some();
        let next = match self.clocks.next_deadline(pending, listing) {
            Some(at) => tokio::time::timeout_at(at, self.body.next()).await,
            None => Ok(self.body.next().await),
        };
        let first = match next {
            Err(_) => return self.on_deadline(),
            Ok(None) => return self.on_end(),
            Ok(Some(Err(e))) => return self.on_broken(&e),
            Ok(Some(Ok(piece))) => piece,
        };
        let mut pieces = vec![first];
        let mut after = None;
        while pieces.len() < READY_PIECES_PER_BATCH {
            match self.body.next().now_or_never() {
                Some(Some(Ok(piece))) => pieces.push(piece),
                Some(other) => {
                    after = Some(other);
                    break;
                }
                None => break,
            }
        }
        self.on_pieces(&pieces);
        match after {
            Some(None) => self.on_end(),
            Some(Some(Err(e))) => self.on_broken(&e),
            _ => {}
        }
    }

    /// Pieces of the stream that arrived together, as one batch.
    fn on_pieces(&mut self, pieces: &[Bytes]) {
        if let Some(initial) = &mut self.events.initial {
            let read = pieces.iter().map(Bytes::len).sum();
            if let Some(over) = initial.read(read) {
                let step = initial.failed(over);
                return self.events.step(step);
            }
        }
        let before = self.framing.completed();
        for piece in pieces {
            if self.events.out.is_closed() {
                break;
            }
            let events = &mut self.events;
            if let Err(too_long) = self.framing.push(piece, |event| events.event(event)) {
                let e = DecodeError::TooLarge {
                    role: self.events.role,
                    limit: too_long.limit,
                };
                self.events.fail(Failure::Rejected(e));
            }
        }
        self.events.flush();
        let now = Instant::now();
        let completed = self.framing.completed();
        if completed != before {
            self.clocks.last_event = now;
        }
        self.clocks.partial = match (self.framing.pending().is_empty(), self.clocks.partial) {
            (true, _) => None,
            (false, Some((line, since))) if line == completed => Some((line, since)),
            (false, _) => Some((completed, now)),
        };
        self.healthy_if_due(now);
    }

    /// A deadline passed with nothing read.
    fn on_deadline(&mut self) {
        let now = Instant::now();
        let clocks = &self.clocks;
        if clocks
            .partial
            .is_some_and(|(_, since)| now >= since + clocks.stall)
        {
            return self.events.fail(Failure::Stalled);
        }
        if self.events.initial.is_some() {
            if now >= clocks.last_event + clocks.stall {
                let why = "no initial-events-end bookmark came: nothing for watch_stall_timeout";
                return self.events.fail(Failure::NotServed(why.into()));
            }
            if clocks.list_due.is_some_and(|due| now >= due) {
                let why = "no initial-events-end bookmark came within list_body_timeout";
                return self.events.fail(Failure::BadBody(why.into()));
            }
            return;
        }
        if now >= clocks.expires {
            return self.events.out.push(Received::Ended(StreamEnd::Expired));
        }
        self.healthy_if_due(now);
    }

    /// The server ended the stream.
    fn on_end(&mut self) {
        match &self.events.initial {
            Some(initial) if initial.nothing_read() => {
                let why = "the server ended the stream at once, with no event";
                self.events.fail(Failure::NotServed(why.into()));
            }
            Some(_) => {
                let why = "the server ended the stream before the initial-events-end bookmark";
                self.events.fail(Failure::Transport(why.into()));
            }
            None => self.events.out.push(Received::Ended(StreamEnd::ByServer)),
        }
    }

    /// The stream broke (connection reset, truncated chunk).
    fn on_broken(&mut self, e: &str) {
        let why = if self.events.initial.is_some() {
            format!("the stream broke before its initial-events-end bookmark: {e}")
        } else {
            format!("the watch stream broke: {e}")
        };
        self.events.fail(Failure::Transport(why));
    }

    /// The watch is healthy once open `healthy_after`, at an event boundary.
    fn healthy_if_due(&mut self, now: Instant) {
        let due = self.clocks.healthy_at.is_some_and(|at| now >= at);
        if due && self.events.initial.is_none() && self.framing.pending().is_empty() {
            self.clocks.healthy_at = None;
            self.events.out.push(Received::Healthy);
        }
    }
}

impl Events {
    /// One complete event's bytes.
    fn event(&mut self, bytes: &[u8]) {
        if self.out.is_closed() {
            return;
        }
        let decoded = decode_event_in(self.encoding, self.role, bytes);
        if let Some(initial) = &mut self.initial {
            let step = initial.event(decoded);
            return self.step(step);
        }
        match decoded {
            Ok(WatchEvent::Error(status)) if status.is_gone() => self.fail(Failure::Gone {
                message: status.message,
            }),
            Ok(WatchEvent::Error(status)) => self.fail(Failure::ErrorEvent(status)),
            Ok(event) => self.batch.push(event),
            Err(e) => self.fail(Failure::Rejected(e)),
        }
    }

    /// What an initial event came to.
    fn step(&mut self, step: Step) {
        match step {
            Step::Kept => {}
            Step::Part(objects) => self.out.push(Received::Part(objects)),
            Step::Ended {
                rest,
                skipped,
                resource_version,
            } => {
                if skipped.total > 0 {
                    self.out.push(Received::Skipped(skipped));
                }
                let end = ListEnd {
                    resource_version,
                    rest,
                };
                self.out.push(Received::ListEnd(end));
                // The rest of the stream is the watch.
                self.initial = None;
            }
            Step::Failed(failure, skipped) => {
                if skipped.total > 0 {
                    self.out.push(Received::Skipped(skipped));
                }
                self.out.fail(failure);
            }
        }
    }

    /// The stream ends with `failure`: the events before it go first.
    fn fail(&mut self, failure: Failure) {
        if let Some(initial) = &mut self.initial {
            let step = initial.failed(failure);
            return self.step(step);
        }
        self.flush();
        self.out.fail(failure);
    }

    /// The batch read so far goes out.
    fn flush(&mut self) {
        if !self.batch.is_empty() {
            self.out
                .push(Received::Events(std::mem::take(&mut self.batch)));
        }
    }
}

impl Clocks {
    /// The earliest deadline that matters now: a pending line's stall; a streaming
    /// list's silence and due time; a watch's health and expiry.
    fn next_deadline(&self, pending: bool, listing: bool) -> Option<Instant> {
        let stall = self
            .partial
            .filter(|_| pending)
            .map(|(_, since)| since + self.stall);
        let others = if listing {
            [Some(self.last_event + self.stall), self.list_due]
        } else {
            // Healthy only at an event boundary: with a line pending, it is seen to
            // once the line is complete.
            [self.healthy_at.filter(|_| !pending), Some(self.expires)]
        };
        [stall].into_iter().chain(others).flatten().min()
    }

    /// The stream was not read for `waited` (the reader waited for room): the server
    /// had that time on top of its deadlines.
    fn shift(&mut self, waited: Duration) {
        if waited.is_zero() {
            return;
        }
        if let Some((_, since)) = &mut self.partial {
            *since += waited;
        }
        self.last_event += waited;
    }
}

#[cfg(test)]
#[path = "watch_reader_tests.rs"]
mod tests;
