//! Relabelling a batch's new objects on two threads. When a role syncs, its group sends
//! a job its objects in a few large batches (every endpoints object at once, once the
//! pods they name are listed), and the job actor relabelling them alone is the end of
//! the sync while the other core waits. The new objects of a batch are relabelled half
//! on the actor's thread and half on a scoped thread, then placed in order on the
//! actor's thread as any change is.

use std::thread;

use crate::actors::messages::ObjectTargets as Discovered;
use crate::relabel::Relabeller;
use crate::sd_output::ObjectGroups;
use crate::service::jobs::relabelling::{Relabelling, Scratch};

/// The fewest new objects in one step that are relabelled on two threads: for fewer,
/// starting a thread costs more than it saves.
pub const AHEAD_FROM: usize = 64;

/// How many changes one step takes: bounds the relabelled targets held at once.
pub const AHEAD_STEP: usize = 256;

/// One object relabelled ahead: its groups, and the scratch holding its kept targets
/// (which the views' split reads as it is placed).
pub struct Relabelled {
    /// Its served groups.
    pub groups: ObjectGroups,
    /// Its kept targets, their nodes, sources and places.
    pub scratch: Scratch,
}

/// Relabels each of `objects` with `relabelling`, the first half here with `mine` and
/// the second on a scoped thread with `helper`; the results in the objects' order.
/// `nodes` is [`Relabelling::object_groups`]'.
pub fn relabel_ahead(
    relabelling: &Relabelling,
    mine: &mut Relabeller,
    helper: &mut Relabeller,
    objects: &[&Discovered],
    nodes: bool,
) -> Vec<Relabelled> {
    let each = |relabeller: &mut Relabeller, objects: &[&Discovered]| -> Vec<Relabelled> {
        (objects.iter())
            .map(|discovered| {
                let mut scratch = Scratch::default();
                let groups = relabelling.object_groups(relabeller, discovered, &mut scratch, nodes);
                Relabelled { groups, scratch }
            })
            .collect()
    };
    let (first, second) = objects.split_at(objects.len() / 2);
    thread::scope(|s| {
        let theirs = s.spawn(|| each(helper, second));
        let mut all = each(mine, first);
        match theirs.join() {
            Ok(rest) => all.extend(rest),
            // The rules are the job's own code path: a panic there is a bug, and it
            // goes on as it would have on the actor's thread.
            Err(panic) => std::panic::resume_unwind(panic),
        }
        all
    })
}
