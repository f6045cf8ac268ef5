//! The first part of a streaming list, line by line: the `ADDED` events of the
//! current state, up to the bookmark annotated `k8s.io/initial-events-end`, whose
//! resourceVersion the watch continues from on the same stream.
//!
//! A server that does not serve streaming lists shows it here: it sends a plain watch,
//! whose events after the synthetic `ADDED` ones are `MODIFIED` or `DELETED`, and
//! whose bookmarks (if any) carry no such annotation. Either ends the attempt as
//! [`InitialOutcome::NotServed`], and the machine falls back to LIST. (A server that
//! sends nothing, or ends the stream before the bookmark, is told by the machine from
//! the stream's end or the deadline.)

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
}

impl InitialEvents {
    /// A collector for `role`, from a stream in `encoding`, continuing from `items`.
    pub fn new(role: Role, encoding: Encoding, items: Vec<Object>) -> InitialEvents {
        InitialEvents {
            role,
            encoding,
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
            WatchEvent::Error(status) => Some(InitialOutcome::Error(status)),
        };
    }
}
