//! What a run reports, as JSON (`--json`) or as text.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::config::{Config, Scenario, op};
use crate::stats::{Setup, Stats};

/// The figures of one operation. Latencies in milliseconds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OpReport {
    /// Successful operations measured.
    pub count: u64,
    /// Failed operations (errors and malformed answers).
    pub errors: u64,
    /// Successful operations per second.
    pub per_s: f64,
    /// Median latency.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// One class of errors.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorClass {
    /// How many.
    pub count: u64,
    /// The first one.
    pub example: String,
}

/// Every error of the run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Errors {
    /// All of them.
    pub total: u64,
    /// By class: `jsonrpc <code>`, `malformed`, `http <status>`, `transport`.
    pub by_class: BTreeMap<String, ErrorClass>,
}

/// The tasks created before measuring (`get`, `list`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SetupReport {
    /// Tasks created.
    pub tasks: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Creations per second while setting up.
    pub per_s: f64,
    /// Creations that failed.
    pub errors: u64,
}

/// CPU time over the measured window.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CpuReport {
    /// Seconds of CPU the bench used.
    pub bench_s: f64,
    /// Seconds of CPU the server used (with `--server-pid`).
    pub server_s: Option<f64>,
    /// The bench's CPU over the window's wall time, in percent of one core.
    pub bench_pct: f64,
    /// The server's, likewise.
    pub server_pct: Option<f64>,
    /// Microseconds of server CPU per operation of the scenario's figure (per creation,
    /// per `tasks/get`, per lifecycle); `None` without `--server-pid` or for a latency
    /// figure.
    pub server_us_per_op: Option<f64>,
    /// Whether the bench used more than half the server's CPU: the figure may then be
    /// the load generator's limit rather than the server's. `None` without `--server-pid`.
    pub load_generator_bound: Option<bool>,
}

/// The server's memory at the end (with `--server-pid`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryReport {
    /// `VmRSS`, KiB.
    pub rss_kib: u64,
    /// `VmHWM` (peak resident set), KiB.
    pub peak_rss_kib: u64,
}

/// The one number a scenario is about.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figure {
    /// What it is.
    pub name: String,
    /// Its value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// A whole run.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    /// `mcp-tasks bench`.
    pub tool: String,
    /// The server.
    pub url: String,
    /// The protocol generation spoken: `legacy` (2025-11-25) or `modern` (2026-07-28 with
    /// the tasks extension).
    pub era: String,
    /// The scenario.
    pub scenario: String,
    /// Virtual clients.
    pub concurrency: usize,
    /// Measuring time asked for, seconds.
    pub duration_s: f64,
    /// Warm-up, seconds.
    pub warmup_s: f64,
    /// Iterations asked for instead of a duration.
    pub requests: Option<u64>,
    /// `ms` of the work tool.
    pub work_ms: u64,
    /// Poll period (`lifecycle`).
    pub poll_ms: Option<u64>,
    /// K (`get`, `list`).
    pub tasks: Option<u64>,
    /// The measured window, seconds.
    pub measured_s: f64,
    /// The scenario's figure.
    pub figure: Figure,
    /// Figures per operation.
    pub ops: BTreeMap<String, OpReport>,
    /// Errors.
    pub errors: Errors,
    /// Setup.
    pub setup: Option<SetupReport>,
    /// `list`: average tasks per page.
    pub tasks_per_page: Option<f64>,
    /// Connections opened again after failures.
    pub reconnects: u64,
    /// CPU.
    pub cpu: CpuReport,
    /// The server's memory.
    pub server_memory: Option<MemoryReport>,
}

