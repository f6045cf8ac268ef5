//! What the flood bench measures of its own process: CPU (all of it, and by thread),
//! wall time, allocations and peak RSS between two points ([`Meter`]).

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::flood_allocs::{allocs, use_system};

pub fn cpu_s() -> f64 {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

pub fn status_kb(field: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

pub fn rss_mb() -> f64 {
    status_kb("VmRSS:") as f64 / 1024.0
}

pub fn peak_rss_mb() -> f64 {
    status_kb("VmHWM:") as f64 / 1024.0
}

/// Resets VmHWM to the current RSS, so each scenario reports its own peak.
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

unsafe extern "C" {
    /// mimalloc's own "give free memory back now" (linked through the `mimalloc` crate).
    fn mi_collect(force: bool);
}

/// Returns freed memory to the OS, whichever allocator runs, so "RSS after stop" shows
/// what is still held rather than what the allocator keeps cached.
pub fn trim_heap() {
    if use_system() {
        unsafe { libc::malloc_trim(0) };
    } else {
        unsafe { mi_collect(true) };
    }
}

pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// CPU, wall, allocations and peak RSS between `start` and `finish`.
pub struct Meter {
    pub wall: Instant,
    pub cpu: f64,
    pub allocs: u64,
    pub threads: HashMap<u64, (String, u64)>,
}

pub struct Measured {
    pub wall_s: f64,
    pub cpu_s: f64,
    pub allocs: u64,
    pub peak_rss_mb: f64,
    /// CPU seconds of the busiest threads over the scenario, busiest first: shows which
    /// stage of the pipeline (watcher arbiter, group arbiter) is the bottleneck.
    pub threads: Vec<(String, f64)>,
}

impl Measured {
    pub fn threads_note(&self) -> String {
        let busy: Vec<String> = self
            .threads
            .iter()
            .filter(|(_, s)| *s >= 0.01)
            .take(4)
            .map(|(name, s)| format!("{name} {s:.2}"))
            .collect();
        format!("cpu s by thread: {}", busy.join(", "))
    }
}

/// CPU ticks (user + system) of each thread of this process, by thread id, with its name.
pub fn thread_ticks() -> HashMap<u64, (String, u64)> {
    let mut out = HashMap::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "tid (comm) state ..." — comm may hold spaces; fields follow the last ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let name = stat[open + 1..close].to_string();
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the comm.
        let ticks = fields
            .get(11)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
            + fields
                .get(12)
                .and_then(|f| f.parse::<u64>().ok())
                .unwrap_or(0);
        out.insert(tid, (name, ticks));
    }
    out
}

/// Renames each thread of this process that is not in `before` and whose name starts
/// with `prefix` to `name` (at most 15 bytes, the kernel's limit); returns how many.
/// For threads a library names by its runtime rather than by their work.
pub fn rename_new_threads(before: &HashMap<u64, (String, u64)>, prefix: &str, name: &str) -> usize {
    let mut renamed = 0;
    for (tid, (now, _)) in thread_ticks() {
        if before.contains_key(&tid) || !now.starts_with(prefix) {
            continue;
        }
        let comm = format!("/proc/self/task/{tid}/comm");
        renamed += usize::from(std::fs::write(comm, name).is_ok());
    }
    renamed
}

pub fn ticks_per_s() -> f64 {
    (unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).max(1) as f64
}

impl Meter {
    pub fn start() -> Meter {
        reset_peak();
        Meter {
            wall: Instant::now(),
            cpu: cpu_s(),
            allocs: allocs(),
            threads: thread_ticks(),
        }
    }
    pub fn finish(&self) -> Measured {
        Measured {
            wall_s: self.wall.elapsed().as_secs_f64(),
            cpu_s: cpu_s() - self.cpu,
            allocs: allocs() - self.allocs,
            peak_rss_mb: peak_rss_mb(),
            threads: {
                let hz = ticks_per_s();
                let mut busy: Vec<(String, f64)> = thread_ticks()
                    .into_iter()
                    .map(|(tid, (name, ticks))| {
                        let before = self.threads.get(&tid).map_or(0, |(_, t)| *t);
                        (
                            format!("{name}[{tid}]"),
                            ticks.saturating_sub(before) as f64 / hz,
                        )
                    })
                    .collect();
                busy.sort_by(|a, b| b.1.total_cmp(&a.1));
                busy
            },
        }
    }
}
