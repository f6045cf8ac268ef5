//! The fleet scenario's consumers: many scrapers, each polling its own view of a job
//! (`/sd/{job}?node=...`, `?shard=I&shards=N`) every interval with the ETag of its last
//! answer in `If-None-Match`, as Prometheus' and vmagent's HTTP SD refresh does; member
//! scrapers (`?member=`) and OpenTelemetry collectors (`/jobs/{job}/targets`) likewise,
//! each kind at its own interval. Spread evenly over the interval, on a few threads
//! named `fleet-consumer` (so the bench can leave their CPU out of the server's). A
//! member's answers go to the shared [`Coverage`].

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::fleet_coverage::{Coverage, Scanner};

/// One consumer: what it polls, how often, and its kind for the latencies.
#[derive(Clone)]
pub struct Consumer {
    pub path: String,
    pub every: Duration,
    /// `node`, `shard`, `member` or `collector`.
    pub kind: &'static str,
    /// A member scraper's index, whose answers go to the coverage.
    pub member: Option<usize>,
}

/// What the consumers saw.
#[derive(Default)]
pub struct Polled {
    /// Each request's latency, ms.
    pub latencies_ms: Vec<f64>,
    /// The same by consumer kind, ms.
    pub by_kind: BTreeMap<&'static str, Vec<f64>>,
    /// Answers `200`, `304`, other.
    pub ok: usize,
    pub not_modified: usize,
    pub failed: usize,
    /// Body bytes received.
    pub bytes: usize,
    /// CPU seconds the consumers' threads used (theirs, not the server's).
    pub cpu_s: f64,
}

impl Polled {
    fn merge(&mut self, other: Polled) {
        self.latencies_ms.extend(other.latencies_ms);
        for (kind, l) in other.by_kind {
            self.by_kind.entry(kind).or_default().extend(l);
        }
        self.ok += other.ok;
        self.not_modified += other.not_modified;
        self.failed += other.failed;
        self.bytes += other.bytes;
        self.cpu_s += other.cpu_s;
    }

    /// The `q` quantile of the latencies, ms.
    pub fn quantile(&mut self, q: f64) -> f64 {
        quantile(&mut self.latencies_ms, q)
    }

    /// The `q` quantile of one kind's latencies, ms.
    pub fn kind_quantile(&mut self, kind: &str, q: f64) -> f64 {
        self.by_kind
            .get_mut(kind)
            .map_or(f64::NAN, |l| quantile(l, q))
    }
}

fn quantile(latencies: &mut [f64], q: f64) -> f64 {
    latencies.sort_by(f64::total_cmp);
    latencies
        .get(((latencies.len() as f64 - 1.0) * q) as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// One GET with `If-None-Match: etag` (if any); the status, body length and ETag.
pub fn get_with_etag(addr: &str, path: &str, etag: &str) -> std::io::Result<(u16, usize, String)> {
    get(addr, path, etag, None)
}

/// One GET as [`get_with_etag`]; with `scan`, the (de-chunked) body goes through it.
pub fn get(
    addr: &str,
    path: &str,
    etag: &str,
    mut scan: Option<&mut Scanner>,
) -> std::io::Result<(u16, usize, String)> {
    let mut s = TcpStream::connect(addr)?;
    let condition = if etag.is_empty() {
        String::new()
    } else {
        format!("If-None-Match: {etag}\r\n")
    };
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: bench\r\n{condition}Connection: close\r\n\r\n"
    )?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let code = line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut tag = String::new();
    let mut chunked = false;
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("etag") {
                tag = value.trim().to_string();
            }
            chunked |= name.eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked");
        }
    }
    // Counted (and scanned), not kept: the consumers stand for other processes, whose
    // memory is not kubesd's.
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    let mut left = if chunked { 0 } else { usize::MAX };
    loop {
        if left == 0 {
            // The next chunk's size line (after the last chunk's CRLF, if any).
            line.clear();
            while line.trim().is_empty() {
                line.clear();
                if r.read_line(&mut line)? == 0 {
                    return Ok((code, len, tag));
                }
            }
            let size = line.trim().split(';').next().unwrap_or("0");
            left = usize::from_str_radix(size, 16).unwrap_or(0);
            if left == 0 {
                break;
            }
        }
        let want = buf.len().min(left);
        match r.read(&mut buf[..want])? {
            0 => break,
            n => {
                len += n;
                left = left.saturating_sub(n);
                if let Some(s) = scan.as_deref_mut() {
                    s.feed(&buf[..n]);
                }
            }
        }
    }
    Ok((code, len, tag))
}

/// Polls every consumer once per its interval, spread over it, on `threads` threads,
/// until `stop`; then what they saw. Members' answers go to `coverage`.
pub fn poll(
    addr: String,
    consumers: Vec<Consumer>,
    threads: usize,
    coverage: Arc<Mutex<Coverage>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Polled> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let n = consumers.len().max(1);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                // Consumer `i` of `n` first polls at `start + i/n * every`.
                let mine: Vec<(Instant, Consumer)> = consumers
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % threads == t)
                    .map(|(i, c)| (start + c.every.mul_f64(i as f64 / n as f64), c.clone()))
                    .collect();
                let (addr, stop, coverage) =
                    (addr.clone(), Arc::clone(&stop), Arc::clone(&coverage));
                std::thread::Builder::new()
                    .name("fleet-consumer".into())
                    .spawn(move || {
                        let mut polled = consume(&addr, mine, &coverage, &stop);
                        polled.cpu_s = thread_cpu_s();
                        polled
                    })
                    .expect("consumer thread")
            })
            .collect();
        let mut all = Polled::default();
        for w in workers {
            all.merge(w.join().expect("consumer"));
        }
        all
    })
}

/// This thread's CPU time so far, s.
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

/// One thread's consumers, each polled when due, then again `every` later.
fn consume(
    addr: &str,
    mut mine: Vec<(Instant, Consumer)>,
    coverage: &Mutex<Coverage>,
    stop: &AtomicBool,
) -> Polled {
    let mut out = Polled::default();
    let mut etags = vec![String::new(); mine.len()];
    let mut scanner = Scanner::default();
    loop {
        let Some(next) = (0..mine.len()).min_by_key(|&i| mine[i].0) else {
            return out;
        };
        let (due, c) = &mut mine[next];
        while Instant::now() < *due {
            if stop.load(Relaxed) {
                return out;
            }
            std::thread::sleep((*due - Instant::now()).min(Duration::from_millis(50)));
        }
        *due += c.every;
        scanner.clear();
        let scan = c.member.is_some().then_some(&mut scanner);
        let t = Instant::now();
        let answer = get(addr, &c.path, &etags[next], scan);
        let ms = t.elapsed().as_secs_f64() * 1000.0;
        match answer {
            Ok((200, len, tag)) => {
                out.ok += 1;
                out.bytes += len;
                etags[next] = tag;
                if let Some(m) = c.member {
                    coverage.lock().expect("coverage").update(m, &mut scanner);
                }
            }
            Ok((304, _, _)) => out.not_modified += 1,
            _ => out.failed += 1,
        }
        out.latencies_ms.push(ms);
        out.by_kind.entry(c.kind).or_default().push(ms);
    }
}
