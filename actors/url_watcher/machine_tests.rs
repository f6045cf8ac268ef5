//! Transitions of the URL watcher's state machine, driven by inputs alone.

use std::time::Duration;

use super::backoff::JitteredExponential;
use super::initial_events::MAX_UNDECODABLE_IN_A_ROW;
use super::machine::{Action, Failure, Input, ListCaps, ListWay, Machine, Next, Report, State};
use crate::metrics::{RejectReason, RelistReason, RequestError, StallReason};
use crate::model::Role;
use crate::wire::Encoding;
use crate::wire::json::{WatchEvent, decode_list};

const CAP: Duration = Duration::from_secs(30);

/// The engine's policy: from 1 s, doubling, capped at [`CAP`].
fn delays() -> Box<JitteredExponential> {
    Box::new(JitteredExponential::new(Duration::from_secs(1), CAP))
}

fn machine(role: Role) -> Machine {
    Machine::new(role, role == Role::EndpointSlice, delays(), 1 << 20)
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

fn gone_event() -> &'static str {
    "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\",\"message\":\"too old resource version: 10 (20)\"}}\n"
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

/// The actions without the reports.
fn acts(actions: Vec<Action>) -> Vec<Action> {
    actions
        .into_iter()
        .filter(|a| !matches!(a, Action::Report(_)))
        .collect()
}

/// The reports among the actions.
fn reports(actions: &[Action]) -> Vec<&Report> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Report(r) => Some(r),
            _ => None,
        })
        .collect()
}

fn list_from_scratch() -> Action {
    Action::List {
        continue_token: None,
    }
}

fn watch_from(rv: &str) -> Action {
    Action::Watch {
        resource_version: rv.into(),
    }
}

fn wait_of(actions: &[Action]) -> Option<Duration> {
    actions.iter().find_map(|a| match a {
        Action::Wait { delay } => Some(*delay),
        _ => None,
    })
}

/// Starts a machine and completes a one-page list at resourceVersion 10.
fn watching() -> Machine {
    let mut m = machine(Role::Pod);
    let start = m.on(Input::Start);
    assert_eq!(reports(&start), [&Report::Relisting(RelistReason::Initial)]);
    assert_eq!(acts(start), [list_from_scratch()]);
    let actions = m.on(page(10, &["a"], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 1));
    assert_eq!(actions[1], watch_from("10"));
    assert!(matches!(m.state(), State::Watching { healthy: false, .. }));
    m
}

fn deltas(actions: &[Action]) -> Vec<(String, u8)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Deltas { deltas, .. } => Some(deltas),
            _ => None,
        })
        .flatten()
        .map(|d| match d {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => (o.key().to_string(), b'+'),
            WatchEvent::Deleted(o) => (o.key().to_string(), b'-'),
            other => panic!("handed on: {other:?}"),
        })
        .collect()
}

/// One piece of the watch stream, as the actor hands it to the machine.
fn piece(bytes: &[u8]) -> [bytes::Bytes; 1] {
    [bytes::Bytes::copy_from_slice(bytes)]
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
    assert_eq!(actions[1], watch_from("7"));
}

/// Objects decoded from a LIST page, as the actor hands them to the machine (an empty
/// part as each page's body starts).
fn part(names: &[&str]) -> Input<'static> {
    let page = decode_list(Role::Pod, &list_body(5, names, None)).expect("list decodes");
    Input::ListPartDecoded(page.items)
}

/// The parts among the actions: their objects' keys, and whether each is the first of
/// an attempt.
fn parts(actions: &[Action]) -> Vec<(Vec<String>, bool)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ListPart { objects, first } => {
                let keys = objects.iter().map(|o| o.key().to_string()).collect();
                Some((keys, *first))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn the_parts_of_a_list_attempt_reach_the_group_its_first_part_marked_first() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    // The first page's body starts: even an empty list starts an attempt at the group.
    assert_eq!(parts(&m.on(part(&[]))), [(vec![], true)]);
    let actions = m.on(part(&["a", "b"]));
    assert_eq!(
        parts(&actions),
        [(vec!["ns/a".into(), "ns/b".into()], false)]
    );
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert!(
        m.on(part(&[])).is_empty(),
        "a later empty part says nothing"
    );
    m.on(page(5, &[], Some("tok")));
    // The next page of the same attempt: its start is no new attempt.
    assert!(m.on(part(&[])).is_empty());
    assert_eq!(parts(&m.on(part(&["c"]))), [(vec!["ns/c".into()], false)]);
    let actions = m.on(page(7, &[], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.is_empty()));
    assert_eq!(actions[1], watch_from("7"));
    // A first part with objects is marked as well.
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert_eq!(parts(&m.on(part(&["a"]))), [(vec!["ns/a".into()], true)]);
    assert_eq!(parts(&m.on(part(&["b"]))), [(vec!["ns/b".into()], false)]);
}

#[test]
fn a_list_part_outside_a_list_attempt_is_dropped() {
    // Watching, backing off after a failed LIST, and streaming a list: no LIST attempt
    // is under way, and a part of a page read for an attempt that ended goes nowhere.
    let mut watching = watching();
    let mut backing_off = machine(Role::Pod);
    backing_off.on(Input::Start);
    backing_off.on(part(&["a"]));
    backing_off.on(Input::ListFailed(Failure::Transport("reset".into())));
    let mut streaming = streaming(Role::Pod);
    streaming.on(Input::Start);
    for (what, m) in [
        ("watching", &mut watching),
        ("backing off", &mut backing_off),
        ("streaming a list", &mut streaming),
    ] {
        let phase = m.phase();
        assert!(m.on(part(&["x"])).is_empty(), "{what}");
        assert!(m.on(part(&[])).is_empty(), "{what}");
        assert_eq!(m.phase(), phase, "{what}");
    }
    assert!(matches!(watching.state(), State::Watching { .. }));
    assert!(matches!(backing_off.state(), State::BackingOff { .. }));
    assert!(matches!(streaming.state(), State::StreamingList { .. }));
}

