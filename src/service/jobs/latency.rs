//! A latency histogram in Prometheus' shape (cumulative buckets, sum, count), owned by
//! one actor and rendered on request: the time from a watch event's arrival to its
//! change being visible in a job's `/sd`.

use std::fmt::Write;
use std::time::Duration;

/// Bucket bounds, seconds: from a millisecond to ten seconds.
pub const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Observations, by bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyHistogram {
    /// Observations at or below each bound (not cumulative; rendered cumulatively).
    counts: [u64; BUCKETS.len()],
    /// Observations above the last bound.
    over: u64,
    sum: f64,
}

impl LatencyHistogram {
    /// Adds `other`'s observations (a job's actors' histograms, summed).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
        self.over += other.over;
        self.sum += other.sum;
    }

    /// Records one latency.
    pub fn observe(&mut self, latency: Duration) {
        let s = latency.as_secs_f64();
        self.sum += s;
        match BUCKETS.iter().position(|&b| s <= b) {
            Some(i) => self.counts[i] += 1,
            None => self.over += 1,
        }
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum::<u64>() + self.over
    }

    /// Appends the series of `name` with the label set `labels` (already formatted,
    /// e.g. `job="pods"`) in Prometheus' text format, without HELP and TYPE.
    pub fn render(&self, name: &str, labels: &str, out: &mut String) {
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(self.counts) {
            cumulative += count;
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels},le=\"+Inf\"}} {}",
            cumulative + self.over
        );
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", cumulative + self.over);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_inf_counts_everything() {
        let mut h = LatencyHistogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(30));
        h.observe(Duration::from_secs(20));
        assert_eq!(h.count(), 3);
        let mut out = String::new();
        h.render("x_seconds", "job=\"j\"", &mut out);
        assert!(
            out.contains("x_seconds_bucket{job=\"j\",le=\"0.001\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{job=\"j\",le=\"0.025\"} 1\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{job=\"j\",le=\"0.05\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{job=\"j\",le=\"10\"} 2\n"),
            "{out}"
        );
        assert!(
            out.contains("x_seconds_bucket{job=\"j\",le=\"+Inf\"} 3\n"),
            "{out}"
        );
        assert!(out.contains("x_seconds_count{job=\"j\"} 3\n"), "{out}");
    }
}
