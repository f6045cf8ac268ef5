//! Process metrics (`process_*`, as Prometheus client libraries name them), read from
//! `/proc/self` on Linux; absent elsewhere.

use std::fmt::Write;

/// Clock ticks per second of `/proc/self/stat` times; 100 on every Linux kubesd targets.
const TICKS_PER_SECOND: f64 = 100.0;

/// Appends process metrics to `out`.
pub fn render(out: &mut String) {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for (field, name, help) in [
            (
                "VmRSS:",
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
            ),
            (
                "VmHWM:",
                "process_resident_memory_max_bytes",
                "Peak resident memory size in bytes.",
            ),
            (
                "VmSize:",
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
            ),
        ] {
            if let Some(kb) = status
                .lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                let _ = writeln!(
                    out,
                    "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}",
                    kb * 1024
                );
            }
        }
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        // Fields after the parenthesised command name; utime and stime are 14 and 15.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        let ticks: f64 = [11, 12]
            .iter()
            .filter_map(|i| fields.get(*i)?.parse::<f64>().ok())
            .sum();
        let name = "process_cpu_seconds_total";
        let _ = writeln!(
            out,
            "# HELP {name} Total user and system CPU time spent in seconds.\n# TYPE {name} counter\n{name} {}",
            ticks / TICKS_PER_SECOND
        );
        if let Some(threads) = fields.get(17).and_then(|t| t.parse::<u64>().ok()) {
            let _ = writeln!(
                out,
                "# HELP process_threads Threads.\n# TYPE process_threads gauge\nprocess_threads {threads}"
            );
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        let name = "process_open_fds";
        let _ = writeln!(
            out,
            "# HELP {name} Open file descriptors.\n# TYPE {name} gauge\n{name} {}",
            fds.count()
        );
    }
}
