//! The retry policy a URL watcher's machine waits on, passed in (as kube-rs' watcher is
//! given its backoff) rather than built inside the protocol: the machine decides when
//! to wait, the policy how long.

use std::time::Duration;

use backoff::ExponentialBackoff;
use backoff::backoff::Backoff as _;

/// How long a URL waits before each retry.
pub trait RetryBackoff {
    /// The delay before the next retry.
    fn next_delay(&mut self) -> Duration;
    /// Starts over: the URL's watch has been healthy.
    fn reset(&mut self);
    /// The longest delay: the most of a server's `Retry-After` honoured, and the wait
    /// of a problem retrying will not cure.
    fn cap(&self) -> Duration;
}

/// Exponential delays with jitter (half to one and a half of each), doubling from
/// `backoff_initial`, never over `backoff_max`: the engine's policy.
pub struct JitteredExponential {
    backoff: ExponentialBackoff,
    max: Duration,
}

impl JitteredExponential {
    /// Delays from `initial`, doubling, capped at `max`.
    pub fn new(initial: Duration, max: Duration) -> JitteredExponential {
        JitteredExponential {
            backoff: ExponentialBackoff {
                initial_interval: initial,
                current_interval: initial,
                max_interval: max,
                multiplier: 2.0,
                randomization_factor: 0.5,
                max_elapsed_time: None,
                ..ExponentialBackoff::default()
            },
            max,
        }
    }
}

impl RetryBackoff for JitteredExponential {
    /// The jittered interval capped at the maximum, so that the cap is a real bound.
    fn next_delay(&mut self) -> Duration {
        self.backoff
            .next_backoff()
            .unwrap_or(self.max)
            .min(self.max)
    }

    fn reset(&mut self) {
        self.backoff.reset();
    }

    fn cap(&self) -> Duration {
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_grow_never_pass_the_cap_and_start_over_on_reset() {
        let cap = Duration::from_millis(400);
        let mut b = JitteredExponential::new(Duration::from_millis(10), cap);
        let first = b.next_delay();
        assert!(first >= Duration::from_millis(5) && first <= Duration::from_millis(15));
        let later: Vec<Duration> = (0..20).map(|_| b.next_delay()).collect();
        assert!(later.iter().all(|d| *d <= cap));
        assert!(later.iter().any(|d| *d >= cap / 2), "{later:?}");
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(15));
        assert_eq!(b.cap(), cap);
    }
}
