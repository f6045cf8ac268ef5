//! How a failure moves a URL watcher's machine: which step failed (a LIST, a
//! streaming list, a watch), what the client said went wrong, and so whether the URL
//! lists again at once, falls back (an older API version, LIST for good), or pauses
//! before its next step, and for how long in the driver's backoff.

use arcstr::ArcStr;
use std::time::Duration;

use super::super::protocol::{Action, Pause, Problem, Report};
use super::super::status::Step;
use super::{ListAttempt, ListWay, Machine, Next, State};
use crate::http::{Failure, status_text, status_words};
use crate::metrics::{RelistReason, RequestError, StallReason};

impl Machine {
    /// The request or stream under way failed.
    pub(super) fn on_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        match &self.state {
            State::Listing(ListAttempt {
                streaming: true, ..
            }) => self.streaming_list_failed(failure, out),
            State::Listing(_) => self.list_failed(failure, out),
            State::Watching {
                resource_version, ..
            } => {
                let rv = resource_version.clone();
                self.watch_failed(failure, rv, out);
            }
            State::ReadingVersion | State::Listed | State::Pending(_) => {}
        }
    }

    /// A LIST attempt failed: the group drops what it holds of it, and it is tried
    /// again (at once after a first 410 or a first 404 with an older version left).
    fn list_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        out.push(Action::AbandonList);
        if matches!(failure, Failure::Status { code: 404, .. }) && self.other_version(out) {
            return;
        }
        self.failed(Step::List, failure, Next::Relist(RelistReason::Retry), out);
    }

    /// A streaming list failed. A refusal (400, 403, 422), or an answer that is no
    /// streaming list, from a server that never served one: LIST for good. Anything
    /// else: what it sent is dropped, and the next attempt is a LIST.
    fn streaming_list_failed(&mut self, failure: Failure, out: &mut Vec<Action>) {
        let not_served = match &failure {
            Failure::Status {
                code: code @ (400 | 403 | 422),
                message,
                ..
            } => Some(status_words(*code, message)),
            Failure::NotServed(why) => Some(why.clone()),
            _ => None,
        };
        if let Some(why) = not_served
            && !self.streamed_once
        {
            return self.fall_back_to_list(why, out);
        }
        out.push(Action::AbandonList);
        if matches!(failure, Failure::Status { code: 404, .. }) && self.other_version(out) {
            return;
        }
        if self.lists == ListWay::Stream {
            self.lists = ListWay::ListForNow;
        }
        let failure = match failure {
            Failure::NotServed(why) => Failure::BadBody(format!(
                "{why}, from a server that served streaming lists before"
            )),
            Failure::ErrorEvent(status) => {
                let why = format!(
                    "the server ended the stream with an error: {}",
                    status_text(&status)
                );
                return self.fail(
                    Step::StreamingList,
                    RequestError::ErrorEvent,
                    why,
                    Next::Relist(RelistReason::Retry),
                    out,
                );
            }
            other => other,
        };
        self.failed(
            Step::StreamingList,
            failure,
            Next::Relist(RelistReason::Retry),
            out,
        );
    }

    /// The open watch failed: resumed from `rv` after a pause, or listed again.
    fn watch_failed(&mut self, failure: Failure, rv: ArcStr, out: &mut Vec<Action>) {
        if let Failure::ErrorEvent(status) = &failure {
            let why = format!(
                "the server ended the watch with an error: {}",
                status_text(status)
            );
            return self.fail(
                Step::Watch,
                RequestError::ErrorEvent,
                why,
                Next::Rewatch(rv),
                out,
            );
        }
        self.failed(Step::Watch, failure, Next::Rewatch(rv), out);
    }

    /// A failure of `step`, classified: a 410 lists again, an event that could not be
    /// read lists again after a pause, anything else pauses before `then`.
    fn failed(&mut self, step: Step, failure: Failure, then: Next, out: &mut Vec<Action>) {
        let (reason, message) = match failure {
            Failure::Gone { message } => return self.gone(step, message, out),
            Failure::Rejected(e) => {
                let problem = Problem::Rejected {
                    reason: e.reason(),
                    message: e.to_string(),
                };
                let then = Next::Relist(RelistReason::BadEvent);
                return self.retry(then, Pause::Backoff, problem, out);
            }
            Failure::Stalled => {
                let stalled = if step == Step::Watch {
                    StallReason::Watch
                } else {
                    StallReason::List
                };
                return self.retry(then, Pause::Backoff, Problem::Stalled(stalled), out);
            }
            Failure::Status {
                code,
                retry_after,
                message,
            } => {
                let words = status_words(code, &message);
                return self.fail_after(step, status_reason(code), words, then, retry_after, out);
            }
            // A watch's answer that is not a stream of events is a connection problem.
            Failure::BadBody(why) | Failure::Endless(why) if step == Step::Watch => {
                (RequestError::Connection, why)
            }
            Failure::Transport(why) | Failure::NotServed(why) => (RequestError::Connection, why),
            Failure::Credentials(why) => (RequestError::Credentials, why),
            Failure::BadBody(why) => (RequestError::BadBody, why),
            Failure::Endless(why) => (RequestError::EndlessList, why),
            Failure::ErrorEvent(status) => (RequestError::ErrorEvent, status_text(&status)),
        };
        self.fail(step, reason, message, then, out);
    }

    /// A failed request, paused; a configuration problem pauses the longest.
    pub(super) fn fail(
        &mut self,
        step: Step,
        reason: RequestError,
        message: String,
        then: Next,
        out: &mut Vec<Action>,
    ) {
        self.fail_after(step, reason, message, then, None, out);
    }

    fn fail_after(
        &mut self,
        step: Step,
        reason: RequestError,
        message: String,
        then: Next,
        retry_after: Option<Duration>,
        out: &mut Vec<Action>,
    ) {
        if matches!(reason, RequestError::Unauthorized | RequestError::Forbidden) {
            self.denied_in_a_row += 1;
        }
        let configuration = match reason {
            RequestError::BadRequest | RequestError::NotFound => true,
            RequestError::Unauthorized | RequestError::Forbidden => self.denied_in_a_row >= 2,
            _ => false,
        };
        let pause = match (configuration, retry_after) {
            (true, _) => Pause::Longest,
            (false, Some(asked)) => Pause::AtLeast(asked),
            (false, None) => Pause::Backoff,
        };
        let problem = Problem::RequestFailed {
            step,
            reason,
            message,
            configuration,
        };
        self.retry(then, pause, problem, out);
    }

    /// A 410 from `step`: listed again at once the first time since the watch was last
    /// healthy; a 410 that repeats right after a relist waits for a pause.
    fn gone(&mut self, step: Step, message: String, out: &mut Vec<Action>) {
        // Nothing is kept of the expired resourceVersion: a streaming relist starts
        // from the current state.
        self.state = State::Pending(Next::Relist(RelistReason::Gone));
        self.last_rv = ArcStr::default();
        if std::mem::replace(&mut self.gone_since_healthy, true) {
            let then = Next::Relist(RelistReason::Gone);
            return self.retry(then, Pause::Backoff, Problem::Gone { step, message }, out);
        }
        out.push(Action::Report(Report::Gone { step, message }));
        self.relist(RelistReason::Gone, out);
    }

    /// After a 404: falls back to the older version and lists again at once (true), or,
    /// when the older version was the one refused, returns to the current version for
    /// the next check, which the caller pauses as a failure (false).
    fn other_version(&mut self, out: &mut Vec<Action>) -> bool {
        if self.can_fall_back {
            self.can_fall_back = false;
            self.fell_back = true;
            out.push(Action::FallBackToBeta);
            self.relist(RelistReason::FallBack, out);
            return true;
        }
        if self.fell_back {
            self.fell_back = false;
            self.can_fall_back = true;
            out.push(Action::BackToCurrent);
        }
        false
    }
}

/// The metric class of an HTTP status other than 410.
fn status_reason(code: u16) -> RequestError {
    match code {
        400 => RequestError::BadRequest,
        401 => RequestError::Unauthorized,
        403 => RequestError::Forbidden,
        404 => RequestError::NotFound,
        429 => RequestError::Throttled,
        500..=599 => RequestError::ServerError,
        _ => RequestError::OtherStatus,
    }
}
