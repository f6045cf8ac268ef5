//! Secrets stay secret: bearer tokens, passwords and credentials never appear in logs
//! (at any level), errors, `/metrics` or Debug output; TLS verification is on unless the
//! config turns it off, and turning it off is logged as a warning.
//!
//! Every log line of this test binary, from every thread, is captured by one global
//! subscriber at TRACE level and searched for the secrets.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use kubesd::config::{Authorization, BasicAuth, Secret, TlsConfig};
use kubesd::model::Role;
use kubesd::simulator::{ClusterSpec, SimulatedCluster, SimulatorConfig};
use kubesd::{Discovery, SdConfig};
use support::keep_all;

const TOKEN: &str = "tok-7f3a9c-SECRET";
const WRONG_TOKEN: &str = "wrong-token-SECRET";
const PASSWORD: &str = "pw-hunter2-SECRET";
const CREDENTIALS: &str = "cred-99bb-SECRET";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn logs() -> &'static Captured {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    LOGS.get_or_init(|| {
        let captured = Captured::default();
        let writer = captured.clone();
        let _ = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .try_init();
        captured
    })
}

fn log_text() -> String {
    logs()
        .0
        .lock()
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default()
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in [TOKEN, WRONG_TOKEN, PASSWORD, CREDENTIALS] {
        assert!(!text.contains(secret), "{what} contains a secret:\n{text}");
    }
}

#[test]
fn debug_output_hides_every_secret() {
    let mut c = SdConfig::new(Role::Pod, "https://k8s:6443");
    c.http.bearer_token = Secret(TOKEN.into());
    c.http.basic_auth = Some(BasicAuth {
        username: "admin".into(),
        password: Secret(PASSWORD.into()),
        password_file: None,
    });
    c.http.authorization = Some(Authorization {
        kind: "Bearer".into(),
        credentials: Secret(CREDENTIALS.into()),
        credentials_file: None,
    });
    let debug = format!("{c:?} {:#?}", c.http);
    assert_no_secret("Debug output", &debug);
    assert!(debug.contains("<secret>") && debug.contains("admin"));
    // A config with both is rejected; the error names fields, not values.
    let err = c.validate().unwrap_err().to_string();
    assert_no_secret("the validation error", &err);
    assert!(err.contains("bearer_token"), "{err}");
}

#[actix_rt::test]
async fn a_rejected_token_is_not_logged_or_exported() {
    logs();
    let config = SimulatorConfig {
        token: Some(TOKEN.into()),
        ..SimulatorConfig::default()
    };
    let running = SimulatedCluster::start(config, &ClusterSpec::default())
        .await
        .expect("cluster starts");
    let discovery = Discovery::start(SimulatedCluster::engine_options());

    // Wrong token: 401s, retried with backoff and logged; never with the token.
    let mut wrong = running.sd_config(Role::Pod);
    wrong.http.bearer_token = Secret(WRONG_TOKEN.into());
    let failing = discovery
        .subscribe(&wrong, keep_all)
        .await
        .expect("subscribes");
    let errors_before = discovery
        .metrics()
        .role_total(Role::Pod, |m| m.request_errors.total());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while discovery
        .metrics()
        .role_total(Role::Pod, |m| m.request_errors.total())
        < errors_before + 2
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the 401s were not seen"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(failing.targets().await.is_empty());
    assert!(
        log_text().contains("401"),
        "the failure is logged:\n{}",
        log_text()
    );

    // The right token works.
    let mut right = running.sd_config(Role::Pod);
    right.http.bearer_token = Secret(TOKEN.into());
    let ok = discovery
        .subscribe(&right, keep_all)
        .await
        .expect("subscribes");
    ok.synced().await;
    assert!(!ok.targets().await.is_empty());

    assert_no_secret("the logs", &log_text());
    assert_no_secret("/metrics", &discovery.metrics().render());
    running.stop().await;
}

#[actix_rt::test]
async fn tls_is_verified_unless_turned_off_and_turning_it_off_is_a_warning() {
    logs();
    let config = SimulatorConfig {
        tls: true,
        ..SimulatorConfig::default()
    };
    let running = SimulatedCluster::start(config, &ClusterSpec::default())
        .await
        .expect("cluster starts");
    let discovery = Discovery::start(SimulatedCluster::engine_options());
    let dir = std::env::temp_dir().join(format!("kubesd-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, running.server.ca_pem().expect("a CA")).expect("ca written");

    // No CA given: the self-signed certificate is not trusted, nothing is discovered.
    let node_errors = || {
        discovery
            .metrics()
            .role_total(Role::Node, |m| m.request_errors.total())
    };
    let before = node_errors();
    let untrusted = running.sd_config(Role::Node);
    let sub = discovery
        .subscribe(&untrusted, keep_all)
        .await
        .expect("subscribes");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while node_errors() < before + 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the TLS failures were not seen"
        );
        actix_rt::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        sub.targets().await.is_empty(),
        "an unverified server must not be trusted"
    );

    // The CA given: verified, discovered.
    let mut trusted = running.sd_config(Role::Node);
    trusted.http.tls_config = TlsConfig {
        ca_file: Some(ca.clone()),
        ..TlsConfig::default()
    };
    let sub = discovery
        .subscribe(&trusted, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    assert!(!sub.targets().await.is_empty());

    // Verification off: works, and says so.
    assert!(!log_text().contains("insecure_skip_verify is on"));
    let mut insecure = running.sd_config(Role::Service);
    insecure.http.tls_config.insecure_skip_verify = true;
    let sub = discovery
        .subscribe(&insecure, keep_all)
        .await
        .expect("subscribes");
    sub.synced().await;
    assert!(!sub.targets().await.is_empty());
    assert!(log_text().contains("WARN") && log_text().contains("insecure_skip_verify is on"));
    let _ = std::fs::remove_dir_all(&dir);
    running.stop().await;
}
