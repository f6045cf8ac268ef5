//! Transitions of the URL watcher's state machine, driven by decoded inputs alone (the
//! bytes behind them are the client's, tested in `http/`), and the retry delays the
//! driver composes around it.

use std::time::Duration;

use super::machine::{ListWay, Machine, Next, State};
use super::protocol::{Action, Input, Pause, Problem, Report};
use super::retry::Retry;
use super::status::Step;
use crate::http::{Failure, ListEnd, StreamEnd};
use crate::metrics::{RejectReason, RelistReason, RequestError, StallReason};
use crate::model::{Object, Role};
use crate::wire::Status;
use crate::wire::json::WatchEvent;

const CAP: Duration = Duration::from_secs(30);

/// The engine's policy: from 1 s, doubling, capped at [`CAP`].
fn retry() -> Retry {
    Retry::new(Duration::from_secs(1), CAP)
}

fn machine(role: Role) -> Machine {
    Machine::new(role == Role::EndpointSlice)
}

fn pod(name: &str, rv: u64) -> Object {
    let json = format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"status":{{"podIP":"10.0.0.1"}}}}"#
    );
    Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes")
}

fn pods(names: &[&str], rv: u64) -> Vec<Object> {
    names.iter().map(|n| pod(n, rv)).collect()
}

/// A list's end at `rv`, its objects all handed on in parts.
fn end(rv: &str) -> Input {
    Input::ListEnd(ListEnd {
        resource_version: rv.into(),
        rest: Vec::new(),
    })
}

/// The group's word that the list is complete, with nothing more.
const RELISTED: Action = Action::Relisted(Vec::new());

/// A LIST attempt's whole answer: its objects as one part, then its end at `rv`.
fn listed_at(m: &mut Machine, rv: u64, names: &[&str]) -> Vec<Action> {
    let mut actions = m.on(Input::Part(pods(names, rv)));
    actions.extend(m.on(end(&rv.to_string())));
    actions
}

fn events(list: Vec<WatchEvent>) -> Input {
    Input::Events(list)
}

fn bookmark(rv: &str) -> WatchEvent {
    WatchEvent::Bookmark {
        resource_version: rv.into(),
        initial_events_end: false,
    }
}

fn gone() -> Input {
    Input::Failed(Failure::Gone {
        message: "too old resource version: 10 (20)".into(),
    })
}

fn status(code: u16) -> Failure {
    Failure::Status {
        code,
        retry_after: None,
        message: String::new(),
    }
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

/// The pause and problem of a retry among the actions.
fn retry_of(actions: &[Action]) -> Option<(Pause, &Problem)> {
    actions.iter().find_map(|a| match a {
        Action::Retry { pause, problem } => Some((*pause, problem)),
        _ => None,
    })
}

fn watch_from(rv: &str) -> Action {
    Action::Watch {
        resource_version: rv.into(),
    }
}

fn stream_list_from(rv: &str) -> Action {
    Action::StreamList {
        resource_version: rv.into(),
    }
}

/// Starts a machine and completes a list at resourceVersion 10.
fn watching() -> Machine {
    let mut m = machine(Role::Pod);
    let start = m.on(Input::Start);
    assert_eq!(reports(&start), [&Report::Relisting(RelistReason::Initial)]);
    assert_eq!(acts(start), [Action::List]);
    let actions = listed_at(&mut m, 10, &["a"]);
    assert!(matches!(&actions[0], Action::ListPart { objects, first: true } if objects.len() == 1));
    assert_eq!(actions[1..], [RELISTED, watch_from("10")]);
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

fn part(names: &[&str]) -> Input {
    Input::Part(pods(names, 5))
}

#[test]
fn the_parts_of_a_list_attempt_reach_the_group_its_first_part_marked_first() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    // The first body starts: even an empty list starts an attempt at the group.
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
    assert_eq!(parts(&m.on(part(&["c"]))), [(vec!["ns/c".into()], false)]);
    let actions = m.on(end("7"));
    assert_eq!(actions, [RELISTED, watch_from("7")]);
    // A list that ends with no part before it still starts an attempt at the group.
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    let actions = m.on(end("3"));
    assert_eq!(parts(&actions), [(vec![], true)]);
}

#[test]
fn a_list_part_outside_a_list_attempt_is_dropped() {
    let mut watching = watching();
    let mut backing_off = machine(Role::Pod);
    backing_off.on(Input::Start);
    backing_off.on(part(&["a"]));
    backing_off.on(Input::Failed(Failure::Transport("reset".into())));
    for (what, m) in [
        ("watching", &mut watching),
        ("backing off", &mut backing_off),
    ] {
        let phase = m.phase();
        assert!(m.on(part(&["x"])).is_empty(), "{what}");
        assert!(m.on(end("9")).is_empty(), "{what}");
        assert_eq!(m.phase(), phase, "{what}");
    }
    assert!(matches!(backing_off.state(), State::Pending(_)));
}

#[test]
fn a_new_list_attempt_after_a_failure_marks_its_first_part_again() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert_eq!(parts(&m.on(part(&["a"]))), [(vec!["ns/a".into()], true)]);
    let actions = m.on(Input::Failed(Failure::Transport("reset".into())));
    assert_eq!(actions[0], Action::AbandonList);
    assert_eq!(acts(m.on(Input::Resume)), [Action::List]);
    assert_eq!(parts(&m.on(part(&[]))), [(vec![], true)]);
    assert_eq!(parts(&m.on(part(&["b"]))), [(vec!["ns/b".into()], false)]);
    // An expired continue token lists again at once: a new attempt, marked again.
    let actions = m.on(gone());
    assert_eq!(acts(actions), [Action::AbandonList, Action::List]);
    assert_eq!(parts(&m.on(part(&["c"]))), [(vec!["ns/c".into()], true)]);
    // As does a periodic relist from a watch.
    m.on(end("9"));
    m.on(Input::Resync);
    assert_eq!(parts(&m.on(part(&[]))), [(vec![], true)]);
}

