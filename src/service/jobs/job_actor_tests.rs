//! Message-level tests of the job actor: the group's pushes in, the published
//! snapshot out (its bytes, its ETag, its views' ETags, the work counted).

use std::sync::Arc;
use std::time::{Duration, Instant};

use arcstr::ArcStr;

use super::*;
use crate::ObjectSlot;
use crate::actors::messages::TargetChange;
use crate::model::ObjectKey;
use crate::relabel::{CompiledRule, RelabelConfig, ScrapeSettings, Target, compile_all, process};
use crate::sd_output::{SdBody, sd_json};
use crate::service::views::shard::Shard;
use crate::service::views::{Bucket, ViewKind};

/// Job `pods`'s rules, keeping `app` (labelmap) and the pod's name, and its settings.
fn rules() -> (Vec<CompiledRule>, ScrapeSettings) {
    let yaml = "[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)},
                 {source_labels: [__meta_kubernetes_pod_name], target_label: pod}]";
    let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
    let rules = compile_all(&configs).expect("rules are valid");
    (rules, ScrapeSettings::new("pods"))
}

/// A job actor of job `pods` with [`rules`] publishing after every message, and its
/// cell.
fn actor() -> (Addr<JobActor>, Arc<SnapshotCell>) {
    actor_publishing_every(Duration::ZERO)
}

/// A job actor of job `pods` with [`rules`] publishing at most once per `every`, and
/// its cell.
fn actor_publishing_every(every: Duration) -> (Addr<JobActor>, Arc<SnapshotCell>) {
    let (rules, scrape) = rules();
    let relabelling = Relabelling {
        rules: Arc::new(rules),
        shard: Shard::ALL,
        scrape,
    };
    let cell = Arc::new(SnapshotCell::default());
    let (_, members) = watch::channel(Members::default());
    let addr = JobActor::new(
        "pods".into(),
        relabelling,
        Arc::clone(&cell),
        members,
        every,
    )
    .start();
    (addr, cell)
}

/// Pod `i` on `node`, with its `app` label and an annotation no rule reads.
fn pod(i: u32, node: &str, app: &str, annotation: &str) -> TargetChange {
    let labels = Labels::from_pairs([
        ("__address__", format!("10.0.0.{i}:8080")),
        (
            "__meta_kubernetes_pod_annotation_seq",
            annotation.to_string(),
        ),
        ("__meta_kubernetes_pod_label_app", app.to_string()),
        ("__meta_kubernetes_pod_name", format!("pod-{i}")),
        ("__meta_kubernetes_pod_node_name", node.to_string()),
    ]);
    TargetChange {
        slot: ObjectSlot(i),
        key: ObjectKey::new(&ArcStr::from("ns"), &ArcStr::from(format!("pod-{i}"))),
        targets: Some(vec![labels].into()),
    }
}

fn changed(changes: Vec<TargetChange>) -> TargetsPush {
    TargetsPush::changed(changes.into(), true, Instant::now())
}

/// The job's body as the snapshot holds it.
fn body(cell: &SnapshotCell) -> SdBody {
    SdBody::new("pods", vec![cell.load().body.clone()])
}

/// The ETags of nodes n1, n2 and n3's views, as the snapshot holds them.
fn node_etags(cell: &SnapshotCell) -> Vec<String> {
    ["n1", "n2", "n3"]
        .iter()
        .map(|n| node_etag(cell, n))
        .collect()
}

/// The ETag of node `node`'s view, as the snapshot holds it.
fn node_etag(cell: &SnapshotCell, node: &str) -> String {
    let snapshot = cell.load();
    let partition = snapshot.partition(ViewKind::Node).expect("node view kept");
    let bucket = partition.get(&Bucket::Name(ArcStr::from(node)));
    SdBody::new("pods", vec![bucket.cloned().unwrap_or_default()]).etag
}

/// What relabelling `pods` one target at a time (`relabel::process`, the definition)
/// gives, each pod's groups in key order (`pods` given in that order), serialized.
fn expected(pods: &[(u32, &str, &str)]) -> Vec<u8> {
    let (rules, scrape) = rules();
    let objects: Vec<Vec<u8>> = pods
        .iter()
        .map(|(i, node, app)| {
            let change = pod(*i, node, app, "any");
            let discovered = change.targets.expect("a pod with targets");
            let targets: Vec<Labels> = discovered
                .iter()
                .filter_map(|labels| match process(labels, &scrape, &rules) {
                    Target::Keep(t) => Some(t),
                    _ => None,
                })
                .collect();
            let json = sd_json(&targets);
            json[1..json.len() - 1].to_vec()
        })
        .collect();
    [b"[".to_vec(), objects.join(&b","[..]), b"]".to_vec()].concat()
}

