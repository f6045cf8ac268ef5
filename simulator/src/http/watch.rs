//! WATCH: `GET` on a collection with `watch=1`, answered with a chunked
//! stream of newline-delimited JSON events, pushed as writes happen.
//!
//! The stream replays retained history after the requested resourceVersion
//! (or synthetic ADDED events for the current state when none is given), then
//! forwards live changes from its store channel. Selectors are applied the
//! way the watch cache applies them: an object that starts matching is
//! ADDED, one that stops matching is DELETED (in its previous state), one
//! that keeps matching is MODIFIED. A resourceVersion that left the history
//! window gets one `ERROR` event (410 Expired) and the end of the stream.
//!
//! With `sendInitialEvents=true` (a streaming list) the stream starts with
//! ADDED events of the current state and a bookmark annotated
//! `k8s.io/initial-events-end`, then goes on as a watch; or it acts out a server
//! that does not serve streaming lists ([`StreamingLists`]).
//!
//! The stream also acts out injected faults: abrupt drops (optionally
//! mid-event), bad lines, split events and stalls.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{Instant, Interval};

use super::encoding::ResponseEncoding;
use super::list::parse_selector;
use super::request::{Target, is_true};
use super::response::error_response;
use super::state::HttpState;
use super::table::{self, IncludeObject};
use crate::error::ApiError;
use crate::faults::{Injection, WatchFault};
use crate::protobuf;
use crate::resource::Resource;
use crate::selector::Selector;
use crate::sim::Simulator;
use crate::store::{Change, ChangeType, WatchMessage};
use crate::streaming_lists::StreamingLists;

/// Serves a WATCH request.
pub fn serve(
    state: &HttpState,
    req: &HttpRequest,
    target: &Target,
    query: &HashMap<String, String>,
) -> HttpResponse {
    // Table requests (kubectl) are answered in JSON, as the API server does.
    let encoding = if table::wants_table(req) {
        ResponseEncoding::Json
    } else {
        ResponseEncoding::of(req, target.resource)
    };
    let mut query = query.clone();
    if is_true(query.get("sendInitialEvents")) {
        match state.sim.faults().take_streaming_list() {
            StreamingLists::Served => {}
            StreamingLists::Refused => {
                return error_response(&ApiError::new(
                    422,
                    "Invalid",
                    "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                ));
            }
            StreamingLists::EndedAtOnce => {
                // The real server's words, as it sends them on etcd older than 3.5.13.
                let event = encoding.error(&ApiError::new(
                    500,
                    "InternalError",
                    "a watch stream was requested by the client but the required storage feature RequestWatchProgress is disabled",
                ));
                let once = futures_util::stream::once(async move { Ok::<_, io::Error>(event) });
                return HttpResponse::Ok()
                    .content_type(encoding.watch_content_type())
                    .streaming(once);
            }
            StreamingLists::Ignored => {
                query.remove("sendInitialEvents");
                query.remove("resourceVersionMatch");
            }
        }
    }
    match open(state, req, target, &query, encoding) {
        Ok(stream) => HttpResponse::Ok()
            .content_type(encoding.watch_content_type())
            .streaming(futures_util::stream::unfold(
                stream,
                WatchStream::next_chunk,
            )),
        Err(err) if err.code == 410 && err.reason == "Expired" => {
            // Real servers report a too-old resourceVersion inside the stream.
            let event = encoding.error(&err);
            let once = futures_util::stream::once(async move { Ok::<_, io::Error>(event) });
            HttpResponse::Ok()
                .content_type(encoding.watch_content_type())
                .streaming(once)
        }
        Err(err) => error_response(&err),
    }
}

fn open(
    state: &HttpState,
    req: &HttpRequest,
    target: &Target,
    query: &HashMap<String, String>,
    encoding: ResponseEncoding,
) -> Result<WatchStream, ApiError> {
    let sim = &state.sim;
    if sim.faults().take_gone_watch() {
        return Err(ApiError::new(
            410,
            "Gone",
            "injected: 410 Gone for this watch",
        ));
    }
    let selector = parse_selector(target, query)?;
    let initial_events = is_true(query.get("sendInitialEvents"));
    check_version_match(query, initial_events)?;
    let from = start_version(query, initial_events)?;
    let deadline = timeout(query, state.timeout_second)?;
    let bookmarks = is_true(query.get("allowWatchBookmarks")).then(|| {
        let period = state.bookmark_interval.max(Duration::from_millis(1));
        tokio::time::interval_at(Instant::now() + period, period)
    });
    let table = table::wants_table(req).then(|| IncludeObject::parse(query.get("includeObject")));
    let sub = sim
        .store()
        .watch(target.resource, target.namespace.as_deref(), from)?;
    Ok(WatchStream {
        sim: sim.clone(),
        id: sub.id,
        initial_events_end: initial_events.then_some(sub.rv),
        resource: target.resource,
        selector,
        table,
        encoding,
        initial: sub.initial.into(),
        rx: sub.rx,
        out: VecDeque::new(),
        held: VecDeque::new(),
        stalled: sim.faults().stalled(),
        deadline,
        bookmarks,
        split_pause: state.split_pause,
        finished: false,
    })
}

/// `resourceVersionMatch` on a watch: only `NotOlderThan`, and only for a streaming
/// list, as the API server checks it.
fn check_version_match(
    query: &HashMap<String, String>,
    initial_events: bool,
) -> Result<(), ApiError> {
    match query.get("resourceVersionMatch").map(String::as_str) {
        None | Some("") => Ok(()),
        Some("NotOlderThan") if initial_events => Ok(()),
        Some(_) if initial_events => Err(ApiError::new(
            422,
            "Invalid",
            "resourceVersionMatch: Unsupported value: sendInitialEvents requires NotOlderThan",
        )),
        Some(_) => Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        )),
    }
}

