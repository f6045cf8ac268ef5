//! The watch reader fed byte chunks: framing, decoding, batches, the events that end
//! a stream, a streaming list's initial events, and the stream's clocks (in paused
//! time).

use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};

use super::*;
use crate::http::Skipped;
use crate::http::initial_events::MAX_UNDECODABLE_IN_A_ROW;
use crate::metrics::RejectReason;

const STALL: Duration = Duration::from_secs(30);
const LIST_TIME: Duration = Duration::from_secs(300);

fn pod_json(name: &str, rv: u64) -> String {
    format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"status":{{"podIP":"10.0.0.1"}}}}"#
    )
}

fn event(kind: &str, name: &str, rv: u64) -> String {
    format!(
        "{{\"type\":\"{kind}\",\"object\":{}}}\n",
        pod_json(name, rv)
    )
}

fn gone_event() -> &'static str {
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old resource version: 10 (20)\"}}\n"
}

/// The bookmark that ends a streaming list's initial events, as the API server writes it.
fn initial_events_end(rv: u64) -> String {
    format!(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"{rv}\",\"creationTimestamp\":null,\"annotations\":{{\"k8s.io/initial-events-end\":\"true\"}}}}}}}}\n"
    )
}

/// A bookmark without the annotation: a plain watch's.
fn plain_bookmark(rv: u64) -> String {
    format!(
        "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"Pod\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}}}}}}\n"
    )
}

fn reading(max_event: usize) -> WatchReading {
    WatchReading {
        role: Role::Pod,
        encoding: Encoding::Json,
        max_event,
        stall: STALL,
        healthy_after: Duration::from_secs(10),
        lasts: Duration::from_secs(600),
        initial_events: None,
    }
}

fn streaming(bounds: Option<ListBounds>) -> WatchReading {
    let bounds = bounds.unwrap_or(ListBounds {
        bytes: usize::MAX,
        objects: usize::MAX,
        time: LIST_TIME,
    });
    WatchReading {
        initial_events: Some(bounds),
        ..reading(1 << 20)
    }
}

/// A body of these pieces, each read on its own, then `then`: the server's end, or
/// silence (an open stream that sends nothing more).
fn body(pieces: Vec<Vec<u8>>, end: bool) -> impl Stream<Item = Result<Bytes, String>> {
    let pieces = futures_util::stream::iter(pieces).then(|piece| async move {
        // One piece per read: the reader takes only what is ready together.
        tokio::task::yield_now().await;
        Ok(Bytes::from(piece))
    });
    let rest = if end {
        futures_util::stream::empty().boxed_local()
    } else {
        futures_util::stream::pending().boxed_local()
    };
    pieces.chain(rest)
}

/// What the reader yields for `pieces` (each read on its own), up to its last item.
async fn read(
    pieces: Vec<Vec<u8>>,
    end: bool,
    reading: WatchReading,
) -> Vec<Result<Received, Failure>> {
    read_watch(body(pieces, end), reading, Window::new(64))
        .map(|item| item.received)
        .collect()
        .await
}

/// Within the paused clock's rounding (timers fire on the millisecond after).
fn about(elapsed: Duration, expected: Duration) -> bool {
    elapsed >= expected && elapsed < expected + Duration::from_millis(20)
}

fn texts(texts: &[&str]) -> Vec<Vec<u8>> {
    texts.iter().map(|t| t.as_bytes().to_vec()).collect()
}

/// Each object event's key and kind (`+` a change, `-` a deletion), batch by batch.
fn batches(items: &[Result<Received, Failure>]) -> Vec<Vec<(String, char)>> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Received::Events(events)) => Some(
                events
                    .iter()
                    .filter_map(|e| match e {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                            Some((o.key().to_string(), '+'))
                        }
                        WatchEvent::Deleted(o) => Some((o.key().to_string(), '-')),
                        _ => None,
                    })
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// The objects' keys of the list's parts and end, in order.
fn listed(items: &[Result<Received, Failure>]) -> Vec<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Ok(Received::Part(objects)) => Some(objects),
            Ok(Received::ListEnd(end)) => Some(&end.rest),
            _ => None,
        })
        .flatten()
        .map(|o| o.key().to_string())
        .collect()
}

