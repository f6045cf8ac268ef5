//! Label sets and names: equality, order, merging, iteration and the builder.

use super::*;

#[test]
fn builder_sorts_and_keeps_the_last_duplicate() {
    let labels = Labels::from_pairs([("b", "1"), ("a", "2"), ("b", "3")]);
    let pairs: Vec<(&str, &str)> = labels.iter().map(|l| (&*l.name, &*l.value)).collect();
    assert_eq!(pairs, [("a", "2"), ("b", "3")]);
    assert_eq!(labels.get("b"), Some("3"));
    assert_eq!(labels.get("c"), None);
}

#[test]
fn merged_overrides_and_interleaves() {
    let base = Labels::from_pairs([("a", "1"), ("c", "2"), ("e", "3")]);
    let mut o = LabelsBuilder::new();
    o.add("d", "x");
    o.add("c", "y");
    o.add("f", "z");
    let m = base.merged(o);
    let pairs: Vec<(&str, &str)> = m.iter().map(|l| (&*l.name, &*l.value)).collect();
    assert_eq!(
        pairs,
        [("a", "1"), ("c", "y"), ("d", "x"), ("e", "3"), ("f", "z")]
    );
    assert_eq!(m.len(), 5);
    assert_eq!(m.iter().len(), 5);
    assert_eq!(m.get("c"), Some("y"));
    assert_eq!(m.get("a"), Some("1"));
    // The split is invisible: equal to the same set built flat, and hashed alike.
    let flat = Labels::from_pairs(pairs.clone());
    assert_eq!(m, flat);
    assert_eq!(m.cmp(&flat), std::cmp::Ordering::Equal);
    use std::hash::BuildHasher;
    let rs = std::hash::RandomState::new();
    assert_eq!(rs.hash_one(&m), rs.hash_one(&flat));
    // Merging into a split set flattens first.
    let mut o = LabelsBuilder::new();
    o.add("a", "w");
    let m2 = m.merged(o);
    let pairs: Vec<(&str, &str)> = m2.iter().map(|l| (&*l.name, &*l.value)).collect();
    assert_eq!(
        pairs,
        [("a", "w"), ("c", "y"), ("d", "x"), ("e", "3"), ("f", "z")]
    );
}

#[test]
fn shadowed_names_counts_as_a_search_per_name_does() {
    // Random sorted, duplicate-free name sets over a small alphabet, so that
    // overlaps, clusters and both ends all occur.
    let mut rng = fastrand::Rng::with_seed(7);
    let mut set = |n: usize| -> Vec<Label> {
        let mut names: Vec<String> = (0..n)
            .map(|_| (0..rng.usize(1..4)).map(|_| rng.alphabetic()).collect())
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .map(|n| Label {
                name: n.into(),
                value: ArcStr::new(),
            })
            .collect()
    };
    for _ in 0..2000 {
        let (base, own) = (set(40), set(8));
        let naive = own
            .iter()
            .filter(|o| base.binary_search_by(|b| b.name.cmp(&o.name)).is_ok())
            .count();
        assert_eq!(shadowed_names(&base, &own), naive, "{base:?} / {own:?}");
    }
}

/// Random label pairs over a small alphabet of names, so that parts overlap.
fn random_pairs(rng: &mut fastrand::Rng, most: usize, tag: &str) -> Vec<(String, String)> {
    (0..rng.usize(0..=most))
        .map(|i| {
            let name: String = (0..rng.usize(1..3))
                .map(|_| char::from(b'a' + rng.u8(0..6)))
                .collect();
            (name, format!("{tag}{i}"))
        })
        .collect()
}

fn pairs_of(labels: &Labels) -> Vec<(String, String)> {
    labels
        .iter()
        .map(|l| (l.name.to_string(), l.value.to_string()))
        .collect()
}

#[test]
fn inherited_parts_read_as_the_same_set_built_flat() {
    use std::hash::BuildHasher;
    let hasher = std::hash::RandomState::new();
    let mut rng = fastrand::Rng::with_seed(11);
    for _ in 0..500 {
        let inherited = random_pairs(&mut rng, 30, "i");
        let base = random_pairs(&mut rng, 30, "b");
        let owns: Vec<Vec<(String, String)>> = (0..rng.usize(1..4))
            .map(|_| random_pairs(&mut rng, 8, "o"))
            .collect();
        let shared = Labels::from_pairs(inherited.clone());
        // Added in any order, before and after the inherit: base labels still win.
        let (before, after) = base.split_at(rng.usize(0..=base.len()));
        let mut b = LabelsBuilder::new();
        for (n, v) in before {
            b.add(n.clone(), v.as_str());
        }
        b.inherit(&shared);
        for (n, v) in after {
            b.add(n.clone(), v.as_str());
        }
        let common = b.finish();
        let flat_common = Labels::from_pairs(inherited.iter().chain(&base).cloned());
        assert_eq!(pairs_of(&common), pairs_of(&flat_common));
        assert_eq!(common.len(), flat_common.len());
        assert_eq!(common, flat_common);
        let builders = owns.iter().map(|own| {
            let mut o = LabelsBuilder::new();
            for (n, v) in own {
                o.add(n.clone(), v.as_str());
            }
            o
        });
        let targets = common.merged_each(builders);
        let rebased = Labels::rebased_each(&targets, &common);
        for ((target, rebased), own) in targets.iter().zip(&rebased).zip(&owns) {
            let flat = Labels::from_pairs(inherited.iter().chain(&base).chain(own).cloned());
            for labels in [target, rebased] {
                assert_eq!(pairs_of(labels), pairs_of(&flat));
                assert_eq!(labels.len(), flat.len());
                assert_eq!(labels.iter().len(), flat.len());
                assert_eq!(labels, &flat);
                assert_eq!(hasher.hash_one(labels), hasher.hash_one(&flat));
                for (name, _) in inherited.iter().chain(&base).chain(own) {
                    assert_eq!(labels.get(name), flat.get(name), "{name}");
                }
                assert_eq!(labels.get("not-a-name"), None);
            }
        }
    }
}

