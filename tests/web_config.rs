//! `kubesd run --web.config.file`: the exporter-toolkit's web config files load as
//! they are (tests/web holds the toolkit's own, see tests/web/README.md), and a
//! running kubesd lets in only whom the file names: basic auth, client certificates,
//! a password change that takes effect, a broken file that keeps the old settings,
//! and no secret in its logs or metrics.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;
use kubesd::config::TlsConfig;
use kubesd::http::{build_client, build_tls_config};
use kubesd::service::web::config::load_web_config;

const FIXTURES: &str = "tests/web";

/// A wrong password, distinct from any word kubesd might log.
const WRONG: &str = "guess-Zq81";

#[test]
fn the_toolkits_good_web_configs_load_unchanged() {
    for name in [
        "docs-web-config.yml",
        "web_config_users.good.yml",
        "web_config_users_noTLS.good.yml",
        "tls_config_noAuth.requireandverifyclientcert.good.yml",
        "web_config_headers.good.yml",
        "web_config_noAuth_someCiphers.good.yml",
    ] {
        let path = Path::new(FIXTURES).join(name);
        if let Err(e) = load_web_config(&path) {
            panic!("{name} does not load: {e}");
        }
    }
}

#[test]
fn the_toolkits_bad_web_configs_are_rejected_naming_the_key() {
    for (name, says) in [
        ("web_config_junk_key.yml", "unknown field `cert_filse`"),
        (
            "web_config_auth_user_list_invalid.bad.yml",
            "basic_auth_users.john: not a bcrypt hash",
        ),
        (
            "web_config_headers_extra_header.bad.yml",
            "http_server_config.headers.Content-Type",
        ),
        (
            "web_config_noAuth_inventedCiphers.bad.yml",
            "tls_server_config.cipher_suites: TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA2048",
        ),
        // Good for Go; rustls has no P-521, which kubesd says rather than ignore.
        (
            "web_config_noAuth_allCurves.good.yml",
            "CurveP521 is not supported by rustls",
        ),
    ] {
        let path = Path::new(FIXTURES).join(name);
        match load_web_config(&path) {
            Ok(_) => panic!("{name} loaded"),
            Err(e) => assert!(e.to_string().contains(says), "{name}: {e}"),
        }
    }
}