#[allow(clippy::cast_precision_loss)]
fn ms(ns: u64) -> f64 {
    (ns as f64 / 1e4).round() / 100.0
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The value below or at which `q` percent of the values lie: the middle of its bucket
/// (within 1/128 of the sample), kept within the smallest and largest bucket seen.
fn percentile(h: &Histogram<u64>, q: f64) -> u64 {
    if h.is_empty() {
        return 0;
    }
    h.median_equivalent(h.value_at_percentile(q))
        .clamp(h.min(), h.max())
}

fn op_report(h: &Histogram<u64>, errors: u64, secs: f64) -> OpReport {
    #[allow(clippy::cast_precision_loss)]
    let per_s = round2(h.len() as f64 / secs);
    OpReport {
        count: h.len(),
        errors,
        per_s,
        p50_ms: ms(percentile(h, 50.0)),
        p90_ms: ms(percentile(h, 90.0)),
        p99_ms: ms(percentile(h, 99.0)),
        max_ms: ms(h.max()),
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        mean_ms: ms(h.mean() as u64),
    }
}

/// Assemble the report of a run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_report(
    cfg: &Config,
    stats: Stats,
    measured: Duration,
    setup: Option<Setup>,
    bench_cpu: Duration,
    server_cpu: Option<Duration>,
    cpu_window: Duration,
    memory: Option<(u64, u64)>,
) -> Report {
    let secs = measured.as_secs_f64();
    let ops: BTreeMap<String, OpReport> = stats
        .ops
        .iter()
        .map(|(k, h)| {
            let e = stats.op_errors.get(k).copied().unwrap_or(0);
            ((*k).to_owned(), op_report(h, e, secs))
        })
        .collect();
    let errors = Errors {
        total: stats.errors.values().map(|c| c.count).sum(),
        by_class: stats
            .errors
            .iter()
            .map(|(k, c)| {
                (
                    k.clone(),
                    ErrorClass {
                        count: c.count,
                        example: c.example.clone(),
                    },
                )
            })
            .collect(),
    };
    // The scenario's figure: an operation's rate or its median.
    let (name, op_name, median, unit) = match cfg.scenario {
        Scenario::Create => ("task creations/s", op::CREATE, false, "1/s"),
        Scenario::Get => ("tasks/get/s", op::GET, false, "1/s"),
        Scenario::Lifecycle | Scenario::LifecyclePollInterval => {
            ("lifecycles/s", op::LIFECYCLE, false, "1/s")
        }
        Scenario::ResultWait => ("result lateness p50", op::LATENESS, true, "ms"),
        Scenario::List => ("tasks/list page p50", op::LIST, true, "ms"),
    };
    let figure = Figure {
        name: name.into(),
        value: ops
            .get(op_name)
            .map_or(0.0, |o| if median { o.p50_ms } else { o.per_s }),
        unit: unit.into(),
    };
    let wall = cpu_window.as_secs_f64().max(1e-3);
    let bench_s = bench_cpu.as_secs_f64();
    let server_s = server_cpu.map(|d| d.as_secs_f64());
    let figure_count = ops.get(op_name).map_or(0, |o| o.count);
    #[allow(clippy::cast_precision_loss)]
    let server_us_per_op = server_s
        .filter(|_| !median && figure_count > 0)
        .map(|s| round2(s * 1e6 / figure_count as f64));
    let cpu = CpuReport {
        bench_s: round2(bench_s),
        server_s: server_s.map(round2),
        bench_pct: round2(100.0 * bench_s / wall),
        server_pct: server_s.map(|s| round2(100.0 * s / wall)),
        server_us_per_op,
        load_generator_bound: server_s.map(|s| bench_s > s / 2.0),
    };
    let tasks_per_page = (cfg.scenario == Scenario::List).then(|| {
        let pages = ops.get(op::LIST).map_or(0, |o| o.count);
        #[allow(clippy::cast_precision_loss)]
        let avg = if pages == 0 {
            0.0
        } else {
            stats.listed_tasks as f64 / pages as f64
        };
        round2(avg)
    });
    Report {
        tool: "mcp-tasks bench".into(),
        url: format!("http://{}{}", cfg.endpoint.authority, cfg.endpoint.path),
        era: crate::message::era_name(cfg.revision).into(),
        scenario: cfg.scenario.name().into(),
        concurrency: cfg.concurrency,
        duration_s: cfg.length.duration.as_secs_f64(),
        warmup_s: cfg.length.warmup.as_secs_f64(),
        requests: cfg.length.requests,
        work_ms: cfg.work(),
        poll_ms: (cfg.scenario == Scenario::Lifecycle).then_some(cfg.poll_ms),
        tasks: cfg.seeds().then_some(cfg.seeding.tasks),
        measured_s: round2(secs),
        figure,
        ops,
        errors,
        setup: setup.map(|s| SetupReport {
            tasks: s.tasks,
            seconds: round2(s.elapsed.as_secs_f64()),
            #[allow(clippy::cast_precision_loss)]
            per_s: round2(s.tasks as f64 / s.elapsed.as_secs_f64().max(1e-3)),
            errors: s.errors,
        }),
        tasks_per_page,
        reconnects: stats.reconnects,
        cpu,
        server_memory: memory.map(|(rss, hwm)| MemoryReport {
            rss_kib: rss,
            peak_rss_kib: hwm,
        }),
    }
}

