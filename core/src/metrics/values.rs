//! The kinds of metric: counters and gauges updated with one relaxed atomic add, and
//! the same split by a `reason` or `mode` label; and `metric_set!`, which defines a
//! struct of them with each one's name and help.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// A counter: only goes up.
#[derive(Default, Debug)]
pub struct Counter(AtomicU64);

impl Counter {
    /// A counter at zero.
    pub(crate) const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current count.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn sample(&self) -> i64 {
        i64::try_from(self.get()).unwrap_or(i64::MAX)
    }
}

/// A gauge: a value that goes up and down.
#[derive(Default, Debug)]
pub struct Gauge(AtomicI64);

impl Gauge {
    /// A gauge at zero.
    pub(crate) const fn new() -> Gauge {
        Gauge(AtomicI64::new(0))
    }

    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1);
    }

    /// Adds `n` (negative to subtract).
    pub fn add(&self, n: i64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Sets the value.
    pub fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }

    fn sample(&self) -> i64 {
        self.get()
    }
}

/// How a metric shows its samples: its Prometheus type, and each value with the value
/// of its `reason` (or [`Samples::LABEL`]) label if it has one.
pub(crate) trait Samples {
    /// Prometheus' type name.
    const TYPE: &'static str;

    /// The name of the label that splits the samples, if they are split.
    const LABEL: &'static str = "reason";

    /// Calls `f` with each sample: `reason` label value (None: no such label), value.
    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64));
}

impl Samples for Counter {
    const TYPE: &'static str = "counter";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        f(None, self.sample());
    }
}

impl Samples for Gauge {
    const TYPE: &'static str = "gauge";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        f(None, self.sample());
    }
}

/// The values of a `reason` label: an enum declared with `reasons!`.
pub trait Reason: Copy + PartialEq + 'static {
    /// Every value, in the order the samples are rendered.
    const ALL: &'static [Self];

    /// The label value.
    fn as_str(self) -> &'static str;
}

/// A counter split by a reason label (one count per value of `R`), with its sum.
#[derive(Debug)]
pub struct ReasonCounter<R> {
    counts: [AtomicU64; MAX_REASONS],
    reason: std::marker::PhantomData<R>,
}

/// The most values a reason label has (checked by a test).
pub(crate) const MAX_REASONS: usize = 16;

impl<R: Reason> ReasonCounter<R> {
    /// Every count at zero.
    pub(crate) const fn new() -> Self {
        ReasonCounter {
            counts: [const { AtomicU64::new(0) }; MAX_REASONS],
            reason: std::marker::PhantomData,
        }
    }

    /// Adds one for `reason`.
    pub fn inc(&self, reason: R) {
        self.add(reason, 1);
    }

    /// Adds `n` for `reason`.
    pub fn add(&self, reason: R, n: u64) {
        if let Some(c) = self.counts.get(Self::index(reason)) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The count of `reason`.
    pub fn get(&self, reason: R) -> u64 {
        self.counts
            .get(Self::index(reason))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The sum over every reason.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    fn index(reason: R) -> usize {
        R::ALL.iter().position(|r| *r == reason).unwrap_or(0)
    }
}

impl<R: Reason> Default for ReasonCounter<R> {
    fn default() -> Self {
        ReasonCounter::new()
    }
}

impl<R: Reason> Samples for ReasonCounter<R> {
    const TYPE: &'static str = "counter";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        for &reason in R::ALL {
            f(
                Some(reason.as_str()),
                i64::try_from(self.get(reason)).unwrap_or(i64::MAX),
            );
        }
    }
}

/// A gauge split by a `mode` label (one value per value of `R`): how many of
/// something are in each mode now.
#[derive(Debug)]
pub struct ModeGauge<R> {
    values: [AtomicI64; MAX_REASONS],
    mode: std::marker::PhantomData<R>,
}

impl<R: Reason> ModeGauge<R> {
    /// Every value at zero.
    pub(crate) const fn new() -> Self {
        ModeGauge {
            values: [const { AtomicI64::new(0) }; MAX_REASONS],
            mode: std::marker::PhantomData,
        }
    }

    /// Adds `n` (negative to subtract) to `mode`'s value.
    pub fn add(&self, mode: R, n: i64) {
        let i = R::ALL.iter().position(|r| *r == mode).unwrap_or(0);
        if let Some(v) = self.values.get(i) {
            v.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The value of `mode`.
    pub fn get(&self, mode: R) -> i64 {
        let i = R::ALL.iter().position(|r| *r == mode).unwrap_or(0);
        self.values.get(i).map_or(0, |v| v.load(Ordering::Relaxed))
    }
}

impl<R: Reason> Default for ModeGauge<R> {
    fn default() -> Self {
        ModeGauge::new()
    }
}

impl<R: Reason> Samples for ModeGauge<R> {
    const TYPE: &'static str = "gauge";
    const LABEL: &'static str = "mode";

    fn each(&self, f: &mut dyn FnMut(Option<&'static str>, i64)) {
        for &mode in R::ALL {
            f(Some(mode.as_str()), self.get(mode));
        }
    }
}

/// Defines a struct of metrics and, from the same list, how each is rendered: field,
/// kind ([`Counter`] or [`Gauge`]), Prometheus name and help text, written once.
macro_rules! metric_set {
    (
        $(#[$meta:meta])*
        pub struct $set:ident {
            $( $(#[doc = $doc:literal])* $field:ident: $kind:ty = $name:literal, $help:literal; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug)]
        pub struct $set {
            $( $(#[doc = $doc])* pub $field: $kind, )*
        }

        impl $set {
            /// Every metric at zero.
            pub const fn new() -> $set {
                $set { $( $field: <$kind>::new(), )* }
            }

            /// Calls `f` with each metric's name, type and help, and one of its samples
            /// ((label name, label value), value), in definition order.
            pub(crate) fn each_sample(&self, f: &mut dyn FnMut(&'static str, &'static str, &'static str, Option<(&'static str, &'static str)>, i64)) {
                $( self.$field.each(&mut |value_of_label, value| f($name, <$kind as Samples>::TYPE, $help, value_of_label.map(|v| (<$kind as Samples>::LABEL, v)), value)); )*
            }
        }

        impl Default for $set {
            fn default() -> $set {
                $set::new()
            }
        }
    };
}

pub(crate) use metric_set;
