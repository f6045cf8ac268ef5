//! Keeping a churn's pace: [`Churn::start`] wakes every tick and makes the pod changes
//! due since it started (at most ten ticks' worth at once, a second at the default
//! tick: what it could not make in time is forgiven, not piled up into a step that
//! would hold the runtime), and measures the pace it achieves over report
//! windows ([`PaceReport`]). A window in which it falls behind its schedule by more
//! than a tenth of the window's changes is logged (the first, then one a minute while
//! it stays behind) and counted on the simulator's `/metrics`, beside every pod change
//! made ([`crate::metrics`]).

use std::time::Duration;

use tokio::time::{Instant, MissedTickBehavior};

use super::{Churn, ChurnStats};
use crate::resource::Resource;
use crate::sim::Simulator;

/// How a churn loop paces itself and reports its pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChurnPace {
    /// Pod changes a second (each one event on a pod watch).
    pub per_second: u32,
    /// How often the loop wakes to make the changes due.
    pub tick: Duration,
    /// The window over which the achieved pace is measured and judged.
    pub report_every: Duration,
}

impl ChurnPace {
    /// `per_second` pod changes a second, made every 100 ms, judged every 10 s.
    pub fn per_second(per_second: u32) -> ChurnPace {
        ChurnPace {
            per_second,
            tick: Duration::from_millis(100),
            report_every: Duration::from_secs(10),
        }
    }
}

/// The most ticks' worth of changes one tick makes.
const MOST_TICKS_AT_ONCE: u32 = 10;

/// Below this share of the asked pace a window is behind.
const KEPT_SHARE: f64 = 0.9;

/// While the pace stays behind, one window in this many is logged (once a minute with
/// the default 10 s windows).
const LOG_EVERY_BEHIND: u32 = 6;

/// A churn loop running on the actix runtime; dropping it does not stop it.
pub struct ChurnHandle {
    task: tokio::task::JoinHandle<()>,
    sim: Simulator,
    asked: u32,
}

impl ChurnHandle {
    /// The handle on `task`, a loop asked for `asked` pod changes a second (counted on
    /// `sim`'s metrics while it runs; 0 for a loop that is no churn).
    pub(crate) fn new(
        task: tokio::task::JoinHandle<()>,
        sim: Simulator,
        asked: u32,
    ) -> ChurnHandle {
        ChurnHandle { task, sim, asked }
    }

    /// Stops the loop.
    pub fn stop(self) {
        self.task.abort();
        self.sim.metrics().churn_asked.add(-i64::from(self.asked));
    }
}

impl Churn {
    /// Makes `pace.per_second` pod changes a second on the current actix runtime until
    /// the handle is stopped. Errors are logged and skipped: the demo should keep
    /// churning.
    pub fn start(mut self, sim: Simulator, pace: ChurnPace) -> ChurnHandle {
        sim.metrics().churn_asked.add(i64::from(pace.per_second));
        let looping = sim.clone();
        let task = actix_rt::spawn(async move {
            let sim = looping;
            let started = Instant::now();
            let mut due = Due::new(pace, started);
            let mut report = PaceReport::new(pace, started);
            let mut interval = tokio::time::interval(pace.tick.max(Duration::from_millis(1)));
            interval.set_missed_tick_behavior(MissedTickBehavior::Skip);
            loop {
                interval.tick().await;
                let mut stats = ChurnStats::default();
                let n = due.at(Instant::now());
                if let Err(err) = self.step_into(&sim, n, &mut stats) {
                    tracing::warn!(%err, "simulator churn step failed");
                }
                let made = stats.pod_changes() as u64;
                due.made += made;
                sim.metrics().churn_pod_changes.add(made);
                let now = Instant::now();
                if let Some(verdict) = report.record(now, made, due.short(now)) {
                    tell(&sim, pace.per_second, verdict);
                }
            }
        });
        ChurnHandle::new(task, sim, pace.per_second)
    }

    /// [`Churn::start`] at `per_second` pod changes a second, made every 100 ms (the
    /// pace `kubesd simulate --churn` and `kubesd demo` take).
    pub fn start_per_second(self, sim: Simulator, per_second: u32) -> ChurnHandle {
        self.start(sim, ChurnPace::per_second(per_second))
    }
}

/// The pod changes due: `per_second` a second since `started`, less those `made` and
/// those `forgiven`.
struct Due {
    per_second: u32,
    started: Instant,
    made: u64,
    /// Changes the loop fell so far behind on that they were dropped from its schedule.
    forgiven: u64,
    /// The most one tick makes ([`MOST_TICKS_AT_ONCE`] ticks' worth, at least 1).
    most: u64,
}

