//! Transitions of the URL watcher's state machine, driven by inputs alone.

use std::time::Duration;

use super::machine::{Action, Failure, Input, Machine, Next, State};
use crate::actors::messages::Delta;
use crate::model::Role;
use crate::watch::decode_list;

fn machine(role: Role) -> Machine {
    Machine::new(
        role,
        Default::default(),
        role == Role::EndpointSlice,
        Duration::from_secs(1),
        Duration::from_secs(30),
        1 << 20,
    )
}

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

fn list_body(rv: u64, names: &[&str], cont: Option<&str>) -> Vec<u8> {
    let items: Vec<String> = names.iter().map(|n| pod_json(n, rv)).collect();
    let cont = cont
        .map(|c| format!(r#","continue":"{c}""#))
        .unwrap_or_default();
    format!(
        r#"{{"metadata":{{"resourceVersion":"{rv}"{cont}}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes()
}

fn page(rv: u64, names: &[&str], cont: Option<&str>) -> Input<'static> {
    Input::ListPage(decode_list(Role::Pod, &list_body(rv, names, cont)).expect("list decodes"))
}

/// Starts a machine and completes a one-page list at resourceVersion 10.
fn watching() -> Machine {
    let mut m = machine(Role::Pod);
    assert_eq!(
        m.on(Input::Start),
        [Action::List {
            continue_token: None
        }]
    );
    let actions = m.on(page(10, &["a"], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 1));
    assert_eq!(
        actions[1],
        Action::Watch {
            resource_version: "10".into()
        }
    );
    assert!(matches!(m.state(), State::Watching));
    m
}

fn deltas(actions: &[Action]) -> Vec<(String, u8)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Deltas(d) => Some(d),
            _ => None,
        })
        .flatten()
        .map(|d| match d {
            Delta::Upsert(o) => (o.key().to_string(), b'+'),
            Delta::Delete(o) => (o.key().to_string(), b'-'),
            Delta::Undecoded { event, .. } => (String::from_utf8_lossy(&event.json).into(), b'?'),
        })
        .collect()
}

/// One piece of the watch stream, as the actor hands it to the machine.
fn piece(bytes: &[u8]) -> [bytes::Bytes; 1] {
    [bytes::Bytes::copy_from_slice(bytes)]
}

fn is_wait(a: &Action) -> bool {
    matches!(a, Action::Wait { .. })
}

#[test]
fn pages_are_collected_before_the_group_sees_the_list() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert_eq!(
        m.on(page(5, &["a", "b"], Some("tok"))),
        [Action::List {
            continue_token: Some("tok".into())
        }]
    );
    let actions = m.on(page(7, &["c"], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 3));
    assert_eq!(
        actions[1],
        Action::Watch {
            resource_version: "7".into()
        }
    );
}

#[test]
fn an_event_split_across_chunks_is_decoded_once_whole() {
    let mut m = watching();
    let text = format!("{}{}", event("ADDED", "b", 11), event("MODIFIED", "a", 12));
    let (first, second) = text.as_bytes().split_at(text.len() / 2 + 7);
    let a1 = m.on(Input::Chunks(&piece(first)));
    assert_eq!(deltas(&a1), [("ns/b".to_string(), b'+')]);
    let a2 = m.on(Input::Chunks(&piece(second)));
    assert_eq!(deltas(&a2), [("ns/a".to_string(), b'+')]);
    assert_eq!(m.resource_version().map(|v| &**v), Some("12"));
}

#[test]
fn all_events_of_one_chunk_make_one_batch() {
    let mut m = watching();
    let text = format!(
        "{}{}{}",
        event("ADDED", "x", 11),
        event("DELETED", "a", 12),
        event("ADDED", "y", 13)
    );
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    assert_eq!(actions.len(), 1);
    assert_eq!(
        deltas(&actions),
        [
            ("ns/x".to_string(), b'+'),
            ("ns/a".to_string(), b'-'),
            ("ns/y".to_string(), b'+')
        ]
    );
}

