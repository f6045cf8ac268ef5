//! What the API server's client yields from one LIST attempt or one watch: decoded
//! items, in order, each that goes on to the group holding its place in the watcher's
//! window ([`Item`]), and the [`Outbox`] both readers queue them in.

use std::collections::VecDeque;

use arcstr::ArcStr;

use super::failure::Failure;
use crate::error::DecodeError;
use crate::metrics::{RejectReason, ResponseEncoding};
use crate::model::Object;
use crate::window::{Permit, Window};
use crate::wire::Encoding;
use crate::wire::json::WatchEvent;

/// One thing a response brought, decoded.
#[derive(Debug)]
pub enum Received {
    /// A response's body starts, in this encoding (each LIST page, each watch).
    Opened(ResponseEncoding),
    /// Objects of the list under way: a LIST's pages, or a streaming list's initial
    /// events, in order. A LIST attempt's first is empty, as its first body starts.
    Part(Vec<Object>),
    /// The items the list skipped (undecodable, another kind, too large, too deep),
    /// once per attempt, before its end or its failure.
    Skipped(Skipped),
    /// The list is complete, and every part before it has been handled by the group.
    /// A streaming list's stream goes on as a watch from there.
    ListEnd(ListEnd),
    /// Watch events read together: objects and bookmarks (an `ERROR` event ends the
    /// stream as a [`Failure`]).
    Events(Vec<WatchEvent>),
    /// The watch has been open `healthy_after`, at an event boundary; once per stream.
    Healthy,
    /// The watch stream ended (its last item).
    Ended(StreamEnd),
}

/// The end of a complete list.
#[derive(Debug)]
pub struct ListEnd {
    /// Where a watch continues from (empty: the server sent none).
    pub resource_version: ArcStr,
    /// Its last objects, not handed on in a part (a LIST hands every object on in
    /// parts first, so that its end waits for the group to have handled them).
    pub rest: Vec<Object>,
}

/// How a watch stream ended without a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server ended it (its `timeoutSeconds`, or earlier).
    ByServer,
    /// It reached its own deadline (`timeoutSeconds` and a margin) without the server
    /// ending it.
    Expired,
}

/// One item of a client stream: what was received, or the failure that ended the
/// stream (its last item), with the window's permit that an item going on to the
/// group holds until the group has handled it.
#[derive(Debug)]
pub struct Item {
    /// What was received, or why the stream ended.
    pub received: Result<Received, Failure>,
    /// The item's place in the window (parts and events only).
    pub permit: Option<Permit>,
}

/// The items a list skipped, counted by why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Skipped {
    /// How many, by why.
    pub counts: Vec<(RejectReason, u64)>,
    /// How many in all.
    pub total: usize,
    /// The first one's error, in words.
    pub first: Option<String>,
}

impl Skipped {
    /// Counts one skipped item.
    pub fn add(&mut self, e: &DecodeError) {
        let reason = e.reason();
        match self.counts.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.counts.push((reason, 1)),
        }
        self.total += 1;
        self.first.get_or_insert_with(|| e.to_string());
    }
}

/// The metric label of an encoding.
pub fn encoding_label(encoding: Encoding) -> ResponseEncoding {
    match encoding {
        Encoding::Json => ResponseEncoding::Json,
        Encoding::Protobuf => ResponseEncoding::Protobuf,
    }
}

/// The items a reader has decoded and not yielded yet, in order. A part or a batch of
/// events takes a permit of the window as it leaves, so a reader that waits here for
/// room reads nothing more (TCP slows the server down).
pub struct Outbox {
    queue: VecDeque<Result<Received, Failure>>,
    window: Window,
    /// A failure or the end was queued: nothing follows it.
    closed: bool,
}

impl Outbox {
    /// An empty outbox whose parts and events hold permits of `window`.
    pub fn new(window: Window) -> Outbox {
        Outbox {
            queue: VecDeque::new(),
            window,
            closed: false,
        }
    }

    /// Queues an item; nothing is queued after the stream's last.
    pub fn push(&mut self, received: Received) {
        if !self.closed {
            self.closed = matches!(received, Received::Ended(_));
            self.queue.push_back(Ok(received));
        }
    }

    /// Queues the failure that ends the stream (the first one only).
    pub fn fail(&mut self, failure: Failure) {
        if !self.closed {
            self.closed = true;
            self.queue.push_back(Err(failure));
        }
    }

    /// True once the stream's last item is queued.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// True while nothing waits to be yielded.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Closes the stream after what is queued (a LIST attempt's end).
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The next item, once the window has room for it if it goes on to the group; a
    /// list's end once the group has handled every part before it (the order of the
    /// group's mailbox alone would not do: a send to a full mailbox waits until it is
    /// polled, which can let a later one ahead).
    pub async fn pop(&mut self) -> Option<Item> {
        let received = self.queue.pop_front()?;
        let permit = match &received {
            Ok(Received::Part(_) | Received::Events(_)) => self.window.permit().await,
            Ok(Received::ListEnd(_)) => {
                self.window.drained().await;
                None
            }
            _ => None,
        };
        Some(Item { received, permit })
    }
}

/// How many decoded objects of a list go to the group in one part: enough to amortise
/// a message, few enough that the group starts labelling early.
pub const PART_OBJECTS: usize = 256;