impl Due {
    /// Nothing due yet at `started`.
    fn new(pace: ChurnPace, started: Instant) -> Due {
        Due {
            per_second: pace.per_second,
            started,
            made: 0,
            forgiven: 0,
            most: most_at_once(pace),
        }
    }

    /// The changes owed from `started` to `now`.
    fn owed(&self, now: Instant) -> u64 {
        // In whole numbers: a float's rounding would make a change due a tick early.
        let elapsed = now.duration_since(self.started).as_nanos();
        let owed = elapsed * u128::from(self.per_second) / 1_000_000_000;
        u64::try_from(owed).unwrap_or(u64::MAX)
    }

    /// How many are due at `now`: at most `most`, the rest forgiven.
    fn at(&mut self, now: Instant) -> usize {
        let mut due = self.owed(now).saturating_sub(self.made + self.forgiven);
        if due > self.most {
            self.forgiven += due - self.most;
            due = self.most;
        }
        usize::try_from(due).unwrap_or(usize::MAX)
    }

    /// How many changes the loop is short of its schedule at `now`, those forgiven
    /// included; 0 while it is ahead (a rollout made more than was due).
    fn short(&self, now: Instant) -> u64 {
        self.owed(now).saturating_sub(self.made)
    }
}

/// The most changes one tick makes: [`MOST_TICKS_AT_ONCE`] ticks' worth, at least 1.
fn most_at_once(pace: ChurnPace) -> u64 {
    let burst = pace.tick.saturating_mul(MOST_TICKS_AT_ONCE).as_nanos();
    let most = burst * u128::from(pace.per_second) / 1_000_000_000;
    u64::try_from(most).unwrap_or(u64::MAX).max(1)
}

/// What a finished report window says of the pace.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaceVerdict {
    /// The loop fell short of its schedule by at most a tenth of the window's changes.
    Kept {
        /// Pod changes a second in the window.
        achieved: f64,
    },
    /// The loop fell short of its schedule by more than a tenth of the window's changes.
    Behind {
        /// Pod changes a second in the window.
        achieved: f64,
        /// Windows behind in a row, this one included.
        windows: u32,
    },
    /// Back at pace after windows behind.
    CaughtUp {
        /// Pod changes a second in the window.
        achieved: f64,
    },
}

/// The achieved pace over consecutive windows, against the asked one.
pub struct PaceReport {
    asked: f64,
    window: Duration,
    window_start: Instant,
    made: u64,
    /// How short of its schedule the loop was when the window started.
    short_at_start: u64,
    /// How far a loop at pace may lag at a window's end: what one tick makes at most
    /// (a tick may find nothing to change, and leave its change to the next).
    slack: u64,
    behind: u32,
}

impl PaceReport {
    /// A report on `pace`, its first window starting at `now`.
    pub fn new(pace: ChurnPace, now: Instant) -> PaceReport {
        PaceReport {
            asked: f64::from(pace.per_second),
            window: pace.report_every.max(Duration::from_millis(1)),
            window_start: now,
            made: 0,
            short_at_start: 0,
            slack: most_at_once(pace),
            behind: 0,
        }
    }

    /// Counts `made` pod changes at `now`, when the loop is `short` changes short of
    /// its schedule; the verdict on the window when `now` ends it. A window is behind
    /// when the loop fell short during it by more than a tenth of the window's changes
    /// and more than the slack of a tick (the same at the default tick and window): one
    /// that makes fewer because a rollout made more before is not.
    pub fn record(&mut self, now: Instant, made: u64, short: u64) -> Option<PaceVerdict> {
        self.made += made;
        let elapsed = now.duration_since(self.window_start);
        if elapsed < self.window {
            return None;
        }
        let seconds = elapsed.as_secs_f64();
        let achieved = self.made as f64 / seconds;
        let fell_short = short.saturating_sub(self.short_at_start) as f64;
        self.window_start = now;
        self.made = 0;
        self.short_at_start = short;
        let allowed = ((1.0 - KEPT_SHARE) * self.asked * seconds).max(self.slack as f64);
        if fell_short > allowed {
            self.behind += 1;
            return Some(PaceVerdict::Behind {
                achieved,
                windows: self.behind,
            });
        }
        let was_behind = std::mem::take(&mut self.behind) > 0;
        Some(if was_behind {
            PaceVerdict::CaughtUp { achieved }
        } else {
            PaceVerdict::Kept { achieved }
        })
    }
}