#[test]
fn a_list_without_a_resource_version_is_kept_and_listed_again_after_a_pause() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    m.on(part(&["a"]));
    let actions = m.on(end(""));
    assert_eq!(actions[0], RELISTED);
    assert_eq!(
        retry_of(&actions),
        Some((Pause::Backoff, &Problem::NoResourceVersion))
    );
    assert!(matches!(
        m.state(),
        State::Pending(Next::Relist(RelistReason::NoResourceVersion))
    ));
}

#[test]
fn a_batch_of_events_is_one_output_and_moves_the_resource_version() {
    let mut m = watching();
    let actions = m.on(events(vec![
        WatchEvent::Added(pod("x", 11)),
        WatchEvent::Deleted(pod("a", 12)),
        WatchEvent::Added(pod("y", 13)),
    ]));
    assert_eq!(actions.len(), 1, "{actions:?}");
    assert!(
        matches!(&actions[0], Action::Deltas { counts, .. } if counts.added == 2 && counts.deleted == 1)
    );
    assert_eq!(
        deltas(&actions),
        [
            ("ns/x".to_string(), b'+'),
            ("ns/a".to_string(), b'-'),
            ("ns/y".to_string(), b'+')
        ]
    );
    assert_eq!(m.resource_version().map(|v| &**v), Some("13"));
}

#[test]
fn a_rejected_event_never_moves_the_resource_version_and_the_url_is_listed_again() {
    let mut m = watching();
    m.on(events(vec![WatchEvent::Added(pod("b", 11))]));
    let e = crate::error::DecodeError::TooLarge {
        role: Role::Pod,
        limit: 100,
    };
    let actions = m.on(Input::Failed(Failure::Rejected(e)));
    assert!(matches!(
        retry_of(&actions),
        Some((
            Pause::Backoff,
            Problem::Rejected {
                reason: RejectReason::TooLarge,
                ..
            }
        ))
    ));
    assert!(matches!(
        m.state(),
        State::Pending(Next::Relist(RelistReason::BadEvent))
    ));
    assert_eq!(m.resource_version(), None, "a relist, not a watch");
    m.on(Input::Resume);
    let actions = listed_at(&mut m, 12, &["a"]);
    assert!(actions.contains(&watch_from("12")));
}

