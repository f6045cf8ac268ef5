//! A member's weight, read from its pod as `membership.weight_from` says: every member
//! 1 by default, the value of a pod annotation, or the pod's CPU request in cores. A
//! missing or malformed value counts as 1 and is reported.

use crate::labels::{Labels, sanitize_label_name};
use crate::promconfig::WeightFrom;
use crate::targets::CPU_REQUEST_LABEL;

/// The weight of a member whose weight cannot be read.
pub const DEFAULT_WEIGHT: f64 = 1.0;

/// The largest weight taken: a share is proportional to weight, so a larger one would
/// hand one member every target of a fleet of thousands anyway.
pub const MAX_WEIGHT: f64 = 1.0e6;

/// Where a member pod's weight is read from its discovered labels (the pod role's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WeightSource {
    /// Every member weighs [`DEFAULT_WEIGHT`].
    Equal,
    /// The annotation of this name, as the pod role's label of it.
    Annotation {
        /// The annotation, as written in the config (for reports).
        name: String,
        /// `__meta_kubernetes_pod_annotation_<name sanitized>`.
        label: String,
    },
    /// The pod's CPU request, in cores ([`CPU_REQUEST_LABEL`], which the member watch's
    /// targets carry).
    CpuRequest,
}

impl WeightSource {
    /// The source `membership.weight_from` names.
    pub fn new(from: &WeightFrom) -> WeightSource {
        match from {
            WeightFrom::Equal => WeightSource::Equal,
            WeightFrom::Annotation(name) => WeightSource::Annotation {
                name: name.clone(),
                label: format!(
                    "__meta_kubernetes_pod_annotation_{}",
                    sanitize_label_name(name)
                ),
            },
            WeightFrom::CpuRequest => WeightSource::CpuRequest,
        }
    }

    /// The weight of the member pod `labels` describes, or why it counts as the
    /// default.
    pub fn weight(&self, labels: &Labels) -> Result<f64, String> {
        match self {
            WeightSource::Equal => Ok(DEFAULT_WEIGHT),
            WeightSource::Annotation { name, label } => {
                let Some(text) = labels.get(label) else {
                    return Err(format!("annotation {name:?} is missing"));
                };
                positive(text).ok_or_else(|| {
                    format!(
                        "annotation {name:?} is {text:?}, not a number above 0 and at most {MAX_WEIGHT}"
                    )
                })
            }
            WeightSource::CpuRequest => match labels.get(CPU_REQUEST_LABEL) {
                None => Err("its containers request no CPU".into()),
                Some(cores) => positive(cores).ok_or_else(|| {
                    format!(
                        "its CPU request is {cores} cores, not above 0 and at most {MAX_WEIGHT}"
                    )
                }),
            },
        }
    }
}

/// `text` as a weight: a number above 0 and at most [`MAX_WEIGHT`].
fn positive(text: &str) -> Option<f64> {
    let w = text.trim().parse::<f64>().ok()?;
    (w.is_finite() && w > 0.0 && w <= MAX_WEIGHT).then_some(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_gives_the_weight_and_a_bad_one_says_why() {
        let source = WeightSource::new(&WeightFrom::Annotation("kubesd.io/weight".into()));
        let with = |v: &str| {
            Labels::from_pairs([("__meta_kubernetes_pod_annotation_kubesd_io_weight", v)])
        };
        assert_eq!(source.weight(&with("2")), Ok(2.0));
        assert_eq!(source.weight(&with(" 0.5 ")), Ok(0.5));
        for bad in ["0", "-1", "two", "NaN", "inf", "1e9"] {
            let why = source.weight(&with(bad)).expect_err(bad);
            assert!(why.contains("kubesd.io/weight"), "{why}");
        }
        let why = source
            .weight(&Labels::from_pairs([("a", "b")]))
            .expect_err("missing");
        assert!(why.contains("missing"), "{why}");
        assert_eq!(
            WeightSource::new(&WeightFrom::Equal).weight(&with("9")),
            Ok(1.0)
        );
    }

    #[test]
    fn a_cpu_request_gives_the_weight_in_cores_and_none_says_why() {
        let source = WeightSource::new(&WeightFrom::CpuRequest);
        let with = |v: &str| Labels::from_pairs([(CPU_REQUEST_LABEL, v)]);
        assert_eq!(source.weight(&with("0.5")), Ok(0.5));
        assert_eq!(source.weight(&with("2")), Ok(2.0));
        let why = source.weight(&with("0")).expect_err("zero");
        assert!(why.contains("0 cores"), "{why}");
        let why = source
            .weight(&Labels::from_pairs([("a", "b")]))
            .expect_err("missing");
        assert!(why.contains("request no CPU"), "{why}");
    }
}