fn list_end(items: &[Result<Received, Failure>]) -> Option<&str> {
    items.iter().find_map(|item| match item {
        Ok(Received::ListEnd(end)) => Some(&*end.resource_version),
        _ => None,
    })
}

fn failure(items: &[Result<Received, Failure>]) -> Option<&Failure> {
    items.iter().find_map(|item| item.as_ref().err())
}

fn not_served(items: &[Result<Received, Failure>]) -> bool {
    matches!(failure(items), Some(Failure::NotServed(_)))
}

#[actix_rt::test]
async fn an_event_split_across_chunks_is_decoded_once_whole() {
    let text = format!("{}{}", event("ADDED", "b", 11), event("MODIFIED", "a", 12));
    let (first, second) = text.as_bytes().split_at(text.len() / 2 + 7);
    let items = read(
        vec![first.to_vec(), second.to_vec()],
        true,
        reading(1 << 20),
    )
    .await;
    let all: Vec<(String, char)> = batches(&items).concat();
    assert_eq!(all, [("ns/b".to_string(), '+'), ("ns/a".to_string(), '+')]);
    assert!(matches!(
        items.last(),
        Some(Ok(Received::Ended(StreamEnd::ByServer)))
    ));
}

#[actix_rt::test]
async fn pieces_that_arrive_together_make_one_batch_and_a_bad_one_ends_it() {
    let text = format!(
        "{}{}{}",
        event("ADDED", "x", 11),
        event("DELETED", "a", 12),
        event("ADDED", "y", 13)
    );
    // Three pieces ready together, the second event split across the first two.
    let (head, rest) = text.as_bytes().split_at(text.len() / 2);
    let (middle, tail) = rest.split_at(10);
    let ready = futures_util::stream::iter(
        [head, middle, tail].map(|p| Ok::<_, String>(Bytes::copy_from_slice(p))),
    );
    let items: Vec<_> = read_watch(ready, reading(1 << 20), Window::new(4))
        .map(|item| item.received)
        .collect()
        .await;
    assert_eq!(
        batches(&items),
        [vec![
            ("ns/x".to_string(), '+'),
            ("ns/a".to_string(), '-'),
            ("ns/y".to_string(), '+')
        ]],
        "one batch"
    );

    // A bad line ends the stream: the events before it still go out, the pieces after
    // it are not read.
    let pieces = texts(&[
        &event("ADDED", "p", 14),
        "not json\n",
        &event("ADDED", "q", 15),
    ]);
    let ready =
        futures_util::stream::iter(pieces.into_iter().map(|p| Ok::<_, String>(Bytes::from(p))));
    let items: Vec<_> = read_watch(ready, reading(1 << 20), Window::new(4))
        .map(|item| item.received)
        .collect()
        .await;
    assert_eq!(batches(&items), [vec![("ns/p".to_string(), '+')]]);
    assert!(matches!(
        failure(&items),
        Some(Failure::Rejected(e)) if e.reason() == RejectReason::Undecodable
    ));
    assert_eq!(items.len(), 2, "nothing after the failure: {items:?}");
}

#[actix_rt::test]
async fn an_event_of_another_kind_or_too_deep_is_rejected_not_handed_on() {
    for bad in [
        // Another kind, with a resourceVersion far ahead.
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"999999\"}}}\n".to_string(),
        // Nested deeper than serde_json's limit.
        format!("{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":\"x\",\"resourceVersion\":\"999999\",\"labels\":{}}}}}}}\n",
            format_args!("{}1{}", "[".repeat(200_000), "]".repeat(200_000))),
    ] {
        let items = read(vec![event("ADDED", "b", 11).into_bytes(), bad.into_bytes()], true, reading(1 << 20)).await;
        assert_eq!(batches(&items), [vec![("ns/b".to_string(), '+')]]);
        assert!(matches!(failure(&items), Some(Failure::Rejected(_))), "{items:?}");
    }
}

