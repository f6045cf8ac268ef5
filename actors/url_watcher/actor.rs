//! The URL watcher actor: the driver of one URL's client stream, machine and group.
//! Each item its client decodes ([`Item`]) is fed to its [`Machine`]; each action the
//! machine answers is carried out: a request opens a new client stream, a part or a
//! batch of deltas goes to the group holding the item's permit, a failure pauses the
//! URL as the [`Retry`] policy composed around the machine says. What it tells (status,
//! metrics, logs) is its [`Reporter`]'s.
//!
//! It lives on the engine's watcher arbiter, so reading and decoding streams runs on a
//! different thread than the groups' label work. Its outputs go to the group through a
//! [`Window`] of `watcher_in_flight` permits, taken by the client stream before it
//! yields a part or a batch of events, and given back when the group has handled the
//! output the machine made of it: when the group falls behind, the watcher stops
//! reading its stream (TCP back-pressure reaches the API server) instead of queueing
//! without bound.

use arcstr::ArcStr;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures_util::StreamExt;
use tracing::debug;

use super::machine::Machine;
use super::protocol::{Action, Input, Report};
use super::reporter::Reporter;
use super::retry::Retry;
use crate::api::{ApiGroupVersion, ResourceUrl};
use crate::config::EngineOptions;
use crate::http::{ApiClient, ApiEndpoint, ClientSetup, Failure, Item, Received};
use crate::messages::{StopWatcher, UrlId, WatcherOutput};
use crate::metrics::{ApiServerMetrics, ListMethod};
use crate::window::{Permit, Window};

/// Everything a URL watcher needs to start.
pub struct UrlWatcherSetup {
    /// Its id within the group.
    pub id: UrlId,
    /// The collection it watches.
    pub url: ResourceUrl,
    /// The API server and credentials.
    pub endpoint: ApiEndpoint,
    /// TLS settings, for `https` servers.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Engine timings.
    pub options: EngineOptions,
    /// The discovery metrics of its API server, which it counts in.
    pub metrics: Arc<ApiServerMetrics>,
    /// Where its output goes.
    pub group: Recipient<WatcherOutput>,
    /// The group's id, for logs.
    pub group_id: u64,
}

/// Lists and watches one API URL. See the module documentation.
pub struct UrlWatcher {
    id: UrlId,
    group: Recipient<WatcherOutput>,
    relist_interval: Option<Duration>,
    client: ApiClient,
    machine: Machine,
    retry: Retry,
    /// The client stream open now (a LIST attempt or a watch), if one is.
    stream: OpenStream,
    reporter: Reporter,
    /// The outputs in flight to the group, at most `watcher_in_flight`.
    window: Window,
}

/// The client stream open now, if one is.
#[derive(Default)]
struct OpenStream {
    handle: Option<SpawnHandle>,
    /// Items of older streams than this generation are ignored.
    generation: u64,
}

/// An item of the client stream of `generation`.
struct Tagged(u64, Item);

impl UrlWatcher {
    /// A watcher; it starts listing when started.
    pub fn new(setup: UrlWatcherSetup) -> UrlWatcher {
        let UrlWatcherSetup {
            id,
            url,
            endpoint,
            tls,
            options: o,
            metrics,
            group,
            group_id,
        } = setup;
        let role = url.role;
        let can_fall_back = ApiGroupVersion::Current.fallback(role).is_some();
        let machine = Machine::new(can_fall_back)
            .with_list_mode(o.list_mode)
            .with_watch(o.watch_after_list);
        let span = tracing::info_span!("url_watcher", group = group_id, role = %role, url = %url);
        let reporter = Reporter::new(
            metrics,
            role,
            format!("{}{url}", endpoint.base_url),
            o.watch_stall_timeout,
            list_method(&machine),
            span.clone(),
        );
        UrlWatcher {
            id,
            group,
            relist_interval: o.relist_interval,
            retry: Retry::new(o.backoff_initial, o.backoff_max),
            window: Window::new(o.watcher_in_flight),
            client: ApiClient::new(ClientSetup {
                endpoint,
                tls,
                url,
                options: o,
                span,
            }),
            machine,
            stream: OpenStream::default(),
            reporter,
        }
    }

