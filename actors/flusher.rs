//! When dirty targets are recomputed: targets whose dependencies changed (a pod behind
//! an endpoint, the node of a pod, a namespace).
//!
//! Two paces. At rest, a group flushes a change's few dirty objects itself, shortly after
//! the change ([`FlushPace`]): a relabelled pod reaches its endpoints' targets in about
//! `flush_soon_delay`. Under load, dirty objects wait for the [`DirtyFlusher`]'s tick,
//! which batches the expensive case: a node label change dirties every pod on the node
//! once, not once per event. The tick's interval stretches to the last flush's duration
//! when that was longer, so a huge cluster cannot be kept busy doing nothing but
//! recomputing.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::join_all;

use crate::messages::{FlushDirty, FlusherMembership};

/// The dirty flusher.
pub struct DirtyFlusher {
    interval: Duration,
    next: Duration,
    groups: HashMap<u64, Recipient<FlushDirty>>,
}

impl DirtyFlusher {
    /// A flusher ticking every `interval` (or longer, after a long flush).
    pub fn new(interval: Duration) -> DirtyFlusher {
        DirtyFlusher {
            interval,
            next: interval,
            groups: HashMap::new(),
        }
    }

    fn schedule(&mut self, ctx: &mut Context<Self>) {
        ctx.run_later(self.next, |act, ctx| act.tick(ctx));
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        let sends: Vec<_> = self.groups.values().map(|g| g.send(FlushDirty)).collect();
        // `wait`: the next tick is scheduled only when this flush has finished.
        ctx.wait(join_all(sends).into_actor(self).map(|reports, act, ctx| {
            let longest = reports
                .iter()
                .filter_map(|r| r.as_ref().ok())
                .map(|r| r.took)
                .max()
                .unwrap_or_default();
            act.next = act.interval.max(longest);
            act.schedule(ctx);
        }));
    }
}

impl Actor for DirtyFlusher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.schedule(ctx);
    }
}

impl Handler<FlusherMembership> for DirtyFlusher {
    type Result = ();

    fn handle(&mut self, msg: FlusherMembership, _: &mut Context<Self>) {
        match msg {
            FlusherMembership::Join(id, group) => {
                self.groups.insert(id, group);
            }
            FlusherMembership::Leave(id) => {
                self.groups.remove(&id);
            }
        }
    }
}

/// A group's pace for dirty objects between the flusher's ticks: soon while changes
/// dirty few, at the tick under load. Pure; the group performs what it decides.
#[derive(Debug)]
pub struct FlushPace {
    delay: Duration,
    max_soon: usize,
    state: PaceState,
}

/// Where a group's pace stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaceState {
    /// At rest: the next change that dirties at most `max_soon` objects schedules a
    /// flush `delay` later.
    Idle,
    /// A flush is scheduled; further changes join it.
    Scheduled,
    /// Under load: the last flush recomputed more than `max_soon` objects, or took more
    /// than half of `delay` (so that flushing soon takes at most a third of the group's
    /// thread; less would mistake a busy machine's pauses for load), or a scheduled
    /// flush found more than `max_soon` dirty.
    /// Dirty objects wait for the tick; a tick that recomputes few returns to `Idle`.
    Loaded,
}

impl FlushPace {
    /// A pace with `delay` and `max_soon` from
    /// [`EngineOptions`](crate::config::EngineOptions)' `flush_soon_*`.
    pub fn new(delay: Duration, max_soon: usize) -> FlushPace {
        FlushPace {
            delay,
            max_soon,
            state: PaceState::Idle,
        }
    }

    /// Where the pace stands.
    pub fn state(&self) -> PaceState {
        self.state
    }

    /// After a change left `dirty` objects dirty: the delay after which to flush, if
    /// the group should schedule a flush now.
    pub fn after_change(&mut self, dirty: usize) -> Option<Duration> {
        if self.state == PaceState::Idle && dirty > 0 && dirty <= self.max_soon {
            self.state = PaceState::Scheduled;
            return Some(self.delay);
        }
        None
    }

    /// The scheduled flush is due and `dirty` objects are dirty: whether to flush now
    /// (then report it with [`FlushPace::flushed`]). More than `max_soon` means a burst
    /// arrived meanwhile: it waits for the tick.
    pub fn due(&mut self, dirty: usize) -> bool {
        if self.state != PaceState::Scheduled {
            return false;
        }
        if dirty > self.max_soon {
            self.state = PaceState::Loaded;
            return false;
        }
        true
    }

    /// A flush (scheduled, ticked, or at the end of a list) recomputed `recomputed`
    /// objects in `took`.
    pub fn flushed(&mut self, recomputed: usize, took: Duration) {
        let heavy = recomputed > self.max_soon || took > self.delay / 2;
        self.state = if heavy {
            PaceState::Loaded
        } else if self.state == PaceState::Scheduled {
            // A tick came first; the scheduled flush will find nothing and settle.
            PaceState::Scheduled
        } else {
            PaceState::Idle
        };
    }

    /// The scheduled flush ran (or found nothing to do): back to `Idle` unless the
    /// flush it made was heavy.
    pub fn settle(&mut self) {
        if self.state == PaceState::Scheduled {
            self.state = PaceState::Idle;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_millis(100);

    fn pace() -> FlushPace {
        FlushPace::new(DELAY, 4)
    }

    #[test]
    fn a_small_change_is_flushed_after_the_delay_and_later_ones_join_it() {
        let mut p = pace();
        assert_eq!(
            p.after_change(0),
            None,
            "nothing dirty, nothing to schedule"
        );
        assert_eq!(p.after_change(1), Some(DELAY));
        assert_eq!(p.after_change(2), None, "already scheduled");
        assert!(p.due(3));
        p.flushed(3, Duration::ZERO);
        p.settle();
        assert_eq!(p.state(), PaceState::Idle);
        assert_eq!(p.after_change(1), Some(DELAY), "at rest again");
    }

    #[test]
    fn a_burst_waits_for_the_tick_until_a_tick_recomputes_few() {
        let mut p = pace();
        assert_eq!(p.after_change(5), None, "too many to flush soon");
        assert_eq!(p.after_change(1), Some(DELAY));
        assert!(!p.due(9), "a burst arrived during the delay");
        assert_eq!(p.state(), PaceState::Loaded);
        assert_eq!(p.after_change(1), None, "under load: the tick flushes");
        p.flushed(9, Duration::ZERO);
        assert_eq!(p.state(), PaceState::Loaded, "a heavy tick");
        p.flushed(2, Duration::ZERO);
        assert_eq!(p.state(), PaceState::Idle, "a light tick ends the load");
        assert_eq!(p.after_change(1), Some(DELAY));
    }

    #[test]
    fn a_slow_flush_counts_as_load_however_few_it_recomputed() {
        let mut p = pace();
        assert_eq!(p.after_change(1), Some(DELAY));
        assert!(p.due(1));
        p.flushed(1, DELAY);
        p.settle();
        assert_eq!(p.state(), PaceState::Loaded);
    }

    #[test]
    fn a_tick_before_the_scheduled_flush_leaves_it_to_settle() {
        let mut p = pace();
        assert_eq!(p.after_change(1), Some(DELAY));
        p.flushed(1, Duration::ZERO);
        assert_eq!(p.state(), PaceState::Scheduled);
        assert!(p.due(0));
        p.settle();
        assert_eq!(p.state(), PaceState::Idle);
    }
}