#[test]
fn a_new_list_attempt_after_a_failure_marks_its_first_part_again() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert_eq!(parts(&m.on(part(&["a"]))), [(vec!["ns/a".into()], true)]);
    let actions = m.on(Input::ListFailed(Failure::Transport("reset".into())));
    assert_eq!(actions[0], Action::AbandonList);
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
    assert_eq!(parts(&m.on(part(&[]))), [(vec![], true)]);
    assert_eq!(parts(&m.on(part(&["b"]))), [(vec!["ns/b".into()], false)]);
    // An expired continue token relists at once: a new attempt, marked again.
    m.on(page(5, &[], Some("tok")));
    let gone = m.on(Input::ListFailed(Failure::Gone {
        message: "expired".into(),
    }));
    assert_eq!(acts(gone).last(), Some(&list_from_scratch()));
    assert_eq!(parts(&m.on(part(&["c"]))), [(vec!["ns/c".into()], true)]);
    // As does a periodic relist from a watch.
    m.on(page(9, &[], None));
    m.on(Input::Resync);
    assert_eq!(parts(&m.on(part(&[]))), [(vec![], true)]);
}

#[test]
fn a_list_without_a_resource_version_is_kept_and_listed_again_after_the_backoff() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    let mut body = page(0, &["a"], None);
    if let Input::ListPage(p) = &mut body {
        p.resource_version = "".into();
    }
    let actions = m.on(body);
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 1));
    assert!(wait_of(&actions).is_some(), "{actions:?}");
    assert!(matches!(
        m.state(),
        State::BackingOff {
            then: Next::Relist(RelistReason::NoResourceVersion)
        }
    ));
}

#[test]
fn an_event_split_across_chunks_is_decoded_once_whole() {
    let mut m = watching();
    let text = format!("{}{}", event("ADDED", "b", 11), event("MODIFIED", "a", 12));
    let (first, second) = text.as_bytes().split_at(text.len() / 2 + 7);
    let a1 = m.on(Input::Chunks(&piece(first)));
    assert_eq!(deltas(&a1), [("ns/b".to_string(), b'+')]);
    assert!(m.partial_line().is_some());
    let a2 = m.on(Input::Chunks(&piece(second)));
    assert_eq!(deltas(&a2), [("ns/a".to_string(), b'+')]);
    assert_eq!(m.partial_line(), None);
    assert_eq!(m.resource_version().map(|v| &**v), Some("12"));
}

#[test]
fn pieces_that_arrive_together_make_one_batch_and_a_bad_one_ends_it() {
    let mut m = watching();
    let text = format!(
        "{}{}{}",
        event("ADDED", "x", 11),
        event("DELETED", "a", 12),
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
    assert!(matches!(&actions[0], Action::Deltas { counts, .. }
        if counts.added == 2 && counts.deleted == 1));
    assert_eq!(
        deltas(&actions),
        [
            ("ns/x".to_string(), b'+'),
            ("ns/a".to_string(), b'-'),
            ("ns/y".to_string(), b'+')
        ]
    );
    assert_eq!(m.resource_version().map(|v| &**v), Some("13"));

    // A bad line ends the stream: the events before it still go to the group, the
    // pieces after it are not read, and the resourceVersion is the last accepted one.
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
        reports(&actions)[..],
        [Report::Rejected {
            reason: RejectReason::Undecodable,
            ..
        }]
    ));
    assert!(matches!(
        m.state(),
        State::BackingOff {
            then: Next::Relist(RelistReason::BadEvent)
        }
    ));
}

#[test]
fn a_rejected_event_never_moves_the_resource_version() {
    for bad in [
        // Another kind, with a resourceVersion far ahead.
        "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Node\",\"metadata\":{\"name\":\"n\",\"resourceVersion\":\"999999\"}}}\n".to_string(),
        // Nested deeper than serde_json's limit.
        format!("{{\"type\":\"ADDED\",\"object\":{{\"metadata\":{{\"name\":\"x\",\"resourceVersion\":\"999999\",\"labels\":{}}}}}}}\n",
            format_args!("{}1{}", "[".repeat(200_000), "]".repeat(200_000))),
    ] {
        let mut m = watching();
        m.on(Input::Chunks(&piece(event("ADDED", "b", 11).as_bytes())));
        let actions = m.on(Input::Chunks(&piece(bad.as_bytes())));
        assert!(deltas(&actions).is_empty());
        assert!(matches!(m.state(), State::BackingOff { then: Next::Relist(RelistReason::BadEvent) }));
        assert_eq!(m.resource_version(), None, "a relist, not a watch from 999999");
        // The relist then watches from the list's own resourceVersion.
        m.on(Input::BackoffElapsed);
        let actions = m.on(page(12, &["a"], None));
        assert!(actions.contains(&watch_from("12")));
    }
}

#[test]
fn an_event_over_the_size_limit_is_refused_before_it_is_whole() {
    let mut m = Machine::new(Role::Pod, false, delays(), 100);
    m.on(Input::Start);
    m.on(page(10, &["a"], None));
    let actions = m.on(Input::Chunks(&piece(&[b'x'; 101])));
    assert!(matches!(
        reports(&actions)[..],
        [Report::Rejected {
            reason: RejectReason::TooLarge,
            ..
        }]
    ));
    assert!(actions.contains(&Action::CloseStream));
}

#[test]
fn bookmarks_advance_the_resource_version_and_a_healthy_watchs_end_rewatches_from_it() {
    let mut m = watching();
    let bookmark = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"99\"}}}\n";
    let actions = m.on(Input::Chunks(&piece(bookmark.as_bytes())));
    assert!(
        matches!(&actions[..], [Action::Deltas { deltas, counts }] if deltas.is_empty() && counts.bookmarks == 1)
    );
    assert_eq!(reports(&m.on(Input::Healthy)), [&Report::Healthy]);
    assert!(m.on(Input::Healthy).is_empty(), "healthy is reported once");
    let actions = m.on(Input::StreamEnded);
    assert_eq!(reports(&actions), [&Report::Rewatching]);
    assert_eq!(acts(actions), [watch_from("99")]);
}

