//! The API server's client for one watched collection: it sends the `/version`, LIST
//! and WATCH requests a URL watcher asks for, and answers each LIST attempt and each
//! watch with a stream of decoded [`Item`]s (`Result<Received, Failure>`), each part
//! or batch of events holding a permit of the watcher's window. Everything between the
//! socket and a decoded object is here: credentials, redirects, response
//! classification, framing, decoding, page reading and a list attempt's budget.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use awc::http::StatusCode;
use awc::http::header::{
    ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER, USER_AGENT,
};
use futures_util::future::LocalBoxFuture;
use futures_util::stream::LocalBoxStream;
use futures_util::{FutureExt, StreamExt};
use tracing::{debug, warn};

use super::failure::{Failure, classify};
use super::initial_events::ListBounds;
use super::list_reader::{FetchPage, ListReading, PageBody, read_list};
use super::list_requests::{ListRequests, RequestsMade, Sent, origin};
use super::received::{Item, Received, encoding_label};
use super::watch_reader::{WatchReading, read_watch};
use super::{ApiEndpoint, Credentials, build_endpoint_client, user_agent};
use crate::api::{ApiGroupVersion, ListQuery, ResourceUrl, ServerVersion, WatchQuery};
use crate::config::{EngineOptions, WireEncoding};
use crate::window::Window;
use crate::wire::Encoding;
use crate::wire::json::ListLimits;

/// How long the `/version` read may take: the server's version only chooses between
/// two ways that both work, so a slow answer is not waited for long.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an error body read for its message.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// What an [`ApiClient`] is made for.
pub struct ClientSetup {
    /// The API server and credentials.
    pub endpoint: ApiEndpoint,
    /// TLS settings, for `https` servers.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// The collection it lists and watches.
    pub url: ResourceUrl,
    /// Engine timings and limits.
    pub options: EngineOptions,
    /// Where its log lines go.
    pub span: tracing::Span,
}

/// The client of one collection URL. Build it, then [`ApiClient::start`] it on the
/// arbiter that will use it (awc clients are not `Send`).
pub struct ApiClient {
    setup: ClientSetup,
    credentials: Credentials,
    /// The client of watches and `/version`.
    client: Option<awc::Client>,
    /// The client of LIST requests, which follow redirects by hand ([`ListRequests`]).
    list_client: Option<awc::Client>,
    /// The credential plugin's client certificate the clients were built with (see
    /// [`Credentials::client_cert_generation`]).
    client_cert: Option<u64>,
}

impl ApiClient {
    /// A client; it makes no request before [`ApiClient::start`].
    pub fn new(mut setup: ClientSetup) -> ApiClient {
        if setup.url.role.is_config() {
            // Custom resources have no protobuf, and a Secret's or ConfigMap's JSON is
            // what the monitors' model decodes: configuration is asked for in JSON.
            setup.options.encoding = WireEncoding::Json;
        }
        let o = &setup.options;
        let credentials =
            Credentials::from_config(&setup.endpoint.http, o.credential_plugin_timeout);
        ApiClient {
            setup,
            credentials,
            client: None,
            list_client: None,
            client_cert: None,
        }
    }

    /// Builds the awc clients, on the current arbiter.
    pub fn start(&mut self) {
        self.client_cert = self.credentials.client_cert_generation();
        self.client = self.build_client(true);
        self.list_client = self.build_client(false);
    }

    /// The server refused the credentials (a 401): a credential plugin's credential
    /// without an expiry has run out, and the plugin runs again.
    pub fn refused(&mut self) {
        self.credentials.refused();
    }