#[test]
fn pieces_that_arrive_together_make_one_batch_and_a_bad_one_ends_it() {
    let mut m = watching();
    let text = format!(
        "{}{}{}",
        event("ADDED", "x", 11),
        event("MODIFIED", "a", 12),
        event("ADDED", "y", 13)
    );
    // Three pieces, the second event split across the first two.
    let (head, rest) = text.as_bytes().split_at(text.len() / 2);
    let (middle, tail) = rest.split_at(10);
    let pieces: Vec<bytes::Bytes> = [head, middle, tail]
        .iter()
        .map(|p| bytes::Bytes::copy_from_slice(p))
        .collect();
    let actions = m.on(Input::Chunks(&pieces));
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert_eq!(
        deltas(&actions),
        [
            ("ns/x".to_string(), b'+'),
            ("ns/a".to_string(), b'+'),
            ("ns/y".to_string(), b'+')
        ]
    );
    assert_eq!(m.resource_version().map(|v| &**v), Some("13"));

    // A bad line ends the stream: the events before it still go to the group, the
    // pieces after it are not read, and the watch resumes from the last good event.
    let pieces: Vec<bytes::Bytes> = [
        event("ADDED", "p", 14),
        "not json\n".to_string(),
        event("ADDED", "q", 15),
    ]
    .into_iter()
    .map(bytes::Bytes::from)
    .collect();
    let actions = m.on(Input::Chunks(&pieces));
    assert_eq!(deltas(&actions), [("ns/p".to_string(), b'+')]);
    assert!(actions.contains(&Action::CloseStream), "{actions:?}");
    assert!(matches!(
        m.state(),
        State::BackingOff { then: Next::Relist }
    ));
    assert_eq!(m.resource_version().map(|v| &**v), Some("14"));
}

#[test]
fn bookmarks_advance_the_resource_version_and_a_clean_end_rewatches_from_it() {
    let mut m = watching();
    let bookmark = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"99\"}}}\n";
    assert!(m.on(Input::Chunks(&piece(bookmark.as_bytes()))).is_empty());
    assert_eq!(
        m.on(Input::StreamEnded),
        [Action::Watch {
            resource_version: "99".into()
        }]
    );
}

#[test]
fn a_broken_stream_rewatches_after_a_backoff_without_relisting() {
    let mut m = watching();
    m.on(Input::Chunks(&piece(event("ADDED", "b", 11).as_bytes())));
    // Half an event, then the connection drops: the half is discarded.
    m.on(Input::Chunks(&piece(
        &event("ADDED", "c", 12).as_bytes()[..20],
    )));
    let actions = m.on(Input::StreamBroken("connection reset".into()));
    assert!(actions.iter().any(is_wait), "{actions:?}");
    assert!(matches!(
        m.state(),
        State::BackingOff {
            then: Next::Rewatch
        }
    ));
    assert_eq!(
        m.on(Input::BackoffElapsed),
        [Action::Watch {
            resource_version: "11".into()
        }]
    );
    // The discarded half does not resurface in the next stream.
    let actions = m.on(Input::Chunks(&piece(event("ADDED", "d", 13).as_bytes())));
    assert_eq!(deltas(&actions), [("ns/d".to_string(), b'+')]);
}

#[test]
fn gone_as_status_or_as_error_event_relists_at_once() {
    let mut m = watching();
    assert_eq!(
        m.on(Input::WatchFailed(Failure::Gone)),
        [Action::List {
            continue_token: None
        }]
    );

    let mut m = watching();
    let error = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n";
    let actions = m.on(Input::Chunks(&piece(
        format!("{}{error}", event("ADDED", "b", 11)).as_bytes(),
    )));
    assert_eq!(
        deltas(&actions),
        [("ns/b".to_string(), b'+')],
        "events before the error still count"
    );
    assert!(actions.contains(&Action::CloseStream));
    assert_eq!(
        actions.last(),
        Some(&Action::List {
            continue_token: None
        })
    );
    assert!(matches!(m.state(), State::Listing { .. }));
}

#[test]
fn an_expired_continue_token_restarts_the_list() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    m.on(page(5, &["a"], Some("tok")));
    let actions = m.on(Input::ListFailed(Failure::Gone));
    assert_eq!(
        actions.last(),
        Some(&Action::List {
            continue_token: None
        })
    );
    // The first page's objects are not kept: the new list starts from nothing.
    let actions = m.on(page(8, &["b"], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 1));
}

