//! kubeconfig credential plugins (`users[].user.exec`), run as kubectl runs them. Every
//! plugin here is a small `#!/bin/sh` script the test writes into its own directory;
//! a plugin counts its runs by appending a line to a file there.
//!
//! A token, a client certificate (checked by a TLS server that requires one), an
//! expiry that renews it, a 401 that renews it (once per wave), plugins that fail,
//! hang, print garbage or are missing, `KUBERNETES_EXEC_INFO`, one run shared by every
//! job of the same user, and end to end: the simulator with a token, kubesd with a
//! kubeconfig whose only credential is a plugin printing it (`kubesd once` too).

#![cfg(unix)]

mod support;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kubesd::config::{ExecApiVersion, ExecConfig, HttpClientConfig, InteractiveMode, TlsConfig};
use kubesd::http::{
    Credentials, ExecSource, PluginProblem, build_client, endpoint_tls_config, run_plugin,
};
use kubesd::kubeconfig::parse_kubeconfig;
use kubesd::metrics::RequestError;
use kubesd::model::Role;
use kubesd::simulator::{ClusterSpec, SimulatedCluster, SimulatorConfig};
use kubesd::{Discovery, SdConfig, UrlProblem};
use support::keep_all;

const TOKEN: &str = "plugin-token-SECRET-4b1d";
const V1: &str = "client.authentication.k8s.io/v1";
const TIMEOUT: Duration = Duration::from_secs(20);