#[test]
fn a_copied_inherited_set_still_loses_to_labels_added_before_it() {
    let mut b = LabelsBuilder::new();
    b.inherit(&Labels::from_pairs([("n", "first")]));
    b.add("m", "added");
    b.add("n", "added");
    // Copied (the builder already shares a set), and after the adds.
    b.inherit(&Labels::from_pairs([
        ("m", "copied"),
        ("n", "copied"),
        ("o", "copied"),
    ]));
    let set = b.finish();
    assert_eq!(
        pairs_of(&set),
        [("m", "added"), ("n", "added"), ("o", "copied")]
            .map(|(n, v)| (n.to_string(), v.to_string()))
    );
    assert_eq!(set.len(), 3);
}

#[test]
fn inheriting_shares_one_set_and_copies_the_rest() {
    let node = Labels::from_pairs([("n1", "a"), ("n2", "b")]);
    let mut b = LabelsBuilder::new();
    b.add("p", "1");
    b.inherit(&node);
    // A second inherited set is copied: a set shares one.
    b.inherit(&Labels::from_pairs([("m", "2")]));
    let pod = b.finish();
    assert_eq!(
        pairs_of(&pod),
        pairs_of(&Labels::from_pairs([
            ("m", "2"),
            ("n1", "a"),
            ("n2", "b"),
            ("p", "1")
        ]))
    );
    let shared = pod.base.inherited();
    assert!(std::ptr::eq(shared.as_ptr(), node.base.as_ptr()));
    // Only inherited labels: the set is the inherited one.
    let mut b = LabelsBuilder::new();
    b.inherit(&node);
    assert!(b.finish().ptr_eq(&node));
    // Used as overrides, or with names removed, a builder holds copies.
    let mut o = LabelsBuilder::new();
    o.inherit(&node);
    o.add("n1", "override");
    o.remove_names_in(&Labels::from_pairs([("n2", "x")]));
    let merged = Labels::from_pairs([("n2", "base")]).merged(o);
    assert_eq!(
        pairs_of(&merged),
        pairs_of(&Labels::from_pairs([("n1", "override"), ("n2", "base")]))
    );
}

#[test]
fn blocks_sorted_in_place_give_the_same_set_and_the_last_duplicate_wins() {
    let mut b = LabelsBuilder::new();
    b.add("a", "1");
    let start = b.len();
    for (n, v) in [("d", "1"), ("c", "2"), ("d", "3"), ("b", "4")] {
        b.add(n, v);
    }
    b.sort_from(start);
    b.add("e", "5");
    let labels = b.finish();
    let pairs: Vec<(&str, &str)> = labels.iter().map(|l| (&*l.name, &*l.value)).collect();
    assert_eq!(
        pairs,
        [("a", "1"), ("b", "4"), ("c", "2"), ("d", "3"), ("e", "5")]
    );
}

#[test]
fn interned_names_are_shared() {
    let a = prefixed_label_name("__p_", "x.y");
    let b = prefixed_label_name("__p_", "x.y");
    assert!(ArcStr::ptr_eq(&a, &b));
    assert_eq!(&*a, "__p_x_y");
    assert_eq!(&*prefixed_label_name("__q_", "x.y"), "__q_x_y");
    let (name, present) = prefixed_label_names("__p_label_", "__p_labelpresent_", "x.y");
    assert_eq!(
        (&*name, &*present),
        ("__p_label_x_y", "__p_labelpresent_x_y")
    );
    let (again, _) = prefixed_label_names("__p_label_", "__p_labelpresent_", "x.y");
    assert!(ArcStr::ptr_eq(&name, &again));
    let (other, _) = prefixed_label_names("__q_label_", "__q_labelpresent_", "x.y");
    assert_eq!(&*other, "__q_label_x_y");
}

#[test]
fn sanitize_replaces_each_character() {
    assert_eq!(
        sanitize_label_name("app.kubernetes.io/name"),
        "app_kubernetes_io_name"
    );
    assert_eq!(sanitize_label_name("ünï-code"), "_n__code");
    assert_eq!(&*prefixed_label_name("__x_", "a-b"), "__x_a_b");
}
