//! The first part of a streaming list, line by line: the `ADDED` events of the
//! current state, up to the bookmark annotated `k8s.io/initial-events-end`, whose
//! resourceVersion the watch continues from on the same stream.
//!
//! A server that does not serve streaming lists shows it here: it sends a plain watch,
//! whose events after the synthetic `ADDED` ones are `MODIFIED` or `DELETED`, and
//! whose bookmarks (if any) carry no such annotation. Either ends the attempt as
//! [`InitialOutcome::NotServed`], and the machine falls back to LIST. So does an API
//! server whose etcd cannot serve watch progress requests (older than 3.5.13 or
//! 3.4.31): it answers 200, sends one `ERROR` event (500 `InternalError`, "a watch
//! stream was requested by the client but the required storage feature
//! RequestWatchProgress is disabled") and ends the stream. A 500 as the first event is
//! taken for that; an `ERROR` after initial events began is a passing failure, retried.
//! (A server that sends nothing, or ends the stream before the bookmark, is told by
//! the machine from the stream's end or the deadline.)
//!
//! An undecodable initial event is skipped, as a LIST skips a bad item, and counted in
//! the attempt's [`Tally`]; [`MAX_UNDECODABLE_IN_A_ROW`] of them in a row end the
//! attempt ([`InitialOutcome::Undecodable`]), so a stream of nothing readable is not
//! held open until its deadline.

use arcstr::ArcStr;

use crate::error::DecodeError;
use crate::metrics::RejectReason;
use crate::model::{Object, Role};
use crate::wire::json::WatchEvent;
use crate::wire::{Encoding, Status, decode_event_in, frame_event};

/// How the initial events of one batch of lines ended, if they did.
#[derive(Debug)]
pub enum InitialOutcome {
    /// The initial-events-end bookmark: the state is complete at this resourceVersion,
    /// and the lines after it are watch events.
    Ended(ArcStr),
    /// The stream is a plain watch: the server ignored `sendInitialEvents`. In words.
    NotServed(String),
    /// An `ERROR` event ended the stream.
    Error(Status),
    /// [`MAX_UNDECODABLE_IN_A_ROW`] events in a row could not be decoded.
    Undecodable,
}

/// How many undecodable initial events in a row end a streaming list: enough that a
/// few bad objects among good ones are skipped (as a LIST skips them), few enough that
/// a stream of nothing readable is cut at once instead of at its deadline.
pub const MAX_UNDECODABLE_IN_A_ROW: usize = 16;

/// What one streaming-list attempt has brought so far: the counts its bounds (bytes,
/// objects, the share of bad events) are checked against, and its skipped events,
/// reported once when the attempt ends.
#[derive(Debug, Default)]
pub struct Tally {
    /// Bytes of the stream read.
    pub bytes: usize,
    /// Initial events accepted.
    pub accepted: usize,
    /// Initial events skipped, by why.
    pub skipped: Vec<(RejectReason, u64)>,
    /// How many were skipped.
    pub skipped_total: usize,
    /// The first skipped event's error, in words.
    pub first_skip: Option<String>,
    /// Undecodable events since the last one accepted.
    pub in_a_row: usize,
}

impl Tally {
    /// Counts one skipped event.
    pub fn skip(&mut self, e: &DecodeError) {
        let reason = e.reason();
        match self.skipped.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.skipped.push((reason, 1)),
        }
        self.skipped_total += 1;
        self.first_skip.get_or_insert_with(|| e.to_string());
    }

    /// Events of the attempt so far, accepted or not.
    pub fn events(&self) -> usize {
        self.accepted + self.skipped_total
    }

    /// More were skipped than accepted: not a list of the role, refused whole as a
    /// LIST is.
    pub fn mostly_rejected(&self) -> bool {
        self.skipped_total > self.accepted
    }
}

/// Collects the initial events of a streaming list from its lines, in order.
pub struct InitialEvents {
    role: Role,
    /// The stream's encoding: JSON lines or protobuf frames.
    encoding: Encoding,
    /// The objects of the initial events so far.
    pub items: Vec<Object>,
    /// Events that could not be decoded: skipped, as a LIST skips its bad items.
    pub skipped: Vec<DecodeError>,
    /// Set by the line that ended the initial events.
    pub outcome: Option<InitialOutcome>,
    /// The events that came after the initial-events-end bookmark, framed again as
    /// the stream carried them: the first watch events.
    pub after: Vec<u8>,
    /// Undecodable events since the last one accepted, earlier batches included.
    pub in_a_row: usize,
    /// An event came before this one (in this batch or an earlier one).
    began: bool,
}

impl InitialEvents {
    /// A collector for `role`, from a stream in `encoding`, continuing from `items`
    /// and the attempt's `in_a_row` undecodable events; `began` when events came
    /// before (in earlier batches).
    pub fn new(
        role: Role,
        encoding: Encoding,
        items: Vec<Object>,
        began: bool,
        in_a_row: usize,
    ) -> InitialEvents {
        InitialEvents {
            role,
            encoding,
            began: began || !items.is_empty(),
            items,
            skipped: Vec::new(),
            outcome: None,
            after: Vec::new(),
            in_a_row,
        }
    }

    /// The lines so far ended the attempt before its bookmark: what follows is not
    /// read.
    pub fn ended_early(&self) -> bool {
        matches!(
            self.outcome,
            Some(
                InitialOutcome::NotServed(_)
                    | InitialOutcome::Error(_)
                    | InitialOutcome::Undecodable
            )
        )
    }

    /// Takes one line of the stream.
    pub fn line(&mut self, line: &[u8]) {
        match &self.outcome {
            None => {}
            Some(InitialOutcome::Ended(_)) => {
                frame_event(self.encoding, line, &mut self.after);
                return;
            }
            Some(_) => return,
        }
        let first = !std::mem::replace(&mut self.began, true);
        let event = match decode_event_in(self.encoding, self.role, line) {
            Ok(event) => event,
            Err(e) => {
                self.skipped.push(e);
                self.in_a_row += 1;
                if self.in_a_row >= MAX_UNDECODABLE_IN_A_ROW {
                    self.outcome = Some(InitialOutcome::Undecodable);
                }
                return;
            }
        };
        self.in_a_row = 0;
        self.outcome = match event {
            WatchEvent::Added(object) => {
                self.items.push(object);
                None
            }
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end: true,
            } => Some(InitialOutcome::Ended(resource_version)),
            WatchEvent::Bookmark { .. } => Some(InitialOutcome::NotServed(
                "a bookmark came without the k8s.io/initial-events-end annotation".into(),
            )),
            WatchEvent::Modified(_) => Some(InitialOutcome::NotServed(
                "a MODIFIED event came before the initial-events-end bookmark".into(),
            )),
            WatchEvent::Deleted(_) => Some(InitialOutcome::NotServed(
                "a DELETED event came before the initial-events-end bookmark".into(),
            )),
            WatchEvent::Error(status) if first && status.code == 500 => {
                Some(InitialOutcome::NotServed(format!(
                    "the server answered with an error before any event: 500 {}",
                    status.message
                )))
            }
            WatchEvent::Error(status) => Some(InitialOutcome::Error(status)),
        };
    }
}
