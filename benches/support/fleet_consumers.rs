//! The fleet scenario's consumers, polling as the real clients do: Prometheus' HTTP SD
//! (`discovery/http`: a plain `GET` every `refresh_interval`, no `If-None-Match`, no
//! gzip, since its HTTP client turns compression off) for the per-node, shard and
//! member views, and the OpenTelemetry collector's target allocator client for the
//! collectors (`/scrape_configs` every `interval`, and per job the same HTTP SD against
//! `/jobs/{job}/targets?collector_id=`). Each consumer first polls at a random phase
//! of its interval, as scrapers started at different times do.
//!
//! With `conditional`, every consumer sends the ETag of its last answer in
//! `If-None-Match`: kubesd's own optimisation, which no real client uses.
//!
//! They run on a few threads named `fleet-consumer` (so the bench can leave their CPU
//! out of kubesd's). A member's answers go to the shared [`Coverage`].

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
    /// `node`, `shard`, `member`, `scrape_configs` or `collector`.
    pub kind: &'static str,
    /// A member scraper's index, whose answers go to the coverage.
    pub member: Option<usize>,
}

/// How the consumers poll.
#[derive(Clone, Copy)]
pub struct Polling {
    /// Threads the consumers are spread over.
    pub threads: usize,
    /// Send `If-None-Match` (kubesd's own optimisation).
    pub conditional: bool,
    /// Seeds each consumer's random phase.
    pub seed: u64,
}

/// One answer as a consumer read it.
pub struct Answer {
    pub status: u16,
    /// Body bytes (de-chunked).
    pub len: usize,
    pub etag: String,
    /// From the request's start to the body's first byte (to the headers' end when
    /// the body is empty).
    pub first_byte: Duration,
    /// From the request's start to the body's end.
    pub total: Duration,
    /// Of `total`, the time the consumer spent scanning the body it read.
    pub scanning: Duration,
}

/// What the consumers of one kind saw.
#[derive(Default)]
pub struct KindPolled {
    /// Each answer's time to its end, ms.
    pub latencies_ms: Vec<f64>,
    /// Each `200`'s time to its first body byte, ms.
    pub first_byte_ms: Vec<f64>,
    /// Each scanned `200`'s time spent scanning it, ms.
    pub scanning_ms: Vec<f64>,
    /// Each `200`'s body size over its time, MB/s.
    pub rates_mb_s: Vec<f64>,
    /// Body bytes received.
    pub bytes: usize,
}

impl KindPolled {
    fn merge(&mut self, other: KindPolled) {
        self.latencies_ms.extend(other.latencies_ms);
        self.first_byte_ms.extend(other.first_byte_ms);
        self.scanning_ms.extend(other.scanning_ms);
        self.rates_mb_s.extend(other.rates_mb_s);
        self.bytes += other.bytes;
    }
}

/// What the consumers saw.
#[derive(Default)]
pub struct Polled {
    /// By consumer kind.
    pub by_kind: BTreeMap<&'static str, KindPolled>,
    /// Answers `200`, `304`, other.
    pub ok: usize,
    pub not_modified: usize,
    pub failed: usize,
    /// CPU seconds the consumers' threads used (theirs, not the server's).
    pub cpu_s: f64,
}

impl Polled {
    fn merge(&mut self, other: Polled) {
        for (kind, k) in other.by_kind {
            self.by_kind.entry(kind).or_default().merge(k);
        }
        self.ok += other.ok;
        self.not_modified += other.not_modified;
        self.failed += other.failed;
        self.cpu_s += other.cpu_s;
    }

    /// Body bytes received, all kinds.
    pub fn bytes(&self) -> usize {
        self.by_kind.values().map(|k| k.bytes).sum()
    }

    /// The `q` quantile of every answer's latency, ms.
    pub fn quantile(&self, q: f64) -> f64 {
        let mut all: Vec<f64> = (self.by_kind.values())
            .flat_map(|k| k.latencies_ms.iter().copied())
            .collect();
        quantile(&mut all, q)
    }
}

/// The `q` quantile of `values` (NaN when empty); sorts them.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values
        .get(((values.len() as f64 - 1.0) * q) as usize)
        .copied()
        .unwrap_or(f64::NAN)
}

