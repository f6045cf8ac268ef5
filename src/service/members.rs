//! The members kubesd assigns targets to (`/sd/{job}?member=POD`): the Ready pods the
//! config's `membership` section names, watched through kubesd's own discovery (role
//! pod), published to every job actor as a sorted list of pod names.
//!
//! Two kubesd replicas that see the same pods publish the same list, and rendezvous
//! hashing ([`super::views::rendezvous`]) then assigns every target alike.

use std::sync::Arc;

use arcstr::ArcStr;
use futures_util::StreamExt;
use tokio::sync::watch;
use tracing::info;

use crate::labels::Labels;
use crate::promconfig::Membership;
use crate::{Discovery, SubscribeError, Subscription};

/// The Ready members, sorted by name, each once.
pub type Members = Arc<[ArcStr]>;

/// The label the pod role sets to `true` when the pod's `Ready` condition is.
const READY_LABEL: &str = "__meta_kubernetes_pod_ready";

/// A running watch of the members.
pub struct MemberWatch {
    /// The section it follows, to tell whether a reload changed it.
    pub membership: Membership,
    subscription: Subscription<Option<ArcStr>>,
    task: actix_rt::task::JoinHandle<()>,
}

impl MemberWatch {
    /// Watches `membership`'s pods through `discovery`, publishing the Ready ones in
    /// `publish` at every change.
    pub async fn start(
        discovery: &Discovery,
        membership: Membership,
        publish: watch::Sender<Members>,
    ) -> Result<MemberWatch, SubscribeError> {
        // One label set per container port: each says whether its pod is Ready.
        let subscription = discovery
            .subscribe(&membership.sd, |labels: &Labels| {
                Some(
                    labels
                        .get_shared("__meta_kubernetes_pod_name")
                        .filter(|_| labels.get(READY_LABEL) == Some("true")),
                )
            })
            .await?;
        let mut updates = subscription.updates();
        let selector = membership.label_selector.clone();
        let task = actix_rt::spawn(async move {
            while let Some(pods) = updates.next().await {
                let members = ready_members(&pods);
                publish.send_if_modified(|now| {
                    if *now == members {
                        return false;
                    }
                    info!(members = members.len(), selector = %selector, "members changed");
                    *now = members;
                    true
                });
            }
        });
        Ok(MemberWatch {
            membership,
            subscription,
            task,
        })
    }

    /// Stops watching (the members published last stay until another watch starts).
    pub async fn stop(self) {
        self.task.abort();
        self.subscription.stop().await;
    }
}

/// The Ready pods' names, sorted, each once.
pub fn ready_members(pods: &[Option<ArcStr>]) -> Members {
    let mut names: Vec<ArcStr> = pods.iter().flatten().cloned().collect();
    names.sort_unstable();
    names.dedup();
    names.into()
}