#[test]
fn a_watch_the_server_ends_before_it_was_healthy_is_retried_after_the_backoff() {
    let mut m = watching();
    let actions = m.on(Input::StreamEnded);
    assert!(matches!(
        reports(&actions)[..],
        [Report::RequestFailed {
            reason: RequestError::ShortWatch,
            ..
        }]
    ));
    assert!(wait_of(&actions).is_some());
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [watch_from("10")]);
}

#[test]
fn an_idle_watch_that_reaches_its_deadline_is_reopened_quietly_from_the_same_version() {
    let mut m = watching();
    m.on(Input::Healthy);
    let actions = m.on(Input::WatchExpired);
    assert_eq!(reports(&actions), [&Report::Rewatching]);
    assert_eq!(
        acts(actions),
        [Action::CloseStream, watch_from("10")],
        "no wait, no relist"
    );
}

#[test]
fn a_stalled_line_is_cut_and_the_watch_resumed_after_the_backoff() {
    let mut m = watching();
    m.on(Input::Chunks(&piece(event("ADDED", "b", 11).as_bytes())));
    m.on(Input::Chunks(&piece(b"{\"type\":\"ADD")));
    assert!(m.partial_line().is_some());
    let actions = m.on(Input::Stalled);
    assert!(matches!(
        reports(&actions)[..],
        [Report::Stalled {
            reason: StallReason::Watch,
            ..
        }]
    ));
    assert!(actions.contains(&Action::CloseStream));
    assert_eq!(m.partial_line(), None, "the partial line is dropped");
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [watch_from("11")]);
}

#[test]
fn a_broken_stream_rewatches_after_a_backoff_without_relisting() {
    let mut m = watching();
    m.on(Input::Chunks(&piece(event("ADDED", "b", 11).as_bytes())));
    m.on(Input::Chunks(&piece(b"{\"type\":\"ADD")));
    let actions = m.on(Input::StreamBroken("connection reset".into()));
    assert!(wait_of(&actions).is_some());
    assert!(matches!(m.state(), State::BackingOff { then: Next::Rewatch(rv) } if &**rv == "11"));
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [watch_from("11")]);
}

#[test]
fn the_first_410_relists_at_once_and_one_that_repeats_right_after_waits() {
    for gone in [
        |m: &mut Machine| {
            m.on(Input::WatchFailed(Failure::Gone {
                message: "too old".into(),
            }))
        },
        |m: &mut Machine| m.on(Input::Chunks(&piece(gone_event().as_bytes()))),
    ] {
        let mut m = watching();
        let actions = gone(&mut m);
        assert!(matches!(
            reports(&actions)[0],
            Report::Gone {
                repeated: false,
                ..
            }
        ));
        assert!(wait_of(&actions).is_none(), "{actions:?}");
        assert!(actions.contains(&list_from_scratch()));
        m.on(page(20, &["a"], None));
        // Again, right after the relist: the backoff.
        let actions = gone(&mut m);
        assert!(matches!(
            reports(&actions)[0],
            Report::Gone { repeated: true, .. }
        ));
        assert!(wait_of(&actions).is_some(), "{actions:?}");
        assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
        // After a healthy watch, a 410 relists at once again.
        m.on(page(30, &["a"], None));
        m.on(Input::Healthy);
        let actions = gone(&mut m);
        assert!(wait_of(&actions).is_none(), "{actions:?}");
    }
}

#[test]
fn an_expired_continue_token_restarts_the_list() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    m.on(page(5, &["a"], Some("tok")));
    let actions = m.on(Input::ListFailed(Failure::Gone {
        message: "continue token expired".into(),
    }));
    assert_eq!(actions[0], Action::AbandonList);
    assert_eq!(acts(actions)[1..], [list_from_scratch()]);
    let actions = m.on(page(6, &["b"], None));
    assert!(matches!(&actions[0], Action::Relisted(objs) if objs.len() == 1));
}

#[test]
fn errors_back_off_exponentially_up_to_the_cap_and_only_a_healthy_watch_resets_it() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    let fail = |m: &mut Machine| {
        let actions = m.on(Input::ListFailed(Failure::Status {
            code: 500,
            retry_after: None,
            message: String::new(),
        }));
        let delay = wait_of(&actions).expect("waits");
        m.on(Input::BackoffElapsed);
        delay
    };
    let delays: Vec<Duration> = (0..10).map(|_| fail(&mut m)).collect();
    assert!(delays[0] <= Duration::from_millis(1500), "{delays:?}");
    assert!(delays[4] >= Duration::from_secs(8), "{delays:?}");
    assert!(delays.iter().all(|d| *d <= CAP), "{delays:?}");
    // A LIST that succeeds does not reset it: a watch that fails at once still waits
    // long.
    m.on(page(10, &["a"], None));
    let actions = m.on(Input::WatchFailed(Failure::Transport("refused".into())));
    assert!(wait_of(&actions).expect("waits") >= CAP / 2, "{actions:?}");
    m.on(Input::BackoffElapsed);
    // A healthy watch does.
    m.on(Input::Healthy);
    let actions = m.on(Input::StreamBroken("reset".into()));
    assert!(wait_of(&actions).expect("waits") <= Duration::from_millis(1500));
}

#[test]
fn retry_after_is_honoured_up_to_the_cap() {
    let mut m = watching();
    for (asked, at_least, at_most) in [
        (5, Duration::from_secs(5), Duration::from_secs(5)),
        (86_400, CAP, CAP),
    ] {
        let actions = m.on(Input::WatchFailed(Failure::Status {
            code: 429,
            retry_after: Some(Duration::from_secs(asked)),
            message: "too many requests".into(),
        }));
        let delay = wait_of(&actions).expect("waits");
        assert!(
            delay >= at_least && delay <= at_most.max(delay.min(CAP)),
            "{asked}: {delay:?}"
        );
        assert!(delay <= CAP, "{asked}: {delay:?}");
        m.on(Input::BackoffElapsed);
    }
}

