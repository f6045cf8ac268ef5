//! What an operator sees of `kubesd run`: `--version` names the commit, logs piped to a
//! file carry no colour codes, `/metrics` has the process, build and reload metrics,
//! `POST /-/reload` reloads, HEAD answers where GET does, `/sd` is gzipped when asked,
//! and errors are sentences.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn version_names_the_commit_and_build_date() {
    let out = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .arg("--version")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("kubesd {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    assert!(text.contains(kubesd::build_info::GIT_COMMIT), "{text}");
    assert!(text.contains(", built 20"), "{text}");
}

#[actix_rt::test]
async fn run_serves_the_operators_endpoints() {
    let dir = std::env::temp_dir().join(format!("kubesd-ops-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let config = dir.join("kubesd.yml");
    std::fs::write(&config, "scrape_configs: []\n").expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kubesd"))
        .args(["run", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("kubesd starts");
    let stderr = child.stderr.take().expect("stderr");
    let proc = Proc(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut raw = Vec::new();
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) {
            raw.extend_from_slice(line.as_bytes());
            let _ = tx.send((line.clone(), raw.clone()));
            line.clear();
        }
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
    });
    let mut base = String::new();
    let mut logged = Vec::new();
    while let Ok((line, raw)) = rx.recv_timeout(Duration::from_secs(30)) {
        logged = raw;
        if let Some(rest) = line.strip_prefix("kubesd serving ") {
            base = rest
                .split_whitespace()
                .next()
                .and_then(|u| u.strip_suffix("/sd/{job}"))
                .unwrap_or_default()
                .to_string();
            break;
        }
    }
    assert!(base.starts_with("http://"), "no serving line");
    assert!(!logged.contains(&0x1b), "escape codes in piped logs");
    assert!(
        String::from_utf8_lossy(&logged).contains(" level=info "),
        "logfmt by default"
    );

    let client = awc::Client::default();
    let mut resp = client
        .get(format!("{base}/sd/nope"))
        .send()
        .await
        .expect("GET");
    assert_eq!(resp.status().as_u16(), 404);
    let body = resp.body().await.expect("body");
    assert_eq!(&body[..], b"there is no job named \"nope\"\n");

    // (No decompression: a HEAD answer has the GET answer's encoding and no body.)
    let mut head = client
        .head(format!("{base}/sd"))
        .no_decompress()
        .send()
        .await
        .expect("HEAD");
    assert_eq!(head.status().as_u16(), 200);
    assert!(head.body().await.expect("body").is_empty());

    let gzipped = client
        .get(format!("{base}/metrics"))
        .insert_header(("Accept-Encoding", "gzip"))
        .no_decompress()
        .send()
        .await
        .expect("GET");
    assert_eq!(
        gzipped
            .headers()
            .get("content-encoding")
            .and_then(|v| v.to_str().ok()),
        Some("gzip")
    );

    let mut reload = client
        .post(format!("{base}/-/reload"))
        .send()
        .await
        .expect("POST");
    assert_eq!(reload.status().as_u16(), 200);
    assert_eq!(
        &reload.body().await.expect("body")[..],
        b"config reloaded\n"
    );
    std::fs::write(&config, "scrape_configs: [{job_name: x, no_such_key: 1}]\n").expect("config");
    let mut refused = client
        .post(format!("{base}/-/reload"))
        .send()
        .await
        .expect("POST");
    assert_eq!(refused.status().as_u16(), 500);
    let why = String::from_utf8_lossy(&refused.body().await.expect("body")).into_owned();
    assert!(why.contains("no_such_key"), "{why}");

    let mut metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("GET");
    let text =
        String::from_utf8_lossy(&metrics.body().limit(1 << 20).await.expect("body")).into_owned();
    for sample in [
        "kubesd_build_info{version=",
        "kubesd_config_last_reload_successful 0\n",
        "kubesd_config_last_reload_success_timestamp_seconds ",
        "process_start_time_seconds ",
        "process_open_fds ",
        "process_max_fds ",
        "process_resident_memory_bytes ",
        "process_virtual_memory_bytes ",
        "process_cpu_seconds_total ",
    ] {
        assert!(text.contains(sample), "{sample} missing from\n{text}");
    }
    drop(proc);
    let _ = std::fs::remove_dir_all(&dir);
}