/// The resourceVersion the watch starts after; `None`: from now.
fn start_version(
    query: &HashMap<String, String>,
    initial_events: bool,
) -> Result<Option<u64>, ApiError> {
    match query.get("resourceVersion").map(String::as_str) {
        // A streaming list starts from the current state, which is never older
        // than any resourceVersion the client can have seen.
        _ if initial_events => Ok(None),
        None | Some("" | "0") => Ok(None),
        Some(rv) => rv
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}"))),
    }
}

/// When the watch ends (`timeoutSeconds`, each second lasting `second`); `None`: never.
fn timeout(query: &HashMap<String, String>, second: Duration) -> Result<Option<Instant>, ApiError> {
    match query.get("timeoutSeconds").map(String::as_str) {
        None | Some("" | "0") => Ok(None),
        Some(t) => {
            let secs = t
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {t:?}")))?;
            let secs = u32::try_from(secs).unwrap_or(u32::MAX);
            Ok(Some(Instant::now() + second.saturating_mul(secs)))
        }
    }
}

/// One unit of output, in order.
enum Out {
    /// Bytes to write as one chunk.
    Chunk(Bytes),
    /// Wait (so the previous chunk is flushed on its own).
    Pause,
    /// Close the connection abruptly.
    Abort,
}

/// The state of one watch response body.
struct WatchStream {
    sim: Simulator,
    id: u64,
    resource: Resource,
    selector: Selector,
    /// `Some` when the client wants Table objects (kubectl `get -w`).
    table: Option<IncludeObject>,
    /// JSON lines or protobuf frames.
    encoding: ResponseEncoding,
    initial: VecDeque<Arc<Change>>,
    /// A streaming list's: the resourceVersion of the bookmark that ends its initial
    /// events, sent once `initial` is.
    initial_events_end: Option<u64>,
    rx: UnboundedReceiver<WatchMessage>,
    out: VecDeque<Out>,
    /// Messages received while stalled, replayed on resume.
    held: VecDeque<WatchMessage>,
    stalled: bool,
    deadline: Option<Instant>,
    bookmarks: Option<Interval>,
    split_pause: Duration,
    finished: bool,
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        // The client went away or the stream ended: stop fanning out to it.
        self.sim.store().unwatch(self.id);
    }
}

