//! The messages between the engine's actors (watchers, groups, the flusher, the
//! registry, and what groups push to subscribers), each with who sends it, who handles
//! it and why. The messages an agent sends its own subscriber (`GetTargets`,
//! `TakeChanges`, `Configure`, `WaitSynced`, `StopSubscriber`) are generic over the
//! agent's target type and live beside `Subscriber` in `subscriber.rs`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::group::TargetVariant;
use crate::labels::Labels;
use crate::model::{Object, ObjectKey};
use crate::wire::json::WatchEvent;

/// Identifies one URL watcher within its group (an index into the group's URLs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UrlId(pub u32);

/// Identifies one subscriber (scrape job) across the process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubscriberId(pub u64);

/// Sent by a [`crate::UrlWatcher`] to its [`crate::GroupWatcher`]: what one URL's LIST
/// or WATCH produced, decoded. The reply says only that the group has handled it: the
/// watcher keeps at most `watcher_in_flight` unhandled and reads no more of its stream
/// meanwhile, so a slow group slows the streams down instead of growing its mailbox
/// (see [`crate::window`]).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum WatcherOutput {
    /// Watch events: the object events (`Added`, `Modified`, `Deleted`) of the stream's
    /// pieces that arrived together, in order (the watcher acts on bookmarks and
    /// errors itself and does not hand them on).
    Deltas {
        /// The watcher.
        url: UrlId,
        /// The changes.
        deltas: Vec<WatchEvent>,
    },
    /// Part of a LIST still arriving. For a URL's first LIST the group stores and
    /// labels these objects now, so that labelling a big list overlaps its transfer
    /// and decoding (on another thread) instead of following it; for a relist it holds
    /// them until the list is complete, so a list that fails midway changes nothing.
    ListPart {
        /// The watcher.
        url: UrlId,
        /// Objects of the list, in list order.
        objects: Vec<Object>,
        /// The first part of a new LIST attempt: the parts of any earlier, unfinished
        /// attempt no longer say which objects exist.
        first: bool,
    },
    /// The LIST attempt whose parts were sent since the last `first` part failed
    /// (broken, truncated, not a list of the role): the group drops what it holds of
    /// it, so that the cache stays at the last complete list.
    ListAbandoned {
        /// The watcher.
        url: UrlId,
    },
    /// The URL's state changed (phase, last problem, last sync, relists): the group
    /// keeps it for the subscriptions whose role needs the URL.
    Status {
        /// The watcher.
        url: UrlId,
        /// Its state now.
        status: crate::url_watcher::UrlStatus,
    },
    /// A complete LIST (every page): the URL's objects are exactly these plus those of
    /// the parts sent since the last `first` part. The group removes the ones that
    /// vanished and pushes nothing for unchanged ones.
    Relisted {
        /// The watcher.
        url: UrlId,
        /// The objects not already sent as parts.
        objects: Vec<Object>,
    },
}

/// Sent by the group to its URL watchers when it stops: close the connection and stop.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct StopWatcher;

/// The targets of one object, shared by the group's cache and every subscriber.
pub type ObjectTargets = Arc<[Labels]>;

/// Where a cached object sits in its role's table, as subscribers know it: a small
/// number the group's cache gives the object when it enters, keeps while it is updated,
/// and gives to another object after it is deleted (so the numbers stay dense).
///
/// Subscribers keep their values in a vector indexed by it. Keyed by namespace and
/// name in a hash map, every subscriber would pay two cache misses (control bytes,
/// bucket) per change, and with many subscribers that look-up would dominate the
/// fanout. A reused slot is safe because changes reach a subscriber in order,
/// and a subscriber catching up applies only the latest change per slot: the slot's
/// state now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectSlot(pub u32);

/// One object's new targets (`None`: the object is gone, so are its targets).
#[derive(Clone, Debug, PartialEq)]
pub struct TargetChange {
    /// The object's slot, where subscribers keep its values.
    pub slot: ObjectSlot,
    /// The object's namespace and name (the order of a subscriber's snapshot).
    pub key: ObjectKey,
    /// Its targets now.
    pub targets: Option<ObjectTargets>,
}

/// Sent by a group to each subscriber of a variant: what became of its targets, and
/// whether every URL the variant needs has been listed. The one message a group pushes;
/// handled by `Subscriber` and by an agent's own actor (`kubesd run`'s job actors).
///
/// The reply is the group's flow control: each message holds one of the subscriber's
/// `subscriber_in_flight` permits until it is answered ([`crate::window`]), and the
/// group holds batches back while none is left (see [`crate::backlog`]).
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct TargetsPush {
    /// What changed.
    pub push: Push,
    /// True once every URL the variant needs has been listed.
    pub synced: bool,
    /// When the group received the events these changes come from (the oldest's, for
    /// held-back batches; for a replacement, when it was made): for the latency from
    /// an event's arrival to its visibility downstream.
    pub received: Instant,
}