/// A test's directory, for its plugin scripts and what they write.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "kubesd-exec-{test}-{}-{:x}",
            std::process::id(),
            fastrand::u64(..)
        ));
        std::fs::create_dir_all(&dir).expect("test dir");
        Dir(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes an executable `#!/bin/sh` script whose first act is to count its run.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.path(name);
        let runs = self.path("runs");
        let text = format!("#!/bin/sh\necho run >> '{}'\n{body}\n", runs.display());
        std::fs::write(&path, text).expect("script written");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    /// A plugin that prints `answer` (written to a file it reads, so any text works).
    fn printing(&self, name: &str, answer: &str) -> PathBuf {
        let file = self.path(&format!("{name}.json"));
        std::fs::write(&file, answer).expect("answer written");
        self.script(name, &format!("cat '{}'", file.display()))
    }

    /// How many times the plugins of this directory ran.
    fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An `ExecCredential` of `v1` with a token, and an expiry when given.
fn token_answer(token: &str, expires: Option<std::time::SystemTime>) -> String {
    let mut status = serde_json::json!({ "token": token });
    if let Some(at) = expires {
        status["expirationTimestamp"] = humantime::format_rfc3339_seconds(at).to_string().into();
    }
    serde_json::json!({ "apiVersion": V1, "kind": "ExecCredential", "status": status }).to_string()
}

/// The plugin setting of user `user` running `command`, as a kubeconfig would give it.
fn exec(user: &str, command: &Path) -> ExecConfig {
    ExecConfig {
        user: user.into(),
        command: command.to_path_buf(),
        args: Vec::new(),
        env: Vec::new(),
        api_version: ExecApiVersion::V1,
        install_hint: String::new(),
        interactive_mode: InteractiveMode::Never,
        cluster: None,
    }
}

/// A kubeconfig for `server` whose user `user` has only `exec` (YAML lines, indented
/// for `user:`).
fn kubeconfig(dir: &Dir, server: &str, exec_yaml: &str) -> PathBuf {
    let text = format!(
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n\
         contexts:\n- name: ctx\n  context: {{cluster: sim, user: plugin-user}}\n\
         clusters:\n- name: sim\n  cluster: {{server: \"{server}\"}}\n\
         users:\n- name: plugin-user\n  user:\n    exec:\n{exec_yaml}"
    );
    let path = dir.path("kubeconfig");
    std::fs::write(&path, text).expect("kubeconfig written");
    path
}

/// `exec:` lines running `command` with `v1`, non-interactive.
fn exec_yaml(command: &Path) -> String {
    format!(
        "      apiVersion: {V1}\n      command: {}\n      interactiveMode: Never\n      installHint: \"install it with: brew install plugin\"\n",
        command.display()
    )
}

/// A job of `role` whose server and credentials come from the kubeconfig at `path`.
fn job(role: Role, path: &Path) -> SdConfig {
    let mut config = SdConfig::new(role, "");
    config.api_server = None;
    config.kubeconfig_file = Some(path.to_path_buf());
    config
        .resolve_kubeconfig()
        .expect("the kubeconfig resolves");
    config
}

#[actix_rt::test]
async fn a_token_plugin_answers_and_the_token_never_prints() {
    let dir = Dir::new("token");
    let plugin = dir.printing("token", &token_answer(TOKEN, None));
    let credential = run_plugin(&exec("alice", &plugin), TIMEOUT)
        .await
        .expect("the plugin answers");
    assert_eq!(credential.token.as_ref().map(|t| t.expose()), Some(TOKEN));
    assert!(credential.client_cert.is_none() && credential.expires.is_none());
    assert!(!format!("{credential:?}").contains(TOKEN));
    assert_eq!(dir.runs(), 1);
}

#[actix_rt::test]
async fn kubernetes_exec_info_is_non_interactive_with_the_cluster_when_asked() {
    let dir = Dir::new("info");
    let info = dir.path("info.json");
    let body = format!(
        "printf '%s' \"$KUBERNETES_EXEC_INFO\" > '{}'\necho \"$REGION\" > '{}'\ncat <<'EOF'\n{}\nEOF",
        info.display(),
        dir.path("region").display(),
        token_answer(TOKEN, None)
    );
    let plugin = dir.script("info", &body);
    let ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    let ca_b64 = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, ca);
    // As an EKS kubeconfig looks, with the cluster info asked for and an extension.
    let text = format!(
        r#"apiVersion: v1
kind: Config
current-context: eks
contexts: [{{name: eks, context: {{cluster: prod, user: eks-user}}}}]
clusters:
- name: prod
  cluster:
    server: https://ABC.gr7.eu-west-1.eks.amazonaws.com
    certificate-authority-data: {ca_b64}
    tls-server-name: kubernetes.default
    extensions:
    - name: client.authentication.k8s.io/exec
      extension: {{audience: sts.amazonaws.com}}
users:
- name: eks-user
  user:
    exec:
      apiVersion: {V1}
      command: ./info
      args: [eks, get-token, --cluster-name, prod]
      env: [{{name: REGION, value: eu-west-1}}]
      interactiveMode: IfAvailable
      provideClusterInfo: true
"#
    );
    let target = parse_kubeconfig(&text, &dir.path("config")).expect("resolves");
    let config = target.http.exec.clone().expect("an exec plugin");
    assert_eq!(config.command, plugin, "relative to the kubeconfig");
    run_plugin(&config, TIMEOUT).await.expect("answers");
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info).expect("info written"))
            .expect("KUBERNETES_EXEC_INFO is JSON");
    assert_eq!(sent["apiVersion"], V1);
    assert_eq!(sent["kind"], "ExecCredential");
    assert_eq!(sent["spec"]["interactive"], false);
    let cluster = &sent["spec"]["cluster"];
    assert_eq!(
        cluster["server"],
        "https://ABC.gr7.eu-west-1.eks.amazonaws.com"
    );
    assert_eq!(cluster["certificate-authority-data"], ca_b64.as_str());
    assert_eq!(cluster["tls-server-name"], "kubernetes.default");
    assert_eq!(cluster["config"]["audience"], "sts.amazonaws.com");
    let region = std::fs::read_to_string(dir.path("region")).expect("env written");
    assert_eq!(region.trim(), "eu-west-1");

    // Without provideClusterInfo: the ExecCredential still, with no cluster.
    let plain = text.replace("      provideClusterInfo: true\n", "");
    let target = parse_kubeconfig(&plain, &dir.path("config")).expect("resolves");
    run_plugin(&target.http.exec.expect("exec"), TIMEOUT)
        .await
        .expect("answers");
    let sent: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&info).expect("info written")).expect("JSON");
    assert_eq!(sent["spec"]["interactive"], false);
    assert!(sent["spec"].get("cluster").is_none(), "{sent}");
}

