//! The dirty flusher: a timer actor that makes every group recompute the targets whose
//! dependencies changed (a pod behind an endpoint, the node of a pod, a namespace).
//!
//! Recomputing on a tick instead of per event batches the expensive case: a node label
//! change dirties every pod on the node once, not once per event. The interval stretches
//! to the last flush's duration when that was longer, so a huge cluster cannot be kept
//! busy doing nothing but recomputing.

use std::collections::HashMap;
use std::time::Duration;

use actix::prelude::*;
use futures_util::future::join_all;

use crate::actors::messages::{FlushDirty, FlusherMembership};

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
