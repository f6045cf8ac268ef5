//! Process metrics (`process_*`, as Prometheus client libraries name them: CPU, memory,
//! file descriptors, start time), read from `/proc` on Linux; absent elsewhere.

use std::fmt::Write;

/// Clock ticks per second of `/proc/self/stat` times; 100 on every Linux kubesd targets.
const TICKS_PER_SECOND: f64 = 100.0;

/// Appends process metrics to `out`.
pub fn render(out: &mut String) {
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        memory(out, &status);
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat") {
        cpu_start_threads(out, &stat);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        gauge(
            out,
            "process_open_fds",
            "Open file descriptors.",
            fds.count(),
        );
    }
    if let Some(max) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|limits| max_open_files(&limits))
    {
        let help = "Maximum number of open file descriptors.";
        gauge(out, "process_max_fds", help, max);
    }
}

/// One gauge with its help and type lines.
fn gauge(out: &mut String, name: &str, help: &str, value: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
    );
}

/// Resident, peak resident and virtual memory, from `/proc/self/status`.
fn memory(out: &mut String, status: &str) {
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
            gauge(out, name, help, kb * 1024);
        }
    }
}

/// CPU time, start time and threads, from `/proc/self/stat`.
fn cpu_start_threads(out: &mut String, stat: &str) {
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
    // starttime (field 22): clock ticks after boot; boot time is in /proc/stat.
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|stat| {
        stat.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    let started = fields.get(19).and_then(|t| t.parse::<f64>().ok());
    if let (Some(boot), Some(started)) = (boot, started) {
        let help = "Start time of the process since unix epoch in seconds.";
        gauge(
            out,
            "process_start_time_seconds",
            help,
            boot + started / TICKS_PER_SECOND,
        );
    }
    if let Some(threads) = fields.get(17).and_then(|t| t.parse::<u64>().ok()) {
        gauge(out, "process_threads", "Threads.", threads);
    }
}

/// The soft limit of `Max open files` in `/proc/self/limits` ("unlimited" is left out).
fn max_open_files(limits: &str) -> Option<u64> {
    limits
        .lines()
        .find_map(|l| l.strip_prefix("Max open files"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|soft| soft.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_usual_process_metrics_on_linux() {
        let mut out = String::new();
        render(&mut out);
        for name in [
            "process_start_time_seconds",
            "process_cpu_seconds_total",
            "process_open_fds",
            "process_max_fds",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
        ] {
            let value = out
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")))
                .unwrap_or_else(|| panic!("{name} in {out}"));
            assert!(
                value.parse::<f64>().is_ok_and(|v| v >= 0.0),
                "{name} {value}"
            );
        }
        let start = out
            .lines()
            .find_map(|l| l.strip_prefix("process_start_time_seconds "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        assert!(
            start > now - 3600.0 && start <= now + 1.0,
            "{start} vs {now}"
        );
    }

    #[test]
    fn reads_the_soft_limit_of_open_files() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            1024                 524288               files\n";
        assert_eq!(max_open_files(limits), Some(1024));
        assert_eq!(
            max_open_files(
                "Max open files            unlimited            unlimited            files"
            ),
            None
        );
    }
}