    /// Feeds `input`, read from an item that holds `permit` (a place in the window):
    /// the first output its actions make carries the permit until the group answers
    /// it; an input that makes none frees its place on return.
    fn feed(&mut self, input: Input, permit: Option<Permit>, ctx: &mut Context<Self>) {
        let mut permit = permit;
        for action in self.machine.on(input) {
            self.execute(action, &mut permit, ctx);
        }
        self.reporter.list_method(list_method(&self.machine));
        self.reporter.phase(self.machine.phase());
        if let Some(status) = self.reporter.status_to_send() {
            let url = self.id;
            self.emit(WatcherOutput::Status { url, status }, None, ctx);
        }
    }

    /// Carries out one action of the machine's; an output it makes takes `permit`.
    fn execute(&mut self, action: Action, permit: &mut Option<Permit>, ctx: &mut Context<Self>) {
        let url = self.id;
        match action {
            Action::ReadServerVersion => self.read_server_version(ctx),
            Action::List => {
                self.reporter.listing();
                let items = self
                    .client
                    .list(self.machine.api_version(), self.window.clone());
                self.open(items, ctx);
            }
            Action::Watch { resource_version } => self.watch(&resource_version, false, ctx),
            Action::StreamList { resource_version } => {
                self.reporter.listing();
                self.watch(&resource_version, true, ctx);
            }
            Action::ListPart { objects, first } => {
                let part = WatcherOutput::ListPart {
                    url,
                    objects,
                    first,
                };
                self.emit(part, permit.take(), ctx);
            }
            Action::Relisted(objects) => {
                self.reporter.relisted();
                self.emit(WatcherOutput::Relisted { url, objects }, permit.take(), ctx);
            }
            Action::WatchOnStream => self.reporter.watching(false),
            Action::CloseStream => self.close_stream(ctx),
            Action::AbandonList => {
                self.emit(WatcherOutput::ListAbandoned { url }, permit.take(), ctx);
            }
            Action::Deltas { deltas, counts } => {
                self.reporter.events(counts);
                if !deltas.is_empty() {
                    self.emit(WatcherOutput::Deltas { url, deltas }, permit.take(), ctx);
                }
            }
            Action::FallBackToBeta => self.reporter.fell_back_to_beta(),
            Action::BackToCurrent => self.reporter.back_to_current(),
            Action::Retry { pause, problem } => {
                let delay = self.retry.delay(pause);
                self.reporter.problem(problem, delay);
                debug!(parent: self.reporter.span(), ?delay, "backing off");
                ctx.run_later(delay, |act, ctx| act.feed(Input::Resume, None, ctx));
            }
            Action::Report(report) => {
                if report == Report::Healthy {
                    self.retry.reset();
                }
                self.reporter.report(report);
            }
        }
    }

    /// Opens a watch from `resource_version`; with `initial_events`, a streaming list.
    fn watch(&mut self, resource_version: &ArcStr, initial_events: bool, ctx: &mut Context<Self>) {
        if !initial_events {
            self.reporter.watching(true);
        }
        let version = self.machine.api_version();
        let window = self.window.clone();
        let items = (self.client).watch(version, resource_version, initial_events, window);
        self.open(items, ctx);
    }

    /// Reads `items` as the open client stream, in place of any other.
    fn open(&mut self, items: impl Stream<Item = Item> + 'static, ctx: &mut Context<Self>) {
        self.close_stream(ctx);
        let generation = self.stream.generation;
        let tagged = items.map(move |item| Tagged(generation, item));
        self.stream.handle = Some(ctx.add_stream(tagged));
    }

