//! How a job turns one object's discovered label sets into its served targets: the
//! job's rules (`relabel_configs`), then this replica's shard of `__address__`. One
//! function does it ([`Relabelling::each_kept`]); serializing an object's groups, the
//! views' split and the demo's full listing all go through it.

use std::sync::Arc;

use arcstr::ArcStr;

use crate::labels::Labels;
use crate::relabel::{ADDRESS_LABEL, CompiledRule, Relabeller, ScrapeSettings, Target};
use crate::sd_output::ObjectGroups;
use crate::service::views::node_of;
use crate::service::views::shard::Shard;

/// How a job actor relabels: the rules, the shard, and the scrape settings its targets
/// are seeded with.
pub struct Relabelling {
    /// The job's compiled `relabel_configs`.
    pub rules: Arc<Vec<CompiledRule>>,
    /// This replica's share of the targets.
    pub shard: Shard,
    /// The job's scrape settings. Its `job_name` is the job's name or, when the actor
    /// is shared by jobs whose rules never read `job`, a placeholder string that each
    /// job's body replaces (recognised by pointer, see [`ObjectGroups`]).
    pub scrape: ScrapeSettings,
}

/// One object's relabelled targets while it is serialized and split, reused from
/// object to object.
#[derive(Default)]
pub struct Scratch {
    /// The kept targets.
    pub targets: Vec<Labels>,
    /// Each kept target's node (all empty unless a node view is kept).
    pub nodes: Vec<ArcStr>,
    /// Each kept target's discovered label set, by its index among the object's.
    pub sources: Vec<u32>,
    /// Each kept target's address's place in the object's groups (see
    /// [`ObjectGroups::placed`]).
    pub places: Vec<u32>,
}

impl Relabelling {
    /// True when `rules` give the same targets, but for the `job` label's value, for
    /// every job name: then jobs that differ only in name may share an actor.
    pub fn shareable(rules: &[CompiledRule]) -> bool {
        !rules.iter().any(|r| r.reads_label("job"))
    }

    /// Relabels the discovered label sets of one object (with `scrape`) and hands
    /// `keep` each target the rules keep and this replica's shard wants, with the label
    /// set it came from and that set's index.
    pub fn each_kept(
        &self,
        relabeller: &mut Relabeller,
        scrape: &ScrapeSettings,
        discovered: &[Labels],
        mut keep: impl FnMut(u32, &Labels, Labels),
    ) {
        let mut next = discovered.iter().enumerate();
        relabeller.process_object(discovered, scrape, |target| {
            // One call per discovered label set, in order.
            let from = next.next();
            if let (Target::Keep(target), Some((i, from))) = (target, from)
                && self.shard.keeps(target.get(ADDRESS_LABEL).unwrap_or(""))
            {
                keep(u32::try_from(i).unwrap_or(u32::MAX), from, target);
            }
        });
    }

    /// One object's served groups, with its kept targets left in `scratch` with each
    /// one's discovered label set and its address's place in the groups (and with
    /// `nodes`, each one's node) for the views to split.
    pub fn object_groups(
        &self,
        relabeller: &mut Relabeller,
        discovered: &[Labels],
        scratch: &mut Scratch,
        nodes: bool,
    ) -> ObjectGroups {
        scratch.targets.clear();
        scratch.nodes.clear();
        scratch.sources.clear();
        self.each_kept(relabeller, &self.scrape, discovered, |i, from, target| {
            scratch.targets.push(target);
            scratch.sources.push(i);
            scratch.nodes.push(if nodes {
                node_of(from)
            } else {
                ArcStr::default()
            });
        });
        ObjectGroups::placed(&scratch.targets, &self.scrape.job_name, &mut scratch.places)
    }

    /// Every target of one object, with `job_name` as `job` (for listings, not for the
    /// served bytes).
    pub fn targets_named(
        &self,
        relabeller: &mut Relabeller,
        job_name: &str,
        discovered: &[Labels],
    ) -> Vec<Labels> {
        let scrape = ScrapeSettings {
            job_name: ArcStr::from(job_name),
            ..self.scrape.clone()
        };
        let mut out = Vec::new();
        self.each_kept(relabeller, &scrape, discovered, |_, _, target| {
            out.push(target)
        });
        out
    }
}
