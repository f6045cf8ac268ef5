//! Work nobody waits for: bringing a job's placements (what its member views are cut
//! from) up to date with a snapshot or a change of members
//! (`AssignedViews::assign_kept`). It runs in order on one thread of lower scheduling
//! priority, [`BACKGROUND_THREAD`], so that when the cores are busy
//! the requests, which are waited for, and the event path run first: re-placing a
//! zone's objects after a member left takes a core for a while, and a member view or a
//! collector's share written meanwhile would wait behind it.

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};

/// The background thread's name (at most 15 bytes, as Linux keeps it).
pub const BACKGROUND_THREAD: &str = "kubesd-assign";

/// How much work waits for the background thread at most. A job actor has at most two
/// pieces under way (a change of members, and a snapshot's changes), so only thousands
/// of jobs with member views fill it; work that finds it full runs on the runtime's
/// blocking threads instead, at the usual priority.
const QUEUE: usize = 1024;

/// How much nicer than the process the background thread is (at most 19): a busy core
/// gives it about a tenth of the time of the process's other threads.
const NICER_BY: i32 = 10;

/// One piece of background work.
type Work = Box<dyn FnOnce() + Send + 'static>;

/// The queue to the background thread, once started; `None` when it could not be.
static BACKGROUND: OnceLock<Option<SyncSender<Work>>> = OnceLock::new();

/// Runs `work` on the background thread; on one of the runtime's blocking threads when
/// the background thread could not be started or its queue is full (so this needs a
/// runtime, an actor's or a request's).
pub fn run_in_background(work: impl FnOnce() + Send + 'static) {
    let work: Work = Box::new(work);
    let refused = match queue() {
        Some(tx) => match tx.try_send(work) {
            Ok(()) => return,
            Err(TrySendError::Full(work) | TrySendError::Disconnected(work)) => work,
        },
        None => work,
    };
    actix_rt::task::spawn_blocking(refused);
}

/// Runs `work` in the background ([`run_in_background`]), then `then` with whether it
/// returned (false: it panicked), so that whoever waits for the work hears of its end
/// either way.
pub fn run_in_background_then(
    work: impl FnOnce() + Send + 'static,
    then: impl FnOnce(bool) + Send + 'static,
) {
    run_in_background(move || {
        let returned = std::panic::catch_unwind(AssertUnwindSafe(work)).is_ok();
        then(returned);
    });
}

/// The background thread's queue, starting the thread on first use.
fn queue() -> Option<&'static SyncSender<Work>> {
    let started = BACKGROUND.get_or_init(|| {
        let (tx, rx) = sync_channel::<Work>(QUEUE);
        let thread = std::thread::Builder::new()
            .name(BACKGROUND_THREAD.into())
            .spawn(move || {
                lower_priority();
                for work in rx {
                    // A piece that panics is its own loss (the placements start over
                    // when next asked for); the thread goes on with the next.
                    let _ = std::panic::catch_unwind(AssertUnwindSafe(work));
                }
            });
        match thread {
            Ok(_) => Some(tx),
            Err(why) => {
                tracing::warn!(
                    "could not start the thread that keeps member views' placements up to date ({why}); their work runs on the runtime's blocking threads"
                );
                None
            }
        }
    });
    started.as_ref()
}

/// Makes the calling thread [`NICER_BY`] nicer than the process (Linux sets niceness
/// per thread); elsewhere, or if refused, it keeps the process's.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` and `getpriority` only read; `setpriority` on a thread id
        // changes that thread's niceness only, and a thread may always make itself
        // nicer. `getpriority` may return -1 as a niceness: errno tells a failure.
        let refused = unsafe {
            let tid = libc::gettid() as libc::id_t;
            *libc::__errno_location() = 0;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            *libc::__errno_location() != 0
                || libc::setpriority(libc::PRIO_PROCESS, tid, (now + NICER_BY).min(19)) != 0
        };
        if refused {
            tracing::debug!(
                "the background thread keeps the process's priority: setpriority refused"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The niceness of the calling thread (or of the process, `tid` 0).
    #[cfg(target_os = "linux")]
    fn niceness(tid: libc::pid_t) -> i32 {
        // SAFETY: as in `lower_priority`; `getpriority` only reads.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
    }

    #[test]
    fn work_runs_in_order_on_the_background_thread_at_lower_priority() {
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..3 {
            let tx = tx.clone();
            run_in_background(move || {
                let name = std::thread::current().name().map(str::to_string);
                // SAFETY: `gettid` has no preconditions.
                #[cfg(target_os = "linux")]
                let nice = niceness(unsafe { libc::gettid() });
                #[cfg(not(target_os = "linux"))]
                let nice = NICER_BY;
                let _ = tx.send((i, name, nice));
            });
        }
        let got: Vec<_> = (0..3).map(|_| rx.recv().expect("the work ran")).collect();
        #[cfg(target_os = "linux")]
        let wanted = (niceness(0) + NICER_BY).min(19);
        #[cfg(not(target_os = "linux"))]
        let wanted = NICER_BY;
        for (i, (n, name, nice)) in got.into_iter().enumerate() {
            assert_eq!(n, i, "in order");
            assert_eq!(name.as_deref(), Some(BACKGROUND_THREAD));
            assert_eq!(nice, wanted, "nicer than the process by {NICER_BY}");
        }
    }

    #[test]
    fn a_piece_that_panics_does_not_stop_the_next() {
        run_in_background(|| panic!("a piece of work failed"));
        let (tx, rx) = std::sync::mpsc::channel();
        run_in_background(move || {
            let _ = tx.send(());
        });
        rx.recv().expect("the next piece ran");
    }

    #[test]
    fn what_follows_a_piece_hears_whether_it_returned_or_panicked() {
        let (tx, rx) = std::sync::mpsc::channel();
        let told = tx.clone();
        run_in_background_then(
            || panic!("a piece of work failed"),
            move |returned| {
                let _ = told.send(returned);
            },
        );
        run_in_background_then(
            || {},
            move |returned| {
                let _ = tx.send(returned);
            },
        );
        assert!(!rx.recv().expect("told of the panic"));
        assert!(rx.recv().expect("told of the return"));
    }
}