#[actix_rt::test]
async fn a_failing_plugin_is_an_error_naming_the_user_and_command_with_its_stderr() {
    let dir = Dir::new("fails");
    let plugin = dir.script(
        "fails",
        "echo 'error: SSO session expired, run aws sso login' >&2\nexit 3",
    );
    let mut config = exec("eks-admin", &plugin);
    let err = run_plugin(&config, TIMEOUT).await.expect_err("fails");
    assert!(matches!(err.problem, PluginProblem::Failed(_)), "{err:?}");
    let text = err.to_string();
    for want in [
        "kubeconfig user \"eks-admin\"",
        &plugin.display().to_string(),
        "exit status: 3",
        "its stderr: error: SSO session expired, run aws sso login",
    ] {
        assert!(text.contains(want), "{text} (want {want})");
    }
    assert!(!text.contains("terminal"), "{text}");
    // A plugin that wants a terminal is told it had none.
    config.interactive_mode = InteractiveMode::Always;
    let text = run_plugin(&config, TIMEOUT)
        .await
        .expect_err("fails")
        .to_string();
    assert!(
        text.contains("interactiveMode is Always but kubesd has no terminal"),
        "{text}"
    );
}

#[actix_rt::test]
async fn a_hanging_plugin_is_killed_at_the_timeout() {
    let dir = Dir::new("hangs");
    let plugin = dir.script("hangs", "exec sleep 30");
    let started = std::time::Instant::now();
    let err = run_plugin(&exec("u", &plugin), Duration::from_millis(200))
        .await
        .expect_err("times out");
    assert_eq!(
        err.problem,
        PluginProblem::TimedOut(Duration::from_millis(200))
    );
    assert!(
        err.to_string().contains("credential_plugin_timeout"),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "not waited out"
    );
}

#[actix_rt::test]
async fn output_that_is_no_exec_credential_is_refused_without_quoting_it() {
    let dir = Dir::new("garbage");
    let cases = [
        ("not JSON", format!("token: {TOKEN}")),
        (
            "JSON of the wrong shape",
            format!(
                "{{\"apiVersion\": \"{V1}\", \"kind\": \"ExecCredential\", \"status\": \"{TOKEN}\"}}"
            ),
        ),
        (
            "not an ExecCredential of client.authentication.k8s.io/v1",
            token_answer(TOKEN, None).replace("/v1\"", "/v1beta1\""),
        ),
        (
            "has no status",
            format!("{{\"apiVersion\": \"{V1}\", \"kind\": \"ExecCredential\"}}"),
        ),
        (
            "neither a token nor a client certificate",
            token_answer("", None),
        ),
        (
            "only one of clientCertificateData and clientKeyData",
            token_answer(TOKEN, None).replace("\"token\"", "\"clientKeyData\""),
        ),
        (
            "is already past",
            token_answer(TOKEN, Some(std::time::SystemTime::UNIX_EPOCH)),
        ),
    ];
    for (i, (want, answer)) in cases.iter().enumerate() {
        let plugin = dir.printing(&format!("garbage{i}"), answer);
        let err = run_plugin(&exec("u", &plugin), TIMEOUT)
            .await
            .expect_err(want);
        let text = err.to_string();
        assert!(matches!(err.problem, PluginProblem::BadOutput(_)), "{text}");
        assert!(text.contains(want), "{text} (want {want})");
        assert!(!text.contains(TOKEN), "the output is not quoted: {text}");
    }
}

#[actix_rt::test]
async fn a_missing_plugin_says_how_to_install_it() {
    let dir = Dir::new("missing");
    let mut config = exec("gke-user", &dir.path("gke-gcloud-auth-plugin"));
    config.install_hint = "Install gke-gcloud-auth-plugin for use with kubectl".into();
    let err = run_plugin(&config, TIMEOUT).await.expect_err("missing");
    assert!(
        matches!(err.problem, PluginProblem::NotInstalled(_)),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.contains("kubeconfig user \"gke-user\""), "{text}");
    assert!(text.contains("is not installed"), "{text}");
    assert!(
        text.contains("install hint: Install gke-gcloud-auth-plugin for use with kubectl"),
        "{text}"
    );
}

