//! What the four kinds share: their metadata, the scrape limits and histogram settings
//! each spec inlines, and a Kubernetes quantity kept as written.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, de};

use crate::model::json::null_default;

/// The `metadata` fields translation and selection read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MonitorMeta {
    /// `metadata.name`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// `metadata.namespace`.
    #[serde(deserialize_with = "null_default")]
    pub namespace: String,
    /// `metadata.labels`, which the section's selectors match.
    #[serde(deserialize_with = "null_default")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.resourceVersion`.
    #[serde(deserialize_with = "null_default")]
    pub resource_version: String,
}

/// The limits and protocol settings every spec inlines.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct ScrapeLimits {
    /// `sampleLimit`.
    pub sample_limit: Option<u64>,
    /// `targetLimit`.
    pub target_limit: Option<u64>,
    /// `labelLimit`.
    pub label_limit: Option<u64>,
    /// `labelNameLengthLimit`.
    pub label_name_length_limit: Option<u64>,
    /// `labelValueLengthLimit`.
    pub label_value_length_limit: Option<u64>,
    /// `keepDroppedTargets`.
    pub keep_dropped_targets: Option<u64>,
    /// `scrapeProtocols`, in order of preference.
    #[serde(deserialize_with = "null_default")]
    pub scrape_protocols: Vec<String>,
    /// `fallbackScrapeProtocol`.
    pub fallback_scrape_protocol: Option<String>,
    /// The native histogram settings (`NativeHistogramConfig`, inlined).
    #[serde(flatten)]
    pub histograms: NativeHistogramConfig,
    /// `scrapeClass`: the scrape class whose defaults apply.
    pub scrape_class: Option<String>,
}

/// `NativeHistogramConfig`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct NativeHistogramConfig {
    /// `scrapeClassicHistograms`.
    pub scrape_classic_histograms: Option<bool>,
    /// `nativeHistogramBucketLimit`.
    pub native_histogram_bucket_limit: Option<u64>,
    /// `nativeHistogramMinBucketFactor`, a quantity.
    pub native_histogram_min_bucket_factor: Option<Quantity>,
    /// `convertClassicHistogramsToNHCB`.
    #[serde(rename = "convertClassicHistogramsToNHCB")]
    pub convert_classic_histograms_to_nhcb: Option<bool>,
}

/// A Kubernetes quantity (`1.5`, `500m`, `2Ki`), kept as written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Quantity(pub String);

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Quantity, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Int(i64),
            Float(f64),
        }
        match Written::deserialize(d) {
            Ok(Written::Text(s)) => Ok(Quantity(s)),
            Ok(Written::Int(n)) => Ok(Quantity(n.to_string())),
            Ok(Written::Float(f)) => Ok(Quantity(f.to_string())),
            Err(_) => Err(de::Error::custom("expected a quantity such as 1.5 or 500m")),
        }
    }
}

impl Quantity {
    /// Its value as a float, as Go's `AsApproximateFloat64`: a decimal number with an
    /// optional SI (`m`, `k`, `M`, `G`, `T`, `P`, `E`) or binary (`Ki` ... `Ei`) suffix,
    /// or an exponent (`1e3`). `None` if it is not one.
    pub fn as_f64(&self) -> Option<f64> {
        let text = self.0.trim();
        let suffixes: [(&str, f64); 13] = [
            ("Ki", 1024f64),
            ("Mi", 1024f64.powi(2)),
            ("Gi", 1024f64.powi(3)),
            ("Ti", 1024f64.powi(4)),
            ("Pi", 1024f64.powi(5)),
            ("Ei", 1024f64.powi(6)),
            ("m", 1e-3),
            ("k", 1e3),
            ("M", 1e6),
            ("G", 1e9),
            ("T", 1e12),
            ("P", 1e15),
            ("E", 1e18),
        ];
        for (suffix, factor) in suffixes {
            if let Some(number) = text.strip_suffix(suffix) {
                return decimal(number).map(|n| n * factor);
            }
        }
        text.parse::<f64>().ok().filter(|f| f.is_finite())
    }
}

/// A plain decimal number (sign, digits, one point).
fn decimal(text: &str) -> Option<f64> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    let plain = !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.matches('.').count() <= 1;
    if plain { text.parse().ok() } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kubernetes_writes_them() {
        for (text, value) in [
            ("1.1", Some(1.1)),
            ("500m", Some(0.5)),
            ("2Ki", Some(2048.0)),
            ("3k", Some(3000.0)),
            ("1e3", Some(1000.0)),
            ("abc", None),
            ("1.2.3m", None),
        ] {
            assert_eq!(Quantity(text.into()).as_f64(), value, "{text}");
        }
    }
}
