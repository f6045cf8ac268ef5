//! What the engine scenarios' subscribers record: per flood event, the latency from
//! the chunk leaving the server to a subscriber seeing it ([`Probe`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use kubesd::Labels;

use super::flood_meter::now_ns;

pub const SENT: &str = "__meta_kubernetes_pod_annotation_bench_sent";
pub const SEQ: &str = "__meta_kubernetes_pod_annotation_bench_seq";
pub const ADDRESS: &str = "__address__";

/// Shared by every subscriber of a scenario.
pub struct Probe {
    /// Per event seq: the latest latency (µs) at which any subscriber saw it, +1.
    pub latency_us: Vec<AtomicU32>,
    /// The event that ends the scenario.
    pub last: AtomicUsize,
    /// Subscribers that have seen `last` (reset by `expect`).
    pub done: AtomicUsize,
    /// Events seen (first target of each pod per subscriber).
    pub seen: AtomicU64,
    pub notify: tokio::sync::Notify,
}

impl Probe {
    pub fn new(events: usize) -> Arc<Probe> {
        Arc::new(Probe {
            latency_us: (0..=events).map(|_| AtomicU32::new(0)).collect(),
            last: AtomicUsize::new(usize::MAX),
            done: AtomicUsize::new(0),
            seen: AtomicU64::new(0),
            notify: tokio::sync::Notify::new(),
        })
    }

    /// Called by a constructor for each target; `mine` is the subscriber's own flag.
    pub fn observe(&self, labels: &Labels, mine: &AtomicUsize) {
        // One target per pod: the first port of the first container. Found by its
        // address, the first of a target's own labels, so that the probe stays a cheap
        // constructor (a scan to the port-number label would cost more than the rest of
        // the fanout's work per target).
        if !labels.get(ADDRESS).is_some_and(|a| a.ends_with(":8080")) {
            return;
        }
        let Some(seq) = labels.get(SEQ).and_then(|s| s.parse::<usize>().ok()) else {
            return;
        };
        if seq == 0 {
            return;
        }
        self.seen.fetch_add(1, Relaxed);
        if let Some(sent) = labels.get(SENT).and_then(|s| s.parse::<u64>().ok())
            && let Some(slot) = self.latency_us.get(seq)
        {
            let us = now_ns().saturating_sub(sent) / 1000;
            slot.fetch_max(us.min(u32::MAX as u64 - 1) as u32 + 1, Relaxed);
        }
        let last = self.last.load(Relaxed);
        if seq >= last && mine.fetch_max(last, Relaxed) < last {
            self.done.fetch_add(1, Relaxed);
            self.notify.notify_one();
        }
    }

    /// p50 and p99 latency in ms over events that were seen.
    pub fn percentiles(&self) -> (f64, f64, usize) {
        let mut v: Vec<u32> = self
            .latency_us
            .iter()
            .map(|a| a.load(Relaxed))
            .filter(|&x| x > 0)
            .map(|x| x - 1)
            .collect();
        if v.is_empty() {
            return (f64::NAN, f64::NAN, 0);
        }
        v.sort_unstable();
        let p = |q: f64| v[((v.len() as f64 - 1.0) * q) as usize] as f64 / 1000.0;
        (p(0.5), p(0.99), v.len())
    }

    /// The phase that ends when every subscriber has seen event `last`.
    pub fn expect(&self, last: usize) {
        self.done.store(0, Relaxed);
        self.last.store(last, Relaxed);
    }

    /// Waits until `subscribers` have each seen event `last`.
    pub async fn wait_done(&self, subscribers: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.done.load(Relaxed) < subscribers {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let _ = actix_rt::time::timeout(
                left.min(Duration::from_millis(200)),
                self.notify.notified(),
            )
            .await;
        }
        true
    }
}

/// The target the 1-subscriber jobs keep: the whole label set (as an agent does before
/// relabelling), shared, not copied.
pub type Kept = Labels;