#[test]
fn a_400_or_a_repeated_403_is_a_configuration_problem_retried_at_the_cap() {
    let status = |code| {
        Input::WatchFailed(Failure::Status {
            code,
            retry_after: None,
            message: "pods is forbidden: User \"system:anonymous\" cannot watch resource \"pods\""
                .into(),
        })
    };
    let mut m = watching();
    let actions = m.on(status(400));
    assert!(matches!(
        reports(&actions)[0],
        Report::RequestFailed {
            configuration: true,
            reason: RequestError::BadRequest,
            ..
        }
    ));
    assert_eq!(wait_of(&actions), Some(CAP));

    let mut m = watching();
    let first = m.on(status(403));
    assert!(matches!(
        reports(&first)[0],
        Report::RequestFailed { configuration: false, message, .. }
            if message.starts_with("403 Forbidden: pods is forbidden")
    ));
    assert!(wait_of(&first).expect("waits") < CAP);
    m.on(Input::BackoffElapsed);
    let second = m.on(status(403));
    assert!(matches!(
        reports(&second)[0],
        Report::RequestFailed {
            configuration: true,
            reason: RequestError::Forbidden,
            ..
        }
    ));
    assert_eq!(wait_of(&second), Some(CAP));
}

#[test]
fn not_found_falls_back_to_beta_then_is_a_configuration_problem_checked_in_both_versions() {
    let not_found = || {
        Input::ListFailed(Failure::Status {
            code: 404,
            retry_after: None,
            message: String::new(),
        })
    };
    let mut m = machine(Role::EndpointSlice);
    m.on(Input::Start);
    let actions = acts(m.on(not_found()));
    assert_eq!(
        actions,
        [
            Action::AbandonList,
            Action::FallBackToBeta,
            list_from_scratch()
        ]
    );
    let actions = m.on(not_found());
    assert!(matches!(
        reports(&actions)[0],
        Report::RequestFailed {
            configuration: true,
            ..
        }
    ));
    assert_eq!(wait_of(&actions), Some(CAP));
    // The next check starts from the current version again, and falls back again.
    assert!(actions.contains(&Action::BackToCurrent));
    m.on(Input::BackoffElapsed);
    let actions = acts(m.on(not_found()));
    assert!(actions.contains(&Action::FallBackToBeta), "{actions:?}");
}

#[test]
fn a_broken_or_stalled_list_is_abandoned_and_retried_after_the_backoff() {
    for failure in [
        Failure::BadBody("a NodeList, not a PodList".into()),
        Failure::Transport("truncated".into()),
        Failure::Stalled,
    ] {
        let mut m = watching();
        m.on(Input::Resync);
        let actions = m.on(Input::ListFailed(failure));
        assert_eq!(actions[0], Action::AbandonList);
        assert!(wait_of(&actions).is_some());
        assert!(matches!(
            m.state(),
            State::BackingOff {
                then: Next::Relist(RelistReason::Retry)
            }
        ));
    }
}

#[test]
fn chunks_outside_a_watch_and_stale_timers_are_ignored() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert!(
        m.on(Input::Chunks(&piece(event("ADDED", "a", 1).as_bytes())))
            .is_empty()
    );
    assert!(m.on(Input::BackoffElapsed).is_empty());
    assert!(m.on(Input::Stalled).is_empty());
    assert!(m.on(Input::WatchExpired).is_empty());
    assert!(matches!(m.state(), State::Listing { .. }));
}

#[test]
fn a_resync_relists_from_a_watch_and_replaces_a_pending_rewatch() {
    let mut m = watching();
    let actions = m.on(Input::Resync);
    assert_eq!(
        reports(&actions),
        [&Report::Relisting(RelistReason::Resync)]
    );
    assert_eq!(acts(actions), [Action::CloseStream, list_from_scratch()]);
    m.on(page(11, &["a"], None));
    m.on(Input::StreamBroken("reset".into()));
    assert!(m.on(Input::Resync).is_empty());
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
}

/// How a fake server answers each request of the machine.
type Answer = Box<dyn Fn(&Action) -> Input<'static>>;

/// A server that misbehaves the same way for ten minutes of simulated time, answered
/// the way each fault is: the requests of every minute after the first, counted from
/// the machine's own waits (the answers come at once, the worst case).
fn requests_per_minute(answer: impl Fn(&Action) -> Input<'static>) -> Vec<usize> {
    let mut m = machine(Role::Pod);
    let mut now = Duration::ZERO;
    let mut per_minute = vec![0usize; 10];
    let mut pending = m.on(Input::Start);
    while now < Duration::from_secs(600) {
        let mut next = Vec::new();
        for action in &pending {
            match action {
                Action::List { .. } | Action::Watch { .. } => {
                    per_minute[(now.as_secs() / 60) as usize] += 1;
                    next.extend(m.on(answer(action)));
                }
                Action::Wait { delay } => {
                    now += *delay;
                    next.extend(m.on(Input::BackoffElapsed));
                }
                _ => {}
            }
        }
        assert!(!next.is_empty(), "the machine stopped retrying");
        pending = next;
    }
    per_minute
}

