//! The retry delays composed around a URL watcher's machine, as kube-rs'
//! `StreamBackoff` wraps its `watcher()`: the machine says a step failed and how the
//! failure pauses the URL ([`Pause`]); this policy says how long, and starts over when
//! the machine reports a healthy watch.

use std::time::Duration;

use backoff::ExponentialBackoff;
use backoff::backoff::Backoff as _;

use super::protocol::Pause;

/// Exponential delays with jitter (half to one and a half of each), doubling from
/// `backoff_initial`, never over `backoff_max`: the engine's policy.
pub struct Retry {
    backoff: ExponentialBackoff,
    longest: Duration,
}

impl Retry {
    /// Delays from `initial`, doubling, capped at `longest`.
    pub fn new(initial: Duration, longest: Duration) -> Retry {
        Retry {
            backoff: ExponentialBackoff {
                initial_interval: initial,
                current_interval: initial,
                max_interval: longest,
                multiplier: 2.0,
                randomization_factor: 0.5,
                max_elapsed_time: None,
                ..ExponentialBackoff::default()
            },
            longest,
        }
    }

    /// The delay of the next pause: the backoff's next (capped, so that the cap is a
    /// real bound), at least a server's `Retry-After` up to the cap, or the cap for a
    /// failure retrying will not cure.
    pub fn delay(&mut self, pause: Pause) -> Duration {
        let next = self
            .backoff
            .next_backoff()
            .unwrap_or(self.longest)
            .min(self.longest);
        match pause {
            Pause::Backoff => next,
            Pause::AtLeast(asked) => next.max(asked.min(self.longest)),
            Pause::Longest => self.longest,
        }
    }

    /// Starts over: the URL's watch has been healthy.
    pub fn reset(&mut self) {
        self.backoff.reset();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_never_pass_the_cap_and_start_over_on_reset() {
        let cap = Duration::from_millis(400);
        let mut retry = Retry::new(Duration::from_millis(10), cap);
        let first = retry.delay(Pause::Backoff);
        assert!(first >= Duration::from_millis(5) && first <= Duration::from_millis(15));
        let later: Vec<Duration> = (0..20).map(|_| retry.delay(Pause::Backoff)).collect();
        assert!(later.iter().all(|d| *d <= cap));
        assert!(later.iter().any(|d| *d >= cap / 2), "{later:?}");
        retry.reset();
        assert!(retry.delay(Pause::Backoff) <= Duration::from_millis(15));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap_and_a_configuration_problem_waits_the_cap() {
        let cap = Duration::from_secs(30);
        let mut retry = Retry::new(Duration::from_secs(1), cap);
        let asked = retry.delay(Pause::AtLeast(Duration::from_secs(5)));
        assert!(asked >= Duration::from_secs(5) && asked <= cap, "{asked:?}");
        assert_eq!(
            retry.delay(Pause::AtLeast(Duration::from_secs(86_400))),
            cap
        );
        assert_eq!(retry.delay(Pause::Longest), cap);
    }
}