#[test]
fn bookmarks_advance_the_resource_version_and_a_healthy_watchs_end_rewatches_from_it() {
    let mut m = watching();
    let actions = m.on(events(vec![bookmark("99")]));
    assert!(
        matches!(&actions[..], [Action::Deltas { deltas, counts }] if deltas.is_empty() && counts.bookmarks == 1)
    );
    assert_eq!(reports(&m.on(Input::Healthy)), [&Report::Healthy]);
    assert!(m.on(Input::Healthy).is_empty(), "healthy is reported once");
    let actions = m.on(Input::Ended(StreamEnd::ByServer));
    assert_eq!(reports(&actions), [&Report::Rewatching]);
    assert_eq!(acts(actions), [watch_from("99")]);
}

#[test]
fn a_watch_the_server_ends_before_it_was_healthy_is_retried_after_a_pause() {
    let mut m = watching();
    let actions = m.on(Input::Ended(StreamEnd::ByServer));
    assert!(matches!(
        retry_of(&actions),
        Some((
            Pause::Backoff,
            Problem::RequestFailed {
                reason: RequestError::ShortWatch,
                ..
            }
        ))
    ));
    assert_eq!(acts(m.on(Input::Resume)), [watch_from("10")]);
}

#[test]
fn an_idle_watch_that_reaches_its_deadline_is_reopened_quietly_from_the_same_version() {
    let mut m = watching();
    let actions = m.on(Input::Ended(StreamEnd::Expired));
    assert_eq!(reports(&actions), [&Report::Rewatching]);
    assert_eq!(acts(actions), [watch_from("10")], "no pause, no relist");
}

#[test]
fn a_stalled_or_broken_watch_is_resumed_after_a_pause_without_relisting() {
    for (failure, stalled) in [
        (Failure::Stalled, true),
        (
            Failure::Transport("the watch stream broke: reset".into()),
            false,
        ),
    ] {
        let mut m = watching();
        m.on(events(vec![WatchEvent::Added(pod("b", 11))]));
        let actions = m.on(Input::Failed(failure));
        let (_, problem) = retry_of(&actions).expect("pauses");
        assert_eq!(
            matches!(problem, Problem::Stalled(StallReason::Watch)),
            stalled
        );
        assert!(matches!(m.state(), State::Pending(Next::Rewatch(rv)) if &**rv == "11"));
        assert_eq!(acts(m.on(Input::Resume)), [watch_from("11")]);
    }
}

#[test]
fn the_first_410_relists_at_once_and_one_that_repeats_right_after_waits() {
    let mut m = watching();
    let actions = m.on(gone());
    assert!(matches!(
        reports(&actions)[0],
        Report::Gone {
            step: Step::Watch,
            ..
        }
    ));
    assert!(retry_of(&actions).is_none(), "{actions:?}");
    assert!(actions.contains(&Action::List));
    listed_at(&mut m, 20, &["a"]);
    // Again, right after the relist: a pause.
    let actions = m.on(gone());
    assert!(matches!(
        retry_of(&actions),
        Some((Pause::Backoff, Problem::Gone { .. }))
    ));
    assert_eq!(acts(m.on(Input::Resume)), [Action::List]);
    // After a healthy watch, a 410 relists at once again.
    listed_at(&mut m, 30, &["a"]);
    m.on(Input::Healthy);
    assert!(retry_of(&m.on(gone())).is_none());
}

#[test]
fn an_expired_continue_token_restarts_the_list() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    m.on(part(&["a"]));
    let actions = m.on(gone());
    assert_eq!(actions[0], Action::AbandonList);
    assert_eq!(acts(actions)[1..], [Action::List]);
    let actions = listed_at(&mut m, 6, &["b"]);
    assert!(actions.contains(&RELISTED));
}

/// The delay the driver waits for the pause among `actions`.
fn delay_of(retry: &mut Retry, actions: &[Action]) -> Option<Duration> {
    retry_of(actions).map(|(pause, _)| retry.delay(pause))
}