#[actix_rt::test]
async fn an_expiry_runs_the_plugin_again_shortly_before_it() {
    let dir = Dir::new("expiry");
    let in_an_hour = std::time::SystemTime::now() + Duration::from_secs(3600);
    // Each run's token names the run.
    let body = format!(
        "n=$(wc -l < '{}' | tr -d ' ')\nprintf '{{\"apiVersion\":\"{V1}\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"run-%s\",\"expirationTimestamp\":\"{}\"}}}}' \"$n\"",
        dir.path("runs").display(),
        humantime::format_rfc3339_seconds(in_an_hour)
    );
    let source = ExecSource::for_config(&exec("expiring", &dir.script("expiring", &body)));
    source.ensure(TIMEOUT).await.expect("first run");
    let header = |s: &Arc<ExecSource>| s.header(TIMEOUT).expect("a credential").value;
    assert_eq!(header(&source).as_deref(), Some("Bearer run-1"));
    assert_eq!(header(&source).as_deref(), Some("Bearer run-1"), "kept");
    assert_eq!(dir.runs(), 1);

    // An hour later, a minute before the expiry (in paused time, so nothing waits):
    // the credential still serves while the plugin runs again.
    tokio::time::pause();
    tokio::time::advance(Duration::from_secs(3600 - 50)).await;
    tokio::time::resume();
    assert_eq!(header(&source).as_deref(), Some("Bearer run-1"));
    source.ensure(TIMEOUT).await.expect("the renewal");
    assert_eq!(dir.runs(), 2, "renewed once");
    assert_eq!(header(&source).as_deref(), Some("Bearer run-2"));
}

#[actix_rt::test]
async fn a_401_runs_the_plugin_again_once_per_wave() {
    let dir = Dir::new("refused");
    let body = format!(
        "n=$(wc -l < '{}' | tr -d ' ')\nprintf '{{\"apiVersion\":\"{V1}\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"run-%s\"}}}}' \"$n\"",
        dir.path("runs").display()
    );
    let source = ExecSource::for_config(&exec("refused", &dir.script("refused", &body)));
    source.ensure(TIMEOUT).await.expect("first run");
    let first = source.header(TIMEOUT).expect("a credential");
    assert_eq!(first.value.as_deref(), Some("Bearer run-1"));
    // Without an expiry it is kept, however often it is asked for.
    source.ensure(TIMEOUT).await.expect("fresh");
    assert_eq!(dir.runs(), 1);

    // Every watcher that used it gets a 401: one run.
    for _ in 0..5 {
        source.refused(first.generation, TIMEOUT);
    }
    source.ensure(TIMEOUT).await.expect("the re-run");
    let second = source.header(TIMEOUT).expect("a credential");
    assert_eq!(second.value.as_deref(), Some("Bearer run-2"));
    assert_eq!(dir.runs(), 2, "one run for the wave");

    // A late 401 to the old credential changes nothing.
    source.refused(first.generation, TIMEOUT);
    source.ensure(TIMEOUT).await.expect("fresh");
    assert_eq!(dir.runs(), 2);
    assert_eq!(source.runs(), 2);
}

/// A CA, and certificates it signed for the server (127.0.0.1) and two clients.
struct Pki {
    ca: String,
    server: (String, String),
    clients: [(String, String); 2],
}

fn pki() -> Pki {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA").pem();
    let issuer = Issuer::new(ca_params, ca_key);
    let issue = |san: &str| {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(vec![san.to_string()])
            .expect("params")
            .signed_by(&key, &issuer)
            .expect("cert");
        (cert.pem(), key.serialize_pem())
    };
    let server = issue("127.0.0.1");
    let clients = [
        issue("kubesd-plugin-user"),
        issue("kubesd-plugin-user-renewed"),
    ];
    Pki {
        ca,
        server,
        clients,
    }
}

/// A one-request HTTPS server on 127.0.0.1 that requires a client certificate signed
/// by `pki.ca`; it sends back the certificate it was shown, and answers 200.
fn mtls_server(pki: &Pki) -> (u16, std::sync::mpsc::Receiver<Option<Vec<u8>>>) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(pki.ca.as_bytes()).expect("CA"))
        .expect("root");
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .expect("verifier");
    let chain = vec![CertificateDer::from_pem_slice(pki.server.0.as_bytes()).expect("cert")];
    let key = PrivateKeyDer::from_pem_slice(pki.server.1.as_bytes()).expect("key");
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .expect("server config");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let conn = rustls::ServerConnection::new(Arc::new(config)).expect("connection");
        let mut tls = rustls::StreamOwned::new(conn, stream);
        let mut request = Vec::new();
        let mut buf = [0u8; 4096];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            match tls.read(&mut buf) {
                Ok(n) if n > 0 => request.extend_from_slice(&buf[..n]),
                _ => break,
            }
        }
        let shown = tls
            .conn
            .peer_certificates()
            .and_then(|c| c.first())
            .map(|c| c.to_vec());
        let _ = tx.send(shown);
        let _ =
            tls.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        tls.conn.send_close_notify();
        let _ = tls.flush();
    });
    (port, rx)
}