/// One plain GET (with `If-None-Match: etag` when `etag` is not empty); with `scan`,
/// the (de-chunked) body goes through it.
pub fn get(
    addr: &str,
    path: &str,
    etag: &str,
    scan: Option<&mut Scanner>,
) -> std::io::Result<Answer> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr)?;
    let condition = if etag.is_empty() {
        String::new()
    } else {
        format!("If-None-Match: {etag}\r\n")
    };
    // What Prometheus' HTTP SD sends: `Accept: application/json`, no `Accept-Encoding`.
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: application/json\r\n{condition}Connection: close\r\n\r\n"
    )?;
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let status = line
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
    let mut answer = Answer {
        status,
        len: 0,
        etag: tag,
        first_byte: started.elapsed(),
        total: Duration::ZERO,
        scanning: Duration::ZERO,
    };
    read_body(&mut r, chunked, scan, started, &mut answer)?;
    answer.total = started.elapsed();
    Ok(answer)
}

/// Reads the body after the headers into `answer` (its length and first byte's time),
/// through `scan` if given. Counted (and scanned), not kept: the consumers stand for
/// other processes, whose memory is not kubesd's.
fn read_body(
    r: &mut BufReader<TcpStream>,
    chunked: bool,
    mut scan: Option<&mut Scanner>,
    started: Instant,
    answer: &mut Answer,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    let mut left = if chunked { 0 } else { usize::MAX };
    let mut line = String::new();
    loop {
        if left == 0 {
            // The next chunk's size line (after the last chunk's CRLF, if any).
            line.clear();
            while line.trim().is_empty() {
                line.clear();
                if r.read_line(&mut line)? == 0 {
                    return Ok(());
                }
            }
            let size = line.trim().split(';').next().unwrap_or("0");
            left = usize::from_str_radix(size, 16).unwrap_or(0);
            if left == 0 {
                return Ok(());
            }
        }
        let want = buf.len().min(left);
        match r.read(&mut buf[..want])? {
            0 => return Ok(()),
            n => {
                if answer.len == 0 {
                    answer.first_byte = started.elapsed();
                }
                answer.len += n;
                left = left.saturating_sub(n);
                if let Some(s) = scan.as_deref_mut() {
                    let at = Instant::now();
                    s.feed(&buf[..n]);
                    answer.scanning += at.elapsed();
                }
            }
        }
    }
}

/// Polls every consumer once per its interval from a random phase, on
/// `polling.threads` threads, until `stop`; then what they saw. Members' answers go to
/// `coverage`.
pub fn poll(
    addr: String,
    consumers: Vec<Consumer>,
    polling: Polling,
    coverage: Arc<Mutex<Coverage>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Polled> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let mut rng = fastrand::Rng::with_seed(polling.seed);
        let phased: Vec<(Instant, Consumer)> = consumers
            .into_iter()
            .map(|c| (start + c.every.mul_f64(rng.f64()), c))
            .collect();
        let threads = polling.threads.max(1);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<(Instant, Consumer)> = (phased.iter().enumerate())
                    .filter(|(i, _)| i % threads == t)
                    .map(|(_, c)| c.clone())
                    .collect();
                let (addr, stop, coverage) =
                    (addr.clone(), Arc::clone(&stop), Arc::clone(&coverage));
                let conditional = polling.conditional;
                std::thread::Builder::new()
                    .name("fleet-consumer".into())
                    .spawn(move || {
                        let mut polled = consume(&addr, mine, conditional, &coverage, &stop);
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
    conditional: bool,
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
        let etag = if conditional {
            etags[next].as_str()
        } else {
            ""
        };
        let answer = get(addr, &c.path, etag, scan);
        let kind = out.by_kind.entry(c.kind).or_default();
        match answer {
            Ok(a) if a.status == 200 => {
                out.ok += 1;
                let total_s = a.total.as_secs_f64();
                kind.bytes += a.len;
                kind.latencies_ms.push(total_s * 1000.0);
                kind.first_byte_ms.push(a.first_byte.as_secs_f64() * 1000.0);
                if c.member.is_some() {
                    kind.scanning_ms.push(a.scanning.as_secs_f64() * 1000.0);
                }
                kind.rates_mb_s.push(a.len as f64 / 1e6 / total_s.max(1e-9));
                etags[next] = a.etag;
                if let Some(m) = c.member {
                    coverage.lock().expect("coverage").update(m, &mut scanner);
                }
            }
            Ok(a) if a.status == 304 => {
                out.not_modified += 1;
                kind.latencies_ms.push(a.total.as_secs_f64() * 1000.0);
            }
            _ => out.failed += 1,
        }
    }
}
