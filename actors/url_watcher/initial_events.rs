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

use arcstr::ArcStr;

use crate::error::DecodeError;
use crate::model::{Object, Role};
use crate::proto::Encoding;
use crate::watch::{Status, WatchEvent, decode_event_in, frame_event};

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
    /// An event came before this one (in this batch or an earlier one).
    began: bool,
}

impl InitialEvents {
    /// A collector for `role`, from a stream in `encoding`, continuing from `items`;
    /// `began` when events came before (in earlier batches).
    pub fn new(role: Role, encoding: Encoding, items: Vec<Object>, began: bool) -> InitialEvents {
        InitialEvents {
            role,
            encoding,
            began: began || !items.is_empty(),
            items,
            skipped: Vec::new(),
            outcome: None,
            after: Vec::new(),
        }
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
                return;
            }
        };
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