/// Puts a window's verdict on the simulator's metrics, and in the log when it is behind
/// (the first window, then one in [`LOG_EVERY_BEHIND`]) or caught up.
fn tell(sim: &Simulator, asked: u32, verdict: PaceVerdict) {
    let metrics = sim.metrics();
    match verdict {
        PaceVerdict::Kept { achieved } => metrics.churn_achieved.set(achieved.round() as i64),
        PaceVerdict::Behind { achieved, windows } => {
            metrics.churn_achieved.set(achieved.round() as i64);
            metrics.churn_behind.inc();
            if (windows - 1) % LOG_EVERY_BEHIND == 0 {
                tracing::warn!(
                    asked,
                    achieved = achieved.round(),
                    pods = sim.store().count(Resource::Pods),
                    "the simulator's churn falls behind its pace: {:.0} pod changes a second \
                     of the {asked} asked; its clients see a quieter cluster than asked",
                    achieved
                );
            }
        }
        PaceVerdict::CaughtUp { achieved } => {
            metrics.churn_achieved.set(achieved.round() as i64);
            tracing::info!(
                asked,
                achieved = achieved.round(),
                "the simulator's churn keeps its pace again"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pace(per_second: u32) -> ChurnPace {
        ChurnPace {
            per_second,
            tick: Duration::from_millis(100),
            report_every: Duration::from_secs(10),
        }
    }

    #[test]
    fn due_follows_the_clock_and_forgives_more_than_ten_ticks() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut due = Due::new(pace(200), start);
        assert_eq!(due.at(start), 0);
        assert_eq!(due.at(at(100)), 20);
        due.made += 25;
        // A rollout made more than was due: the loop is ahead, and the next tick makes
        // that much less.
        assert_eq!(due.short(at(100)), 0);
        assert_eq!(due.at(at(200)), 15);
        due.made += 15;
        // Ten seconds without a tick: ten ticks' worth now, the rest forgiven, and the
        // loop short of its schedule by all it did not make.
        assert_eq!(due.at(at(10_200)), 200);
        due.made += 200;
        assert_eq!(due.short(at(10_200)), 1_800);
        assert_eq!(due.at(at(10_300)), 20);
    }

    #[test]
    fn report_judges_each_window_and_tells_a_catch_up() {
        let start = Instant::now();
        let mut report = PaceReport::new(pace(100), start);
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(report.record(at(5_000), 500, 0), None);
        assert_eq!(
            report.record(at(10_000), 450, 50),
            Some(PaceVerdict::Kept { achieved: 95.0 })
        );
        assert_eq!(
            report.record(at(20_000), 890, 160),
            Some(PaceVerdict::Behind {
                achieved: 89.0,
                windows: 1
            })
        );
        assert_eq!(
            report.record(at(30_000), 100, 1_060),
            Some(PaceVerdict::Behind {
                achieved: 10.0,
                windows: 2
            })
        );
        // What was forgiven stays short; a window that falls no further is at pace.
        assert_eq!(
            report.record(at(40_000), 1_000, 1_060),
            Some(PaceVerdict::CaughtUp { achieved: 100.0 })
        );
        assert_eq!(
            report.record(at(50_000), 1_000, 1_060),
            Some(PaceVerdict::Kept { achieved: 100.0 })
        );
    }

    #[test]
    fn a_window_after_an_overshoot_or_a_ticks_lag_is_not_behind() {
        let start = Instant::now();
        let mut report = PaceReport::new(pace(100), start);
        let at = |ms: u64| start + Duration::from_millis(ms);
        // Rollouts made 400 more than was due, so the next window makes 400 fewer.
        assert_eq!(
            report.record(at(10_000), 1_400, 0),
            Some(PaceVerdict::Kept { achieved: 140.0 })
        );
        assert_eq!(
            report.record(at(20_000), 600, 0),
            Some(PaceVerdict::Kept { achieved: 60.0 })
        );
        // At one change a second, the change a tick left to the next is a tenth of the
        // window, and no fall behind.
        let mut slow = PaceReport::new(pace(1), start);
        assert_eq!(
            slow.record(at(10_000), 9, 1),
            Some(PaceVerdict::Kept { achieved: 0.9 })
        );
        assert_eq!(
            slow.record(at(20_000), 8, 3),
            Some(PaceVerdict::Behind {
                achieved: 0.8,
                windows: 1
            })
        );
    }
}