#[actix_rt::test]
async fn an_event_over_the_size_limit_is_refused_before_it_is_whole() {
    let items = read(vec![vec![b'x'; 101]], false, reading(100)).await;
    assert!(matches!(
        failure(&items),
        Some(Failure::Rejected(e)) if e.reason() == RejectReason::TooLarge
    ));
}

#[actix_rt::test]
async fn error_events_end_the_stream_as_failures() {
    let items = read(
        texts(&[&event("ADDED", "a", 11), gone_event()]),
        false,
        reading(1 << 20),
    )
    .await;
    assert_eq!(batches(&items), [vec![("ns/a".to_string(), '+')]]);
    assert!(
        matches!(failure(&items), Some(Failure::Gone { message }) if message.starts_with("too old"))
    );
    let error =
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd\"}}\n";
    let items = read(texts(&[error]), false, reading(1 << 20)).await;
    assert!(matches!(failure(&items), Some(Failure::ErrorEvent(s)) if s.code == 500));
}

#[actix_rt::test]
async fn bookmarks_are_handed_on_for_their_resource_version() {
    let items = read(texts(&[&plain_bookmark(99)]), true, reading(1 << 20)).await;
    assert!(matches!(&items[0], Ok(Received::Events(e))
        if matches!(&e[..], [WatchEvent::Bookmark { resource_version, .. }] if &**resource_version == "99")));
}

#[actix_rt::test]
async fn a_watch_is_healthy_once_open_long_enough_at_an_event_boundary() {
    tokio::time::pause();
    let mut items = read_watch(
        body(texts(&[&event("ADDED", "a", 11), "{\"type\":\"ADD"]), false),
        reading(1 << 20),
        Window::new(4),
    )
    .boxed_local();
    let first = items.next().await.map(|i| i.received);
    assert!(matches!(first, Some(Ok(Received::Events(_)))));
    // Half a line pending: not healthy at 10 s, cut as stalled at 30 s.
    let next = items.next().await.map(|i| i.received);
    assert!(matches!(next, Some(Err(Failure::Stalled))), "{next:?}");

    let mut items = read_watch(
        body(texts(&[&event("ADDED", "a", 11)]), false),
        reading(1 << 20),
        Window::new(4),
    )
    .boxed_local();
    let started = tokio::time::Instant::now();
    assert!(matches!(
        items.next().await.map(|i| i.received),
        Some(Ok(Received::Events(_)))
    ));
    assert!(matches!(
        items.next().await.map(|i| i.received),
        Some(Ok(Received::Healthy))
    ));
    assert!(about(started.elapsed(), Duration::from_secs(10)));
    // An idle watch is not stalled: it is ended at its own deadline.
    assert!(matches!(
        items.next().await.map(|i| i.received),
        Some(Ok(Received::Ended(StreamEnd::Expired)))
    ));
    assert!(about(started.elapsed(), Duration::from_secs(600)));
    assert!(items.next().await.is_none());
}

#[actix_rt::test]
async fn a_stream_held_by_its_window_is_not_stalled() {
    tokio::time::pause();
    let started = tokio::time::Instant::now();
    let second = format!("{}{}", event("ADDED", "b", 12), "{\"type\":\"ADD");
    let pieces = texts(&[&event("ADDED", "a", 11), &second]);
    let mut items = read_watch(body(pieces, false), reading(1 << 20), Window::new(1)).boxed_local();
    let held = items.next().await;
    assert!(matches!(
        held.as_ref().map(|i| &i.received),
        Some(Ok(Received::Events(_)))
    ));
    // The group holds the only permit for longer than the stall deadline, while a line
    // is pending: the reader waits for room, and the wait is not the server's.
    let release = tokio::spawn(async move {
        tokio::time::sleep(STALL * 3).await;
        drop(held);
    });
    let next = items.next().await.map(|i| i.received);
    assert!(matches!(next, Some(Ok(Received::Events(_)))), "{next:?}");
    assert!(about(started.elapsed(), STALL * 3));
    let next = items.next().await.map(|i| i.received);
    assert!(matches!(next, Some(Err(Failure::Stalled))), "{next:?}");
    assert!(
        about(started.elapsed(), STALL * 4),
        "the pending line's deadline moved on"
    );
    drop(release);
}

