//! The status page in a real browser: `kubesd demo` on 127.0.0.1, headless Chromium
//! loads `/` and runs its scripts, and the DOM it dumps must show the jobs, a dropped
//! target with the rule that dropped it, a URL watcher's phase, a view's counts and the
//! monitors with their jobs.
//!
//! Needs Debian's `chromium` (`.ci/run` installs it). Without it the test says so and
//! passes, unless `CI` is set: in CI a missing browser fails it. With
//! `KUBESD_SCREENSHOT=PATH` it also saves a screenshot of the page there (the README's
//! `docs/status-page.png` is made this way).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A child process, killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The browser, or `None` when it is absent outside CI.
fn chromium() -> Option<&'static str> {
    let found = Command::new("chromium")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("chromium");
    }
    let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
    assert!(
        !in_ci,
        "chromium is not installed, and CI is set: .ci/run installs it"
    );
    eprintln!("skipped: chromium is not installed (apt-get install chromium to run this test)");
    None
}

/// Starts `kubesd demo` on a free port; returns it and its base URL.
fn demo() -> (Proc, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args([
            "demo",
            "--listen",
            "127.0.0.1:0",
            "--nodes",
            "4",
            "--pods",
            "60",
        ])
        .args(["--churn", "0", "--seconds", "300"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubesd demo starts");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let proc = Proc(child);
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the demo says where it serves");
        if let Some(rest) = line.split("status page: ").nth(1) {
            let base = rest.split_whitespace().next().unwrap_or_default();
            return (proc, base.trim_end_matches('/').to_string());
        }
    }
}

/// GET `url`'s status and body, with a short-lived client.
async fn get(url: &str) -> (u16, String) {
    let client = awc::Client::default();
    let mut res = client.get(url).send().await.expect("answers");
    let body = res.body().limit(64 << 20).await.expect("body");
    (
        res.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// Runs headless Chromium on `url` and returns the DOM after its scripts ran.
fn dump_dom(browser: &str, url: &str) -> String {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args(["--virtual-time-budget=8000", "--dump-dom", url])
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Saves a screenshot of `url` at `path`.
fn screenshot(browser: &str, url: &str, path: &str) {
    let status = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(["--virtual-time-budget=8000", "--window-size=1400,1100"])
        .arg(format!("--screenshot={path}"))
        .arg(url)
        .stderr(Stdio::null())
        .status()
        .expect("chromium runs");
    assert!(status.success(), "the screenshot");
}

#[actix_rt::test]
async fn the_status_page_shows_jobs_drops_watchers_and_views_in_a_browser() {
    let Some(browser) = chromium() else {
        return;
    };
    let (_demo, base) = demo();
    let mut polls = 0;
    while get(&format!("{base}/ready")).await.0 != 200 {
        polls += 1;
        assert!(polls < 600, "the demo never got ready");
        actix_rt::time::sleep(Duration::from_millis(100)).await;
    }
    // A view asked for, so that the page has counts to show.
    let (status, _) = get(&format!("{base}/sd/pods?shard=0&shards=2")).await;
    assert_eq!(status, 200);

    let dom = dump_dom(browser, &format!("{base}/#job=pods"));
    for job in ["pods", "endpoints", "nodes", "ingresses", "routes"] {
        assert!(
            dom.contains(&format!("<a>{job}</a>")),
            "job {job} in the jobs table"
        );
    }
    assert!(dom.contains("Targets of pods"), "the pods job's targets");
    assert!(dom.contains(r#"data-state="dropped""#), "a dropped target");
    assert!(
        dom.contains(
            "rule 0: keep source_labels=[__meta_kubernetes_pod_annotation_prometheus_io_scrape]"
        ),
        "the rule that dropped it"
    );
    assert!(
        dom.contains(r#"<span class="ok">Watching</span>"#),
        "a watcher's phase"
    );
    // The demo's monitors, each with its state and its jobs.
    let monitor_row = dom
        .split("<tr>")
        .find(|row| row.contains("<td>ServiceMonitor default/services</td>"))
        .expect("the ServiceMonitor's row");
    assert!(
        monitor_row.contains(r#"<span class="ok">active</span>"#)
            && monitor_row.contains("<a>serviceMonitor/default/services/0</a>"),
        "the monitor's state and job: {monitor_row}"
    );
    assert!(
        dom.contains("<td>PodMonitor payments/pods</td>"),
        "every monitor listed"
    );
    let shard_row = dom
        .split("<tr>")
        .find(|row| row.contains("<code>shard=0&amp;shards=2</code>"))
        .expect("the shard view's row");
    let count: usize = shard_row
        .rsplit("<td>")
        .next()
        .and_then(|c| c.split('<').next())
        .and_then(|c| c.parse().ok())
        .expect("a count");
    assert!(count > 0, "the view's count: {shard_row}");

    if let Ok(path) = std::env::var("KUBESD_SCREENSHOT") {
        screenshot(browser, &format!("{base}/#job=pods"), &path);
    }
}
