//! The API-server client's `http_config` against small fakes on 127.0.0.1 that the
//! tests control: an HTTP CONNECT proxy in front of the simulator (https and http),
//! and an OAuth 2.0 token endpoint.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use kubesd::Discovery;
use kubesd::config::{HttpHeader, OAuth2, Secret};
use kubesd::model::Role;
use kubesd::simulator::{ClusterSpec, SimulatedCluster, SimulatorConfig};
use support::{converge, keep_all};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake proxy saw: each CONNECT request's head, and (for plain-HTTP targets)
/// the first bytes the client sent through the tunnel.
#[derive(Default)]
struct ProxyLog {
    connects: Vec<String>,
    tunnelled: Vec<String>,
}

/// A CONNECT proxy: reads a request head, connects to its target, answers 200, then
/// copies both ways. Returns its address and log.
async fn fake_proxy() -> (String, Arc<Mutex<ProxyLog>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("addr").to_string();
    let log = Arc::new(Mutex::new(ProxyLog::default()));
    let shared = Arc::clone(&log);
    actix_rt::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            let log = Arc::clone(&shared);
            actix_rt::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if client.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
                log.lock().expect("log").connects.push(head);
                let Ok(mut server) = TcpStream::connect(&target).await else {
                    let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await;
                    return;
                };
                let _ = client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await;
                // The client's first bytes, then everything as it comes.
                let mut first = vec![0u8; 4096];
                let n = client.read(&mut first).await.unwrap_or(0);
                log.lock()
                    .expect("log")
                    .tunnelled
                    .push(String::from_utf8_lossy(&first[..n]).into_owned());
                if server.write_all(&first[..n]).await.is_err() {
                    return;
                }
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    (addr, log)
}

async fn cluster(tls: bool, token: &str) -> SimulatedCluster {
    let config = SimulatorConfig {
        tls,
        token: Some(token.into()),
        bookmark_interval: Duration::from_millis(100),
        ..SimulatorConfig::default()
    };
    let spec = ClusterSpec {
        nodes: 3,
        pods: 6,
        ..ClusterSpec::default()
    };
    SimulatedCluster::start(config, &spec)
        .await
        .expect("cluster starts")
}