#[test]
fn under_any_lasting_fault_a_url_makes_at_most_twenty_requests_a_minute() {
    let list_ok = || page(10, &["a"], None);
    let status = |code, retry_after| Failure::Status {
        code,
        retry_after,
        message: String::new(),
    };
    let faults: [(&str, Answer); 9] = [
        (
            "every watch breaks at once",
            Box::new(move |a| match a {
                Action::List { .. } => list_ok(),
                _ => Input::StreamBroken("connection reset".into()),
            }),
        ),
        (
            "every watch answers HTTP 410",
            Box::new(move |a| match a {
                Action::List { .. } => list_ok(),
                _ => Input::WatchFailed(Failure::Gone {
                    message: "too old".into(),
                }),
            }),
        ),
        (
            "every LIST is the wrong kind",
            Box::new(|_| Input::ListFailed(Failure::BadBody("NodeList".into()))),
        ),
        (
            "every watch ends at once",
            Box::new(move |a| match a {
                Action::List { .. } => list_ok(),
                _ => Input::StreamEnded,
            }),
        ),
        (
            "every watch is cut by a stall",
            Box::new(move |a| match a {
                Action::List { .. } => list_ok(),
                _ => Input::Stalled,
            }),
        ),
        (
            "500 to everything",
            Box::new(move |_| Input::ListFailed(status(500, None))),
        ),
        (
            "429 with a short Retry-After",
            Box::new(move |_| Input::ListFailed(status(429, Some(Duration::from_secs(1))))),
        ),
        (
            "403 to every watch",
            Box::new(move |a| match a {
                Action::List { .. } => list_ok(),
                _ => Input::WatchFailed(status(403, None)),
            }),
        ),
        (
            "every LIST stalls",
            Box::new(|_| Input::ListFailed(Failure::Stalled)),
        ),
    ];
    for (name, answer) in faults {
        let per_minute = requests_per_minute(answer);
        assert!(
            per_minute.iter().all(|n| *n <= 20),
            "{name}: {per_minute:?} requests a minute"
        );
    }
}

/// The ERROR-event case of the test above needs the event in the stream: checked on
/// its own, since the answer borrows the event's bytes.
#[test]
fn every_watch_answering_an_error_410_event_makes_at_most_twenty_requests_a_minute() {
    let mut m = machine(Role::Pod);
    let mut now = Duration::ZERO;
    let mut per_minute = vec![0usize; 10];
    let mut pending = m.on(Input::Start);
    let gone = piece(gone_event().as_bytes());
    while now < Duration::from_secs(600) {
        let mut next = Vec::new();
        for action in &pending {
            match action {
                Action::List { .. } => {
                    per_minute[(now.as_secs() / 60) as usize] += 1;
                    next.extend(m.on(page(10, &["a"], None)));
                }
                Action::Watch { .. } => {
                    per_minute[(now.as_secs() / 60) as usize] += 1;
                    next.extend(m.on(Input::Chunks(&gone)));
                }
                Action::Wait { delay } => {
                    now += *delay;
                    next.extend(m.on(Input::BackoffElapsed));
                }
                _ => {}
            }
        }
        pending = next;
    }
    assert!(per_minute.iter().all(|n| *n <= 20), "{per_minute:?}");
    assert!(per_minute[0] >= 4, "it does retry: {per_minute:?}");
}

// Streaming lists: a watch with sendInitialEvents whose ADDED events are the list, up
// to the bookmark annotated k8s.io/initial-events-end.

fn streaming(role: Role) -> Machine {
    machine(role).with_streaming_lists(true)
}

fn stream_list_from(rv: &str) -> Action {
    Action::StreamList {
        resource_version: rv.into(),
    }
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

/// The objects' names of the list parts and the completed list, in order.
fn listed(actions: &[Action]) -> Vec<String> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::ListPart { objects, .. } | Action::Relisted(objects) => Some(objects),
            _ => None,
        })
        .flatten()
        .map(|o| o.key().to_string())
        .collect()
}

fn not_served(actions: &[Action]) -> bool {
    actions
        .iter()
        .any(|a| matches!(a, Action::Report(Report::StreamingListNotServed { .. })))
}

/// Starts a streaming machine and completes its list of `a` at resourceVersion 10.
fn stream_watching() -> Machine {
    let mut m = streaming(Role::Pod);
    assert_eq!(acts(m.on(Input::Start)), [stream_list_from("")]);
    let text = format!("{}{}", event("ADDED", "a", 7), initial_events_end(10));
    m.on(Input::Chunks(&piece(text.as_bytes())));
    assert_eq!(m.resource_version().map(|v| &**v), Some("10"));
    m
}

#[test]
fn a_streaming_list_is_its_initial_events_and_the_same_stream_then_watches() {
    let mut m = streaming(Role::Pod);
    let start = m.on(Input::Start);
    assert_eq!(reports(&start), [&Report::Relisting(RelistReason::Initial)]);
    assert_eq!(acts(start), [stream_list_from("")]);
    // Split at every byte boundary of one piece: the list ends only at the bookmark.
    let text = format!(
        "{}{}{}{}",
        event("ADDED", "a", 7),
        event("ADDED", "b", 9),
        initial_events_end(12),
        event("MODIFIED", "a", 13)
    );
    let (head, tail) = text.as_bytes().split_at(text.len() / 3);
    let first = m.on(Input::Chunks(&piece(head)));
    assert!(
        listed(&first).is_empty(),
        "held until the bookmark: {first:?}"
    );
    assert!(matches!(m.state(), State::StreamingList { .. }));
    let rest = m.on(Input::Chunks(&piece(tail)));
    assert_eq!(
        rest[0],
        Action::ListPart {
            objects: Vec::new(),
            first: true
        }
    );
    assert!(matches!(&rest[1], Action::Relisted(o) if o.len() == 2));
    assert_eq!(rest[2], Action::WatchOnStream);
    assert_eq!(listed(&rest), ["ns/a", "ns/b"]);
    assert_eq!(deltas(&rest), [("ns/a".to_string(), b'+')]);
    assert!(!rest.iter().any(|a| matches!(a, Action::Watch { .. })));
    assert_eq!(m.resource_version().map(|v| &**v), Some("13"));
    assert!(m.streaming_lists());
}

#[test]
fn a_streaming_list_at_every_split_of_its_bytes_gives_the_same_list_and_watch() {
    let text = format!(
        "{}{}{}{}",
        event("ADDED", "a", 7),
        event("ADDED", "b", 9),
        initial_events_end(12),
        event("DELETED", "b", 14)
    );
    for cut in 1..text.len() {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let (head, tail) = text.as_bytes().split_at(cut);
        let mut actions = m.on(Input::Chunks(&piece(head)));
        actions.extend(m.on(Input::Chunks(&piece(tail))));
        assert_eq!(listed(&actions), ["ns/a", "ns/b"], "cut at {cut}");
        assert_eq!(
            deltas(&actions),
            [("ns/b".to_string(), b'-')],
            "cut at {cut}"
        );
        assert_eq!(m.resource_version().map(|v| &**v), Some("14"));
    }
}