/// Sends one request to a new server that requires a client certificate, with a new
/// awc client over `tls`, and returns the certificate the server was shown.
async fn certificate_shown(pki: &Pki, tls: &Arc<rustls::ClientConfig>) -> Option<Vec<u8>> {
    let (port, shown) = mtls_server(pki);
    let client = build_client(Some(Arc::clone(tls)), false, TIMEOUT);
    let response = client
        .get(format!("https://127.0.0.1:{port}/api/v1/pods"))
        .send()
        .await
        .expect("the server accepts the plugin's certificate");
    assert_eq!(response.status(), 200);
    shown
        .recv_timeout(TIMEOUT)
        .expect("the server saw a certificate")
}

#[actix_rt::test]
async fn a_client_certificate_from_the_plugin_reaches_the_tls_handshake() {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let dir = Dir::new("cert");
    let pki = pki();
    // The plugin prints the answer the file `which` names.
    for (i, (cert, key)) in pki.clients.iter().enumerate() {
        let answer = serde_json::json!({
            "apiVersion": V1,
            "kind": "ExecCredential",
            "status": { "clientCertificateData": cert, "clientKeyData": key },
        });
        std::fs::write(dir.path(&format!("answer{i}")), answer.to_string()).expect("written");
    }
    let which = dir.path("which");
    std::fs::write(&which, dir.path("answer0").display().to_string()).expect("written");
    let plugin = dir.script("cert", &format!("cat \"$(cat '{}')\"", which.display()));
    let config = exec("mtls-user", &plugin);
    let credential = run_plugin(&config, TIMEOUT).await.expect("answers");
    assert!(credential.token.is_none() && credential.client_cert.is_some());
    assert!(!format!("{credential:?}").contains("PRIVATE KEY"));

    let http = HttpClientConfig {
        tls_config: TlsConfig {
            ca: Some(pki.ca.clone()),
            ..TlsConfig::default()
        },
        enable_http2: false,
        exec: Some(config.clone()),
        ..HttpClientConfig::default()
    };
    let source = ExecSource::for_config(&config);
    source.ensure(TIMEOUT).await.expect("the plugin answers");
    let mut credentials = Credentials::from_config(&http, TIMEOUT);
    assert_eq!(
        credentials.header().expect("a credential"),
        None,
        "no token"
    );
    let first = credentials.client_cert_generation();
    assert!(first.is_some());
    let tls = endpoint_tls_config(&http).expect("TLS config");
    let der = |pem: &str| CertificateDer::from_pem_slice(pem.as_bytes()).expect("cert");
    let shown = certificate_shown(&pki, &tls).await;
    assert_eq!(shown.as_deref(), Some(der(&pki.clients[0].0).as_ref()));

    // Refused (the plugin gave no expiry): it runs again and gives another certificate,
    // which new connections over the same TLS config present.
    std::fs::write(&which, dir.path("answer1").display().to_string()).expect("written");
    credentials.refused();
    source.ensure(TIMEOUT).await.expect("the re-run");
    assert_ne!(
        credentials.client_cert_generation(),
        first,
        "a new certificate"
    );
    let shown = certificate_shown(&pki, &tls).await;
    assert_eq!(shown.as_deref(), Some(der(&pki.clients[1].0).as_ref()));
}

/// The simulator, requiring `Authorization: Bearer TOKEN`.
async fn simulator_with_token() -> SimulatedCluster {
    let config = SimulatorConfig {
        token: Some(TOKEN.into()),
        ..SimulatorConfig::default()
    };
    SimulatedCluster::start(config, &ClusterSpec::default())
        .await
        .expect("the simulator starts")
}

#[actix_rt::test]
async fn jobs_of_the_same_user_share_one_plugin_run() {
    let running = simulator_with_token().await;
    let dir = Dir::new("shared");
    let plugin = dir.printing("shared", &token_answer(TOKEN, None));
    let path = kubeconfig(&dir, &running.url(), &exec_yaml(&plugin));
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let mut subs = Vec::new();
    for role in [Role::Pod, Role::Service, Role::Endpoints] {
        let sub = discovery
            .subscribe(&job(role, &path), keep_all)
            .await
            .expect("subscribes");
        subs.push(sub);
    }
    for sub in &subs {
        sub.synced_within(TIMEOUT).await.expect("synced");
        assert!(!sub.targets().await.is_empty());
    }
    assert_eq!(dir.runs(), 1, "one run for every job and watcher");
    running.stop().await;
}

