//! Tests of a job actor's objects: what a replacement and a change relabel, and what
//! they leave as it was.

use std::sync::Arc;

use arcstr::ArcStr;

use super::*;
use crate::ObjectSlot;
use crate::relabel::{RelabelConfig, ScrapeSettings, compile_all};
use crate::sd_output::SdBody;
use crate::service::views::shard::Shard;

/// The objects of one message from the group: all of them (`reset`, a replacement) or
/// changes.
pub(super) struct Changes {
    reset: bool,
    objects: Vec<TargetChange>,
}

/// Changes as a test hands them to a job's state.
pub(super) fn changes(reset: bool, objects: Vec<TargetChange>) -> Changes {
    Changes { reset, objects }
}

/// Applies a message's changes as the actor does.
pub(super) trait Apply {
    fn apply(&mut self, changes: Changes);
}

impl Apply for JobState {
    fn apply(&mut self, changes: Changes) {
        if changes.reset {
            self.replace(&changes.objects);
        } else {
            for change in &changes.objects {
                self.change(change);
            }
        }
    }
}

fn state() -> JobState {
    state_with("[{action: labelmap, regex: __meta_kubernetes_pod_label_(.+)}]")
}

/// The state of job `pods` with the rules `yaml` (a list of relabel configs).
pub(super) fn state_with(yaml: &str) -> JobState {
    let configs: Vec<RelabelConfig> = serde_norway::from_str(yaml).expect("rules parse");
    let rules = Arc::new(compile_all(&configs).expect("rules are valid"));
    JobState::new(Relabelling {
        rules,
        shard: Shard::ALL,
        scrape: ScrapeSettings::new("pods"),
    })
}

/// Pod `i` with two port targets, its `app` label and an annotation.
fn pod(i: u32, app: &str, annotation: &str) -> TargetChange {
    let base = Labels::from_pairs([
        (
            "__meta_kubernetes_pod_annotation_seq",
            annotation.to_string(),
        ),
        ("__meta_kubernetes_pod_label_app", app.to_string()),
    ]);
    let targets: Vec<Labels> = (1..=2)
        .map(|port| {
            let mut own = crate::labels::LabelsBuilder::new();
            own.add("__address__", format!("10.0.0.{i}:{port}"));
            base.merged(own)
        })
        .collect();
    TargetChange {
        slot: ObjectSlot(i),
        key: ObjectKey::new(&ArcStr::from("ns"), &ArcStr::from(format!("pod-{i}"))),
        targets: Some(targets.into()),
    }
}

fn body(p: &JobState) -> Vec<u8> {
    SdBody::new("pods", vec![p.body.clone()]).to_vec()
}

/// A replacement hands out every object again: those whose change the rules cannot
/// see are kept as they were, those that changed are relabelled, those not handed out
/// are gone; the body is what relabelling everything anew would give.
#[test]
fn a_reset_relabels_only_what_changed_and_drops_what_is_gone() {
    let mut p = state();
    p.apply(changes(true, (0..4).map(|i| pod(i, "web", "1")).collect()));
    assert_eq!(p.work.objects_relabelled, 4);
    assert_eq!(p.body.targets(), 8);
    let first = body(&p);
    let kept = p.body.clone();

    // The same pods, annotations moved: nothing relabelled, the same body.
    p.apply(changes(true, (0..4).map(|i| pod(i, "web", "2")).collect()));
    assert_eq!((p.work.objects_relabelled, p.work.objects_unseen), (4, 4));
    assert!(p.body.same_map(&kept), "the body kept before still serves");
    assert_eq!(body(&p), first);

    // Pod 1 relabelled, pod 3 gone.
    p.apply(changes(
        true,
        vec![pod(0, "web", "3"), pod(1, "api", "3"), pod(2, "web", "3")],
    ));
    assert_eq!((p.work.objects_relabelled, p.work.objects_unseen), (5, 6));
    assert_eq!(p.body.targets(), 6);
    let mut fresh = state();
    fresh.apply(changes(
        true,
        vec![pod(0, "web", "3"), pod(1, "api", "3"), pod(2, "web", "3")],
    ));
    assert_eq!(body(&p), body(&fresh));
}

/// Without a reset, a change only the output drops leaves the object where it is;
/// a change that reaches the targets replaces its groups; a deletion removes them.
#[test]
fn changes_apply_to_their_objects_only() {
    let mut p = state();
    p.apply(changes(true, (0..3).map(|i| pod(i, "web", "1")).collect()));
    let before = body(&p);
    let kept = p.body.clone();
    p.apply(changes(false, vec![pod(1, "web", "2")]));
    assert_eq!(p.work.objects_unseen, 1);
    assert_eq!(body(&p), before);
    assert!(p.body.same_map(&kept), "the body kept before still serves");
    p.apply(changes(false, vec![pod(1, "db", "2")]));
    assert_eq!(p.work.objects_relabelled, 4);
    assert_ne!(body(&p), before);
    p.apply(changes(
        false,
        vec![TargetChange {
            targets: None,
            ..pod(2, "web", "1")
        }],
    ));
    assert_eq!(p.body.targets(), 4);
    assert_eq!(p.work.objects_changed, 3 + 1 + 1);
}

/// Equal sets give equal bytes and ETags whatever order their objects came in; a
/// body's length is what is written.
#[test]
fn equal_sets_give_equal_bodies_whatever_their_history() {
    let mut one = state();
    one.apply(changes(true, (0..6).map(|i| pod(i, "web", "1")).collect()));
    let mut two = state();
    two.apply(changes(true, vec![pod(5, "db", "1"), pod(2, "web", "1")]));
    two.apply(changes(
        false,
        (0..6).rev().map(|i| pod(i, "web", "1")).collect(),
    ));
    let (a, b) = (
        SdBody::new("pods", vec![one.body.clone()]),
        SdBody::new("pods", vec![two.body.clone()]),
    );
    assert_eq!(a.to_vec(), b.to_vec());
    assert_eq!(a.etag, b.etag);
    assert_eq!(a.len(), a.to_vec().len());
}
