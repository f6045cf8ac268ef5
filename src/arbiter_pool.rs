//! Arbiters handed out in turn, one per core: the engine places its groups on them and
//! `kubesd run` its job actors, so that independent work uses the cores there are.

use std::sync::atomic::{AtomicUsize, Ordering};

use actix::{Arbiter, ArbiterHandle};

/// A fixed set of arbiters taken in turn; those it started stop when it is dropped.
pub(crate) struct ArbiterPool {
    /// Every arbiter of the pool, in the order they are taken.
    handles: Vec<ArbiterHandle>,
    /// The arbiters the pool started (not the caller's).
    started: Vec<Arbiter>,
    /// How many have been taken so far.
    taken: AtomicUsize,
}

impl ArbiterPool {
    /// One arbiter per core: with `with_current`, the caller's arbiter is the first
    /// and one is started per further core; otherwise one is started per core.
    pub(crate) fn per_core(with_current: bool) -> ArbiterPool {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let to_start = cores - usize::from(with_current);
        let started: Vec<Arbiter> = (0..to_start).map(|_| Arbiter::new()).collect();
        let handles = (with_current.then(Arbiter::current).into_iter())
            .chain(started.iter().map(Arbiter::handle))
            .collect();
        ArbiterPool {
            handles,
            started,
            taken: AtomicUsize::new(0),
        }
    }

    /// The next arbiter in turn.
    pub(crate) fn next(&self) -> ArbiterHandle {
        let turn = self.taken.fetch_add(1, Ordering::Relaxed);
        // Never empty: a pool holds at least one arbiter (a core, or the caller's).
        self.handles[turn % self.handles.len()].clone()
    }
}

impl Drop for ArbiterPool {
    fn drop(&mut self) {
        for arbiter in &self.started {
            arbiter.stop();
        }
    }
}
