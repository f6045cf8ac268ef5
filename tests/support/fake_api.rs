//! A small fake Kubernetes API server on 127.0.0.1 that a test controls byte by byte:
//! each request is logged (method, path and query, headers, time) and answered by the
//! test's handler with whatever bytes it chooses, including ones no real server sends.
//! Every answer closes its connection, so each LIST or WATCH is one connection and
//! one logged request.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::future::LocalBoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::net::tcp::OwnedWriteHalf;

/// One request as the fake server read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The path and query, e.g. `/api/v1/pods?watch=1&resourceVersion=5`.
    pub target: String,
    /// The headers, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// When it arrived.
    pub at: Instant,
}

impl Request {
    /// A WATCH (as opposed to a LIST).
    pub fn is_watch(&self) -> bool {
        self.target.contains("watch=1") || self.target.contains("watch=true")
    }

    /// The `resourceVersion` query parameter.
    pub fn resource_version(&self) -> Option<String> {
        let query = self.target.split_once('?')?.1;
        form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "resourceVersion")
            .map(|(_, v)| v.into_owned())
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How the fake answers one request.
pub enum Reply {
    /// A whole response: status, extra headers, body (with its `Content-Length`).
    Whole {
        /// The status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// `200` with a chunked body written by `body`; the connection closes when it
    /// returns (or stays open as long as it runs).
    Stream(Box<dyn FnOnce(BodyWriter) -> LocalBoxFuture<'static, ()>>),
    /// As `Stream`, with this `Content-Type` (a protobuf watch's, say).
    TypedStream(
        &'static str,
        Box<dyn FnOnce(BodyWriter) -> LocalBoxFuture<'static, ()>>,
    ),
    /// Raw bytes, head included, written as they are; then the connection closes.
    Raw(Vec<u8>),
    /// Accept the request and never answer (the connection stays open).
    Silence,
}

impl Reply {
    /// `200` with a JSON body.
    pub fn json(body: impl Into<Vec<u8>>) -> Reply {
        Reply::status(200, body)
    }

    /// A status with a JSON body.
    pub fn status(status: u16, body: impl Into<Vec<u8>>) -> Reply {
        Reply::Whole {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A Kubernetes `Status` error with `code` and `message`.
    pub fn k8s_status(code: u16, reason: &str, message: &str) -> Reply {
        Reply::status(
            code,
            serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": message, "reason": reason, "code": code})
            .to_string(),
        )
    }

    /// A watch that sends `lines` (each followed by a newline) and then stays open,
    /// sending nothing, for `hold`.
    pub fn watch(lines: Vec<String>, hold: Duration) -> Reply {
        Reply::Stream(Box::new(move |mut w| {
            Box::pin(async move {
                for line in lines {
                    if w.chunk(format!("{line}\n").as_bytes()).await.is_err() {
                        return;
                    }
                }
                actix_rt::time::sleep(hold).await;
                let _ = w.end().await;
            })
        }))
    }
}

/// Writes a chunked body.
pub struct BodyWriter(OwnedWriteHalf);

impl BodyWriter {
    /// One chunk.
    pub async fn chunk(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.0
            .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
            .await?;
        self.0.write_all(bytes).await?;
        self.0.write_all(b"\r\n").await?;
        self.0.flush().await
    }

    /// Raw bytes, outside the chunk framing.
    pub async fn raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.0.write_all(bytes).await?;
        self.0.flush().await
    }

    /// The last chunk.
    pub async fn end(&mut self) -> std::io::Result<()> {
        self.0.write_all(b"0\r\n\r\n").await
    }
}

/// What answers requests; replaceable while the server runs.
pub type Handler = Rc<dyn Fn(&Request) -> Reply>;

/// A running fake API server.
pub struct FakeApi {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    log: Arc<Mutex<Vec<Request>>>,
    handler: Rc<RefCell<Handler>>,
}

impl FakeApi {
    /// Starts on a free port with `handler`; runs on the current actix system.
    pub async fn start(handler: impl Fn(&Request) -> Reply + 'static) -> FakeApi {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds a port");
        let url = format!("http://{}", listener.local_addr().expect("has an address"));
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Rc<RefCell<Handler>> = Rc::new(RefCell::new(Rc::new(handler)));
        let (log2, handler2) = (Arc::clone(&log), Rc::clone(&handler));
        actix_rt::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, handler) = (Arc::clone(&log2), Rc::clone(&handler2));
                actix_rt::spawn(async move {
                    let (mut read, write) = socket.into_split();
                    let Some(request) = read_head(&mut read).await else {
                        return;
                    };
                    log.lock().expect("log").push(request.clone());
                    let reply = (handler.borrow().clone())(&request);
                    answer(reply, write, read).await;
                });
            }
        });
        FakeApi { url, log, handler }
    }

    /// Answers from now on with `handler`.
    pub fn set(&self, handler: impl Fn(&Request) -> Reply + 'static) {
        *self.handler.borrow_mut() = Rc::new(handler);
    }

    /// The requests so far.
    pub fn requests(&self) -> Vec<Request> {
        self.log.lock().expect("log").clone()
    }

    /// The requests since `since`.
    pub fn requests_since(&self, since: Instant) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.at >= since)
            .collect()
    }
}

async fn read_head(read: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Request> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = read.read(&mut buf).await.ok()?;
        if n == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.split("\r\n");
    let target = lines.next()?.split(' ').nth(1)?.to_string();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Request {
        target,
        headers,
        at: Instant::now(),
    })
}

async fn answer(reply: Reply, mut write: OwnedWriteHalf, read: tokio::net::tcp::OwnedReadHalf) {
    match reply {
        Reply::Whole {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (n, v) in headers {
                head += &format!("{n}: {v}\r\n");
            }
            head += "\r\n";
            let _ = write.write_all(head.as_bytes()).await;
            let _ = write.write_all(&body).await;
            let _ = write.shutdown().await;
        }
        Reply::Stream(body) => stream(write, "application/json", body).await,
        Reply::TypedStream(content_type, body) => stream(write, content_type, body).await,
        Reply::Raw(bytes) => {
            let _ = write.write_all(&bytes).await;
            let _ = write.shutdown().await;
        }
        Reply::Silence => {
            // Held, with its read half, until the client gives up.
            let _keep = (write, read);
            std::future::pending::<()>().await;
        }
    }
}

/// Writes a `200` of `content_type` with a chunked body written by `body`.
async fn stream(
    mut write: OwnedWriteHalf,
    content_type: &str,
    body: Box<dyn FnOnce(BodyWriter) -> LocalBoxFuture<'static, ()>>,
) {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    if write.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    body(BodyWriter(write)).await;
}