    /// The server's `/version`; `None` whatever goes wrong.
    pub fn server_version(&mut self) -> LocalBoxFuture<'static, Option<ServerVersion>> {
        let timeout = self.setup.options.request_timeout.min(VERSION_TIMEOUT);
        let req = match self.request("/version") {
            Ok(req) => req
                .insert_header((ACCEPT, "application/json"))
                .timeout(timeout),
            Err(_) => return std::future::ready(None).boxed_local(),
        };
        async move {
            let mut resp = req.send().await.ok()?;
            if !resp.status().is_success() {
                return None;
            }
            let body = resp.body().limit(ERROR_BODY_LIMIT).await.ok()?;
            ServerVersion::parse(&body)
        }
        .boxed_local()
    }

    /// One LIST attempt in `version`: its pages in turn, as decoded items.
    pub fn list(
        &mut self,
        version: ApiGroupVersion,
        window: Window,
    ) -> LocalBoxStream<'static, Item> {
        let o = &self.setup.options;
        let reading = ListReading {
            role: self.setup.url.role,
            limits: ListLimits {
                max_object: o.max_event_size,
                max_depth: o.max_json_depth,
            },
            bounds: ListBounds {
                bytes: o.max_list_body,
                objects: o.max_list_objects,
                time: o.list_body_timeout,
            },
            stall: o.watch_stall_timeout,
        };
        let fetch = match self.list_requests() {
            Ok(requests) => self.fetch_pages(requests, version),
            Err(failure) => return failed(failure),
        };
        read_list(fetch, reading, window).boxed_local()
    }

    /// A watch in `version` from `resource_version`; with `initial_events`, a
    /// streaming list (its initial events are a list).
    pub fn watch(
        &mut self,
        version: ApiGroupVersion,
        resource_version: &str,
        initial_events: bool,
        window: Window,
    ) -> LocalBoxStream<'static, Item> {
        let o = &self.setup.options;
        let (lo, hi) = o.watch_timeout;
        // Spread reconnections so that many watchers do not reconnect in step.
        let span = hi.saturating_sub(lo).as_secs().max(1);
        let timeout_seconds =
            u32::try_from(lo.as_secs() + fastrand::u64(0..span)).unwrap_or(u32::MAX);
        let query = WatchQuery {
            resource_version: resource_version.to_string(),
            timeout_seconds,
            send_initial_events: initial_events,
        };
        let path = self.setup.url.watch_path(version, &query);
        debug!(parent: &self.setup.span, %path, "watch");
        let reading = WatchReading {
            role: self.setup.url.role,
            encoding: Encoding::Json,
            max_event: o.max_event_size,
            stall: o.watch_stall_timeout,
            healthy_after: o.healthy_after,
            // An idle watch is healthy; if the server does not end it at its
            // `timeoutSeconds`, it is ended a little after.
            lasts: Duration::from_secs(u64::from(timeout_seconds)) + o.watch_stall_timeout,
            initial_events: initial_events.then_some(ListBounds {
                bytes: o.max_list_body,
                objects: o.max_list_objects,
                time: o.list_body_timeout,
            }),
        };
        let error_timeout = o.request_timeout;
        let req = match self.request(&path) {
            Ok(req) => req,
            Err(failure) => return failed(failure),
        };
        let opened = async move {
            let resp = match req.send().await {
                Ok(resp) => resp,
                Err(e) => return failed(Failure::Transport(e.to_string())),
            };
            if resp.status() != StatusCode::OK {
                return failed(refusal(resp, error_timeout).await);
            }
            let encoding = match response_encoding(&resp) {
                Ok(encoding) => encoding,
                Err(failure) => return failed(failure),
            };
            let opened = Item {
                received: Ok(Received::Opened(encoding_label(encoding))),
                permit: None,
            };
            let reading = WatchReading {
                encoding,
                ..reading
            };
            let items = read_watch(resp, reading, window);
            futures_util::stream::once(std::future::ready(opened))
                .chain(items)
                .boxed_local()
        };
        futures_util::stream::once(opened).flatten().boxed_local()
    }

    /// How one attempt's LIST pages are fetched: each page's URL from its continue
    /// token, sent within the attempt's budget of requests.
    fn fetch_pages(&self, requests: ListRequests, version: ApiGroupVersion) -> FetchPage {
        let o = &self.setup.options;
        let (base, url) = (self.setup.endpoint.base_url.clone(), self.setup.url.clone());
        let (from_cache, page_size) = (o.list_from_watch_cache, o.list_page_size);
        let error_timeout = o.request_timeout;
        let span = self.setup.span.clone();
        let requests = Rc::new(requests);
        let made = Rc::new(RefCell::new(RequestsMade::default()));
        Box::new(move |continue_token: Option<String>| {
            // Watch-cache reads ignore `limit` and return everything at once;
            // consistent reads are paged.
            let query = if from_cache && continue_token.is_none() {
                ListQuery {
                    resource_version: Some("0".into()),
                    limit: None,
                    continue_token: None,
                }
            } else {
                ListQuery {
                    resource_version: None,
                    limit: Some(page_size),
                    continue_token,
                }
            };
            let path = url.list_path(version, &query);
            debug!(parent: &span, %path, "list");
            let page_url = format!("{base}{path}");
            let (requests, made) = (Rc::clone(&requests), Rc::clone(&made));
            async move {
                let mut so_far = std::mem::take(&mut *made.borrow_mut());
                let sent = requests.send(page_url, &mut so_far).await;
                *made.borrow_mut() = so_far;
                page_body(sent?, error_timeout).await
            }
            .boxed_local()
        })
    }

    /// How this attempt's LIST requests are sent: the redirect-less client, the
    /// credentials now, the budget.
    fn list_requests(&mut self) -> Result<ListRequests, Failure> {
        let authorization = self
            .credentials
            .header()
            .map_err(|e| Failure::Credentials(e.to_string()))?;
        self.refresh_clients();
        let client = self
            .list_client
            .clone()
            .ok_or_else(|| Failure::Transport("client not started".into()))?;
        let (endpoint, o) = (&self.setup.endpoint, &self.setup.options);
        Ok(ListRequests {
            client,
            authorization,
            accept: o.encoding.accept(),
            origin: origin(&endpoint.base_url).to_string(),
            follow_redirects: endpoint.http.follow_redirects,
            max_requests: o.max_list_pages,
            timeout: o.request_timeout,
        })
    }

    /// A GET request for `path_and_query`, with auth.
    fn request(&mut self, path_and_query: &str) -> Result<awc::ClientRequest, Failure> {
        let header = self
            .credentials
            .header()
            .map_err(|e| Failure::Credentials(e.to_string()))?;
        self.refresh_clients();
        let client = self
            .client
            .as_ref()
            .ok_or_else(|| Failure::Transport("client not started".into()))?;
        let (base, o) = (&self.setup.endpoint.base_url, &self.setup.options);
        let mut req = client
            .get(format!("{base}{path_and_query}"))
            .insert_header((ACCEPT, o.encoding.accept()))
            .insert_header((USER_AGENT, user_agent()))
            .timeout(o.request_timeout);
        if let Some(value) = header {
            req = req.insert_header((AUTHORIZATION, value));
        }
        Ok(req)
    }

    /// Rebuilds the clients when a credential plugin gave a new client certificate:
    /// the pooled connections were made with the old one, so new clients (and
    /// connection pools) make new ones.
    fn refresh_clients(&mut self) {
        if self.credentials.client_cert_generation() != self.client_cert {
            self.start();
        }
    }

    /// An awc client, as the endpoint's settings say (without `redirects`, one that
    /// never follows them: LIST requests follow them by hand); `None` (requests then
    /// fail and are retried) only if a header file vanished since the job subscribed,
    /// where it was checked.
    fn build_client(&self, redirects: bool) -> Option<awc::Client> {
        let mut endpoint = self.setup.endpoint.clone();
        endpoint.http.follow_redirects &= redirects;
        let (tls, timeout) = (self.setup.tls.clone(), self.setup.options.request_timeout);
        match build_endpoint_client(&endpoint, tls, timeout) {
            Ok(client) => Some(client),
            Err(e) => {
                warn!(parent: &self.setup.span, "cannot build the HTTP client: {e}");
                None
            }
        }
    }
}