#[test]
fn a_big_streaming_list_reaches_the_group_in_parts_first_one_marked() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let text: String = (0..600)
        .map(|i| event("ADDED", &format!("p{i}"), 5))
        .collect();
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    assert!(
        matches!(&actions[..], [Action::ListPart { objects, first: true }] if objects.len() == 600)
    );
    let more: String = (600..900)
        .map(|i| event("ADDED", &format!("p{i}"), 5))
        .collect();
    let actions = m.on(Input::Chunks(&piece(more.as_bytes())));
    assert!(matches!(
        &actions[..],
        [Action::ListPart { first: false, .. }]
    ));
    let end = m.on(Input::Chunks(&piece(initial_events_end(6).as_bytes())));
    assert!(matches!(&end[0], Action::Relisted(o) if o.is_empty()));
}

#[test]
fn a_server_that_refuses_streaming_lists_is_listed_at_once_and_for_good() {
    for code in [400, 403, 422] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let actions = m.on(Input::WatchFailed(Failure::Status {
            code,
            retry_after: None,
            message: "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".into(),
        }));
        assert!(not_served(&actions), "{code}: {actions:?}");
        assert!(reports(&actions).contains(&&Report::Relisting(RelistReason::FallBack)));
        assert_eq!(acts(actions), [Action::AbandonList, list_from_scratch()]);
        assert!(!m.streaming_lists());
        // Remembered: the relist after a 410 is a LIST too.
        m.on(page(10, &["a"], None));
        let gone = m.on(Input::WatchFailed(Failure::Gone {
            message: "too old".into(),
        }));
        assert_eq!(acts(gone), [list_from_scratch()]);
    }
}

#[test]
fn a_plain_watch_instead_of_a_streaming_list_falls_back_to_list() {
    // A server that ignores sendInitialEvents: synthetic ADDED events, then changes,
    // or bookmarks without the annotation.
    for after in [event("MODIFIED", "a", 8), plain_bookmark(8)] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let text = format!("{}{after}", event("ADDED", "a", 7));
        let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
        assert!(not_served(&actions), "{actions:?}");
        assert_eq!(
            acts(actions),
            [
                Action::CloseStream,
                Action::AbandonList,
                list_from_scratch()
            ]
        );
        assert!(!m.streaming_lists());
    }
}

#[test]
fn a_stream_ended_at_once_falls_back_for_good_and_one_ended_part_way_lists_next_time() {
    // A server that sends 200, then ends the stream at once: not served.
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let actions = m.on(Input::StreamEnded);
    assert!(not_served(&actions));
    assert_eq!(acts(actions), [Action::AbandonList, list_from_scratch()]);
    assert_eq!(m.list_way(), ListWay::List);
    // Ended after some of the initial events: a cut, not a refusal. What it sent is
    // dropped, and the next attempt, after the backoff, is a LIST.
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    m.on(Input::Chunks(&piece(event("ADDED", "a", 7).as_bytes())));
    let actions = m.on(Input::StreamEnded);
    assert!(!not_served(&actions));
    assert!(listed(&actions).is_empty());
    assert!(actions.contains(&Action::AbandonList));
    assert!(wait_of(&actions).is_some());
    assert_eq!(m.list_way(), ListWay::ListForNow);
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
}

#[test]
fn a_bookmark_that_never_comes_falls_back_to_list() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    m.on(Input::Chunks(&piece(event("ADDED", "a", 7).as_bytes())));
    let actions = m.on(Input::InitialEventsOverdue { quiet: true });
    assert!(not_served(&actions));
    assert_eq!(
        acts(actions),
        [
            Action::CloseStream,
            Action::AbandonList,
            list_from_scratch()
        ]
    );
    // Events still coming at `list_body_timeout`: a failed attempt, a LIST next.
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    m.on(Input::Chunks(&piece(event("ADDED", "a", 7).as_bytes())));
    let actions = m.on(Input::InitialEventsOverdue { quiet: false });
    assert!(!not_served(&actions));
    assert!(wait_of(&actions).is_some());
    assert_eq!(m.list_way(), ListWay::ListForNow);
    // Once watching, the deadline means nothing.
    let mut m = stream_watching();
    assert!(m.on(Input::InitialEventsOverdue { quiet: true }).is_empty());
}

#[test]
fn a_streaming_relist_after_410_starts_from_the_current_state() {
    let mut m = stream_watching();
    let actions = m.on(Input::Chunks(&piece(gone_event().as_bytes())));
    assert!(reports(&actions).contains(&&Report::Relisting(RelistReason::Gone)));
    assert_eq!(acts(actions), [Action::CloseStream, stream_list_from("")]);
    let text = format!("{}{}", event("ADDED", "b", 30), initial_events_end(31));
    let relisted = m.on(Input::Chunks(&piece(text.as_bytes())));
    assert_eq!(listed(&relisted), ["ns/b"]);
    assert_eq!(m.resource_version().map(|v| &**v), Some("31"));
}

#[test]
fn a_periodic_streaming_relist_starts_from_the_last_resource_version() {
    let mut m = stream_watching();
    m.on(Input::Chunks(&piece(event("MODIFIED", "a", 15).as_bytes())));
    let actions = m.on(Input::Resync);
    assert_eq!(acts(actions), [Action::CloseStream, stream_list_from("15")]);
}