#[actix_rt::test]
async fn a_streaming_list_is_its_initial_events_and_the_same_stream_then_watches() {
    let text = format!(
        "{}{}{}{}",
        event("ADDED", "a", 7),
        event("ADDED", "b", 9),
        initial_events_end(12),
        event("MODIFIED", "a", 13)
    );
    // Split at every byte: the same list, its end, and the watch after it.
    for cut in 1..text.len() {
        let (head, tail) = text.as_bytes().split_at(cut);
        let items = read(vec![head.to_vec(), tail.to_vec()], true, streaming(None)).await;
        assert_eq!(listed(&items), ["ns/a", "ns/b"], "cut at {cut}");
        assert_eq!(list_end(&items), Some("12"), "cut at {cut}");
        assert_eq!(
            batches(&items),
            [vec![("ns/a".to_string(), '+')]],
            "cut at {cut}"
        );
    }
}

#[actix_rt::test]
async fn a_big_streaming_list_comes_in_parts() {
    let text: String = (0..600)
        .map(|i| event("ADDED", &format!("p{i}"), 5))
        .collect();
    let end = initial_events_end(6);
    let items = read(texts(&[&text, &end]), true, streaming(None)).await;
    let parts: Vec<usize> = items
        .iter()
        .filter_map(|i| match i {
            Ok(Received::Part(o)) => Some(o.len()),
            Ok(Received::ListEnd(end)) => Some(end.rest.len()),
            _ => None,
        })
        .collect();
    assert_eq!(parts, [256, 256, 88], "the rest with the end");
    assert_eq!(list_end(&items), Some("6"));
}

#[actix_rt::test]
async fn a_plain_watch_or_an_old_etcds_error_instead_of_a_streaming_list_is_not_served() {
    for after in [event("MODIFIED", "a", 8), plain_bookmark(8)] {
        let text = format!("{}{after}", event("ADDED", "a", 7));
        let items = read(texts(&[&text]), false, streaming(None)).await;
        assert!(not_served(&items), "{items:?}");
        assert!(list_end(&items).is_none());
    }
    // What a real API server (Kubernetes 1.36 on etcd 3.5.1, which cannot serve watch
    // progress requests) answered a streaming list of services, captured whole: 200,
    // one ERROR event (500), the end of the stream; in JSON and in protobuf, cut at
    // every byte.
    let captured: [(Encoding, &[u8]); 2] = [
        (
            Encoding::Json,
            include_bytes!("testdata/streaming-list-refused-etcd-3.5.1.json"),
        ),
        (
            Encoding::Protobuf,
            include_bytes!("testdata/streaming-list-refused-etcd-3.5.1.pb"),
        ),
    ];
    for (encoding, bytes) in captured {
        for cut in 0..bytes.len() {
            let (head, tail) = bytes.split_at(cut);
            let reading = WatchReading {
                role: Role::Service,
                encoding,
                ..streaming(None)
            };
            let items = read(vec![head.to_vec(), tail.to_vec()], true, reading).await;
            assert!(not_served(&items), "{encoding:?}, cut at {cut}: {items:?}");
        }
    }
}

#[actix_rt::test]
async fn a_streaming_list_ended_at_once_is_not_served_and_one_ended_part_way_is_cut() {
    let items = read(Vec::new(), true, streaming(None)).await;
    assert!(not_served(&items), "{items:?}");
    let items = read(texts(&[&event("ADDED", "a", 7)]), true, streaming(None)).await;
    assert!(
        matches!(failure(&items), Some(Failure::Transport(_))),
        "{items:?}"
    );
    assert!(list_end(&items).is_none());
}

