//! A job's targets, active and dropped, computed on demand from what its job actors
//! hold: each object's discovered label sets (the group's, shared by `Arc`) relabelled
//! anew. Nothing is kept between requests, so a kubesd whose API is never asked holds
//! no more than before.
//!
//! The listing runs in the job actor ([`ListTargets`]): the discovered label sets live
//! in its slots, not in its published snapshot (which holds the serialized groups the
//! HTTP SD body is made of). Publishing them too would keep a second persistent map
//! per object for every job, asked or not; a request that relabels every target is
//! rare, and the actor is the one place that already holds them.

use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::Semaphore;

use super::target_filter::TargetFilter;
use crate::labels::Labels;
use crate::promconfig::parse_duration;
use crate::relabel::{
    ADDRESS_LABEL, SCRAPE_INTERVAL_LABEL, SCRAPE_TIMEOUT_LABEL, ScrapeSettings, Target, trace,
};
use crate::service::jobs::job_state::JobState;
use crate::service::{Job, JobActor};

/// Whose account of a job's targets a listing gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lens {
    /// kubesd's: every target it discovered; one it does not serve is dropped, with
    /// the reason ([`DropReason`]).
    Kubesd,
    /// Prometheus' targets API's: a target Prometheus could not make a scrape target
    /// of (no address, an address with a path, a scrape interval or timeout that is
    /// not a duration, zero, or a timeout longer than the interval) is neither listed
    /// nor counted, and active targets with the same labels are one target (see
    /// [`Listing::dedup_active`]).
    Prometheus,
}

/// What a listing asks for.
#[derive(Clone, Debug)]
pub struct TargetQuery {
    /// The job's scrape settings, with its own name (an actor may be shared by jobs).
    pub scrape: ScrapeSettings,
    /// Whose account to give.
    pub lens: Lens,
    /// List the active targets, at most this many (all are counted).
    pub active_limit: usize,
    /// List dropped targets, at most this many (all are counted).
    pub dropped_limit: usize,
    /// List only the targets this matches (all are still counted).
    pub filter: Option<Arc<TargetFilter>>,
}

impl TargetQuery {
    /// Every active target (none if `active` is false) and up to `dropped_limit`
    /// dropped ones, unfiltered.
    pub fn new(scrape: ScrapeSettings, active: bool, dropped_limit: usize) -> TargetQuery {
        TargetQuery {
            scrape,
            lens: Lens::Kubesd,
            active_limit: if active { usize::MAX } else { 0 },
            dropped_limit,
            filter: None,
        }
    }

    fn wants(&self, discovered: &Labels, labels: Option<&Labels>) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.matches(discovered, labels))
    }
}

/// An active target: what a scraper of kubesd's output scrapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveTarget {
    /// Its discovered labels as the group holds them (shared, not copied: a listing of
    /// every target must not copy every label set); [`crate::relabel::seeded`] gives
    /// them as Prometheus lists them.
    pub discovered: Labels,
    /// The labels kubesd serves for it.
    pub labels: Labels,
}

/// Why a target is not served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The rule at this position in `relabel_configs` dropped it.
    Rule(usize),
    /// The rules left it without `__address__`.
    NoAddress,
    /// Another replica's shard (`--shard`) serves it.
    OtherShard,
}

/// A target the job does not serve.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DroppedTarget {
    /// Its discovered labels with the job's settings seeded.
    pub discovered: Labels,
    /// Why.
    pub reason: DropReason,
}

/// A job's targets, as one or more job actors hold them.
#[derive(Clone, Debug, Default)]
pub struct Listing {
    /// Active targets, up to the limit asked for.
    pub active: Vec<ActiveTarget>,
    /// Every active target, counted.
    pub active_total: usize,
    /// Dropped targets, up to the limit asked for.
    pub dropped: Vec<DroppedTarget>,
    /// Every dropped target, counted.
    pub dropped_total: usize,
}

impl Listing {
    /// Keeps the first of the active targets with the same labels and counts it once,
    /// as Prometheus keeps one scrape target per label set and URL (two discovery
    /// configs of a job that find the same object make one target, with the
    /// discovered labels of either). Only for a listing of every active target.
    pub fn dedup_active(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let before = self.active.len();
        self.active.retain(|t| seen.insert(t.labels.clone()));
        self.active_total -= before - self.active.len();
    }

    /// Adds `other`'s targets, keeping at most `query`'s limits.
    pub fn extend(&mut self, other: Listing, query: &TargetQuery) {
        let room = query.active_limit.saturating_sub(self.active.len());
        self.active.extend(other.active.into_iter().take(room));
        self.active_total += other.active_total;
        let room = query.dropped_limit.saturating_sub(self.dropped.len());
        self.dropped.extend(other.dropped.into_iter().take(room));
        self.dropped_total += other.dropped_total;
    }
}