    fn close_stream(&mut self, ctx: &mut Context<Self>) {
        if let Some(handle) = self.stream.handle.take() {
            ctx.cancel_future(handle);
        }
        // Anything still arriving from the old stream is ignored.
        self.stream.generation += 1;
    }

    /// Asks the API server's `/version` (how `ListMode::Auto` chooses the way of
    /// listing); whatever goes wrong, the machine hears `None` and lists with LIST.
    fn read_server_version(&mut self, ctx: &mut Context<Self>) {
        let read = self.client.server_version();
        ctx.spawn(read.into_actor(self).map(|version, act, ctx| {
            act.feed(Input::ServerVersion(version), None, ctx);
        }));
    }

    /// Sends output to the group; the reply, awaited by this actor, gives `permit`
    /// (the item's, see [`UrlWatcher::feed`]) back.
    fn emit(&mut self, output: WatcherOutput, permit: Option<Permit>, ctx: &mut Context<Self>) {
        let reply = self.group.send(output);
        ctx.spawn(reply.into_actor(self).map(move |reply, act, ctx| {
            drop(permit);
            if reply.is_err() {
                // The group is gone: nothing left to watch for.
                debug!(parent: act.reporter.span(), "group stopped; watcher stops");
                ctx.stop();
            }
        }));
    }
}

impl Actor for UrlWatcher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        self.client.start();
        if let Some(every) = self.relist_interval {
            // Started at a random offset so that the watchers of a big config do not
            // all relist at once.
            let offset = every.mul_f64(fastrand::f64());
            ctx.run_later(offset, move |_, ctx| {
                ctx.run_interval(every, |act, ctx| act.feed(Input::Resync, None, ctx));
            });
        }
        self.reporter.running(true);
        debug!(parent: self.reporter.span(), "started");
        self.feed(Input::Start, None, ctx);
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        self.reporter.running(false);
        debug!(parent: self.reporter.span(), "stopped");
    }
}

impl StreamHandler<Tagged> for UrlWatcher {
    fn handle(&mut self, Tagged(generation, item): Tagged, ctx: &mut Context<Self>) {
        if generation != self.stream.generation {
            return;
        }
        let input = match item.received {
            Ok(Received::Opened(encoding)) => return self.reporter.opened(encoding),
            Ok(Received::Skipped(skipped)) => {
                return self.reporter.skipped(self.machine.step(), &skipped);
            }
            Ok(Received::Part(objects)) => Input::Part(objects),
            Ok(Received::ListEnd(end)) => Input::ListEnd(end),
            Ok(Received::Events(events)) => Input::Events(events),
            Ok(Received::Healthy) => Input::Healthy,
            Ok(Received::Ended(end)) => {
                self.close_stream(ctx);
                Input::Ended(end)
            }
            Err(failure) => {
                self.close_stream(ctx);
                if let Failure::Status { code: 401, .. } = &failure {
                    // A credential plugin's credential runs out with a 401 when it has
                    // no expiry: it runs again (once for every watcher the 401 reaches).
                    self.client.refused();
                }
                Input::Failed(failure)
            }
        };
        // An input that makes no output (a bookmark, an empty part) frees its place.
        self.feed(input, item.permit, ctx);
    }

    fn finished(&mut self, _ctx: &mut Context<Self>) {
        // Nothing: a stream's end is its last item, tagged with its generation (see
        // `handle`). actix calls this even for a stream whose item just replaced it.
        // (The default would stop the actor.)
    }
}

impl Handler<StopWatcher> for UrlWatcher {
    type Result = ();
    fn handle(&mut self, _: StopWatcher, ctx: &mut Context<Self>) {
        self.close_stream(ctx);
        ctx.stop();
    }
}

/// How a machine lists now, as `kubesd_list_mode_watchers` counts it.
fn list_method(machine: &Machine) -> ListMethod {
    if machine.streaming_lists() {
        ListMethod::Streaming
    } else {
        ListMethod::List
    }
}