#[test]
fn a_bad_event_relists_after_a_backoff() {
    for bad in [
        "{\"type\":\"WEIRD\",\"object\":{}}\n",
        "{\"type\":\"ADDED\",\"object\":{\"metadata\":\n",
        "not json\n",
    ] {
        let mut m = watching();
        let actions = m.on(Input::Chunks(&piece(bad.as_bytes())));
        assert!(actions.contains(&Action::CloseStream), "{bad}: {actions:?}");
        assert!(actions.iter().any(is_wait), "{bad}: {actions:?}");
        assert!(
            matches!(m.state(), State::BackingOff { then: Next::Relist }),
            "{bad}"
        );
        assert_eq!(
            m.on(Input::BackoffElapsed),
            [Action::List {
                continue_token: None
            }]
        );
    }
}

#[test]
fn errors_back_off_exponentially_and_honour_retry_after() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    let mut delays = Vec::new();
    for _ in 0..8 {
        let actions = m.on(Input::ListFailed(Failure::Status {
            code: 500,
            retry_after: None,
        }));
        for a in &actions {
            if let Action::Wait { delay } = a {
                delays.push(*delay);
            }
        }
        m.on(Input::BackoffElapsed);
    }
    assert_eq!(delays.len(), 8);
    assert!(delays[0] <= Duration::from_millis(1500), "{delays:?}");
    assert!(delays[5] > Duration::from_secs(4), "grows: {delays:?}");
    assert!(
        delays.iter().all(|d| *d <= Duration::from_secs(45)),
        "capped: {delays:?}"
    );
    let actions = m.on(Input::ListFailed(Failure::Status {
        code: 429,
        retry_after: Some(Duration::from_secs(40)),
    }));
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Wait { delay } if *delay >= Duration::from_secs(40)))
    );
    // A successful list resets the backoff.
    m.on(Input::BackoffElapsed);
    m.on(page(3, &[], None));
    let actions = m.on(Input::WatchFailed(Failure::Transport("refused".into())));
    assert!(
        actions
            .iter()
            .any(|a| matches!(a, Action::Wait { delay } if *delay <= Duration::from_millis(1500)))
    );
}

#[test]
fn not_found_falls_back_to_beta_once() {
    let mut m = machine(Role::EndpointSlice);
    m.on(Input::Start);
    let actions = m.on(Input::ListFailed(Failure::NotFound));
    assert!(actions.contains(&Action::FallBackToBeta));
    assert_eq!(
        actions.last(),
        Some(&Action::List {
            continue_token: None
        })
    );
    let actions = m.on(Input::ListFailed(Failure::NotFound));
    assert!(!actions.contains(&Action::FallBackToBeta));
    assert!(actions.iter().any(is_wait));
}

#[test]
fn a_stall_closes_and_reopens_the_watch() {
    let mut m = watching();
    let actions = m.on(Input::Stalled);
    assert!(actions.contains(&Action::CloseStream));
    assert_eq!(
        actions.last(),
        Some(&Action::Watch {
            resource_version: "10".into()
        })
    );
}

#[test]
fn chunks_outside_a_watch_and_stale_timers_are_ignored() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert!(
        m.on(Input::Chunks(&piece(event("ADDED", "z", 3).as_bytes())))
            .is_empty()
    );
    assert!(m.on(Input::BackoffElapsed).is_empty());
}

#[test]
fn a_resync_relists_from_a_watch_and_replaces_a_pending_rewatch() {
    let mut m = watching();
    let actions = m.on(Input::Resync);
    assert_eq!(
        actions,
        [
            Action::CloseStream,
            Action::List {
                continue_token: None
            }
        ]
    );

    let mut m = watching();
    m.on(Input::StreamBroken("reset".into()));
    assert!(m.on(Input::Resync).is_empty());
    assert_eq!(
        m.on(Input::BackoffElapsed),
        [Action::List {
            continue_token: None
        }]
    );
}

