//! The flood bench's table: one [`Row`] per scenario, printed as it comes.

use super::flood_meter::Measured;

pub struct Row {
    pub scenario: String,
    pub subs: usize,
    pub events: usize,
    pub m: Measured,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub extra: String,
}

pub fn header() {
    println!(
        "| {:<12} | {:>4} | {:>8} | {:>7} | {:>10} | {:>7} | {:>9} | {:>9} | {:>8} | {:>8} | {:>8} | notes",
        "scenario",
        "subs",
        "events",
        "wall_s",
        "events/s",
        "cpu_s",
        "cpu_us/ev",
        "allocs/ev",
        "p50_ms",
        "p99_ms",
        "peak_mb",
    );
    println!(
        "|{}|------|----------|---------|------------|---------|-----------|-----------|----------|----------|----------|------",
        "-".repeat(14)
    );
}

impl Row {
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.m.wall_s
    }
    pub fn print(&self) {
        let ev = self.events.max(1) as f64;
        println!(
            "| {:<12} | {:>4} | {:>8} | {:>7.2} | {:>10.0} | {:>7.2} | {:>9.2} | {:>9.1} | {:>8.1} | {:>8.1} | {:>8.0} | {}; {}",
            self.scenario,
            self.subs,
            self.events,
            self.m.wall_s,
            self.events_per_s(),
            self.m.cpu_s,
            self.m.cpu_s * 1e6 / ev,
            self.m.allocs as f64 / ev,
            self.p50_ms,
            self.p99_ms,
            self.m.peak_rss_mb,
            self.extra,
            self.m.threads_note()
        );
    }
}