impl WatchStream {
    /// Produces the next chunk of the body, waiting for input as needed.
    async fn next_chunk(mut self) -> Option<(Result<Bytes, io::Error>, WatchStream)> {
        loop {
            match self.out.pop_front() {
                Some(Out::Chunk(bytes)) => return Some((Ok(bytes), self)),
                Some(Out::Pause) => {
                    tokio::time::sleep(self.split_pause).await;
                    continue;
                }
                Some(Out::Abort) => {
                    self.out.clear();
                    self.finished = true;
                    // An error from the body makes actix close the connection
                    // without the final zero-length chunk: an abrupt drop.
                    let err =
                        io::Error::new(io::ErrorKind::ConnectionAborted, "injected watch drop");
                    return Some((Err(err), self));
                }
                None => {}
            }
            if self.finished {
                return None;
            }
            if !self.stalled
                && let Some(change) = self.initial.pop_front()
            {
                self.emit_change(&change);
                continue;
            }
            if !self.stalled && self.end_initial_events() {
                continue;
            }
            let stalled = self.stalled;
            let deadline = self.deadline;
            let bookmarks = self.bookmarks.as_mut();
            let timeout = async move {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let tick = async move {
                match bookmarks {
                    Some(interval) => {
                        interval.tick().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                msg = self.rx.recv() => match msg {
                    Some(msg) => self.handle(msg),
                    None => self.finished = true,
                },
                () = timeout, if !stalled => self.finished = true,
                // Queued through the store so the bookmark is ordered after
                // every change it claims to cover.
                () = tick, if !stalled => self.sim.store().bookmark(self.id),
            }
        }
    }

    fn handle(&mut self, msg: WatchMessage) {
        match msg {
            WatchMessage::Fault(WatchFault::Stall(on)) => {
                self.stalled = on;
                if !on {
                    // History owed since the client's resourceVersion comes before the
                    // live changes held during the stall: a real server never reorders
                    // a stream (found by the chaos suite: clients ended stale).
                    while let Some(change) = self.initial.pop_front() {
                        self.emit_change(&change);
                    }
                    self.end_initial_events();
                    while let Some(held) = self.held.pop_front() {
                        self.handle(held);
                    }
                }
            }
            WatchMessage::Fault(WatchFault::Drop { mid_event }) => {
                if mid_event {
                    let event = self.fake_event("MODIFIED", "cut-mid-event");
                    let half = event.len() / 2;
                    self.out.push_back(Out::Chunk(event.slice(..half)));
                    self.out.push_back(Out::Pause);
                }
                self.out.push_back(Out::Abort);
            }
            // A stalled server sends nothing at all: hold everything else.
            msg if self.stalled => match msg {
                WatchMessage::Bookmark(_) => {}
                other => self.held.push_back(other),
            },
            WatchMessage::Change(change) => self.emit_change(&change),
            // Until a streaming list's initial events have ended, the watch cache
            // sends no other bookmark.
            WatchMessage::Bookmark(_) if self.initial_events_end.is_some() => {}
            WatchMessage::Bookmark(rv) => {
                let bookmark = self.encoding.bookmark(self.resource, rv, false);
                self.out.push_back(Out::Chunk(bookmark));
            }
            WatchMessage::End => self.finished = true,
            WatchMessage::Fault(WatchFault::Inject(injection)) => {
                let event = self.injected(injection);
                self.out.push_back(Out::Chunk(event));
            }
        }
    }

    /// Sends the bookmark that ends a streaming list's initial events, once; true
    /// if it did.
    fn end_initial_events(&mut self) -> bool {
        let Some(rv) = self.initial_events_end.take() else {
            return false;
        };
        let bookmark = self.encoding.bookmark(self.resource, rv, true);
        self.out.push_back(Out::Chunk(bookmark));
        true
    }

    /// The bad event an injection sends, in the stream's encoding.
    fn injected(&self, injection: Injection) -> Bytes {
        let rv = self.sim.store().current_rv();
        match (injection, self.encoding) {
            (Injection::MalformedLine, ResponseEncoding::Json) => Bytes::from_static(
                b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"name\":\n",
            ),
            // A whole frame whose event is cut short: its length is right, its
            // content truncated.
            (Injection::MalformedLine, ResponseEncoding::Protobuf) => {
                let event = self.fake_event("MODIFIED", "malformed");
                let cut = &event[4..4 + (event.len() - 4) / 2];
                let mut frame = (cut.len() as u32).to_be_bytes().to_vec();
                frame.extend_from_slice(cut);
                Bytes::from(frame)
            }
            (Injection::UnknownType, _) => self.fake_event("WEIRD", "weird-event"),
            (Injection::WrongKind, ResponseEncoding::Json) => Bytes::from(format!(
                "{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"wrong-kind\",\"namespace\":\"default\",\"resourceVersion\":\"{rv}\"}},\"data\":{{\"k\":\"v\"}}}}}}\n"
            )),
            (Injection::WrongKind, ResponseEncoding::Protobuf) => {
                let metadata = serde_json::json!({"metadata": {"name": "wrong-kind", "namespace": "default", "resourceVersion": rv.to_string()}});
                let fields =
                    protobuf::encode_fields(Resource::Namespaces, &metadata).unwrap_or_default();
                let object = protobuf::envelope("v1", "ConfigMap", &fields);
                Bytes::from(protobuf::encode_watch_frame("ADDED", &object))
            }
        }
    }

    /// A well-formed event of the watched kind about an object `name`.
    fn fake_event(&self, event_type: &str, name: &str) -> Bytes {
        let rv = self.sim.store().current_rv();
        let object =
            serde_json::json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
        self.encoding.event(self.resource, event_type, &object)
    }

    fn emit_change(&mut self, change: &Change) {
        let Some((event_type, object)) = transition(change, &self.selector) else {
            return;
        };
        let line = match self.table {
            Some(include) => {
                let metadata = serde_json::json!({"resourceVersion": change.rv.to_string()});
                let table = table::table(self.resource, [&*object], include, metadata);
                Bytes::from(format!(
                    "{{\"type\":\"{event_type}\",\"object\":{table}}}\n"
                ))
            }
            None => self.encoding.event(self.resource, event_type, &object),
        };
        if self.sim.faults().take_split() {
            let half = line.len() / 2;
            self.out.push_back(Out::Chunk(line.slice(..half)));
            self.out.push_back(Out::Pause);
            self.out.push_back(Out::Chunk(line.slice(half..)));
        } else {
            self.out.push_back(Out::Chunk(line));
        }
    }
}

/// The event (if any) a watch with `selector` sees for `change`.
fn transition(change: &Change, selector: &Selector) -> Option<(&'static str, Arc<Value>)> {
    let now = selector.matches(&change.object);
    match change.change_type {
        ChangeType::Added => now.then(|| ("ADDED", change.object.clone())),
        ChangeType::Deleted => now.then(|| ("DELETED", change.object.clone())),
        ChangeType::Modified => {
            let before = change
                .previous
                .as_deref()
                .is_some_and(|p| selector.matches(p));
            match (before, now) {
                (true, true) => Some(("MODIFIED", change.object.clone())),
                (false, true) => Some(("ADDED", change.object.clone())),
                (true, false) => {
                    // The previous state, at this change's resourceVersion, as
                    // the watch cache sends it.
                    let mut previous = change.previous.as_deref().cloned().unwrap_or_default();
                    if let Some(meta) = previous.get_mut("metadata").and_then(Value::as_object_mut)
                    {
                        meta.insert(
                            "resourceVersion".into(),
                            Value::String(change.rv.to_string()),
                        );
                    }
                    Some(("DELETED", Arc::new(previous)))
                }
                (false, false) => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::LabelSelector;
    use serde_json::json;

    fn change(change_type: ChangeType, prev: Option<Value>, obj: Value) -> Change {
        Change {
            rv: 9,
            resource: Resource::Pods,
            key: ("ns".into(), "p".into()),
            change_type,
            object: Arc::new(obj),
            previous: prev.map(Arc::new),
        }
    }

    #[test]
    fn selector_transitions() {
        let sel = Selector {
            labels: LabelSelector::parse("app=web").unwrap_or_default(),
            ..Selector::default()
        };
        let web = json!({"metadata": {"labels": {"app": "web"}, "resourceVersion": "8"}});
        let db = json!({"metadata": {"labels": {"app": "db"}, "resourceVersion": "9"}});
        let kind = |c: Change| {
            transition(&c, &sel).map(|(t, o)| (t, o.pointer("/metadata/resourceVersion").cloned()))
        };
        assert_eq!(
            kind(change(ChangeType::Modified, Some(db.clone()), web.clone())).map(|k| k.0),
            Some("ADDED")
        );
        let deleted = kind(change(ChangeType::Modified, Some(web.clone()), db.clone()));
        assert_eq!(deleted, Some(("DELETED", Some(json!("9")))));
        assert_eq!(
            kind(change(ChangeType::Modified, Some(web.clone()), web.clone())).map(|k| k.0),
            Some("MODIFIED")
        );
        assert_eq!(
            kind(change(ChangeType::Modified, Some(db.clone()), db)).map(|k| k.0),
            None
        );
    }
}