#[test]
fn failures_pause_exponentially_up_to_the_cap_and_only_a_healthy_watch_resets_it() {
    let (mut m, mut retry) = (machine(Role::Pod), retry());
    m.on(Input::Start);
    let mut fail = |m: &mut Machine| {
        let actions = m.on(Input::Failed(status(500)));
        let delay = delay_of(&mut retry, &actions).expect("pauses");
        m.on(Input::Resume);
        delay
    };
    let delays: Vec<Duration> = (0..10).map(|_| fail(&mut m)).collect();
    assert!(delays[0] <= Duration::from_millis(1500), "{delays:?}");
    assert!(delays[4] >= Duration::from_secs(8), "{delays:?}");
    assert!(delays.iter().all(|d| *d <= CAP), "{delays:?}");
    // A LIST that succeeds does not reset it: a watch that fails at once still waits
    // long.
    let mut retry = self::retry();
    for _ in 0..10 {
        retry.delay(Pause::Backoff);
    }
    listed_at(&mut m, 10, &["a"]);
    let actions = m.on(Input::Failed(Failure::Transport("refused".into())));
    assert!(delay_of(&mut retry, &actions).expect("pauses") >= CAP / 2);
    m.on(Input::Resume);
    // A healthy watch does: the driver resets its backoff on the report.
    let actions = m.on(Input::Healthy);
    assert_eq!(reports(&actions), [&Report::Healthy]);
    retry.reset();
    let actions = m.on(Input::Failed(Failure::Transport("reset".into())));
    assert!(delay_of(&mut retry, &actions).expect("pauses") <= Duration::from_millis(1500));
}

#[test]
fn retry_after_is_asked_of_the_pause() {
    let mut m = watching();
    let actions = m.on(Input::Failed(Failure::Status {
        code: 429,
        retry_after: Some(Duration::from_secs(5)),
        message: "too many requests".into(),
    }));
    assert!(
        matches!(retry_of(&actions), Some((Pause::AtLeast(d), _)) if d == Duration::from_secs(5))
    );
}

#[test]
fn a_400_or_a_repeated_403_is_a_configuration_problem_paused_the_longest() {
    let forbidden = |code| {
        Input::Failed(Failure::Status {
            code,
            retry_after: None,
            message: "pods is forbidden: User \"system:anonymous\" cannot watch resource \"pods\""
                .into(),
        })
    };
    let mut m = watching();
    let actions = m.on(forbidden(400));
    assert!(matches!(
        retry_of(&actions),
        Some((
            Pause::Longest,
            Problem::RequestFailed {
                configuration: true,
                reason: RequestError::BadRequest,
                ..
            }
        ))
    ));
    let mut m = watching();
    let first = m.on(forbidden(403));
    assert!(matches!(
        retry_of(&first),
        Some((Pause::Backoff, Problem::RequestFailed { configuration: false, message, .. }))
            if message.starts_with("403 Forbidden: pods is forbidden")
    ));
    m.on(Input::Resume);
    let second = m.on(forbidden(403));
    assert!(matches!(
        retry_of(&second),
        Some((
            Pause::Longest,
            Problem::RequestFailed {
                configuration: true,
                reason: RequestError::Forbidden,
                ..
            }
        ))
    ));
}

#[test]
fn not_found_falls_back_to_beta_then_is_a_configuration_problem_checked_in_both_versions() {
    let mut m = machine(Role::EndpointSlice);
    m.on(Input::Start);
    let actions = acts(m.on(Input::Failed(status(404))));
    assert_eq!(
        actions,
        [Action::AbandonList, Action::FallBackToBeta, Action::List]
    );
    let actions = m.on(Input::Failed(status(404)));
    assert!(matches!(
        retry_of(&actions),
        Some((
            Pause::Longest,
            Problem::RequestFailed {
                configuration: true,
                ..
            }
        ))
    ));
    // The next check starts from the current version again, and falls back again.
    assert!(actions.contains(&Action::BackToCurrent));
    m.on(Input::Resume);
    let actions = acts(m.on(Input::Failed(status(404))));
    assert!(actions.contains(&Action::FallBackToBeta), "{actions:?}");
}

#[test]
fn a_broken_stalled_or_endless_list_is_abandoned_and_retried_after_a_pause() {
    for (failure, problem) in [
        (
            Failure::BadBody("a NodeList, not a PodList".into()),
            Some(RequestError::BadBody),
        ),
        (
            Failure::Transport("truncated".into()),
            Some(RequestError::Connection),
        ),
        (
            Failure::Endless("its pages came round again".into()),
            Some(RequestError::EndlessList),
        ),
        (Failure::Stalled, None),
    ] {
        let mut m = watching();
        m.on(Input::Resync);
        let actions = m.on(Input::Failed(failure));
        assert_eq!(actions[0], Action::AbandonList);
        match (retry_of(&actions), problem) {
            (Some((_, Problem::RequestFailed { reason, .. })), Some(expected)) => {
                assert_eq!(*reason, expected)
            }
            (Some((_, Problem::Stalled(StallReason::List))), None) => {}
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            m.state(),
            State::Pending(Next::Relist(RelistReason::Retry))
        ));
    }
}

