//! A group's URLs: each one watched by its own URL watcher, numbered by its place
//! ([`UrlId`]), with whether it has been listed once and the state its watcher last
//! reported; and the subscriptions waiting on them ([`Waiting`]). A variant needs the
//! URLs of the roles its targets are built from; it can sync once they have all been
//! listed, and a configuration problem of one of them rules its sync out.

use crate::api::{ResourceUrl, resource_urls};
use std::future::Future;
use std::pin::Pin;

use actix::Recipient;

use crate::messages::{SubscriberId, UrlId, UrlStatusChanged};
use crate::model::Role;
use crate::targets::Semantics;
use crate::url_watcher::{UrlError, UrlStatus};

use super::key::GroupKey;
use super::setup::WatcherLink;
use super::variant::TargetVariant;
use super::waiting::Waiting;

/// A subscription's wait for its variant's sync: synced, or the problem that rules it
/// out.
pub type SyncWait = Pin<Box<dyn Future<Output = Result<(), UrlError>>>>;

/// One URL of the group.
struct UrlSlot<W> {
    url: ResourceUrl,
    /// How to reach its watcher.
    watcher: W,
    /// Whether it has been listed once (then it stays so).
    listed: bool,
    /// Its watcher's last reported state.
    status: Option<UrlStatus>,
}

/// The group's URLs, each with its watcher `W` (a [`WatcherLink`]; nothing in tests).
pub struct Urls<W = WatcherLink> {
    semantics: Semantics,
    slots: Vec<UrlSlot<W>>,
    /// The subscriptions told of the URLs' state or waiting for a sync.
    waiting: Waiting,
}

impl<W> Urls<W> {
    /// No URL yet; variants' roles are read under `semantics`.
    pub fn new(semantics: Semantics) -> Urls<W> {
        Urls {
            semantics,
            slots: Vec::new(),
            waiting: Waiting::default(),
        }
    }

    /// Adds the URLs of `key` that `wants` needs and are not watched yet, each with the
    /// watcher `start` starts for it.
    pub fn ensure(
        &mut self,
        wants: &TargetVariant,
        key: &GroupKey,
        mut start: impl FnMut(UrlId, &ResourceUrl) -> W,
    ) {
        for watched in wants.watched_roles(self.semantics) {
            for url in resource_urls(watched, &key.namespaces, &key.selectors) {
                if self.slots.iter().any(|u| u.url == url) {
                    continue;
                }
                let id = UrlId(u32::try_from(self.slots.len()).unwrap_or(u32::MAX));
                let watcher = start(id, &url);
                let (listed, status) = (false, None);
                let slot = UrlSlot {
                    url,
                    watcher,
                    listed,
                    status,
                };
                self.slots.push(slot);
            }
        }
    }

    /// The role of `url`, and whether it has been listed before.
    pub fn get(&self, url: UrlId) -> Option<(Role, bool)> {
        let slot = self.slots.get(url.0 as usize)?;
        Some((slot.url.role, slot.listed))
    }

    /// `url` has been listed.
    pub fn set_listed(&mut self, url: UrlId) {
        if let Some(slot) = self.slots.get_mut(url.0 as usize) {
            slot.listed = true;
        }
    }

    /// Keeps `url`'s new state; returns its role.
    pub fn set_status(&mut self, url: UrlId, status: UrlStatus) -> Option<Role> {
        let slot = self.slots.get_mut(url.0 as usize)?;
        slot.status = Some(status);
        Some(slot.url.role)
    }

    /// `url`'s state changed: tells the subscriptions whose variant needs it, and
    /// answers those waiting for a sync that a configuration problem now rules out
    /// (those not `is_synced` already).
    pub fn status_changed(
        &mut self,
        url: UrlId,
        status: UrlStatus,
        is_synced: impl Fn(&TargetVariant) -> bool,
    ) {
        let problem = status.last_error.clone().filter(|e| e.configuration);
        let Some(role) = self.set_status(url, status) else {
            return;
        };
        let semantics = self.semantics;
        let needs = move |wants: &TargetVariant| wants.watched_roles(semantics).contains(&role);
        (self.waiting).status_changed(needs, |wants| self.statuses(wants));
        if let Some(problem) = problem {
            (self.waiting).fail(&problem, |wants| needs(wants) && !is_synced(wants));
        }
    }

    /// `subscriber` (of `wants`) is to hear of every change in its URLs' state through
    /// `recipient`: it hears their state now, and then at each change.
    pub fn watch_status(
        &mut self,
        subscriber: SubscriberId,
        wants: TargetVariant,
        recipient: Recipient<UrlStatusChanged>,
    ) {
        let urls = self.statuses(&wants);
        recipient.do_send(UrlStatusChanged { subscriber, urls });
        self.waiting.watch_status(subscriber, wants, recipient);
    }

    /// Waits for `wants` to sync (at once if `synced`), or for a configuration problem
    /// of a URL it needs (at once if there is one).
    pub fn await_sync(&mut self, wants: TargetVariant, synced: bool) -> SyncWait {
        if synced {
            return Box::pin(async { Ok(()) });
        }
        if let Some(problem) = self.configuration_problem(&wants) {
            return Box::pin(async move { Err(problem) });
        }
        Box::pin(self.waiting.await_sync(wants))
    }

    /// Answers the sync waiters of the variants that `is_synced` now.
    pub fn answer_synced(&mut self, is_synced: impl Fn(&TargetVariant) -> bool) {
        self.waiting.answer_synced(is_synced);
    }