/// What a [`TargetsPush`] carries.
#[derive(Debug, Clone)]
pub enum Push {
    /// Objects' new targets, in order, after watch events, a relist (only what
    /// differs) or a dirty flush; one batch shared by every subscriber of the variant.
    /// Empty when only `synced` is news.
    Changed(Arc<[TargetChange]>),
    /// The batches held back while the subscriber lagged, oldest first, each shared
    /// with other subscribers (see [`crate::backlog`]): only each slot's latest change
    /// counts.
    CaughtUp(Vec<Arc<[TargetChange]>>),
    /// Every target of the variant now (each change carrying `Some`), replacing
    /// whatever the subscriber had: when it registers, or must be resynced.
    Replaced(Arc<[TargetChange]>),
}

impl TargetsPush {
    /// A batch of changes received at `received`.
    pub fn changed(changes: Arc<[TargetChange]>, synced: bool, received: Instant) -> TargetsPush {
        TargetsPush {
            push: Push::Changed(changes),
            synced,
            received,
        }
    }

    /// Held-back batches, the oldest received at `received`.
    pub fn caught_up(
        batches: Vec<Arc<[TargetChange]>>,
        synced: bool,
        received: Instant,
    ) -> TargetsPush {
        TargetsPush {
            push: Push::CaughtUp(batches),
            synced,
            received,
        }
    }

    /// Every target now.
    pub fn replaced(targets: Arc<[TargetChange]>, synced: bool) -> TargetsPush {
        TargetsPush {
            push: Push::Replaced(targets),
            synced,
            received: Instant::now(),
        }
    }
}

/// How a group reaches one subscriber, whatever the subscriber's target type.
#[derive(Clone, Debug)]
pub struct SubscriberLink {
    /// The subscriber.
    pub id: SubscriberId,
    /// Where its pushes go.
    pub push: Recipient<TargetsPush>,
}

/// Sent by the Discovery facade to a group: register a subscriber of a role, with
/// what its targets attach. Pending registrations are served together, with one pass
/// over the cache.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Subscribe {
    /// The role the subscriber discovers and what it attaches.
    pub variant: TargetVariant,
    /// How to reach it.
    pub link: SubscriberLink,
}

/// Sent by the Discovery facade to a group: a subscriber leaves. The last one to leave
/// stops the group, its watchers and their connections.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct Unsubscribe(pub SubscriberId);

/// Sent by the [`crate::DirtyFlusher`] to every group on each tick: recompute
/// the targets of objects whose dependencies changed, and push what differs.
#[derive(Message, Debug)]
#[rtype(result = "FlushReport")]
pub struct FlushDirty;

/// What a flush did, so the flusher can stretch its interval.
#[derive(Clone, Copy, Debug, Default, MessageResponse)]
pub struct FlushReport {
    /// Objects whose targets were recomputed.
    pub recomputed: usize,
    /// How long it took.
    pub took: Duration,
}

/// Sent by a group to the flusher when it starts or stops, so the flusher knows whom to
/// tick.
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub enum FlusherMembership {
    /// Tick this group.
    Join(u64, Recipient<FlushDirty>),
    /// Stop ticking it.
    Leave(u64),
}

/// Sent by a subscriber to the agent's recipient (see
/// `kubesd::Subscription::on_change`) when the job's targets changed. Coalesced: at
/// most one is outstanding until the agent asks for the targets again.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
#[rtype(result = "()")]
pub struct TargetsUpdated {
    /// The subscription whose targets changed.
    pub subscriber: SubscriberId,
}

/// Sent by a group to the recipients registered with [`WatchUrlStatus`] when the state
/// of a URL their subscription's role needs changed: the state of every such URL.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct UrlStatusChanged {
    /// The subscription.
    pub subscriber: SubscriberId,
    /// Every URL the subscription's role needs, as they are now.
    pub urls: Vec<crate::url_watcher::UrlStatus>,
}

/// Sent by a `kubesd::Subscription` to its group: send [`UrlStatusChanged`] notices
/// for the URLs its variant needs to `recipient` (one at once, then one per change).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub struct WatchUrlStatus {
    /// The subscription.
    pub subscriber: SubscriberId,
    /// Its role and what it attaches.
    pub variant: TargetVariant,
    /// Where the notices go.
    pub recipient: Recipient<UrlStatusChanged>,
}

/// Sent by a `kubesd::Subscription` to its group: the state of every URL its variant
/// needs.
#[derive(Message, Debug)]
#[rtype(result = "Vec<crate::url_watcher::UrlStatus>")]
pub struct GetUrlStatus {
    /// The role and what it attaches.
    pub variant: TargetVariant,
}

/// Sent by a `kubesd::Subscription` to its group: answered once every URL its variant
/// needs has been listed, or with the first configuration problem of one of them (a
/// 400, a repeated 401 or 403, a 404 with no fallback), which retrying will not cure.
#[derive(Message, Debug)]
#[rtype(result = "Result<(), crate::url_watcher::UrlError>")]
pub struct AwaitSyncOrFailure {
    /// The role and what it attaches.
    pub variant: TargetVariant,
}
