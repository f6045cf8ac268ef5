//! The members kubesd assigns targets to (`/sd/{job}?member=POD`): the Ready pods the
//! config's `membership` section names, watched through kubesd's own discovery (role
//! pod), each with its node's zone (a node watch, when `zone_aware`) and its weight
//! (`weight_from`). Every change goes through the [`Handover`], and the resulting
//! [`Fleet`] is published to every job actor.
//!
//! Two kubesd replicas that see the same pods and nodes publish the same current
//! assignment, and every target is then assigned alike
//! ([`crate::service::fleet::assignment`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use arcstr::ArcStr;
use futures_util::StreamExt;
use futures_util::stream::{self, BoxStream};
use tokio::sync::watch;
use tokio::time::{Instant, sleep_until};
use tracing::{info, warn};

use crate::labels::Labels;
use crate::promconfig::Membership;
use crate::service::fleet::assignment::NodeZones;
use crate::service::fleet::weights::{DEFAULT_WEIGHT, WeightSource};
use crate::service::fleet::zones::{NodeZone, node_zones, watch_node_zones};
use crate::service::fleet::{Assignment, Fleet, Handover, Member};
use crate::{Discovery, SubscribeError, Subscription};

/// What job actors assign by: the members now and those in handover.
pub type Members = Arc<Fleet>;

/// The label the pod role sets to `true` when the pod's `Ready` condition is.
const READY_LABEL: &str = "__meta_kubernetes_pod_ready";

/// One Ready member pod as its watch sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct MemberPod {
    /// Its name.
    pub name: ArcStr,
    /// Its node.
    pub node: ArcStr,
    /// Its weight, or why it could not be read.
    pub weight: Result<f64, String>,
}

/// A running watch of the members.
pub struct MemberWatch {
    /// The section it follows, to tell whether a reload changed it.
    pub membership: Membership,
    subscription: Subscription<Option<MemberPod>>,
    zones: Option<Subscription<NodeZone>>,
    task: actix_rt::task::JoinHandle<()>,
}

/// What the watch task hears of.
enum Heard {
    Pods(Arc<Vec<Option<MemberPod>>>),
    Zones(Arc<Vec<NodeZone>>),
}

impl MemberWatch {
    /// Watches `membership`'s pods (and, zone-aware, the nodes) through `discovery`,
    /// publishing the fleet in `publish` at every change and every handover's end.
    pub async fn start(
        discovery: &Discovery,
        membership: Membership,
        publish: watch::Sender<Members>,
    ) -> Result<MemberWatch, SubscribeError> {
        let source = WeightSource::new(&membership.weight_from);
        // One label set per container port: each says whether its pod is Ready.
        let subscription = discovery
            .subscribe(&membership.sd, move |labels: &Labels| {
                Some(member_pod(labels, &source))
            })
            .await?;
        let zones = match membership.zone_aware {
            true => Some(watch_node_zones(discovery, &membership.sd).await?),
            false => None,
        };
        let pods = subscription.updates().map(Heard::Pods).boxed();
        let heard: BoxStream<'static, Heard> = match &zones {
            Some(z) => {
                // Read once every node is listed: each read takes the zones then.
                let (synced, updates) = (z.synced(), z.updates());
                let zones = stream::once(async move {
                    synced.await;
                    updates
                })
                .flatten();
                stream::select(pods, zones.map(Heard::Zones)).boxed()
            }
            None => pods,
        };
        let task = actix_rt::spawn(follow(heard, membership.clone(), publish));
        Ok(MemberWatch {
            membership,
            subscription,
            zones,
            task,
        })
    }

    /// Stops watching (the members published last stay until another watch starts).
    pub async fn stop(self) {
        self.task.abort();
        self.subscription.stop().await;
        if let Some(zones) = self.zones {
            zones.stop().await;
        }
    }
}

/// The member pod `labels` describe, if it is Ready.
fn member_pod(labels: &Labels, source: &WeightSource) -> Option<MemberPod> {
    if labels.get(READY_LABEL) != Some("true") {
        return None;
    }
    Some(MemberPod {
        name: labels.get_shared("__meta_kubernetes_pod_name")?,
        node: labels
            .get_shared("__meta_kubernetes_pod_node_name")
            .unwrap_or_default(),
        weight: source.weight(labels),
    })
}

/// The watch task: turns what it hears into assignments through the handover, and
/// publishes the fleet when it changes or a handover ends.
async fn follow(
    mut heard: BoxStream<'static, Heard>,
    membership: Membership,
    publish: watch::Sender<Members>,
) {
    let mut handover = Handover::new(membership.handover);
    let mut pods: Arc<Vec<Option<MemberPod>>> = Arc::default();
    let mut zones = NodeZones::default();
    // Zone-aware, the members wait for the nodes' zones: assigned without them first,
    // every target would move (and be in handover) once they come.
    let mut zones_heard = !membership.zone_aware;
    let mut reported = BTreeMap::new();
    loop {
        let expiry = handover.next_expiry();
        let changed = tokio::select! {
            next = heard.next() => match next {
                None => return,
                Some(Heard::Pods(p)) => { pods = p; true }
                Some(Heard::Zones(z)) => { zones = node_zones(&z); zones_heard = true; true }
            },
            () = sleep_until(expiry.unwrap_or_else(Instant::now)), if expiry.is_some() => {
                handover.expire(Instant::now())
            }
        };
        if !changed || !zones_heard {
            continue;
        }
        let members = ready_members(&pods, &mut reported);
        let assignment = Assignment::new(members, membership.zone_aware, zones.clone());
        let moved = handover.change(assignment, Instant::now());
        let fleet = Arc::new(handover.fleet());
        publish.send_if_modified(|now| {
            if *now == fleet {
                return false;
            }
            if moved {
                info!(
                    members = fleet.current().members().len(),
                    in_handover = fleet.previous().len(),
                    selector = %membership.label_selector,
                    "members changed"
                );
            }
            *now = fleet;
            true
        });
    }
}

/// The Ready pods as members, sorted, each once; a weight that cannot be read counts
/// as the default and is logged once per member and reason (`reported` remembers).
pub fn ready_members(
    pods: &[Option<MemberPod>],
    reported: &mut BTreeMap<ArcStr, String>,
) -> Vec<Member> {
    let mut members: Vec<Member> = Vec::with_capacity(pods.len());
    for pod in pods.iter().flatten() {
        let weight = match &pod.weight {
            Ok(w) => *w,
            Err(why) => {
                if reported.get(&pod.name) != Some(why) {
                    warn!(member = %pod.name, "member weight: {why}; it counts as {DEFAULT_WEIGHT}");
                    reported.insert(pod.name.clone(), why.clone());
                }
                DEFAULT_WEIGHT
            }
        };
        members.push(Member {
            name: pod.name.clone(),
            node: pod.node.clone(),
            weight,
        });
    }
    members.sort_by(|a, b| a.name.cmp(&b.name));
    members.dedup_by(|a, b| a.name == b.name);
    // Only members present are remembered: pods come and go with new names.
    reported.retain(|name, _| {
        members
            .binary_search_by(|m| m.name.as_str().cmp(name.as_str()))
            .is_ok()
    });
    members
}
