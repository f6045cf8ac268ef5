//! A Kubernetes resource quantity (`500m`, `2`, `1.5`, `1e3`, `1Ki`) read as a CPU
//! amount in millicores, as `resource.Quantity.MilliValue()` reads it: rounded up to
//! the next whole millicore.

/// The quantity `text` in thousandths (millicores for CPU), or `None` when it is not a
/// quantity Kubernetes accepts, is negative, or is too large to count.
fn milli_value(text: &str) -> Option<u64> {
    let text = text.trim();
    let number_end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(number_end);
    let number = number.strip_prefix('+').unwrap_or(number);
    if number.is_empty() || number == "." || number.matches('.').count() > 1 {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let milli = value * 1000.0 * suffix_factor(suffix)?;
    // Below a millicore's billionth is rounding noise of the float, not a request.
    let rounded = (milli - 1e-9).ceil().max(0.0);
    (rounded.is_finite() && rounded < u64::MAX as f64).then_some(rounded as u64)
}

/// A CPU quantity in millicores as a container keeps it: 4 bytes, enough for four
/// million cores (a larger request counts as that many).
pub(crate) fn cpu_millis(text: &str) -> Option<u32> {
    milli_value(text).map(|milli| u32::try_from(milli).unwrap_or(u32::MAX))
}

/// What a quantity's suffix multiplies by: a decimal SI or binary suffix, or a decimal
/// exponent (`e3`, `E-2`).
fn suffix_factor(suffix: &str) -> Option<f64> {
    let factor = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => {
            let digits = exponent
                .strip_prefix('e')
                .or_else(|| exponent.strip_prefix('E'))?;
            let power: i32 = digits.parse().ok()?;
            if !(-18..=18).contains(&power) {
                return None;
            }
            10f64.powi(power)
        }
    };
    Some(factor)
}

#[cfg(test)]
mod tests {
    use super::milli_value;

    #[test]
    fn cpu_quantities_read_in_millicores_rounded_up() {
        for (text, milli) in [
            ("500m", 500),
            ("2", 2000),
            ("1.5", 1500),
            ("0.1", 100),
            (".5", 500),
            ("+1", 1000),
            ("1e3", 1_000_000),
            ("1E-3", 1),
            ("250000u", 250),
            ("1n", 1),
            ("1k", 1_000_000),
            ("1Ki", 1_024_000),
            (" 100m ", 100),
            ("0", 0),
            ("0.0001", 1),
        ] {
            assert_eq!(milli_value(text), Some(milli), "{text}");
        }
    }

    #[test]
    fn a_cpu_request_past_four_million_cores_counts_as_that_many() {
        assert_eq!(super::cpu_millis("250m"), Some(250));
        assert_eq!(super::cpu_millis("1e12"), Some(u32::MAX));
    }

    #[test]
    fn what_is_not_a_quantity_reads_as_none() {
        for text in [
            "", "m", "-1", "1.2.3", "two", "1x", "1e", "1e99", "1Zi", ".",
        ] {
            assert_eq!(milli_value(text), None, "{text}");
        }
    }
}