impl Report {
    /// The report as text, for people.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "scenario {} ({} era) against {}: {} clients, work {} ms{}, measured {:.2} s after {} s warm-up",
            self.scenario,
            self.era,
            self.url,
            self.concurrency,
            self.work_ms,
            self.poll_ms
                .map(|p| format!(", polls every {p} ms"))
                .unwrap_or_default(),
            self.measured_s,
            self.warmup_s,
        );
        if let Some(st) = &self.setup {
            let _ = writeln!(
                s,
                "setup: {} tasks created in {:.1} s ({:.0}/s, {} errors)",
                st.tasks, st.seconds, st.per_s, st.errors
            );
        }
        let _ = writeln!(
            s,
            "\n{:<16} {:>9} {:>7} {:>11} {:>8} {:>8} {:>8} {:>8}",
            "operation", "count", "errors", "per s", "p50 ms", "p90 ms", "p99 ms", "max ms"
        );
        for (name, o) in &self.ops {
            let _ = writeln!(
                s,
                "{:<16} {:>9} {:>7} {:>11.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
                name, o.count, o.errors, o.per_s, o.p50_ms, o.p90_ms, o.p99_ms, o.max_ms
            );
        }
        if let Some(t) = self.tasks_per_page {
            let _ = writeln!(s, "tasks per page: {t:.1}");
        }
        let _ = writeln!(
            s,
            "\n{}: {} {}",
            self.figure.name, self.figure.value, self.figure.unit
        );
        let _ = writeln!(s, "errors: {}", self.errors.total);
        for (class, c) in &self.errors.by_class {
            let _ = writeln!(s, "  {class}: {} (first: {})", c.count, c.example);
        }
        if self.reconnects > 0 {
            let _ = writeln!(s, "reconnects: {}", self.reconnects);
        }
        let _ = write!(
            s,
            "cpu: bench {:.2} s ({:.0}% of a core)",
            self.cpu.bench_s, self.cpu.bench_pct
        );
        match (self.cpu.server_s, self.cpu.server_pct) {
            (Some(sv), Some(pct)) => {
                let _ = write!(s, ", server {sv:.2} s ({pct:.0}% of a core)");
                match self.cpu.server_us_per_op {
                    Some(us) => {
                        let _ = writeln!(s, ", {us:.1} µs per operation");
                    }
                    None => {
                        let _ = writeln!(s);
                    }
                }
            }
            _ => {
                let _ = writeln!(s, " (give --server-pid to compare with the server's)");
            }
        }
        if self.cpu.load_generator_bound == Some(true) {
            let _ = writeln!(
                s,
                "LOAD-GENERATOR-BOUND: the bench used more than half the server's CPU; the figures may be the bench's limit"
            );
        }
        if let Some(m) = &self.server_memory {
            let _ = writeln!(
                s,
                "server memory: {} KiB resident, {} KiB peak",
                m.rss_kib, m.peak_rss_kib
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact(sorted: &[u64], q: f64) -> u64 {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let rank = ((q / 100.0 * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    #[test]
    fn percentiles_are_within_one_percent_of_the_exact_sample() {
        let mut rng = fastrand::Rng::with_seed(7);
        // A latency-like sample: mostly ~1 ms, a tail up to 2 s, recorded by two clients.
        let mut values: Vec<u64> = (0..100_000)
            .map(|_| {
                let base = 200_000 + rng.u64(0..1_600_000);
                if rng.u8(0..100) == 0 {
                    base * rng.u64(1..1000)
                } else {
                    base
                }
            })
            .collect();
        let mut a = Stats::default();
        let mut b = Stats::default();
        for (i, &v) in values.iter().enumerate() {
            let s = if i % 2 == 0 { &mut a } else { &mut b };
            s.ok("op", Duration::from_nanos(v));
        }
        a.merge(b);
        let h = &a.ops["op"];
        values.sort_unstable();
        for q in [0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let want = exact(&values, q);
            let got = percentile(h, q);
            #[allow(clippy::cast_precision_loss)]
            let err = (got as f64 - want as f64).abs() / want as f64;
            assert!(err <= 1.0 / 100.0, "p{q}: got {got}, want {want}");
        }
        assert_eq!(h.len(), 100_000);
        let max = *values.last().unwrap();
        #[allow(clippy::cast_precision_loss)]
        let max_err = (h.max() as f64 - max as f64).abs() / max as f64;
        assert!(max_err <= 1.0 / 100.0, "max {} for {max}", h.max());
        assert!(percentile(h, 100.0) <= h.max());
    }

    #[test]
    fn small_values_are_exact_and_an_empty_histogram_reads_zero() {
        let mut s = Stats::default();
        for v in 1..=100 {
            s.ok("op", Duration::from_nanos(v));
        }
        let h = &s.ops["op"];
        assert_eq!(percentile(h, 50.0), 50);
        assert_eq!(percentile(h, 99.0), 99);
        assert_eq!((h.min(), h.max()), (1, 100));
        assert!((h.mean() - 50.5).abs() < 1e-9);
        let r = op_report(h, 0, 1.0);
        assert_eq!((r.count, r.per_s), (100, 100.0));

        let empty = Stats::default();
        let mut e = Stats::default();
        e.merge(empty);
        let h = e.ops.entry("op").or_insert_with(crate::stats::histogram);
        assert_eq!((percentile(h, 50.0), h.max()), (0, 0));

        // Beyond the range: counted as its top.
        let mut s = Stats::default();
        s.ok("op", Duration::MAX);
        let h = &s.ops["op"];
        assert_eq!(h.len(), 1);
        assert!(h.max() >= crate::stats::MAX_LATENCY_NS, "{}", h.max());
    }
}
