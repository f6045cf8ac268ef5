//! A job's count of dropped targets, kept between requests: counting relabels every
//! target, and both the status page (every few seconds) and Prometheus' targets API
//! (which counts every scrape pool's dropped targets even when it lists one pool's)
//! ask for it often.

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::listing::{Lens, TargetQuery, list_job, scrape_of};
use crate::service::{Job, JobWork, SnapshotCell};

/// How long a job's dropped count is reused while its targets keep changing.
const DROPPED_COUNT_REUSE: Duration = Duration::from_secs(30);

/// A job's last dropped count: its actors' cells (weak: a stopped job's are let go),
/// the work they had done then, when, and the count.
struct DroppedCount {
    cells: Vec<Weak<SnapshotCell>>,
    work: JobWork,
    at: Instant,
    count: usize,
}

impl DroppedCount {
    /// True if it was counted for `job`'s very actors.
    fn is_of(&self, job: &Job) -> bool {
        self.cells.len() == job.parts().len()
            && (self.cells.iter().zip(job.parts()))
                .all(|(weak, part)| weak.upgrade().is_some_and(|c| Arc::ptr_eq(&c, &part.cell)))
    }
}

/// The last dropped count of each job asked about, by name and [`Lens`].
static DROPPED_COUNTS: Mutex<Vec<((String, Lens), DroppedCount)>> = Mutex::new(Vec::new());

/// `job`'s dropped targets as `lens` counts them, counted anew when its actors
/// relabelled something since the last count and that count is
/// [`DROPPED_COUNT_REUSE`] old.
pub async fn dropped_count(name: &str, job: &Job, lens: Lens) -> usize {
    let key = (name.to_string(), lens);
    let work = job.work();
    let lock = || DROPPED_COUNTS.lock().unwrap_or_else(|e| e.into_inner());
    let reusable = lock().iter().any(|(k, last)| {
        let unchanged = last.work.objects_relabelled == work.objects_relabelled
            && last.work.objects_changed == work.objects_changed;
        *k == key && last.is_of(job) && (unchanged || last.at.elapsed() < DROPPED_COUNT_REUSE)
    });
    if reusable && let Some((_, last)) = lock().iter().find(|(k, _)| *k == key) {
        return last.count;
    }
    let query = TargetQuery {
        lens,
        ..TargetQuery::new(scrape_of(name, job), false, 0)
    };
    let count = list_job(job, query).await.dropped_total;
    let cells = job
        .parts()
        .iter()
        .map(|p| Arc::downgrade(&p.cell))
        .collect();
    let mut counts = lock();
    // Jobs gone (stopped, or renamed by a reload) leave.
    counts.retain(|(k, last)| *k != key && last.cells.iter().all(|c| c.strong_count() > 0));
    let at = Instant::now();
    let count_now = DroppedCount {
        cells,
        work,
        at,
        count,
    };
    counts.push((key, count_now));
    count
}