/// A stream of one failure.
fn failed(failure: Failure) -> LocalBoxStream<'static, Item> {
    let item = Item {
        received: Err(failure),
        permit: None,
    };
    futures_util::stream::once(std::future::ready(item)).boxed_local()
}

/// The body of a LIST page's answer, or why there is none.
async fn page_body(sent: Sent, error_timeout: Duration) -> Result<PageBody, Failure> {
    let resp = sent.map_err(|e| Failure::Transport(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(refusal(resp, error_timeout).await);
    }
    let encoding = response_encoding(&resp)?;
    let length = resp
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let body = resp.map(|piece| piece.map_err(|e| e.to_string()));
    Ok(PageBody {
        encoding,
        length,
        body: body.boxed_local(),
    })
}

/// A non-success answer as a [`Failure`], with the start of its body read (within
/// `timeout`) for the server's message.
async fn refusal<S>(mut resp: awc::ClientResponse<S>, timeout: Duration) -> Failure
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs);
    let code = resp.status().as_u16();
    let body = resp.body().limit(ERROR_BODY_LIMIT);
    let body = actix_rt::time::timeout(timeout, body)
        .await
        .ok()
        .and_then(Result::ok);
    classify(code, retry_after, body.as_deref())
}

/// The encoding a response's `Content-Type` names; another type is a bad body.
fn response_encoding<S>(resp: &awc::ClientResponse<S>) -> Result<Encoding, Failure> {
    let content_type = resp
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| v.to_str().unwrap_or("(not text)"));
    Encoding::of_content_type(content_type).map_err(|e| Failure::BadBody(e.to_string()))
}
