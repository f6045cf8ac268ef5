//! The rules of applying a LIST that arrives in parts: a URL's first LIST is applied as
//! it streams (nothing was listed before, and a subscriber counts as synced only at the
//! end), while a relist's parts are held until the list is complete, so that a relist is
//! applied whole or not at all. Pure: the group tells it each part, end and failure,
//! and applies what it hands back.

use std::collections::{HashMap, HashSet};

use crate::messages::UrlId;
use crate::model::{Object, ObjectKey};

/// The parts of a LIST that has not ended yet.
enum ListInProgress {
    /// The URL's first LIST: its parts are applied as they come, and these are the
    /// keys they listed, so that the end knows which cached objects vanished.
    Applied(HashSet<ObjectKey>),
    /// A relist: its parts are held, and applied only when the list is complete, so
    /// a list that fails midway leaves the cache and every subscriber at the last
    /// complete one.
    Held(Vec<Object>),
}

/// What a complete LIST changes in the cache.
#[derive(Debug, Default)]
pub struct Complete {
    /// The objects to store, in list order.
    pub upserts: Vec<Object>,
    /// The URL's cached objects the list did not name: they are gone.
    pub vanished: HashSet<ObjectKey>,
}

/// The LISTs of a group's URLs that are arriving in parts.
#[derive(Default)]
pub struct ListAssembly {
    lists: HashMap<UrlId, ListInProgress>,
}

impl ListAssembly {
    /// A part of `url`'s LIST (`first` when it starts a new attempt, `relist` when the
    /// URL was listed before): the objects to apply now, or `None` when the part is
    /// held until the list is complete.
    pub fn part(
        &mut self,
        url: UrlId,
        objects: Vec<Object>,
        first: bool,
        relist: bool,
    ) -> Option<Vec<Object>> {
        if first {
            self.lists.remove(&url);
        }
        let listing = self.lists.entry(url).or_insert_with(|| {
            if relist {
                ListInProgress::Held(Vec::new())
            } else {
                ListInProgress::Applied(HashSet::new())
            }
        });
        match listing {
            ListInProgress::Held(held) => {
                let mut objects = objects;
                held.append(&mut objects);
                None
            }
            ListInProgress::Applied(keys) => {
                keys.extend(objects.iter().map(|o| o.key()));
                Some(objects)
            }
        }
    }

    /// `url`'s LIST failed midway. True when its parts had been applied (a first
    /// LIST): then what they brought must go, so that nothing of a body that was not a
    /// whole list stays. A held relist is dropped and the cache stays as it was.
    pub fn abandoned(&mut self, url: UrlId) -> bool {
        matches!(self.lists.remove(&url), Some(ListInProgress::Applied(_)))
    }

    /// `url`'s LIST is complete with `objects` (those not sent as parts); `cached` are
    /// the keys of the URL's objects in the cache now. Returns what to store and what
    /// vanished.
    pub fn end(&mut self, url: UrlId, objects: Vec<Object>, cached: Vec<ObjectKey>) -> Complete {
        let (upserts, listed) = match self.lists.remove(&url) {
            Some(ListInProgress::Applied(keys)) => (objects, keys),
            Some(ListInProgress::Held(mut held)) => {
                let mut objects = objects;
                held.append(&mut objects);
                (held, HashSet::new())
            }
            None => (objects, HashSet::new()),
        };
        let mut vanished: HashSet<ObjectKey> =
            cached.into_iter().filter(|k| !listed.contains(k)).collect();
        for object in &upserts {
            vanished.remove(&object.key());
        }
        Complete { upserts, vanished }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    fn pod(name: &str) -> Object {
        let json = format!(r#"{{"metadata":{{"name":"{name}","namespace":"ns"}}}}"#);
        Object::decode(Role::Pod, json.as_bytes()).expect("pod decodes")
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(&"ns".into(), &name.into())
    }

    fn names(objects: &[Object]) -> Vec<String> {
        objects.iter().map(|o| o.key().name.to_string()).collect()
    }

    const URL: UrlId = UrlId(0);

    #[test]
    fn a_first_list_is_applied_as_it_comes_and_its_end_removes_what_it_did_not_name() {
        let mut lists = ListAssembly::default();
        let now = lists
            .part(URL, vec![pod("a")], true, false)
            .expect("applied");
        assert_eq!(names(&now), ["a"]);
        let now = lists
            .part(URL, vec![pod("b")], false, false)
            .expect("applied");
        assert_eq!(names(&now), ["b"]);
        // "old" was cached from before (a watch event); "a" and "b" came in parts.
        let complete = lists.end(URL, vec![pod("c")], vec![key("a"), key("b"), key("old")]);
        assert_eq!(names(&complete.upserts), ["c"]);
        assert_eq!(complete.vanished, HashSet::from([key("old")]));
    }

    #[test]
    fn a_relist_is_held_until_it_is_complete_then_applied_whole() {
        let mut lists = ListAssembly::default();
        assert!(lists.part(URL, vec![pod("a")], true, true).is_none());
        assert!(lists.part(URL, vec![pod("b")], false, true).is_none());
        let complete = lists.end(URL, vec![pod("c")], vec![key("a"), key("gone")]);
        assert_eq!(names(&complete.upserts), ["a", "b", "c"]);
        assert_eq!(complete.vanished, HashSet::from([key("gone")]));
    }

    #[test]
    fn an_abandoned_list_says_whether_its_parts_were_applied() {
        let mut lists = ListAssembly::default();
        lists.part(URL, vec![pod("a")], true, false);
        assert!(
            lists.abandoned(URL),
            "a first list's parts must be taken back"
        );
        lists.part(URL, vec![pod("a")], true, true);
        assert!(!lists.abandoned(URL), "a held relist changed nothing");
        assert!(!lists.abandoned(URL), "nothing in progress");
        // The abandoned relist's parts are gone: its next attempt starts afresh.
        let complete = lists.end(URL, Vec::new(), vec![key("a")]);
        assert!(complete.upserts.is_empty());
        assert_eq!(complete.vanished, HashSet::from([key("a")]));
    }

    #[test]
    fn a_first_part_drops_the_parts_of_an_unfinished_attempt() {
        let mut lists = ListAssembly::default();
        lists.part(URL, vec![pod("a")], true, true);
        lists.part(URL, vec![pod("b")], true, true);
        let complete = lists.end(URL, Vec::new(), Vec::new());
        assert_eq!(names(&complete.upserts), ["b"]);
        // Keys are kept per URL: another URL's list is its own.
        lists.part(URL, vec![pod("a")], true, false);
        let other = lists.end(UrlId(1), Vec::new(), vec![key("a")]);
        assert_eq!(other.vanished, HashSet::from([key("a")]));
    }
}
