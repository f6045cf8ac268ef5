//! What a job actor publishes: an immutable [`JobSnapshot`] of its body, its view
//! partitions, whether it has synced and what it has done, swapped into a
//! [`SnapshotCell`] (one writer, the actor; many readers, the HTTP handlers and the
//! file SD writer) after messages that changed something, at most once per publish
//! interval while changes keep coming (see [`crate::service::jobs::job_actor`]). Readers never cross a
//! mailbox: they load the current snapshot (an `Arc`) and read it.
//!
//! Making a snapshot is O(partitions kept): the body and the partitions are persistent
//! maps, and a snapshot holds their roots.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::relabel::ReadableMeta;
use crate::sd_output::KeyedGroups;
use crate::service::fleet::Fleet;
use crate::service::fleet::assigned::AssignedViews;
use crate::service::jobs::background::run_in_background_then;
use crate::service::jobs::latency::LatencyHistogram;
use crate::service::views::ViewKind;
use crate::service::views::index::Partition;

/// What a job actor has done, for tests and benchmarks: work counted, not timed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JobWork {
    /// Objects relabelled and serialized.
    pub objects_relabelled: u64,
    /// Objects whose change the rules cannot see (values of labels no rule reads and
    /// the output drops, see [`crate::relabel::Visibility`]): not relabelled.
    pub objects_unseen: u64,
    /// Objects whose groups came out different (or appeared, or left).
    pub objects_changed: u64,
    /// Snapshots published whose body differs from the one before.
    pub bodies_changed: u64,
    /// Messages from the group handled (batches, catch-ups, replacements).
    pub batches: u64,
    /// Times a view partition was filled from every object (first asked for).
    pub indexes_filled: u64,
}

impl JobWork {
    /// The sum of two actors' work.
    pub fn plus(self, other: JobWork) -> JobWork {
        JobWork {
            objects_relabelled: self.objects_relabelled + other.objects_relabelled,
            objects_unseen: self.objects_unseen + other.objects_unseen,
            objects_changed: self.objects_changed + other.objects_changed,
            bodies_changed: self.bodies_changed + other.bodies_changed,
            batches: self.batches + other.batches,
            indexes_filled: self.indexes_filled + other.indexes_filled,
        }
    }
}

/// A job actor's counts of the changes it applied, for `/metrics`.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    /// Messages that carried changes.
    pub changes: u64,
    /// Object changes applied (visible in `/sd` from the next snapshot).
    pub applied: u64,
    /// Time from an event's arrival at the group to its change being published.
    pub latency: LatencyHistogram,
    /// When a snapshot whose body differed from the one before was last published.
    pub last_change: Option<std::time::SystemTime>,
}

/// One published state of a job actor. Immutable; cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct JobSnapshot {
    /// Every object's groups, in body order.
    pub body: KeyedGroups,
    /// The view partitions kept, each with its buckets.
    pub partitions: Vec<(ViewKind, Partition)>,
    /// Every URL the discovery needs has been listed once.
    pub synced: bool,
    /// The changes applied so far.
    pub stats: JobStats,
    /// The work done so far.
    pub work: JobWork,
    /// The fleet it assigns targets by (a pointer to the fleet it was given, published
    /// whenever that changes): each member's zone, and the members a view asked for
    /// from now on is split among.
    pub members: Arc<Fleet>,
    /// True when each body entry carries what assigning its targets reads (member
    /// views were asked for).
    pub placing: bool,
}

impl JobSnapshot {
    /// The partition of `kind`, if the actor keeps it.
    pub fn partition(&self, kind: ViewKind) -> Option<&Partition> {
        self.partitions
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, p)| p)
    }
}

/// Where a job actor publishes its snapshots and readers note which partitions they
/// ask for (so that the actor drops the one asked for least recently when it keeps as
/// many as it may); and the placements its readers cut member views from.
#[derive(Default)]
pub struct SnapshotCell {
    current: ArcSwap<JobSnapshot>,
    /// Each partition's last request, by the clock below.
    asked: Mutex<HashMap<ViewKind, u64>>,
    clock: AtomicU64,
    /// What `?member=` and the allocator's shares are cut from, placed once asked for.
    pub assigned: AssignedViews,
}

impl SnapshotCell {
    /// A cell whose collectors are served the `__meta_*` labels `readable` keeps
    /// (every one when `None`).
    pub fn new(readable: Option<Arc<ReadableMeta>>) -> SnapshotCell {
        SnapshotCell {
            assigned: AssignedViews::new(readable),
            ..SnapshotCell::default()
        }
    }

    /// Brings the member views asked for up to date with the snapshot now, in the
    /// background ([`run_in_background_then`]), unless none was asked for or that is under
    /// way already (see [`AssignedViews`]). Needs a runtime: an actor's or a request's.
    pub fn assign_soon(self: &Arc<Self>) {
        self.place_apart(|cell| {
            let snapshot = cell.load();
            let members = cell.assigned.members_for(&snapshot.members);
            cell.assigned.assign_kept(&snapshot.body, &members);
        });
    }

    /// Runs `place` in the background, one placing at a time ([`assign_soon`]'s).
    ///
    /// [`assign_soon`]: SnapshotCell::assign_soon
    fn place_apart(self: &Arc<Self>, place: impl FnOnce(&SnapshotCell) + Send + 'static) {
        if !self.assigned.start_apart() {
            return;
        }
        let (cell, ended) = (Arc::clone(self), Arc::clone(self));
        run_in_background_then(
            move || place(&cell),
            // Ended even if placing panicked: else no placing would start again, and
            // requests would be served the placements of before for ever.
            move |_| ended.assigned.assigned_apart(),
        );
    }

    /// The snapshot published last.
    pub fn load(&self) -> Arc<JobSnapshot> {
        self.current.load_full()
    }

    /// Replaces the current snapshot (by the actor only).
    pub fn publish(&self, snapshot: JobSnapshot) {
        self.current.store(Arc::new(snapshot));
    }

    /// Notes a request for a view of partition `kind`.
    pub fn note_asked(&self, kind: ViewKind) {
        let at = self.clock.fetch_add(1, Ordering::Relaxed) + 1;
        match self.asked.lock() {
            Ok(mut asked) => asked.insert(kind, at),
            // A reader that panicked cannot have left a number half written.
            Err(poisoned) => poisoned.into_inner().insert(kind, at),
        };
    }

    /// When partition `kind` was last asked for (0: never).
    pub fn last_asked(&self, kind: ViewKind) -> u64 {
        let asked = match self.asked.lock() {
            Ok(asked) => asked,
            Err(poisoned) => poisoned.into_inner(),
        };
        asked.get(&kind).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::jobs::background::run_in_background;

    #[test]
    fn a_placing_in_the_background_that_panics_lets_the_next_one_start() {
        let cell = Arc::new(SnapshotCell::default());
        cell.assigned
            .assign(&KeyedGroups::default(), &Arc::new(Fleet::default()));
        cell.place_apart(|_| panic!("placing failed"));
        // The background runs its pieces in order: once this one ran, the placing
        // before it has ended.
        let (tx, rx) = std::sync::mpsc::channel();
        run_in_background(move || {
            let _ = tx.send(());
        });
        rx.recv().expect("the background went on");
        assert!(cell.assigned.start_apart(), "the next placing starts");
        assert!(!cell.assigned.start_apart(), "one at a time");
    }
}