#[actix_rt::test]
async fn a_rejected_plugin_token_runs_the_plugin_again() {
    let running = simulator_with_token().await;
    let dir = Dir::new("rejected");
    // The plugin prints the token the file holds: a stale one at first.
    let token_file = dir.path("current-token");
    std::fs::write(&token_file, "stale-token").expect("token written");
    let body = format!(
        "printf '{{\"apiVersion\":\"{V1}\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\"}}}}' \"$(cat '{}')\"",
        token_file.display()
    );
    let plugin = dir.script("rejected", &body);
    let path = kubeconfig(&dir, &running.url(), &exec_yaml(&plugin));
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let sub = discovery
        .subscribe(&job(Role::Node, &path), keep_all)
        .await
        .expect("subscribes");
    // The 401 to the stale token runs the plugin again.
    let deadline = std::time::Instant::now() + TIMEOUT;
    while dir.runs() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "no re-run after a 401"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    // Once the plugin has the right token, the next 401 fetches it and the job syncs.
    std::fs::write(&token_file, TOKEN).expect("token written");
    actix_rt::time::timeout(TIMEOUT, sub.synced())
        .await
        .expect("synced with the renewed token");
    assert!(!sub.targets().await.is_empty());
    running.stop().await;
}

#[actix_rt::test]
async fn a_failing_plugin_is_reported_by_the_job_and_retried_with_backoff() {
    let running = simulator_with_token().await;
    let dir = Dir::new("job-fails");
    let plugin = dir.script("job-fails", "echo 'no credentials found' >&2\nexit 1");
    let path = kubeconfig(&dir, &running.url(), &exec_yaml(&plugin));
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    // Not a start error: the job runs and reports it.
    let sub = discovery
        .subscribe(&job(Role::Ingress, &path), keep_all)
        .await
        .expect("subscribes");
    let credential_errors = || {
        discovery.metrics().role_total(Role::Ingress, |m| {
            m.request_errors.get(RequestError::Credentials)
        })
    };
    let deadline = std::time::Instant::now() + TIMEOUT;
    let error = loop {
        let error = sub
            .status()
            .await
            .into_iter()
            .find_map(|s| s.last_error)
            .filter(|e| e.problem == UrlProblem::Request(RequestError::Credentials));
        if let Some(error) = error
            && credential_errors() >= 4
        {
            break error;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no plugin error reported"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        error.message.contains("kubeconfig user \"plugin-user\""),
        "{error}"
    );
    assert!(error.message.contains("no credentials found"), "{error}");
    // The watchers retried at their pace (milliseconds here); the plugin, at its own
    // backoff (a second, doubling).
    assert!(dir.runs() <= 2, "ran {} times", dir.runs());
    assert!(sub.targets().await.is_empty());
    running.stop().await;
}

#[actix_rt::test]
async fn kubesd_once_discovers_with_a_token_only_a_plugin_gives() {
    let running = simulator_with_token().await;
    let dir = Dir::new("once");
    let plugin = dir.printing("once", &token_answer(TOKEN, None));
    let path = kubeconfig(&dir, &running.url(), &exec_yaml(&plugin));
    let config = dir.path("kubesd.yml");
    std::fs::write(
        &config,
        format!(
            "scrape_configs:\n- job_name: pods\n  kubernetes_sd_configs:\n  - role: pod\n    kubeconfig_file: {}\n",
            path.display()
        ),
    )
    .expect("config written");
    let out = actix_rt::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_kubesd"))
            .args(["once", "--timeout", "20s", "--config"])
            .arg(&config)
            .env("RUST_LOG", "trace")
            .output()
    })
    .await
    .expect("joined")
    .expect("kubesd runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let targets: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let pods = targets["pods"].as_array().expect("the job's target groups");
    assert!(!pods.is_empty(), "{stdout}");
    assert!(
        pods.iter()
            .all(|g| g["labels"]["job"] == "pods" && g["targets"][0].is_string()),
        "{stdout}"
    );
    assert_eq!(dir.runs(), 1);
    assert!(!stderr.contains(TOKEN) && !stdout.contains(TOKEN));
    running.stop().await;
}
