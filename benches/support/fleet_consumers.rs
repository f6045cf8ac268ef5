//! The fleet scenario's consumers: many scrapers, each polling its own view of a job
//! (`/sd/{job}?node=...`, `?shard=I&shards=N`) every interval with the ETag of its last
//! answer in `If-None-Match`, as Prometheus' and vmagent's HTTP SD refresh does. Spread
//! evenly over the interval, on a few threads named `fleet-consumer` (so the bench can
//! leave their CPU out of the server's).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// What the consumers saw.
#[derive(Default)]
pub struct Polled {
    /// Each request's latency, ms.
    pub latencies_ms: Vec<f64>,
    /// Those of the shard views' requests (large bodies) alone, ms.
    pub shard_latencies_ms: Vec<f64>,
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
        self.shard_latencies_ms.extend(other.shard_latencies_ms);
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

    /// The `q` quantile of the shard views' latencies, ms.
    pub fn shard_quantile(&mut self, q: f64) -> f64 {
        quantile(&mut self.shard_latencies_ms, q)
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
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("etag")
        {
            tag = value.trim().to_string();
        }
    }
    // Counted, not kept: the consumers stand for other processes, whose memory is not
    // kubesd's.
    let mut buf = [0u8; 64 * 1024];
    let mut len = 0;
    loop {
        match r.read(&mut buf)? {
            0 => break,
            n => len += n,
        }
    }
    Ok((code, len, tag))
}

/// Polls every path of `paths` once per `every`, spread over it, on `threads` threads,
/// until `stop`; then what they saw.
pub fn poll(
    addr: String,
    paths: Vec<String>,
    every: Duration,
    threads: usize,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Polled> {
    std::thread::spawn(move || {
        let start = Instant::now();
        let n = paths.len().max(1);
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<(usize, String)> = paths
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % threads == t)
                    .map(|(i, p)| (i, p.clone()))
                    .collect();
                let (addr, stop) = (addr.clone(), Arc::clone(&stop));
                std::thread::Builder::new()
                    .name("fleet-consumer".into())
                    .spawn(move || {
                        let mut polled = consume(&addr, mine, n, every, start, &stop);
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

/// One thread's consumers: consumer `i` of `n` polls at `start + i/n * every`, then
/// every `every`.
fn consume(
    addr: &str,
    mine: Vec<(usize, String)>,
    n: usize,
    every: Duration,
    start: Instant,
    stop: &AtomicBool,
) -> Polled {
    let mut out = Polled::default();
    if mine.is_empty() {
        return out;
    }
    let mut etags = vec![String::new(); mine.len()];
    for round in 0u32.. {
        for ((i, path), etag) in mine.iter().zip(&mut etags) {
            let due = start + every * round + every.mul_f64(*i as f64 / n as f64);
            while Instant::now() < due {
                if stop.load(Relaxed) {
                    return out;
                }
                std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
            }
            let t = Instant::now();
            match get_with_etag(addr, path, etag) {
                Ok((200, len, tag)) => {
                    out.ok += 1;
                    out.bytes += len;
                    *etag = tag;
                }
                Ok((304, _, _)) => out.not_modified += 1,
                _ => out.failed += 1,
            }
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            out.latencies_ms.push(ms);
            if path.contains("shard=") {
                out.shard_latencies_ms.push(ms);
            }
        }
    }
    out
}