#[test]
fn events_outside_a_watch_and_stale_timers_are_ignored() {
    let mut m = machine(Role::Pod);
    m.on(Input::Start);
    assert!(
        m.on(events(vec![WatchEvent::Added(pod("a", 1))]))
            .is_empty()
    );
    assert!(m.on(Input::Resume).is_empty());
    assert!(m.on(Input::Healthy).is_empty());
    assert!(m.on(Input::Ended(StreamEnd::Expired)).is_empty());
    assert!(matches!(m.state(), State::Listing(_)));
}

#[test]
fn a_resync_relists_from_a_watch_and_replaces_a_pending_rewatch() {
    let mut m = watching();
    let actions = m.on(Input::Resync);
    assert_eq!(
        reports(&actions),
        [&Report::Relisting(RelistReason::Resync)]
    );
    assert_eq!(acts(actions), [Action::CloseStream, Action::List]);
    listed_at(&mut m, 11, &["a"]);
    m.on(Input::Failed(Failure::Transport("reset".into())));
    assert!(m.on(Input::Resync).is_empty());
    assert_eq!(acts(m.on(Input::Resume)), [Action::List]);
}

/// How a fake server answers each request of the machine.
type Answer = Box<dyn Fn(&Action) -> Vec<Input>>;

/// A server that misbehaves the same way for ten minutes of simulated time, answered
/// the way each fault is: the requests of every minute, counted from the pauses the
/// driver takes (the answers come at once, the worst case).
fn requests_per_minute(answer: impl Fn(&Action) -> Vec<Input>) -> Vec<usize> {
    let (mut m, mut retry) = (machine(Role::Pod), retry());
    let mut now = Duration::ZERO;
    let mut per_minute = vec![0usize; 10];
    let mut pending = m.on(Input::Start);
    while now < Duration::from_secs(600) {
        let mut next = Vec::new();
        for action in &pending {
            match action {
                Action::List | Action::Watch { .. } | Action::StreamList { .. } => {
                    per_minute[(now.as_secs() / 60) as usize] += 1;
                    for input in answer(action) {
                        next.extend(m.on(input));
                    }
                }
                Action::Retry { pause, .. } => {
                    now += retry.delay(*pause);
                    next.extend(m.on(Input::Resume));
                }
                Action::Report(Report::Healthy) => retry.reset(),
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
    let list_ok = || vec![Input::Part(pods(&["a"], 10)), end("10")];
    let status = |code, retry_after| Failure::Status {
        code,
        retry_after,
        message: String::new(),
    };
    let watch_answers = |fail: fn() -> Input| -> Answer {
        Box::new(move |a| match a {
            Action::List => list_ok(),
            _ => vec![fail()],
        })
    };
    let faults: [(&str, Answer); 11] = [
        (
            "every watch breaks at once",
            watch_answers(|| Input::Failed(Failure::Transport("reset".into()))),
        ),
        (
            "every watch answers 410 (HTTP or ERROR event)",
            watch_answers(gone),
        ),
        (
            "every LIST is the wrong kind",
            Box::new(|_| vec![Input::Failed(Failure::BadBody("NodeList".into()))]),
        ),
        (
            "every LIST pages without end",
            Box::new(|_| vec![Input::Failed(Failure::Endless("nothing new".into()))]),
        ),
        (
            "every watch ends at once",
            watch_answers(|| Input::Ended(StreamEnd::ByServer)),
        ),
        (
            "every watch is cut by a stall",
            watch_answers(|| Input::Failed(Failure::Stalled)),
        ),
        (
            "500 to everything",
            Box::new(move |_| vec![Input::Failed(status(500, None))]),
        ),
        (
            "429 with a short Retry-After",
            Box::new(move |_| vec![Input::Failed(status(429, Some(Duration::from_secs(1))))]),
        ),
        (
            "403 to every watch",
            Box::new(move |a| match a {
                Action::List => list_ok(),
                _ => vec![Input::Failed(status(403, None))],
            }),
        ),
        (
            "every LIST stalls",
            Box::new(|_| vec![Input::Failed(Failure::Stalled)]),
        ),
        (
            "every watch rejects an event",
            watch_answers(|| {
                Input::Failed(Failure::Rejected(crate::error::DecodeError::TooLarge {
                    role: Role::Pod,
                    limit: 1,
                }))
            }),
        ),
    ];
    for (name, answer) in faults {
        let per_minute = requests_per_minute(answer);
        assert!(
            per_minute.iter().all(|n| *n <= 20),
            "{name}: {per_minute:?} requests a minute"
        );
        assert!(per_minute[0] >= 4, "{name}: it does retry: {per_minute:?}");
    }
}

// Streaming lists: a watch with sendInitialEvents whose ADDED events are the list, up
// to the bookmark annotated k8s.io/initial-events-end (the client makes them parts).

fn streaming(role: Role) -> Machine {
    machine(role).with_list_mode(crate::config::ListMode::Stream)
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
    let actions = listed_at(&mut m, 10, &["a"]);
    assert_eq!(actions[1..], [RELISTED, Action::WatchOnStream]);
    assert_eq!(m.resource_version().map(|v| &**v), Some("10"));
    m
}

#[test]
fn a_streaming_list_is_its_parts_and_the_same_stream_then_watches() {
    let mut m = stream_watching();
    assert!(m.streaming_lists());
    let actions = m.on(events(vec![WatchEvent::Modified(pod("a", 13))]));
    assert_eq!(deltas(&actions), [("ns/a".to_string(), b'+')]);
    assert!(!actions.iter().any(|a| matches!(a, Action::Watch { .. })));
    assert_eq!(m.resource_version().map(|v| &**v), Some("13"));
}

#[test]
fn a_server_that_refuses_streaming_lists_is_listed_at_once_and_for_good() {
    for code in [400, 403, 422] {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        let actions = m.on(Input::Failed(Failure::Status {
            code,
            retry_after: None,
            message: "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled".into(),
        }));
        assert!(not_served(&actions), "{code}: {actions:?}");
        assert!(reports(&actions).contains(&&Report::Relisting(RelistReason::FallBack)));
        assert_eq!(acts(actions), [Action::AbandonList, Action::List]);
        assert!(!m.streaming_lists());
        // Remembered: the relist after a 410 is a LIST too.
        listed_at(&mut m, 10, &["a"]);
        assert_eq!(acts(m.on(gone())), [Action::List]);
    }
}

#[test]
fn an_answer_that_is_no_streaming_list_turns_them_off_only_where_none_was_ever_served() {
    let no_list = || {
        Input::Failed(Failure::NotServed(
            "a MODIFIED event came before the initial-events-end bookmark".into(),
        ))
    };
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let actions = m.on(no_list());
    assert!(not_served(&actions));
    assert_eq!(acts(actions), [Action::AbandonList, Action::List]);
    assert_eq!(m.list_way(), ListWay::List);
    // A server that served one before: a passing failure, LIST next, streaming lists
    // again once a watch has been healthy.
    let mut m = stream_watching();
    m.on(Input::Healthy);
    m.on(Input::Resync);
    let actions = m.on(no_list());
    assert!(!not_served(&actions), "{actions:?}");
    assert!(actions.contains(&Action::AbandonList));
    assert!(retry_of(&actions).is_some());
    assert_eq!(m.list_way(), ListWay::ListForNow);
    assert_eq!(acts(m.on(Input::Resume)), [Action::List]);
    listed_at(&mut m, 20, &["a"]);
    m.on(Input::Healthy);
    assert_eq!(m.list_way(), ListWay::Stream);
    assert_eq!(
        acts(m.on(Input::Resync)),
        [Action::CloseStream, stream_list_from("20")]
    );
}

#[test]
fn a_streaming_relist_after_410_starts_from_the_current_state() {
    let mut m = stream_watching();
    let actions = m.on(gone());
    assert!(reports(&actions).contains(&&Report::Relisting(RelistReason::Gone)));
    assert_eq!(acts(actions), [stream_list_from("")]);
    listed_at(&mut m, 31, &["b"]);
    assert_eq!(m.resource_version().map(|v| &**v), Some("31"));
}

#[test]
fn a_periodic_streaming_relist_starts_from_the_last_resource_version() {
    let mut m = stream_watching();
    m.on(events(vec![WatchEvent::Modified(pod("a", 15))]));
    assert_eq!(
        acts(m.on(Input::Resync)),
        [Action::CloseStream, stream_list_from("15")]
    );
}

/// Whether `actions` end a streaming list as a failed attempt: what it sent dropped,
/// nothing applied, no fall back for good, and the next list a LIST.
fn failed_attempt(m: &Machine, actions: &[Action]) -> bool {
    actions.contains(&Action::AbandonList)
        && !actions.iter().any(|a| matches!(a, Action::Relisted(_)))
        && !not_served(actions)
        && m.list_way() == ListWay::ListForNow
}

#[test]
fn any_other_streaming_list_failure_drops_what_it_sent_and_lists_next() {
    let failures = [
        (
            "an ERROR 500 after events",
            Failure::ErrorEvent(Status {
                code: 500,
                reason: String::new(),
                message: "no".into(),
            }),
        ),
        (
            "an ERROR 429",
            Failure::ErrorEvent(Status {
                code: 429,
                reason: String::new(),
                message: "no".into(),
            }),
        ),
        (
            "a cut",
            Failure::Transport(
                "the stream broke before its initial-events-end bookmark: reset".into(),
            ),
        ),
        (
            "an end part way",
            Failure::Transport(
                "the server ended the stream before the initial-events-end bookmark".into(),
            ),
        ),
        ("a stalled line", Failure::Stalled),
        (
            "no bookmark in time",
            Failure::BadBody("no initial-events-end bookmark came within list_body_timeout".into()),
        ),
        (
            "over a bound",
            Failure::BadBody("its initial events passed 20 objects (max_list_objects)".into()),
        ),
        ("500", status(500)),
        ("503", status(503)),
        ("429", status(429)),
        ("401", status(401)),
    ];
    for (what, failure) in failures {
        let mut m = streaming(Role::Pod);
        m.on(Input::Start);
        m.on(part(&["a"]));
        let actions = m.on(Input::Failed(failure));
        assert!(failed_attempt(&m, &actions), "{what}: {actions:?}");
        assert!(retry_of(&actions).is_some(), "{what}: after a pause");
        assert_eq!(acts(m.on(Input::Resume)), [Action::List], "{what}");
    }
}

#[test]
fn a_410_to_a_streaming_list_is_cured_by_a_list_not_another_streaming_list() {
    let mut m = streaming(Role::Pod);
    m.on(Input::Start);
    let actions = m.on(gone());
    assert!(!not_served(&actions));
    // The first 410 lists at once, with LIST.
    assert_eq!(acts(actions), [Action::AbandonList, Action::List]);
    assert_eq!(m.list_way(), ListWay::ListForNow);
    let actions = listed_at(&mut m, 10, &["a"]);
    assert_eq!(actions.last(), Some(&watch_from("10")));
}

#[test]
fn list_only_never_streams() {
    let mut m = machine(Role::Pod);
    assert!(!m.streaming_lists());
    assert_eq!(acts(m.on(Input::Start)), [Action::List]);
}

#[test]
fn a_one_shot_sync_lists_and_opens_no_watch() {
    let mut m = machine(Role::Pod).with_watch(false);
    m.on(Input::Start);
    let actions = listed_at(&mut m, 10, &["a"]);
    assert_eq!(actions[1..], [RELISTED]);
    assert!(matches!(m.state(), State::Listed));
    // A streaming list's stream is closed at its bookmark.
    let mut m = streaming(Role::Pod).with_watch(false);
    m.on(Input::Start);
    let actions = listed_at(&mut m, 10, &["a"]);
    assert_eq!(actions.last(), Some(&Action::CloseStream));
    assert!(matches!(m.state(), State::Listed));
    assert!(m.on(Input::Ended(StreamEnd::ByServer)).is_empty());
}

#[test]
fn auto_lists_as_the_servers_version_says() {
    let cases = [
        (None, Action::List),
        (Some((1, 31)), Action::List),
        (Some((1, 32)), stream_list_from("")),
        (Some((1, 33)), Action::List),
        (Some((1, 36)), Action::List),
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