    /// Forgets `subscriber`'s status notices (it unsubscribed).
    pub fn forget(&mut self, subscriber: SubscriberId) {
        self.waiting.forget(subscriber);
    }

    /// The state of every URL `wants` needs (those that reported one).
    pub fn statuses(&self, wants: &TargetVariant) -> Vec<UrlStatus> {
        self.needed(wants)
            .filter_map(|u| u.status.clone())
            .collect()
    }

    /// Whether every URL `wants` needs has been listed once (true with none).
    pub fn listed(&self, wants: &TargetVariant) -> bool {
        self.needed(wants).all(|u| u.listed)
    }

    /// Whether every URL of the roles `wants` reads besides its own has been listed
    /// once.
    pub fn others_listed(&self, wants: &TargetVariant) -> bool {
        (self.needed(wants))
            .filter(|u| u.url.role != wants.role)
            .all(|u| u.listed)
    }

    /// True when no URL is watched yet.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The configuration problem (one retrying will not mend) of a URL `wants` needs.
    pub fn configuration_problem(&self, wants: &TargetVariant) -> Option<UrlError> {
        self.needed(wants)
            .filter_map(|u| u.status.as_ref()?.last_error.clone())
            .find(|e| e.configuration)
    }

    /// Every URL's watcher.
    pub fn watchers(&self) -> impl Iterator<Item = &W> {
        self.slots.iter().map(|u| &u.watcher)
    }

    /// The URLs `wants` needs.
    fn needed(&self, wants: &TargetVariant) -> impl Iterator<Item = &UrlSlot<W>> {
        let needed = wants.watched_roles(self.semantics);
        self.slots
            .iter()
            .filter(move |u| needed.contains(&u.url.role))
    }
}

#[cfg(test)]
mod tests {
    use std::time::SystemTime;

    use super::*;
    use crate::http::ApiEndpoint;
    use crate::metrics::ListMethod;
    use crate::targets::AttachMetadata;
    use crate::url_watcher::Step;
    use crate::url_watcher::{UrlPhase, UrlProblem};

    fn key(namespaces: &[&str]) -> GroupKey {
        GroupKey {
            endpoint: ApiEndpoint {
                base_url: "http://test.invalid".into(),
                http: Default::default(),
            },
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            selectors: Vec::new(),
            semantics: Semantics::default(),
        }
    }

    fn variant(role: Role) -> TargetVariant {
        TargetVariant::new(role, AttachMetadata::default())
    }

    fn status(configuration: bool) -> UrlStatus {
        UrlStatus {
            url: "http://test.invalid/api/v1/services".into(),
            phase: UrlPhase::BackingOff,
            list_mode: ListMethod::List,
            encoding: None,
            last_error: Some(UrlError {
                step: Step::List,
                problem: UrlProblem::Gone,
                message: "403 Forbidden".into(),
                configuration,
                at: SystemTime::UNIX_EPOCH,
            }),
            last_sync: None,
            relists: 1,
            gone: 0,
        }
    }

    /// Endpoints in two namespaces: endpoints, pods and services of each.
    fn endpoints_urls() -> (Urls<UrlId>, Vec<(UrlId, Role)>) {
        let mut urls = Urls::new(Semantics::default());
        let mut started = Vec::new();
        urls.ensure(&variant(Role::Endpoints), &key(&["b", "a"]), |id, url| {
            started.push((id, url.role));
            id
        });
        (urls, started)
    }

    #[test]
    fn a_url_is_started_once_whichever_variants_need_it() {
        let (mut urls, started) = endpoints_urls();
        assert_eq!(started.len(), 6);
        let ids: Vec<UrlId> = started.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, (0..6).map(UrlId).collect::<Vec<_>>());
        urls.ensure(&variant(Role::Pod), &key(&["a", "b"]), |_, url| {
            panic!("{url:?} is watched already")
        });
        assert_eq!(urls.watchers().count(), 6);
        assert_eq!(urls.get(UrlId(5)).map(|(role, _)| role), Some(started[5].1));
        assert_eq!(urls.get(UrlId(6)), None);
    }

    #[test]
    fn a_variant_is_listed_when_every_url_it_needs_is() {
        let (mut urls, started) = endpoints_urls();
        assert!(!urls.is_empty());
        for (id, role) in &started {
            if *role == Role::Pod {
                urls.set_listed(*id);
                assert_eq!(urls.get(*id), Some((Role::Pod, true)));
            }
        }
        assert!(urls.listed(&variant(Role::Pod)));
        assert!(!urls.listed(&variant(Role::Endpoints)));
        for (id, _) in &started {
            urls.set_listed(*id);
        }
        assert!(urls.listed(&variant(Role::Endpoints)));
    }

    #[test]
    fn a_configuration_problem_concerns_the_variants_that_need_its_url() {
        let (mut urls, started) = endpoints_urls();
        let service = started
            .iter()
            .find(|(_, r)| *r == Role::Service)
            .map(|(id, _)| *id);
        let service = service.expect("a service URL");
        assert_eq!(urls.set_status(service, status(false)), Some(Role::Service));
        assert_eq!(urls.configuration_problem(&variant(Role::Endpoints)), None);
        urls.set_status(service, status(true));
        let problem = urls.configuration_problem(&variant(Role::Endpoints));
        assert_eq!(problem, status(true).last_error);
        assert_eq!(urls.configuration_problem(&variant(Role::Pod)), None);
        assert_eq!(urls.statuses(&variant(Role::Endpoints)), [status(true)]);
        assert!(urls.statuses(&variant(Role::Pod)).is_empty());
    }
}