/// Lists the targets of every object in `state` as `query` asks. A dropped target's
/// rule is found by tracing it (only for those listed).
pub fn list(state: &mut JobState, query: &TargetQuery) -> Listing {
    let mut listing = Listing::default();
    let prometheus = query.lens == Lens::Prometheus;
    state.each_object(|relabelling, relabeller, discovered| {
        let mut from = discovered.iter();
        relabeller.process_object(discovered, &query.scrape, |target| {
            let Some(labels) = from.next() else {
                return;
            };
            if prometheus && !prometheus_target(&target, &query.scrape) {
                return;
            }
            if let Target::Keep(kept) = &target
                && relabelling
                    .shard
                    .keeps(kept.get(ADDRESS_LABEL).unwrap_or(""))
            {
                listing.active_total += 1;
                if listing.active.len() < query.active_limit && query.wants(labels, Some(kept)) {
                    let discovered = labels.clone();
                    let labels = kept.clone();
                    listing.active.push(ActiveTarget { discovered, labels });
                }
                return;
            }
            listing.dropped_total += 1;
            if listing.dropped.len() >= query.dropped_limit || !query.wants(labels, None) {
                return;
            }
            let traced = trace(labels, &query.scrape, &relabelling.rules);
            let reason = match (&target, traced.dropped_by()) {
                (Target::Keep(_), _) => DropReason::OtherShard,
                (Target::NoAddress, _) => DropReason::NoAddress,
                // The trace runs the same rules, so it drops where `process` did
                // (`tests/relabel.rs` checks it on every case); 0 is never used.
                (Target::Dropped, rule) => DropReason::Rule(rule.unwrap_or(0)),
            };
            let discovered = traced.discovered;
            listing.dropped.push(DroppedTarget { discovered, reason });
        });
    });
    listing
}

/// False for a target Prometheus' `PopulateLabels` refuses (it logs it and neither
/// scrapes nor lists it): no `__address__`, an address with a `/`, or a scrape
/// interval or timeout (the job's unless a rule set one) that is not a duration, is
/// zero, or a timeout longer than the interval. A dropped target is one.
pub fn prometheus_target(target: &Target, scrape: &ScrapeSettings) -> bool {
    let kept = match target {
        Target::Dropped => return true,
        Target::NoAddress => return false,
        Target::Keep(kept) => kept,
    };
    if kept.get(ADDRESS_LABEL).unwrap_or("").contains('/') {
        return false;
    }
    let duration = |name: &str, default: &str| {
        let text = kept.get(name).unwrap_or(default);
        parse_duration(text).ok().filter(|d| !d.is_zero())
    };
    let interval = duration(SCRAPE_INTERVAL_LABEL, &scrape.scrape_interval);
    let timeout = duration(SCRAPE_TIMEOUT_LABEL, &scrape.scrape_timeout);
    matches!((interval, timeout), (Some(i), Some(t)) if t <= i)
}

/// Listings at once: each relabels every target of its jobs in their actors, so two
/// clients polling cannot make the actors do nothing else.
static LISTINGS: Semaphore = Semaphore::const_new(1);

/// A job's scrape settings with its own name: its config's, or the defaults.
pub fn scrape_of(name: &str, job: &Job) -> ScrapeSettings {
    match job.config() {
        Some(config) => config.scrape.clone(),
        None => ScrapeSettings::new(name),
    }
}

/// Every target of `job` as `query` asks, from each of its actors in config order.
pub async fn list_job(job: &Job, query: TargetQuery) -> Listing {
    // Never closed: a permit is always given, in turn.
    let _permit = LISTINGS.acquire().await;
    let mut listing = Listing::default();
    for part in job.parts() {
        // An actor that stopped (its job is stopping) lists nothing.
        if let Ok(more) = part.addr.send(ListTargets(query.clone())).await {
            listing.extend(more, &query);
        }
    }
    if query.lens == Lens::Prometheus && query.active_limit == usize::MAX {
        listing.dedup_active();
    }
    listing
}

/// Sent by the targets API to each job actor of a job: its targets, listed as
/// [`list`] does. Answered with the listing; the actor relabels every object it holds
/// while handling it (see the module documentation for why this is a message).
#[derive(Message)]
#[rtype(result = "Listing")]
pub struct ListTargets(pub TargetQuery);

impl Handler<ListTargets> for JobActor {
    type Result = MessageResult<ListTargets>;

    fn handle(&mut self, ListTargets(query): ListTargets, _: &mut Context<Self>) -> Self::Result {
        MessageResult(list(self.state_mut(), &query))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dropped(n: usize) -> Listing {
        let target = DroppedTarget {
            discovered: Labels::from_pairs([("__address__", "a:1")]),
            reason: DropReason::NoAddress,
        };
        Listing {
            active: Vec::new(),
            active_total: 0,
            dropped: vec![target; n],
            dropped_total: n + 5,
        }
    }

    /// A job's actors' listings joined keep the bound over all of them and count
    /// every dropped target.
    #[test]
    fn joined_listings_keep_the_bound_and_count_all() {
        let query = TargetQuery::new(ScrapeSettings::new("j"), false, 4);
        let mut all = Listing::default();
        all.extend(dropped(3), &query);
        all.extend(dropped(3), &query);
        assert_eq!((all.dropped.len(), all.dropped_total), (4, 16));
    }
}