#[actix_rt::test]
async fn a_bookmark_that_never_comes_is_not_served_when_quiet_and_a_failure_when_late() {
    tokio::time::pause();
    let items = read(texts(&[&event("ADDED", "a", 7)]), false, streaming(None)).await;
    assert!(
        not_served(&items),
        "silence for the stall deadline: {items:?}"
    );
    // Events still coming at `list_body_timeout`.
    let started = tokio::time::Instant::now();
    let drip = futures_util::stream::iter(0..).then(|i| async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok::<_, String>(Bytes::from(event("ADDED", &format!("p{i}"), 7)))
    });
    let items: Vec<_> = read_watch(drip, streaming(None), Window::new(4))
        .map(|i| i.received)
        .collect()
        .await;
    assert!(
        matches!(failure(&items), Some(Failure::BadBody(why)) if why.contains("list_body_timeout")),
        "{:?}",
        failure(&items)
    );
    assert!(started.elapsed() >= LIST_TIME);
}

#[actix_rt::test]
async fn a_bad_initial_event_is_skipped_as_a_bad_list_item_is() {
    let text = format!(
        "{}{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"Pod\"}}}}\n{}",
        event("ADDED", "a", 7),
        initial_events_end(8)
    );
    let items = read(texts(&[&text]), true, streaming(None)).await;
    assert_eq!(listed(&items), ["ns/a"]);
    let skipped: Vec<&Skipped> = items
        .iter()
        .filter_map(|i| match i {
            Ok(Received::Skipped(s)) => Some(s),
            _ => None,
        })
        .collect();
    assert!(
        matches!(&skipped[..], [s] if s.total == 1 && s.counts == [(RejectReason::Undecodable, 1)]),
        "one report for the attempt: {skipped:?}"
    );
    assert_eq!(list_end(&items), Some("8"));
}

#[actix_rt::test]
async fn a_stream_of_undecodable_events_ends_after_a_few_in_a_row() {
    let bad = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\n";
    let text = bad.repeat(MAX_UNDECODABLE_IN_A_ROW + 20);
    let items = read(texts(&[&text]), false, streaming(None)).await;
    assert!(
        matches!(failure(&items), Some(Failure::BadBody(_))),
        "{items:?}"
    );
    assert!(matches!(&items[0], Ok(Received::Skipped(s)) if s.total == MAX_UNDECODABLE_IN_A_ROW));
}

#[actix_rt::test]
async fn initial_events_mostly_or_all_rejected_are_refused_whole() {
    let bad = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\n";
    for good in [0, 1, 3] {
        let mut text: String = (0..good)
            .map(|i| event("ADDED", &format!("p{i}"), 5))
            .collect();
        text.push_str(&bad.repeat(good + 1));
        text.push_str(&initial_events_end(9));
        let items = read(texts(&[&text]), false, streaming(None)).await;
        assert!(
            matches!(failure(&items), Some(Failure::BadBody(_))),
            "{good} good: {items:?}"
        );
        assert!(list_end(&items).is_none(), "nothing applied");
    }
}

#[actix_rt::test]
async fn initial_events_are_held_to_the_list_bounds_in_bytes_and_objects() {
    let bounds = [
        ListBounds {
            bytes: 4096,
            objects: usize::MAX,
            time: LIST_TIME,
        },
        ListBounds {
            bytes: usize::MAX,
            objects: 20,
            time: LIST_TIME,
        },
    ];
    for bounds in bounds {
        // Distinct new objects, never the bookmark.
        let pieces: Vec<Vec<u8>> = (0..1000)
            .map(|i| event("ADDED", &format!("p{i}"), 5).into_bytes())
            .collect();
        let items = read(pieces, false, streaming(Some(bounds))).await;
        assert!(
            matches!(failure(&items), Some(Failure::BadBody(why)) if why.contains("max_list")),
            "{bounds:?}: {:?}",
            failure(&items)
        );
        assert!(listed(&items).len() < 100, "{bounds:?}");
    }
}
