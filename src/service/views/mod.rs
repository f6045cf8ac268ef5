//! Views of a job's targets for a fleet of scrapers: `?shard=I&shards=N` (Prometheus'
//! `hashmod` of `__address__`), `?node=NAME` (the node of the target's object) and
//! `?member=POD` (weighted rendezvous hashing over the Ready members, zone-aware or
//! not, with a handover: see [`crate::service::fleet`]).
//!
//! A view is a bucket of a partition (see `service::views::index`). The job actor keeps
//! the partitions that do not depend on the members beside the whole body (one per
//! shard count asked for, one for nodes): each object's targets are split into buckets
//! when the object is relabelled ([`split`]). An object whose targets all land in one
//! bucket (a pod on its node, a single-port pod in its shard) shares the very bytes of
//! the whole job's body; an object split across buckets by address has each share cut
//! from its bytes ([`Share::picked`]); only other objects have their parts serialized
//! apart. A member's view and a collector's share are cut, when asked for, from the
//! objects' owners placed from the published snapshots
//! ([`crate::service::fleet::assigned`]), from the same bytes.

pub(crate) mod index;
pub(crate) mod query;
pub(crate) mod shard;

use std::collections::BTreeMap;
use std::sync::Arc;

use arcstr::ArcStr;

use crate::labels::Labels;
use crate::relabel::prometheus_hash;
use crate::sd_output::{ADDRESS_LABEL, MAX_PICKED, ObjectGroups, Share};

/// The largest `shards=` a consumer may ask for: each shard count is an index whose
/// buckets are counted in `/metrics` one by one.
pub const MAX_SHARDS: u64 = 1024;

/// How many partitions one job actor keeps at most (nodes, members and shard
/// counts together). Asking for another drops the one asked for least recently; it is
/// rebuilt (every object split anew) when asked for again.
pub const MAX_INDEXES: usize = 8;

/// The discovered labels naming a target's node, in the order they are read: an
/// endpoint's own node first, then its pod's (the pod role's, and the endpoints roles'
/// targets backed by a pod), then a node target's own name.
pub const NODE_LABELS: [&str; 4] = [
    "__meta_kubernetes_endpoint_node_name",
    "__meta_kubernetes_endpointslice_endpoint_node_name",
    "__meta_kubernetes_pod_node_name",
    "__meta_kubernetes_node_name",
];

/// What a consumer of `/sd/{job}` asks for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ViewQuery {
    /// Every target of the job.
    All,
    /// The targets Prometheus' `hashmod` of `__address__` modulo `count` puts in
    /// shard `index`.
    Shard {
        /// The shard, `0..count`.
        index: u64,
        /// How many shards.
        count: u64,
    },
    /// The targets of objects on this node (empty: those on no node).
    Node(ArcStr),
    /// The targets assigned to this member pod.
    Member(ArcStr),
    /// The targets assigned to this member pod with their discovered labels, as the
    /// OpenTelemetry target allocator serves a collector (see
    /// [`crate::service::api::allocator`]).
    Allocator(ArcStr),
}

impl ViewQuery {
    /// The partition this view is a bucket of; `None` for the whole job.
    pub fn kind(&self) -> Option<ViewKind> {
        match self {
            ViewQuery::All => None,
            ViewQuery::Shard { count, .. } => Some(ViewKind::Shards(*count)),
            ViewQuery::Node(_) => Some(ViewKind::Node),
            ViewQuery::Member(_) => Some(ViewKind::Member),
            ViewQuery::Allocator(_) => Some(ViewKind::Allocator),
        }
    }

    /// The bucket of its partition this view is.
    pub fn bucket(&self) -> Option<Bucket> {
        match self {
            ViewQuery::All => None,
            ViewQuery::Shard { index, .. } => Some(Bucket::Shard(*index)),
            ViewQuery::Node(name) | ViewQuery::Member(name) | ViewQuery::Allocator(name) => {
                Some(Bucket::Name(name.clone()))
            }
        }
    }
}

/// A partition of a job's targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ViewKind {
    /// By `hashmod` of `__address__`, with this many shards.
    Shards(u64),
    /// By the node of the target's object.
    Node,
    /// By rendezvous hashing over the members.
    Member,
    /// As [`ViewKind::Member`], each target as its discovered labels.
    Allocator,
}

/// One bucket of a partition: a shard's number, or a node's or member's name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bucket {
    /// A shard.
    Shard(u64),
    /// A node or a member.
    Name(ArcStr),
}