#[actix_rt::test]
async fn an_https_api_server_through_a_connect_proxy() {
    support::init_logs();
    let running = cluster(true, "T").await;
    let (proxy, log) = fake_proxy().await;
    let mut config = running.sd_config(Role::Node);
    config.http.bearer_token = Secret("T".into());
    // Inline PEM: the simulator's certificate is its own CA.
    config.http.tls_config.ca = running.server.ca_pem().map(str::to_string);
    config.http.proxy_url = Some(format!("http://kube%20sd:pa%3Ass@{proxy}"));
    config
        .http
        .proxy_connect_header
        .insert("X-Proxy-Token".into(), vec![Secret("abc".into())]);
    config.validate().expect("valid");
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    converge(&sub, running.sim(), &config, "through the proxy").await;

    let (connects, tunnelled) = {
        let log = log.lock().expect("log");
        (log.connects.clone(), log.tunnelled.clone())
    };
    let head = connects.first().expect("the proxy was asked");
    let port = running.server.addr().port();
    assert!(
        head.starts_with(&format!("CONNECT 127.0.0.1:{port} HTTP/1.1\r\n")),
        "{head}"
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("kube sd:pa:ss");
    assert!(
        head.contains(&format!("Proxy-Authorization: Basic {basic}\r\n")),
        "{head}"
    );
    assert!(head.contains("X-Proxy-Token: abc\r\n"), "{head}");
    // TLS end to end: the proxy sees a handshake, not the request.
    assert!(
        tunnelled.iter().all(|t| !t.contains("GET /api")),
        "{tunnelled:?}"
    );
    sub.stop().await;
    running.stop().await;
}

#[actix_rt::test]
async fn http_headers_reach_the_server_and_no_proxy_bypasses_the_proxy() {
    support::init_logs();
    let running = cluster(false, "T").await;
    let (proxy, log) = fake_proxy().await;
    let dir = std::env::temp_dir().join(format!("kubesd-http-client-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("tenant"), "from-file\n").expect("header file");
    let mut config = running.sd_config(Role::Pod);
    config.http.bearer_token = Secret("T".into());
    config.http.proxy_url = Some(format!("http://{proxy}"));
    config.http.http_headers.insert(
        "X-Tenant".into(),
        HttpHeader {
            values: vec!["a".into()],
            secrets: vec![Secret("b".into())],
            files: vec![dir.join("tenant")],
        },
    );
    config.validate().expect("valid");
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    converge(
        &sub,
        running.sim(),
        &config,
        "plain HTTP through the tunnel",
    )
    .await;
    {
        let log = log.lock().expect("log");
        let request = log
            .tunnelled
            .iter()
            // The first request of the tunnel: the version (list mode auto), or the pods.
            .find(|t| t.starts_with("GET /api/v1/pods") || t.starts_with("GET /version"))
            .expect("a request");
        for header in [
            "x-tenant: a\r\n",
            "x-tenant: b\r\n",
            "x-tenant: from-file\r\n",
            "authorization: Bearer T\r\n",
        ] {
            assert!(
                request
                    .to_ascii_lowercase()
                    .contains(&header.to_ascii_lowercase()),
                "{header} in {request}"
            );
        }
    }
    sub.stop().await;

    // The server is on no_proxy's list: reached directly.
    let asked = log.lock().expect("log").connects.len();
    let mut direct = config.clone();
    direct.role = Role::Node;
    direct.http.no_proxy = Some("localhost,127.0.0.0/8".into());
    let sub = discovery
        .subscribe(&direct, keep_all)
        .await
        .expect("subscribes");
    converge(&sub, running.sim(), &direct, "directly").await;
    assert_eq!(
        log.lock().expect("log").connects.len(),
        asked,
        "the proxy was not asked"
    );
    sub.stop().await;

    // A header file that cannot be read is a start error naming the header and file.
    let mut missing = config.clone();
    missing
        .http
        .http_headers
        .get_mut("X-Tenant")
        .expect("header")
        .files = vec![dir.join("absent")];
    let err = discovery
        .subscribe(&missing, keep_all)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(
        err.contains("http_headers.X-Tenant.files: cannot read") && err.contains("absent"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    running.stop().await;
}

/// What the fake token endpoint saw.
#[derive(Default)]
struct TokenLog {
    requests: Vec<(String, String)>,
}

/// A token endpoint issuing `T`, valid for `expires_in` seconds; a wrong client secret
/// gets 401.
async fn fake_token_endpoint(
    expires_in: u64,
) -> (String, Arc<Mutex<TokenLog>>, actix_web::dev::ServerHandle) {
    let log = Arc::new(Mutex::new(TokenLog::default()));
    let data = web::Data::new(Arc::clone(&log));
    let server = HttpServer::new(move || {
        App::new().app_data(data.clone()).route(
            "/token",
            web::post().to(move |req: HttpRequest, body: String, log: web::Data<Arc<Mutex<TokenLog>>>| async move {
                let auth = req
                    .headers()
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string();
                log.lock().expect("log").requests.push((auth.clone(), body));
                let good = format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode("client-id:s3cret")
                );
                if auth != good {
                    return HttpResponse::Unauthorized().body("{\"error\":\"invalid_client\"}");
                }
                HttpResponse::Ok().json(serde_json::json!({
                    "access_token": "T", "token_type": "bearer", "expires_in": expires_in
                }))
            }),
        )
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .expect("binds");
    let addr = server.addrs()[0];
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (format!("http://{addr}/token"), log, handle)
}

#[actix_rt::test]
async fn oauth2_client_credentials_and_renewal() {
    support::init_logs();
    let running = cluster(false, "T").await;
    // Ten seconds: due for renewal at once (Go's oauth2 renews 10 s ahead), so the
    // next request renews it; no test clock needed.
    let (token_url, log, handle) = fake_token_endpoint(10).await;
    let mut config = running.sd_config(Role::Node);
    config.http.oauth2 = Some(OAuth2 {
        client_id: "client-id".into(),
        client_secret: Secret("s3cret".into()),
        token_url: token_url.clone(),
        scopes: vec!["a".into(), "b".into()],
        endpoint_params: [("audience".to_string(), "k8s".to_string())].into(),
        ..OAuth2::default()
    });
    config.validate().expect("valid");
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let sub = discovery
        .subscribe(&config, keep_all)
        .await
        .expect("subscribes");
    converge(&sub, running.sim(), &config, "with an OAuth 2.0 token").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while log.lock().expect("log").requests.len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the token was renewed"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    {
        let log = log.lock().expect("log");
        let (_, form) = &log.requests[0];
        let form: Vec<(String, String)> = form_urlencoded::parse(form.as_bytes())
            .into_owned()
            .collect();
        for want in [
            ("grant_type", "client_credentials"),
            ("scope", "a b"),
            ("audience", "k8s"),
        ] {
            assert!(
                form.contains(&(want.0.into(), want.1.into())),
                "{want:?} in {form:?}"
            );
        }
    }
    sub.stop().await;

    // A refused client is a start error naming the endpoint, never the secret.
    let mut wrong = config.clone();
    if let Some(o) = wrong.http.oauth2.as_mut() {
        o.client_secret = Secret("wrong-secret".into());
    }
    let err = discovery
        .subscribe(&wrong, keep_all)
        .await
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains(&token_url) && err.contains("401"), "{err}");
    assert!(!err.contains("wrong-secret"), "{err}");
    handle.stop(true).await;
    running.stop().await;
}
