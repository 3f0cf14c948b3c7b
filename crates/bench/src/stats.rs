//! What a run measures: the figures of each virtual client ([`Stats`], latency
//! histograms and error counts) and of the setup ([`Setup`]). Filled by the run
//! (`scenario.rs`), summed up by the report (`report.rs`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::message::CallError;

/// Counts of one kind of error, with one example.
#[derive(Debug, Clone, Default)]
pub struct ErrorCount {
    /// How many.
    pub count: u64,
    /// The first one's text.
    pub example: String,
}

/// The largest latency recorded (ns), about 18 minutes: larger values count as it.
pub(crate) const MAX_LATENCY_NS: u64 = (1 << 40) - 1;

/// An empty latency histogram (nanoseconds, up to [`MAX_LATENCY_NS`]): two significant
/// digits, so that every percentile is within 1/128 (0.8 %) of the sample, in 35 KiB.
pub(crate) fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 2).expect("valid histogram bounds")
}

/// What one virtual client measured.
#[derive(Debug, Default)]
pub struct Stats {
    /// Latency per operation.
    pub ops: BTreeMap<&'static str, Histogram<u64>>,
    /// Errors per operation.
    pub op_errors: BTreeMap<&'static str, u64>,
    /// Errors per class (`jsonrpc -32602`, `malformed`, ...).
    pub errors: BTreeMap<String, ErrorCount>,
    /// When the last measured operation ended.
    pub last_done: Option<Instant>,
    /// `tasks/list`: tasks received over all pages.
    pub listed_tasks: u64,
    /// Connections opened again after a failure.
    pub reconnects: u64,
}

impl Stats {
    pub(crate) fn ok(&mut self, op: &'static str, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.ops
            .entry(op)
            .or_insert_with(histogram)
            .saturating_record(ns);
    }

    pub(crate) fn error(&mut self, op: &'static str, e: &CallError) {
        *self.op_errors.entry(op).or_default() += 1;
        self.ops.entry(op).or_insert_with(histogram);
        let c = self.errors.entry(e.class()).or_default();
        if c.count == 0 {
            c.example = format!("{op}: {e}");
        }
        c.count += 1;
    }

    /// Add another client's figures.
    pub fn merge(&mut self, other: Stats) {
        for (k, h) in other.ops {
            // Of one range: adding cannot run out of it.
            self.ops
                .entry(k)
                .or_insert_with(histogram)
                .add(&h)
                .expect("histograms of one range add up");
        }
        for (k, n) in other.op_errors {
            *self.op_errors.entry(k).or_default() += n;
        }
        for (k, c) in other.errors {
            let mine = self.errors.entry(k).or_default();
            if mine.count == 0 {
                mine.example = c.example;
            }
            mine.count += c.count;
        }
        self.last_done = self.last_done.max(other.last_done);
        self.listed_tasks += other.listed_tasks;
        self.reconnects += other.reconnects;
    }
}

/// What setting up created.
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Tasks created.
    pub tasks: u64,
    /// How long it took.
    pub elapsed: Duration,
    /// Creations that failed.
    pub errors: u64,
    /// The first failure.
    pub example: Option<String>,
}
