//! Views of a job's targets for a fleet of scrapers: `?shard=I&shards=N` (Prometheus'
//! `hashmod` of `__address__`), `?node=NAME` (the node of the target's object) and
//! `?member=POD` (rendezvous hashing over the Ready members).
//!
//! A view is a bucket of a partition the job actor keeps beside the whole body (see
//! [`super::view_index`]): for each kind of partition asked for (one per shard count,
//! one for nodes, one for members), each object's targets are split into buckets when
//! the object is relabelled ([`split`]). An object whose targets all land in one
//! bucket (a pod on its node, a single-port pod in its shard) shares the very bytes of
//! the whole job's body; an object of one group split across buckets has each share
//! cut from its bytes ([`Share::picked`]); only other objects have their parts
//! serialized apart.

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
}

impl ViewQuery {
    /// The partition this view is a bucket of; `None` for the whole job.
    pub fn kind(&self) -> Option<ViewKind> {
        match self {
            ViewQuery::All => None,
            ViewQuery::Shard { count, .. } => Some(ViewKind::Shards(*count)),
            ViewQuery::Node(_) => Some(ViewKind::Node),
            ViewQuery::Member(_) => Some(ViewKind::Member),
        }
    }

    /// The bucket of its partition this view is.
    pub fn bucket(&self) -> Option<Bucket> {
        match self {
            ViewQuery::All => None,
            ViewQuery::Shard { index, .. } => Some(Bucket::Shard(*index)),
            ViewQuery::Node(name) | ViewQuery::Member(name) => Some(Bucket::Name(name.clone())),
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

/// The member a target at `address` is assigned to: the one with the highest weight
/// [`rendezvous_weight`] (ties, which a 64-bit hash makes unlikely, to the first name).
/// `members` sorted and distinct; `None` when there are none.
pub fn rendezvous<'a>(address: &str, members: &'a [ArcStr]) -> Option<&'a ArcStr> {
    let a = fnv1a(address.as_bytes());
    let mut best: Option<(u64, &ArcStr)> = None;
    for m in members {
        let w = rendezvous_weight(a, m);
        if best.is_none_or(|(bw, _)| w > bw) {
            best = Some((w, m));
        }
    }
    best.map(|(_, m)| m)
}

/// True when every discovered label set of `a` names the node its peer in `b` names.
pub fn same_nodes(a: &[Labels], b: &[Labels]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| node_of(x) == node_of(y))
}

/// A member's weight for a target whose address hashes (FNV-1a) to `address_hash`:
/// SplitMix64's finalizer over both hashes. Fixed by definition (no seed, no std
/// hasher), so every kubesd replica, whatever its build, assigns alike.
pub fn rendezvous_weight(address_hash: u64, member: &str) -> u64 {
    mix(address_hash ^ mix(fnv1a(member.as_bytes())))
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

/// The bucket of `kind` a target at `address` whose object is on `node` lands in;
/// `None` for the member partition while there is no member.
pub fn bucket_of(
    kind: ViewKind,
    address: &str,
    node: &ArcStr,
    members: &[ArcStr],
) -> Option<Bucket> {
    match kind {
        ViewKind::Shards(n) => Some(Bucket::Shard(prometheus_hash(address) % n)),
        ViewKind::Node => Some(Bucket::Name(node.clone())),
        ViewKind::Member => rendezvous(address, members).cloned().map(Bucket::Name),
    }
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
/// all land in one bucket; else each bucket's share cut from its bytes (an object of
/// one group, see [`split_by_address`]) or serialized apart. Each target's address is
/// hashed once.
pub fn split(kind: ViewKind, object: &ObjectTargets, members: &[ArcStr]) -> ObjectParts {
    if let Some(parts) = split_by_address(kind, object.whole, members) {
        return parts;
    }
    let buckets: Vec<Option<Bucket>> = object
        .targets
        .iter()
        .zip(object.nodes)
        .map(|(t, node)| bucket_of(kind, t.get(ADDRESS_LABEL).unwrap_or(""), node, members))
        .collect();
    if let Some(Some(first)) = buckets.first()
        && buckets.iter().all(|b| b.as_ref() == Some(first))
    {
        return Box::new([(first.clone(), Share::whole(object.whole))]);
    }
    let mut by_bucket: BTreeMap<Bucket, Vec<Labels>> = BTreeMap::new();
    for (target, bucket) in object.targets.iter().zip(buckets) {
        if let Some(bucket) = bucket {
            by_bucket.entry(bucket).or_default().push(target.clone());
        }
    }
    by_bucket
        .into_iter()
        .map(|(b, targets)| (b, ObjectGroups::new(&targets, object.placeholder)))
        .filter(|(_, g)| !g.is_empty())
        .map(|(b, g)| (b, Share::whole(&Arc::new(g))))
        .collect()
}

/// The parts in a partition by address (shards, members) of an object of one group
/// of at most [`MAX_PICKED`] addresses, read from its groups alone (no relabelling):
/// its whole groups when every address lands in one bucket, else each bucket's share
/// cut from its bytes ([`Share::picked`]). `None` for the node partition (one address
/// may be a target on two nodes: two endpoints) and for other objects.
pub fn split_by_address(
    kind: ViewKind,
    whole: &Arc<ObjectGroups>,
    members: &[ArcStr],
) -> Option<ObjectParts> {
    if kind == ViewKind::Node {
        return None;
    }
    let addresses = whole.one_group_addresses()?;
    if addresses.len() > MAX_PICKED {
        return None;
    }
    let no_node = ArcStr::default();
    let mut by_bucket: BTreeMap<Bucket, u64> = BTreeMap::new();
    for (i, address) in addresses.iter().enumerate() {
        if let Some(bucket) = bucket_of(kind, address, &no_node, members) {
            *by_bucket.entry(bucket).or_default() |= 1 << i;
        }
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
    fn rendezvous_without_members_assigns_nobody() {
        assert_eq!(rendezvous("10.0.0.1:80", &[]), None);
        let one = [ArcStr::from("a")];
        assert_eq!(rendezvous("10.0.0.1:80", &one), Some(&one[0]));
    }
}
