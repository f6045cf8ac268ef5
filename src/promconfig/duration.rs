//! Prometheus' durations (`model.Duration`): parsed as it parses them (`1h30m`, `15s`,
//! `100ms`, `2d`, `1w`, `1y`) and written back as it writes them, because seeded labels
//! such as `__scrape_interval__` carry that text.

use std::time::Duration;

const UNITS: [(&str, u64); 7] = [
    ("y", 365 * 24 * 3_600_000),
    ("w", 7 * 24 * 3_600_000),
    ("d", 24 * 3_600_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Parses a Prometheus duration: one or more `<number><unit>`, units in decreasing
/// order, each at most once; `0` alone is zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration such as 15s, 1m30s or 100ms");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text;
    let mut total: u64 = 0;
    let mut next_unit = 0;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        // `ms` before `m`: the longer unit name first.
        let (index, (unit, millis)) = UNITS
            .iter()
            .enumerate()
            .skip(next_unit)
            .filter(|(_, (u, _))| rest.starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())
            .ok_or_else(bad)?;
        rest = &rest[unit.len()..];
        next_unit = index + 1;
        total = number
            .checked_mul(*millis)
            .and_then(|ms| total.checked_add(ms))
            .ok_or_else(bad)?;
    }
    Ok(Duration::from_millis(total))
}

/// `d` as Prometheus writes it: `1m`, `1m30s`, `90d` (years and weeks only when exact).
pub fn format_duration(d: Duration) -> String {
    let mut ms = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (i, (unit, mult)) in UNITS.iter().enumerate() {
        let exact_only = i < 2;
        if exact_only && ms % mult != 0 {
            continue;
        }
        let v = ms / mult;
        if v > 0 {
            out.push_str(&format!("{v}{unit}"));
            ms -= v * mult;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_as_prometheus() {
        for (text, ms, back) in [
            ("15s", 15_000, "15s"),
            ("1m30s", 90_000, "1m30s"),
            ("90s", 90_000, "1m30s"),
            ("100ms", 100, "100ms"),
            ("1h", 3_600_000, "1h"),
            ("2w", 14 * 86_400_000, "2w"),
            ("90d", 90 * 86_400_000, "90d"),
            ("0", 0, "0s"),
            ("5m", 300_000, "5m"),
        ] {
            let d = parse_duration(text).expect(text);
            assert_eq!(d.as_millis(), ms, "{text}");
            assert_eq!(format_duration(d), back, "{text}");
        }
        for bad in ["", "1", "s", "1x", "1s1m", "1m1m", "-1s", "1.5s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