/// The node named by a discovered label set ([`NODE_LABELS`]); empty when none.
pub fn node_of(discovered: &Labels) -> ArcStr {
    NODE_LABELS
        .iter()
        .find_map(|name| discovered.get_shared(name).filter(|v| !v.is_empty()))
        .unwrap_or_default()
}

/// True when every discovered label set of `a` names the node its peer in `b` names.
pub fn same_nodes(a: &[Labels], b: &[Labels]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (one_node(a), one_node(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.iter().zip(b).all(|(x, y)| node_of(x) == node_of(y)),
    }
}

/// The node every discovered label set of an object names, if they name one alike.
/// A set that shares the first's base, neither holding a node label of its own, names
/// the first's node without a look-up: a pod's targets, whose look-ups would otherwise
/// search every target's labels for each of [`NODE_LABELS`].
pub fn one_node(discovered: &[Labels]) -> Option<ArcStr> {
    let (first, rest) = discovered.split_first()?;
    let node = node_of(first);
    let first_plain = !names_own_node(first);
    rest.iter()
        .all(|l| (first_plain && l.same_base(first) && !names_own_node(l)) || node_of(l) == node)
        .then_some(node)
}

/// True when a node label is among `labels`' own (not its object's shared) labels.
fn names_own_node(labels: &Labels) -> bool {
    (labels.own_labels().iter()).any(|l| NODE_LABELS.contains(&l.name.as_str()))
}

/// A member's rendezvous hash for a target whose address hashes (FNV-1a) to
/// `address_hash`: SplitMix64's finalizer over both hashes (the `u` of
/// [`crate::service::fleet::assignment::Candidate::score`]). Fixed by definition (no seed, no std
/// hasher), so every kubesd replica, whatever its build, assigns alike.
pub fn rendezvous_weight(address_hash: u64, member: &str) -> u64 {
    rendezvous_keyed(address_hash, member_key(member))
}

/// The part of [`rendezvous_weight`] that depends on the member alone, computed once
/// per member instead of once per target.
pub fn member_key(member: &str) -> u64 {
    mix(fnv1a(member.as_bytes()))
}

/// [`rendezvous_weight`] from the member's [`member_key`].
pub fn rendezvous_keyed(address_hash: u64, member_key: u64) -> u64 {
    mix(address_hash ^ member_key)
}

/// The hash of a target's address that [`rendezvous_weight`] takes: FNV-1a.
pub fn address_hash(address: &str) -> u64 {
    fnv1a(address.as_bytes())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Calls `f` with the bucket of `kind` (shards or nodes, the partitions a job actor
/// keeps) a target at `address` whose object is on `node` lands in; none for the
/// members' views, which are cut when asked for (see
/// [`crate::service::fleet::assigned`]).
pub fn each_bucket(kind: ViewKind, address: &str, node: &ArcStr, mut f: impl FnMut(Bucket)) {
    match kind {
        ViewKind::Shards(n) => f(Bucket::Shard(prometheus_hash(address) % n)),
        ViewKind::Node => f(Bucket::Name(node.clone())),
        ViewKind::Member | ViewKind::Allocator => {}
    }
}

/// True when partition `kind` reads each target's node: the node partition.
pub fn needs_nodes(kind: ViewKind) -> bool {
    kind == ViewKind::Node
}

/// One object's parts in one partition: each bucket it has targets in, with its share
/// of them.
pub type ObjectParts = Box<[(Bucket, Share)]>;

/// What an object's targets are, for splitting them: the relabelled targets, the node
/// of each, its whole groups, and the placeholder the job's name goes in.
pub struct ObjectTargets<'a> {
    /// The targets kept by relabelling.
    pub targets: &'a [Labels],
    /// The node of each target's discovered labels.
    pub nodes: &'a [ArcStr],
    /// The groups of all of them (what the whole job serves).
    pub whole: &'a Arc<ObjectGroups>,
    /// The job-name placeholder of the job actor's scrape settings.
    pub placeholder: &'a ArcStr,
}

/// The object's parts in partition `kind`: its whole groups, shared, when its targets
/// all land in one bucket; else each bucket's share cut from its bytes (see
/// [`split_by_address`]) or serialized apart. Each target's address is hashed once.
pub fn split(kind: ViewKind, object: &ObjectTargets) -> ObjectParts {
    if let Some(parts) = split_by_address(kind, object.whole) {
        return parts;
    }
    let mut buckets: Vec<(usize, Bucket)> = Vec::with_capacity(object.targets.len());
    let no_node = ArcStr::default();
    for (i, target) in object.targets.iter().enumerate() {
        let address = target.get(ADDRESS_LABEL).unwrap_or("");
        let node = object.nodes.get(i).unwrap_or(&no_node);
        each_bucket(kind, address, node, |b| buckets.push((i, b)));
    }
    // As many pairs as targets, all in one bucket: every target in that bucket.
    if let Some((_, first)) = buckets.first()
        && buckets.len() == object.targets.len()
        && buckets.iter().all(|(_, b)| b == first)
    {
        return Box::new([(first.clone(), Share::whole(object.whole))]);
    }
    let mut by_bucket: BTreeMap<Bucket, Vec<Labels>> = BTreeMap::new();
    for (i, bucket) in buckets {
        by_bucket
            .entry(bucket)
            .or_default()
            .push(object.targets[i].clone());
    }
    by_bucket
        .into_iter()
        .map(|(b, targets)| (b, ObjectGroups::new(&targets, object.placeholder)))
        .filter(|(_, g)| !g.is_empty())
        .map(|(b, g)| (b, Share::whole(&Arc::new(g))))
        .collect()
}

/// The parts in the shard partition of an object of at most [`MAX_PICKED`] addresses,
/// read from its groups alone (no relabelling): its whole groups when every address
/// lands in one bucket, else each bucket's share cut from its bytes
/// ([`Share::picked`]). `None` for the other partitions (one address may be a target
/// on two nodes, two endpoints) and for other objects.
pub fn split_by_address(kind: ViewKind, whole: &Arc<ObjectGroups>) -> Option<ObjectParts> {
    if !matches!(kind, ViewKind::Shards(_)) {
        return None;
    }
    let addresses = whole.addresses()?;
    if addresses.len() > MAX_PICKED {
        return None;
    }
    let node = ArcStr::default();
    let mut by_bucket: BTreeMap<Bucket, u64> = BTreeMap::new();
    for (i, address) in addresses.iter().enumerate() {
        each_bucket(kind, address, &node, |bucket| {
            *by_bucket.entry(bucket).or_default() |= 1 << i;
        });
    }
    let all = u64::MAX >> (MAX_PICKED - addresses.len());
    let parts = by_bucket
        .into_iter()
        .filter_map(|(b, picks)| {
            let share = if picks == all {
                Share::whole(whole)
            } else {
                Share::picked(whole, picks)?
            };
            Some((b, share))
        })
        .collect();
    Some(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_is_the_endpoints_own_before_its_pods() {
        let l = Labels::from_pairs([
            ("__meta_kubernetes_pod_node_name", "pod-node"),
            (
                "__meta_kubernetes_endpointslice_endpoint_node_name",
                "ep-node",
            ),
        ]);
        assert_eq!(&*node_of(&l), "ep-node");
        let l = Labels::from_pairs([("__meta_kubernetes_pod_node_name", "n1")]);
        assert_eq!(&*node_of(&l), "n1");
        assert_eq!(&*node_of(&Labels::from_pairs([("x", "y")])), "");
    }

    #[test]
    fn one_node_reads_a_shared_base_once_but_sees_a_targets_own_node() {
        let base = Labels::from_pairs([("__meta_kubernetes_pod_node_name", "n1"), ("a", "b")]);
        let target = |own: &[(&str, &str)]| {
            let mut b = crate::labels::LabelsBuilder::new();
            for (name, value) in own {
                b.add(name.to_string(), value.to_string());
            }
            base.merged(b)
        };
        let pod = [
            target(&[("__address__", "10.0.0.1:80")]),
            target(&[("__address__", "10.0.0.1:81")]),
        ];
        assert_eq!(one_node(&pod).as_deref(), Some("n1"));
        let endpoints = [
            target(&[("__address__", "10.0.0.1:80")]),
            target(&[
                ("__address__", "10.0.0.2:80"),
                ("__meta_kubernetes_endpoint_node_name", "n2"),
            ]),
        ];
        assert_eq!(one_node(&endpoints), None);
        assert!(!same_nodes(&pod, &endpoints));
        let moved = [
            Labels::from_pairs([("__meta_kubernetes_pod_node_name", "n3")]),
            target(&[]),
        ];
        assert_eq!(one_node(&moved), None);
        assert!(same_nodes(&pod, &pod.clone()));
    }
}