/// A replacement publishes every object relabelled; a change the rules cannot see is
/// counted, not relabelled, and keeps the bytes and the ETag; a visible change moves
/// both.
#[actix_rt::test]
async fn replaced_then_changed_objects_reach_the_published_snapshot() {
    let (addr, cell) = actor();
    addr.send(TargetsPush::replaced(
        vec![pod(0, "n1", "web", "1"), pod(1, "n2", "db", "1")].into(),
        true,
    ))
    .await
    .expect("actor alive");
    let first = body(&cell);
    assert_eq!(
        first.to_vec(),
        expected(&[(0, "n1", "web"), (1, "n2", "db")])
    );
    assert!(cell.load().synced);
    let work = cell.load().work;
    assert_eq!(work.objects_relabelled, 2);

    addr.send(changed(vec![pod(1, "n2", "db", "2")]))
        .await
        .expect("actor alive");
    let unseen = cell.load().work;
    assert_eq!(
        unseen.objects_unseen, 1,
        "the annotation is a change no rule sees"
    );
    assert_eq!(unseen.objects_relabelled, 2, "not relabelled");
    assert_eq!(body(&cell).etag, first.etag, "same bytes, same ETag");
    assert_eq!(cell.load().stats.applied, 1);

    addr.send(changed(vec![pod(1, "n2", "api", "2")]))
        .await
        .expect("actor alive");
    let now = body(&cell);
    assert_eq!(
        now.to_vec(),
        expected(&[(0, "n1", "web"), (1, "n2", "api")])
    );
    assert_ne!(now.etag, first.etag);
    assert_eq!(cell.load().work.objects_relabelled, 3);
}

/// A catch-up relabels only each slot's latest change.
#[actix_rt::test]
async fn catching_up_relabels_each_slots_latest_change_only() {
    let (addr, cell) = actor();
    addr.send(TargetsPush::replaced(Arc::from([]), true))
        .await
        .expect("actor alive");
    let batches: Vec<Arc<[TargetChange]>> = vec![
        vec![pod(0, "n1", "a", "1"), pod(1, "n1", "b", "1")].into(),
        vec![pod(0, "n1", "c", "1")].into(),
        vec![
            pod(0, "n1", "d", "1"),
            TargetChange {
                targets: None,
                ..pod(1, "n1", "b", "1")
            },
        ]
        .into(),
    ];
    addr.send(TargetsPush::caught_up(batches, true, Instant::now()))
        .await
        .expect("actor alive");
    assert_eq!(body(&cell).to_vec(), expected(&[(0, "n1", "d")]));
    assert_eq!(
        cell.load().work.objects_relabelled,
        1,
        "pod 0's latest only"
    );
}

/// With the node view kept, a change of one pod moves only its node's ETag.
#[actix_rt::test]
async fn a_change_moves_only_its_own_views_etag() {
    let (addr, cell) = actor();
    let pods: Vec<TargetChange> = (0..6)
        .map(|i| pod(i, ["n1", "n2", "n3"][i as usize % 3], "web", "1"))
        .collect();
    addr.send(TargetsPush::replaced(pods.into(), true))
        .await
        .expect("actor alive");
    addr.send(KeepView(ViewKind::Node))
        .await
        .expect("actor alive");
    let before = node_etags(&cell);
    addr.send(changed(vec![pod(4, "n2", "api", "1")]))
        .await
        .expect("actor alive");
    let after = node_etags(&cell);
    assert_eq!(after[0], before[0]);
    assert_ne!(after[1], before[1], "pod 4 is on n2");
    assert_eq!(after[2], before[2]);

    // Rescheduled: it leaves n2's view for n3's; n1's stays.
    addr.send(changed(vec![pod(4, "n3", "api", "1")]))
        .await
        .expect("actor alive");
    let moved = node_etags(&cell);
    assert_eq!(moved[0], after[0]);
    assert_ne!(moved[1], after[1]);
    assert_ne!(moved[2], after[2]);
}

/// While changes keep coming, snapshots are at most one per interval: the first change
/// after a quiet interval is published at once, the next ones together at the end of
/// the interval; a sync is published at once.
#[actix_rt::test]
async fn changes_within_the_interval_are_published_together_at_its_end() {
    tokio::time::pause();
    let every = Duration::from_millis(100);
    let (addr, cell) = actor_publishing_every(every);
    addr.send(TargetsPush::replaced(
        vec![pod(0, "n1", "web", "1")].into(),
        true,
    ))
    .await
    .expect("actor alive");
    let synced = body(&cell);
    assert!(cell.load().synced, "a sync is published at once");

    tokio::time::advance(every).await;
    addr.send(changed(vec![pod(0, "n1", "api", "1")]))
        .await
        .expect("actor alive");
    let first = body(&cell);
    assert_ne!(first.etag, synced.etag, "after a quiet interval: at once");

    addr.send(changed(vec![pod(0, "n1", "db", "1")]))
        .await
        .expect("actor alive");
    addr.send(changed(vec![pod(1, "n2", "web", "1")]))
        .await
        .expect("actor alive");
    assert_eq!(body(&cell).etag, first.etag, "within the interval: not yet");
    let bodies = cell.load().work.bodies_changed;
    let observed = cell.load().stats.latency.count();

    // Paused time moves on when every task waits: the actor's timer fires first.
    tokio::time::sleep(every * 2).await;
    assert_eq!(
        body(&cell).to_vec(),
        expected(&[(0, "n1", "db"), (1, "n2", "web")])
    );
    assert_eq!(
        cell.load().work.bodies_changed,
        bodies + 1,
        "both changes in one snapshot"
    );
    assert_eq!(
        cell.load().stats.latency.count(),
        observed + 2,
        "each change's time to visibility is observed when it is published"
    );

    // A change no rule sees, published alone later, changes no body.
    tokio::time::sleep(every * 2).await;
    addr.send(changed(vec![pod(1, "n2", "web", "2")]))
        .await
        .expect("actor alive");
    tokio::time::sleep(every * 2).await;
    assert_eq!(cell.load().work.objects_unseen, 1);
    assert_eq!(cell.load().work.bodies_changed, bodies + 1);
}
