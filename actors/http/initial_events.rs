//! The first part of a streaming list, event by event: the `ADDED` events of the
//! current state, up to the bookmark annotated `k8s.io/initial-events-end`, whose
//! resourceVersion the watch continues from on the same stream. Held to the list's
//! bounds (bytes, objects), as a LIST is.
//!
//! A server that does not serve streaming lists shows it here: it sends a plain watch,
//! whose events after the synthetic `ADDED` ones are `MODIFIED` or `DELETED`, and
//! whose bookmarks (if any) carry no such annotation. Either ends the attempt as
//! [`Failure::NotServed`]. So does an API server whose etcd cannot serve watch progress
//! requests (older than 3.5.13 or 3.4.31): it answers 200, sends one `ERROR` event (500
//! `InternalError`, "a watch stream was requested by the client but the required
//! storage feature RequestWatchProgress is disabled") and ends the stream. A 500 as the
//! first event is taken for that; an `ERROR` after initial events began is a passing
//! failure. (A server that sends nothing, or ends the stream before the bookmark, is
//! told by the watch reader from the stream's end or its clocks.)
//!
//! An undecodable initial event is skipped, as a LIST skips a bad item, and counted;
//! [`MAX_UNDECODABLE_IN_A_ROW`] of them in a row end the attempt, so a stream of
//! nothing readable is not held open until its deadline.

use arcstr::ArcStr;

use super::failure::Failure;
use super::received::{PART_OBJECTS, Skipped};
use crate::error::DecodeError;
use crate::model::Object;
use crate::wire::json::WatchEvent;

/// How many undecodable initial events in a row end a streaming list: enough that a
/// few bad objects among good ones are skipped (as a LIST skips them), few enough that
/// a stream of nothing readable is cut at once instead of at its deadline.
pub const MAX_UNDECODABLE_IN_A_ROW: usize = 16;

/// The most a list attempt may bring: a LIST's pages together, or a streaming list's
/// initial events.
#[derive(Clone, Copy, Debug)]
pub struct ListBounds {
    /// Bytes (`max_list_body`).
    pub bytes: usize,
    /// Objects, skipped ones included (`max_list_objects`).
    pub objects: usize,
    /// How long the server may take (`list_body_timeout`).
    pub time: std::time::Duration,
}

/// What one initial event came to.
#[derive(Debug)]
pub enum Step {
    /// Nothing to hand on yet.
    Kept,
    /// Enough objects for a part.
    Part(Vec<Object>),
    /// The initial-events-end bookmark: the rest of the list's objects, what it
    /// skipped, and its resourceVersion.
    Ended {
        /// The objects not handed on yet.
        rest: Vec<Object>,
        /// The events skipped over the whole list.
        skipped: Skipped,
        /// Where the watch continues from.
        resource_version: ArcStr,
    },
    /// The attempt is over, with what it skipped.
    Failed(Failure, Skipped),
}

/// The initial events of one streaming list so far.
#[derive(Debug)]
pub struct InitialEvents {
    bounds: ListBounds,
    /// Bytes of the stream read.
    bytes: usize,
    /// Objects not handed on yet.
    items: Vec<Object>,
    /// Events accepted.
    accepted: usize,
    /// Events skipped.
    skipped: Skipped,
    /// Undecodable events since the last decoded one.
    in_a_row: usize,
}

impl InitialEvents {
    /// The start of a streaming list held to `bounds`.
    pub fn new(bounds: ListBounds) -> InitialEvents {
        InitialEvents {
            bounds,
            bytes: 0,
            items: Vec::new(),
            accepted: 0,
            skipped: Skipped::default(),
            in_a_row: 0,
        }
    }

    /// Counts `n` bytes of the stream: past the bound, the attempt fails.
    pub fn read(&mut self, n: usize) -> Option<Failure> {
        self.bytes += n;
        (self.bytes > self.bounds.bytes).then(|| {
            Failure::BadBody(format!(
                "its initial events passed {} bytes (max_list_body)",
                self.bounds.bytes
            ))
        })
    }

    /// Nothing of the stream was read yet.
    pub fn nothing_read(&self) -> bool {
        self.bytes == 0
    }

    /// Takes one event, as it decoded.
    pub fn event(&mut self, decoded: Result<WatchEvent, DecodeError>) -> Step {
        let first = self.accepted + self.skipped.total == 0;
        let event = match decoded {
            Ok(event) => event,
            Err(e) => return self.skip(&e),
        };
        self.in_a_row = 0;
        match event {
            WatchEvent::Added(object) => self.added(object),
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end: true,
            } => self.ended(resource_version),
            WatchEvent::Bookmark { .. } => self.not_served(
                "a bookmark came without the k8s.io/initial-events-end annotation".into(),
            ),
            WatchEvent::Modified(_) => self
                .not_served("a MODIFIED event came before the initial-events-end bookmark".into()),
            WatchEvent::Deleted(_) => self
                .not_served("a DELETED event came before the initial-events-end bookmark".into()),
            WatchEvent::Error(status) if first && status.code == 500 => self.not_served(format!(
                "the server answered with an error before any event: 500 {}",
                status.message
            )),
            WatchEvent::Error(status) if status.is_gone() => self.failed(Failure::Gone {
                message: status.message,
            }),
            WatchEvent::Error(status) => self.failed(Failure::ErrorEvent(status)),
        }
    }

    /// The attempt ends with `failure`, reporting what it skipped.
    pub fn failed(&mut self, failure: Failure) -> Step {
        Step::Failed(failure, std::mem::take(&mut self.skipped))
    }

    fn not_served(&mut self, why: String) -> Step {
        self.failed(Failure::NotServed(why))
    }

    fn skip(&mut self, e: &DecodeError) -> Step {
        self.skipped.add(e);
        self.in_a_row += 1;
        if self.in_a_row >= MAX_UNDECODABLE_IN_A_ROW {
            let why =
                format!("{MAX_UNDECODABLE_IN_A_ROW} initial events in a row could not be decoded");
            return self.failed(Failure::BadBody(why));
        }
        self.over_objects().unwrap_or(Step::Kept)
    }

    fn added(&mut self, object: Object) -> Step {
        self.accepted += 1;
        self.items.push(object);
        if let Some(over) = self.over_objects() {
            return over;
        }
        if self.items.len() >= PART_OBJECTS {
            return Step::Part(std::mem::take(&mut self.items));
        }
        Step::Kept
    }

    fn over_objects(&mut self) -> Option<Step> {
        (self.accepted + self.skipped.total > self.bounds.objects).then(|| {
            let why = format!(
                "its initial events passed {} objects (max_list_objects)",
                self.bounds.objects
            );
            self.failed(Failure::BadBody(why))
        })
    }

    /// The bookmark: the list is complete, unless more of its events were skipped than
    /// accepted (as a LIST whose items are mostly rejected, it is not a list of the
    /// role).
    fn ended(&mut self, resource_version: ArcStr) -> Step {
        if self.skipped.total > self.accepted {
            let why = format!(
                "{} of its {} initial events could not be decoded",
                self.skipped.total,
                self.accepted + self.skipped.total
            );
            return self.failed(Failure::BadBody(why));
        }
        Step::Ended {
            rest: std::mem::take(&mut self.items),
            skipped: std::mem::take(&mut self.skipped),
            resource_version,
        }
    }
}