/// A child process, killed when dropped; its output is kept, and its lines arrive on a
/// channel.
struct Proc {
    child: Child,
    lines: mpsc::Receiver<String>,
    all: Arc<Mutex<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// Waits for an output line containing `marker`; returns the rest of it.
    fn wait_for(&self, marker: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some((_, rest)) = line.split_once(marker) {
                        return rest.to_string();
                    }
                }
                Err(_) => break,
            }
        }
        panic!("no line with {marker:?}; output:\n{}", self.output());
    }

    fn output(&self) -> String {
        self.all.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn kubesd(args: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(args)
        // Every level, so that a secret logged anywhere would show.
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubesd starts");
    let (tx, rx) = mpsc::channel();
    let all = Arc::new(Mutex::new(String::new()));
    for out in [
        child
            .stdout
            .take()
            .map(|o| Box::new(o) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|e| Box::new(e) as _),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        let all = Arc::clone(&all);
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(mut all) = all.lock() {
                    all.push_str(&line);
                    all.push('\n');
                }
                let _ = tx.send(line);
            }
        });
    }
    Proc {
        child,
        lines: rx,
        all,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kubesd-web-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Writes `text` to `path` by renaming a new file over it, as a Secret update does.
fn replace_file(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

/// A bcrypt hash at the lowest cost, so that the tests stay fast.
fn hash(password: &str) -> String {
    bcrypt::hash(password, 4).expect("bcrypt")
}

/// `kubesd run` with no jobs, the web config at `web`, and `extra` arguments; returns
/// the process and its base URL.
fn run(dir: &Path, web: &Path, extra: &[&str]) -> (Proc, String) {
    let config = dir.join("kubesd.yml");
    std::fs::write(&config, "scrape_configs: []\n").expect("config");
    let config = config.to_string_lossy().into_owned();
    let web = web.to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "--config",
        &config,
        "--listen",
        "127.0.0.1:0",
        "--web.config.file",
        &web,
    ];
    args.extend_from_slice(extra);
    let proc = kubesd(&args);
    let rest = proc.wait_for("kubesd serving ");
    let base = rest
        .split_whitespace()
        .next()
        .and_then(|u| u.strip_suffix("/sd/{job}"))
        .unwrap_or_default()
        .to_string();
    assert!(base.starts_with("http"), "serving line: {rest}");
    (proc, base)
}

async fn status(client: &awc::Client, url: &str, user: Option<(&str, &str)>) -> u16 {
    let mut req = client.get(url);
    if let Some((u, p)) = user {
        req = req.basic_auth(u, p);
    }
    match req.send().await {
        Ok(resp) => resp.status().as_u16(),
        Err(e) => panic!("GET {url}: {e}"),
    }
}

fn plain_client() -> awc::Client {
    build_client(None, false, Duration::from_secs(10))
}

#[actix_rt::test]
async fn basic_auth_lets_in_only_the_right_password_and_follows_the_file() {
    let dir = temp_dir("basic");
    let web = dir.join("web.yml");
    let (old, new) = ("first-Pa55word", "second-Pa55word");
    replace_file(
        &web,
        &format!("basic_auth_users:\n  prometheus: {}\n", hash(old)),
    );
    let (proc, base) = run(&dir, &web, &[]);
    let client = plain_client();

    for path in ["/sd", "/metrics", "/healthz", "/ready"] {
        let url = format!("{base}{path}");
        assert_eq!(
            status(&client, &url, None).await,
            401,
            "{path} without credentials"
        );
        assert_eq!(
            status(&client, &url, Some(("prometheus", WRONG))).await,
            401,
            "{path} with a wrong password"
        );
        assert_eq!(
            status(&client, &url, Some(("nobody", old))).await,
            401,
            "{path} with an unknown user"
        );
        assert_eq!(
            status(&client, &url, Some(("prometheus", old))).await,
            200,
            "{path}"
        );
    }
    let reload = client
        .post(format!("{base}/-/reload"))
        .send()
        .await
        .expect("POST");
    assert_eq!(reload.status().as_u16(), 401, "/-/reload is protected");

    // A new password takes effect at the next request, the old one is refused.
    replace_file(
        &web,
        &format!("basic_auth_users:\n  prometheus: {}\n", hash(new)),
    );
    let sd = format!("{base}/sd");
    assert_eq!(status(&client, &sd, Some(("prometheus", new))).await, 200);
    assert_eq!(status(&client, &sd, Some(("prometheus", old))).await, 401);

    // A broken file keeps the settings before it, and says so.
    replace_file(&web, "basic_auth_users:\n  prometheus: not-a-hash\n");
    assert_eq!(status(&client, &sd, Some(("prometheus", new))).await, 200);
    assert_eq!(status(&client, &sd, None).await, 401);
    proc.wait_for("web config reload failed, keeping the previous settings");
    let metrics = format!("{base}/metrics");
    let mut resp = client
        .get(&metrics)
        .basic_auth("prometheus", new)
        .send()
        .await
        .expect("metrics");
    let text = String::from_utf8_lossy(&resp.body().await.expect("body")).into_owned();
    assert!(
        text.contains("kubesd_web_config_last_reload_successful 0\n"),
        "{text}"
    );
    assert!(
        text.contains("kubesd_http_unauthorized_requests_total "),
        "{text}"
    );

    // No password appears in the output (at trace level) or the metrics.
    let output = proc.output();
    for password in [old, new, WRONG] {
        // As offered (Basic auth sends user:password in base64), and in plain text.
        let offered =
            base64::engine::general_purpose::STANDARD.encode(format!("prometheus:{password}"));
        for secret in [password, offered.as_str()] {
            assert!(
                !output.contains(secret),
                "{secret} in the output:\n{output}"
            );
            assert!(!text.contains(secret), "{secret} in /metrics");
        }
    }
    drop(proc);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The status page and the targets API are behind the same checks as `/sd`. (Fewer
/// failed attempts than the failure limit allows, so that none is answered 429.)
#[actix_rt::test]
async fn the_status_page_and_the_targets_api_need_credentials() {
    let dir = temp_dir("api");
    let web = dir.join("web.yml");
    let password = "api-Pa55word";
    replace_file(
        &web,
        &format!("basic_auth_users:\n  prometheus: {}\n", hash(password)),
    );
    let (proc, base) = run(&dir, &web, &[]);
    let client = plain_client();
    let steps = "/api/v1/targets/relabel_steps?scrapePool=none&labels=%7B%7D";
    assert_eq!(status(&client, &format!("{base}{steps}"), None).await, 401);
    for path in [
        "/",
        "/api/v1/targets",
        "/api/v1/status/config",
        "/api/v1/kubesd/jobs",
        "/api/v1/kubesd/targets",
        "/api/v1/kubesd/watchers",
    ] {
        let url = format!("{base}{path}");
        assert_eq!(status(&client, &url, None).await, 401, "{path}");
        let user = Some(("prometheus", password));
        assert_eq!(status(&client, &url, user).await, 200, "{path}");
    }
    drop(proc);
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn health_endpoints_are_open_only_when_the_operator_says_so() {
    let dir = temp_dir("health");
    let web = dir.join("web.yml");
    replace_file(
        &web,
        &format!("basic_auth_users:\n  prometheus: {}\n", hash("pw-1234")),
    );
    let (_proc, base) = run(&dir, &web, &["--web.open-health-endpoints"]);
    let client = plain_client();
    assert_eq!(status(&client, &format!("{base}/healthz"), None).await, 200);
    assert_eq!(status(&client, &format!("{base}/ready"), None).await, 200);
    assert_eq!(status(&client, &format!("{base}/sd"), None).await, 401);
    assert_eq!(status(&client, &format!("{base}/metrics"), None).await, 401);
    let _ = std::fs::remove_dir_all(&dir);
}

#[actix_rt::test]
async fn too_many_failures_from_one_client_are_refused_without_a_check() {
    let dir = temp_dir("ratelimit");
    let web = dir.join("web.yml");
    replace_file(
        &web,
        &format!("basic_auth_users:\n  prometheus: {}\n", hash("pw-5678")),
    );
    let (_proc, base) = run(&dir, &web, &[]);
    let client = plain_client();
    let url = format!("{base}/sd");
    let mut codes = Vec::new();
    for _ in 0..12 {
        codes.push(status(&client, &url, Some(("prometheus", "guess"))).await);
    }
    assert_eq!(&codes[..10], &[401; 10], "{codes:?}");
    assert_eq!(codes[11], 429, "{codes:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, in `dir`.
fn certificates(dir: &Path) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let issuer = Issuer::new(ca_params, ca_key);
    for (name, sans) in [
        ("server", vec!["127.0.0.1".to_string()]),
        ("client", vec!["prometheus".to_string()]),
    ] {
        let key = KeyPair::generate().expect("key");
        let cert = CertificateParams::new(sans)
            .expect("params")
            .signed_by(&key, &issuer)
            .expect("cert");
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).expect("write");
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).expect("write");
    }
    std::fs::write(dir.join("ca.crt"), ca.pem()).expect("write");
}

fn tls_client(dir: &Path, with_cert: bool) -> awc::Client {
    let tls = build_tls_config(
        &TlsConfig {
            ca_file: Some(dir.join("ca.crt")),
            cert_file: with_cert.then(|| dir.join("client.crt")),
            key_file: with_cert.then(|| dir.join("client.key")),
            ..TlsConfig::default()
        },
        false,
    )
    .expect("client TLS");
    build_client(Some(tls), false, Duration::from_secs(10))
}

#[actix_rt::test]
async fn a_required_client_certificate_keeps_out_clients_without_one() {
    let dir = temp_dir("mtls");
    certificates(&dir);
    let web = dir.join("web.yml");
    replace_file(
        &web,
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  \
         client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n",
    );
    let (_proc, base) = run(&dir, &web, &[]);
    assert!(base.starts_with("https://"), "{base}");
    let url = format!("{base}/sd");

    let with_cert = tls_client(&dir, true);
    assert_eq!(status(&with_cert, &url, None).await, 200);

    let without = tls_client(&dir, false);
    let refused = without.get(&url).send().await;
    assert!(
        refused.is_err(),
        "a client without a certificate got {refused:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_web_config_stops_kubesd_at_start_naming_the_key() {
    let dir = temp_dir("bad");
    let web = dir.join("web.yml");
    std::fs::write(&web, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  min_version: TLS14\n").expect("write");
    std::fs::write(dir.join("kubesd.yml"), "scrape_configs: []\n").expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(["run", "--listen", "127.0.0.1:0", "--config"])
        .arg(dir.join("kubesd.yml"))
        .arg("--web.config.file")
        .arg(&web)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tls_server_config.cert_file"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