#[test]
fn a_streaming_list_that_fails_otherwise_is_listed_next_and_streams_again_once_healthy() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    m.on(Input::Chunks(&piece(event("ADDED", "a", 7).as_bytes())));
    let actions = m.on(Input::StreamBroken("connection reset".into()));
    assert!(actions.contains(&Action::AbandonList));
    assert!(wait_of(&actions).is_some());
    assert!(!not_served(&actions));
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
    // The LIST and its watch go well: the next relist streams again.
    m.on(page(10, &["a"], None));
    m.on(Input::Healthy);
    assert_eq!(m.list_way(), ListWay::Stream);
    let actions = m.on(Input::Resync);
    assert_eq!(acts(actions), [Action::CloseStream, stream_list_from("10")]);
    let failed = m.on(Input::WatchFailed(Failure::Status {
        code: 503,
        retry_after: None,
        message: String::new(),
    }));
    assert!(wait_of(&failed).is_some());
    assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
    // An ERROR event other than 410 among the initial events, the same (as the first
    // event, a 500 is how a server says it does not serve streaming lists: below).
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let error = format!(
        "{}{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"code\":500,\"message\":\"etcd\"}}}}\n",
        event("ADDED", "a", 7)
    );
    let actions = m.on(Input::Chunks(&piece(error.as_bytes())));
    assert!(actions.contains(&Action::AbandonList));
    assert!(listed(&actions).is_empty());
    assert!(wait_of(&actions).is_some());
    assert_eq!(m.list_way(), ListWay::ListForNow);
}

/// What a real API server (Kubernetes 1.36 on etcd 3.5.1, which cannot serve watch
/// progress requests) answered a streaming list of services, captured whole: 200, one
/// `ERROR` event (500), the end of the stream. In JSON and in protobuf, fed whole and
/// cut at every byte, the URL falls back to LIST at once, for good.
#[test]
fn a_real_api_servers_error_event_on_an_old_etcd_falls_back_to_list() {
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
            let mut m = streaming(Role::Service);
            m.on(Input::Start);
            m.set_watch_encoding(encoding);
            let (head, tail) = bytes.split_at(cut);
            let mut actions = m.on(Input::Chunks(&piece(head)));
            actions.extend(m.on(Input::Chunks(&piece(tail))));
            assert!(
                not_served(&actions),
                "{encoding:?}, cut at {cut}: {actions:?}"
            );
            assert!(
                actions.contains(&list_from_scratch()),
                "{encoding:?}, cut at {cut}"
            );
            assert!(!m.streaming_lists());
        }
    }
}

#[test]
fn a_bad_initial_event_is_skipped_as_a_bad_list_item_is() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let text = format!(
        "{}{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"Pod\"}}}}\n{}",
        event("ADDED", "a", 7),
        initial_events_end(8)
    );
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    let skipped: Vec<_> = reports(&actions)
        .into_iter()
        .filter(|r| matches!(r, Report::SkippedInitialEvents { .. }))
        .collect();
    assert!(
        matches!(&skipped[..], [Report::SkippedInitialEvents { counts, total: 1, .. }]
            if counts == &[(RejectReason::Undecodable, 1)]),
        "one report for the attempt: {skipped:?}"
    );
    assert_eq!(listed(&actions), ["ns/a"]);
    assert!(matches!(m.state(), State::Watching { .. }));
}

#[test]
fn list_only_never_streams() {
    let mut m = machine(Role::Pod);
    assert!(!m.streaming_lists());
    assert_eq!(acts(m.on(Input::Start)), [list_from_scratch()]);
}

#[test]
fn a_one_shot_sync_lists_and_opens_no_watch() {
    let mut m = machine(Role::Pod).with_watch(false);
    m.on(Input::Start);
    let actions = m.on(page(10, &["a"], None));
    assert!(matches!(&actions[..], [Action::Relisted(o)] if o.len() == 1));
    assert!(matches!(m.state(), State::Listed));
    // A streaming list's stream is closed at its bookmark.
    let mut m = streaming(Role::Pod).with_watch(false);
    m.on(Input::Start);
    let text = format!(
        "{}{}{}",
        event("ADDED", "a", 7),
        initial_events_end(10),
        event("MODIFIED", "a", 11)
    );
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    assert_eq!(listed(&actions), ["ns/a"]);
    assert_eq!(actions.last(), Some(&Action::CloseStream));
    assert!(deltas(&actions).is_empty());
    assert!(matches!(m.state(), State::Listed));
    assert!(m.on(Input::StreamEnded).is_empty());
}

#[test]
fn pages_that_come_round_again_end_the_attempt_and_back_off() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    m.on(page(5, &["a"], Some("t1")));
    m.on(page(5, &["b"], Some("t2")));
    let actions = m.on(page(5, &["c"], Some("t1")));
    assert!(actions.contains(&Action::AbandonList), "{actions:?}");
    assert!(reports(&actions).iter().any(|r| matches!(
        r,
        Report::RequestFailed {
            reason: RequestError::EndlessList,
            ..
        }
    )));
    assert!(wait_of(&actions).is_some());
    assert!(matches!(
        m.state(),
        State::BackingOff {
            then: Next::Relist(RelistReason::Retry)
        }
    ));
}

/// A streaming machine that has begun its initial events with `a`.
fn streaming_begun() -> Machine {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    m.on(Input::Chunks(&piece(event("ADDED", "a", 7).as_bytes())));
    m
}

/// Whether `actions` end a streaming list as a failed attempt: what it sent dropped,
/// nothing applied, no fall back for good, and the next list a LIST.
fn failed_attempt(m: &Machine, actions: &[Action]) -> bool {
    actions.contains(&Action::AbandonList)
        && listed(actions).is_empty()
        && !not_served(actions)
        && m.list_way() == ListWay::ListForNow
}

#[test]
fn auto_lists_as_the_servers_version_says() {
    let cases = [
        (None, list_from_scratch()),
        (Some((1, 31)), list_from_scratch()),
        (Some((1, 32)), stream_list_from("")),
        (Some((1, 33)), list_from_scratch()),
        (Some((1, 36)), list_from_scratch()),
    ];
    for (version, first) in cases {
        let mut m = machine(Role::Pod).with_list_mode(crate::config::ListMode::Auto);
        assert_eq!(m.list_way(), ListWay::Undecided);
        assert_eq!(acts(m.on(Input::Start)), [Action::ReadServerVersion]);
        assert!(matches!(m.state(), State::ReadingVersion));
        let version = version.map(|(major, minor)| crate::api::ServerVersion { major, minor });
        let actions = m.on(Input::ServerVersion(version));
        assert!(reports(&actions).contains(&&Report::Relisting(RelistReason::Initial)));
        assert_eq!(acts(actions), [first], "{version:?}");
    }
}