#[test]
fn while_deferring_every_nth_object_event_goes_on_undecoded_and_the_watch_resumes_before_it() {
    let mut m = watching();
    m.set_defer_every(2);
    let bookmark = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"14\"}}}\n";
    // Lines 2 and 4 are due; line 4 is a bookmark, which is never deferred, so line 5
    // goes instead. A line that does not start as the API server writes it is decoded.
    let reordered = "{\"object\":{\"metadata\":{\"name\":\"z\",\"namespace\":\"ns\",\"resourceVersion\":\"16\"}},\"type\":\"ADDED\"}\n";
    let text = format!(
        "{}{}{}{bookmark}{}{reordered}",
        event("ADDED", "x", 11),
        event("MODIFIED", "y", 12),
        event("DELETED", "x", 13),
        event("ADDED", "w", 15),
    );
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    let got = deltas(&actions);
    let expected: [(String, u8); 5] = [
        ("ns/x".into(), b'+'),
        (event("MODIFIED", "y", 12).trim_end().into(), b'?'),
        ("ns/x".into(), b'-'),
        (event("ADDED", "w", 15).trim_end().into(), b'?'),
        ("ns/z".into(), b'+'),
    ];
    assert_eq!(got, expected);
    let attempts: Vec<u64> = actions
        .iter()
        .filter_map(|a| match a {
            Action::Deltas(d) => Some(d),
            _ => None,
        })
        .flatten()
        .filter_map(|d| match d {
            Delta::Undecoded { attempt, .. } => Some(*attempt),
            _ => None,
        })
        .collect();
    assert_eq!(attempts, [m.attempt(), m.attempt()]);
    assert_eq!(m.resource_version().map(|v| &**v), Some("16"));

    // The count goes on across chunks: the next line is due, and is the last one read,
    // so a reconnect resumes from the event before it, which replays it.
    let actions = m.on(Input::Chunks(&piece(event("ADDED", "v", 17).as_bytes())));
    assert_eq!(deltas(&actions)[0].1, b'?');
    assert_eq!(
        m.on(Input::StreamEnded),
        [Action::Watch {
            resource_version: "16".into()
        }]
    );

    // Not deferring (the group fell behind): everything is decoded here again.
    m.set_defer_every(0);
    m.on(Input::WatchOpened);
    let actions = m.on(Input::Chunks(&piece(
        format!("{}{}", event("ADDED", "t", 19), event("ADDED", "s", 20)).as_bytes(),
    )));
    assert_eq!(
        deltas(&actions),
        [("ns/t".to_string(), b'+'), ("ns/s".to_string(), b'+')]
    );
}

#[test]
fn a_deferred_event_the_group_cannot_decode_relists_after_a_backoff_unless_a_list_came_since() {
    let mut m = watching();
    let attempt = m.attempt();
    let actions = m.on(Input::DeferredEventFailed {
        attempt,
        why: "cannot decode pod JSON".into(),
    });
    assert!(actions.contains(&Action::CloseStream), "{actions:?}");
    assert!(actions.iter().any(is_wait), "{actions:?}");
    assert!(matches!(
        m.state(),
        State::BackingOff { then: Next::Relist }
    ));
    assert_eq!(
        m.on(Input::BackoffElapsed),
        [Action::List {
            continue_token: None
        }]
    );

    // Already backing off to rewatch: it lists instead.
    let mut m = watching();
    m.on(Input::StreamBroken("reset".into()));
    assert!(matches!(
        m.state(),
        State::BackingOff {
            then: Next::Rewatch
        }
    ));
    let attempt = m.attempt();
    assert!(
        m.on(Input::DeferredEventFailed {
            attempt,
            why: "bad".into()
        })
        .is_empty()
    );
    assert!(matches!(
        m.state(),
        State::BackingOff { then: Next::Relist }
    ));

    // A report about an attempt before the current list is moot: that list read the
    // object again.
    let mut m = watching();
    let old = m.attempt();
    m.on(Input::Resync);
    m.on(page(20, &["a"], None));
    assert!(matches!(m.state(), State::Watching));
    assert!(
        m.on(Input::DeferredEventFailed {
            attempt: old,
            why: "bad".into()
        })
        .is_empty()
    );
    assert!(matches!(m.state(), State::Watching));
}