#[test]
fn a_410_to_a_streaming_list_is_cured_by_a_list_not_another_streaming_list() {
    // As an `ERROR` event and the end of the stream (a proxy that does not understand
    // the streaming-list parameters), or as the response's status.
    for as_event in [true, false] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let actions = if as_event {
            m.on(Input::Chunks(&piece(gone_event().as_bytes())))
        } else {
            m.on(Input::WatchFailed(Failure::Gone {
                message: "too old".into(),
            }))
        };
        assert!(!not_served(&actions));
        assert!(listed(&actions).is_empty());
        // The first 410 lists at once, with LIST.
        assert_eq!(acts(actions).last(), Some(&list_from_scratch()));
        assert_eq!(m.list_way(), ListWay::ListForNow);
        let listed_ok = m.on(page(10, &["a"], None));
        assert_eq!(listed(&listed_ok), ["ns/a"]);
        assert_eq!(acts(listed_ok).last(), Some(&watch_from("10")));
    }
}

/// A way to make a streaming list fail.
type Failing = Box<dyn Fn(&mut Machine) -> Vec<Action>>;

#[test]
fn any_other_streaming_list_failure_drops_what_it_sent_and_lists_next() {
    let error = |code: u16| {
        format!(
            "{{\"type\":\"ERROR\",\"object\":{{\"kind\":\"Status\",\"code\":{code},\"message\":\"no\"}}}}\n"
        )
    };
    let failures: Vec<(&str, Failing)> = vec![
        (
            "an ERROR 500 after events",
            Box::new(move |m| m.on(Input::Chunks(&piece(error(500).as_bytes())))),
        ),
        (
            "an ERROR 429",
            Box::new(move |m| m.on(Input::Chunks(&piece(error(429).as_bytes())))),
        ),
        (
            "a cut",
            Box::new(|m| m.on(Input::StreamBroken("reset".into()))),
        ),
        ("an end part way", Box::new(|m| m.on(Input::StreamEnded))),
        ("a stalled line", Box::new(|m| m.on(Input::Stalled))),
        (
            "no bookmark in time",
            Box::new(|m| m.on(Input::InitialEventsOverdue { quiet: false })),
        ),
    ];
    for (what, fail) in failures {
        let mut m = streaming_begun();
        let actions = fail(&mut m);
        assert!(failed_attempt(&m, &actions), "{what}: {actions:?}");
        assert!(wait_of(&actions).is_some(), "{what}: after the backoff");
        assert_eq!(
            acts(m.on(Input::BackoffElapsed)),
            [list_from_scratch()],
            "{what}"
        );
    }
    for code in [500, 503, 429, 401] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let actions = m.on(Input::WatchFailed(Failure::Status {
            code,
            retry_after: None,
            message: String::new(),
        }));
        assert!(failed_attempt(&m, &actions), "{code}: {actions:?}");
        assert_eq!(acts(m.on(Input::BackoffElapsed)), [list_from_scratch()]);
    }
}

#[test]
fn a_stream_of_undecodable_events_ends_after_a_few_in_a_row_reported_once() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let bad = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\n";
    let text = bad.repeat(MAX_UNDECODABLE_IN_A_ROW + 20);
    let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
    assert!(failed_attempt(&m, &actions), "{actions:?}");
    assert!(actions.contains(&Action::CloseStream));
    let skipped: Vec<_> = reports(&actions)
        .into_iter()
        .filter(|r| matches!(r, Report::SkippedInitialEvents { .. }))
        .collect();
    assert!(
        matches!(&skipped[..], [Report::SkippedInitialEvents { total, .. }] if *total == MAX_UNDECODABLE_IN_A_ROW),
        "{skipped:?}"
    );
}

#[test]
fn initial_events_mostly_or_all_rejected_are_refused_whole() {
    let bad = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\"}}\n";
    for good in [0, 1, 3] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let mut text: String = (0..good)
            .map(|i| event("ADDED", &format!("p{i}"), 5))
            .collect();
        text.push_str(&bad.repeat(good + 1));
        text.push_str(&initial_events_end(9));
        let actions = m.on(Input::Chunks(&piece(text.as_bytes())));
        assert!(failed_attempt(&m, &actions), "{good} good: {actions:?}");
        assert!(
            !actions.iter().any(|a| matches!(a, Action::Relisted(_))),
            "nothing applied"
        );
    }
}

#[test]
fn initial_events_are_held_to_the_list_caps_in_bytes_and_objects() {
    let caps = [
        ListCaps {
            bytes: 4096,
            objects: usize::MAX,
        },
        ListCaps {
            bytes: usize::MAX,
            objects: 20,
        },
    ];
    for caps in caps {
        let mut m = streaming(Role::Pod).with_list_caps(caps);
        m.on(Input::Start);
        let mut ended = None;
        // Distinct new objects, never the bookmark.
        for i in 0..1000 {
            let actions = m.on(Input::Chunks(&piece(
                event("ADDED", &format!("p{i}"), 5).as_bytes(),
            )));
            if actions.contains(&Action::AbandonList) {
                ended = Some((i, actions));
                break;
            }
        }
        let Some((i, actions)) = ended else {
            panic!("{caps:?}: never ended");
        };
        assert!(i < 100, "{caps:?}: ended at object {i}");
        assert!(failed_attempt(&m, &actions), "{caps:?}: {actions:?}");
        assert!(actions.contains(&Action::CloseStream));
        assert!(reports(&actions).iter().any(|r| matches!(
            r,
            Report::RequestFailed {
                reason: RequestError::BadBody,
                ..
            }
        )));
    }
}
