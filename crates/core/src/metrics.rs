//! [`Metrics`]: the Prometheus metrics of one server, served at `GET /metrics`.
//!
//! Built on `prometheus-client` (the Prometheus organisation's Rust client) rather than
//! the `metrics` facade: its [`Registry`] is an explicit value, not a process-wide
//! recorder, so every server (and every server of a test process) has its own counters.
//!
//! Names and labels follow the Prometheus conventions: counters end in `_total`,
//! durations are `_seconds` histograms, and no label takes an unbounded set of values
//! (no task ids, no principals; tool names come from the server's fixed tool set, other
//! values become `other`).
//!
//! Spec (security, resource management): receivers SHOULD "Implement monitoring and
//! alerting for resource usage"; (audit and logging): receivers SHOULD "Monitor for
//! suspicious patterns (e.g., many failed task lookups, excessive polling)"
//! (`mcp_tasks_failed_lookups_total`, `mcp_tasks_requests_total{method="tasks/get"}`).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use mcp_tasks_proto::{Revision, methods};
use parking_lot::{Mutex, RwLock};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::record::TaskRecord;
use crate::status::TaskStatus;

mod scrape;

/// The content type of [`Metrics::render`]'s output (the OpenMetrics text format, which
/// Prometheus reads).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every status, in the order of the `mcp_tasks_tasks` gauge.
const STATUSES: [TaskStatus; 5] = [
    TaskStatus::Working,
    TaskStatus::InputRequired,
    TaskStatus::Completed,
    TaskStatus::Failed,
    TaskStatus::Cancelled,
];

/// The methods a request metric is labelled with by name; any other is `other`.
const KNOWN_METHODS: &[&str] = &[
    methods::INITIALIZE,
    methods::PING,
    methods::TOOLS_LIST,
    methods::TOOLS_CALL,
    methods::TASKS_GET,
    methods::TASKS_RESULT,
    methods::TASKS_LIST,
    methods::TASKS_CANCEL,
];

/// The label of a method: its name when known, else `other`.
pub fn method_label(method: &str) -> &'static str {
    KNOWN_METHODS
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// The request metrics of one (method label, era) pair, taken from their families at its
/// first request and kept: a request then records without hashing its labels into the
/// families' maps (~1 % of a `tasks/get`'s instructions). They share the families' series.
#[derive(Default)]
struct RequestSeries {
    duration: OnceLock<Histogram>,
    ok: OnceLock<Counter>,
    error: OnceLock<Counter>,
}

/// The place of `(method, revision)` among the [`RequestSeries`].
fn series_index(method: &str, revision: Revision) -> usize {
    let m = KNOWN_METHODS
        .iter()
        .position(|k| *k == method)
        .unwrap_or(KNOWN_METHODS.len());
    let r = Revision::ALL
        .iter()
        .position(|x| *x == revision)
        .unwrap_or(0);
    m * Revision::ALL.len() + r
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusTool {
    status: &'static str,
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodOutcome {
    method: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodEraOutcome {
    method: &'static str,
    era: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: &'static str,
    era: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PatternLabel {
    pattern: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabel {
    op: &'static str,
}

/// Why a request was refused before it reached a handler (the `reason` label of
/// `mcp_tasks_rejected_requests_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// No or an unknown bearer token (401).
    Auth,
    /// A foreign `Origin` (403).
    Origin,
    /// A body over the limit (413).
    BodyTooLarge,
    /// A resource limit: too many tasks, sessions or connections.
    Limit,
    /// A rate limit (`--rate-limit`): -32029, HTTP 429.
    RateLimited,
    /// Anything else refused (rates, malformed framing).
    Other,
}

impl Rejection {
    fn label(self) -> &'static str {
        match self {
            Rejection::Auth => "auth",
            Rejection::Origin => "origin",
            Rejection::BodyTooLarge => "body_too_large",
            Rejection::Limit => "limit",
            Rejection::RateLimited => "rate_limited",
            Rejection::Other => "other",
        }
    }
}

/// What the metrics remember of a task this process runs: its tool and since when it
/// waits for input.
struct Live {
    tool: String,
    input_since_ms: Option<i64>,
}

fn seconds(ms: i64) -> f64 {
    // Millisecond precision: exact enough for second-scale buckets.
    #[allow(clippy::cast_precision_loss)]
    let s = ms.max(0) as f64 / 1000.0;
    s
}

struct Inner {
    registry: RwLock<Registry>,
    tasks: Family<StatusLabel, Gauge>,
    transitions: Family<StatusTool, Counter>,
    task_duration: Family<StatusTool, Histogram>,
    input_required: Histogram,
    requests: Family<MethodEraOutcome, Counter>,
    request_duration: Family<MethodLabel, Histogram>,
    /// One per (method label, era): see [`series_index`].
    request_series: Box<[RequestSeries]>,
    upstream_restarts: Counter,
    upstream_calls: Family<MethodOutcome, Histogram>,
    result_waits: Gauge,
    http_sessions: Gauge,
    sse_streams: Gauge,
    failed_lookups: Counter,
    expirations: Counter,
    rejected: Family<ReasonLabel, Counter>,
    suspicious: Family<PatternLabel, Counter>,
    audit_dropped: Counter,
    commit_batch: Histogram,
    store_errors: Family<OpLabel, Counter>,
    store_ops: Family<OpLabel, Histogram>,
    live: Mutex<HashMap<String, Live>>,
    tools: RwLock<HashSet<String>>,
}

/// The metrics of one server. Cheap to clone; clones share the counters.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(Metrics, |s| { live_tasks: s.inner.live.lock().len() });

mcp_tasks_proto::default_is_new!(Metrics);

fn duration_histogram() -> Histogram {
    // 1 ms .. ~ 4.7 h.
    Histogram::new(exponential_buckets(0.001, 4.0, 12))
}

fn request_histogram() -> Histogram {
    // 0.5 ms .. ~ 65 s.
    Histogram::new(exponential_buckets(0.0005, 4.0, 10))
}

impl Metrics {
    /// Fresh metrics in a registry of their own.
    pub fn new() -> Self {
        let inner = Inner {
            registry: RwLock::new(Registry::default()),
            tasks: Family::default(),
            transitions: Family::default(),
            task_duration: Family::new_with_constructor(duration_histogram),
            input_required: duration_histogram(),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(request_histogram),
            request_series: (0..(KNOWN_METHODS.len() + 1) * Revision::ALL.len())
                .map(|_| RequestSeries::default())
                .collect(),
            upstream_restarts: Counter::default(),
            upstream_calls: Family::new_with_constructor(request_histogram),
            result_waits: Gauge::default(),
            http_sessions: Gauge::default(),
            sse_streams: Gauge::default(),
            failed_lookups: Counter::default(),
            expirations: Counter::default(),
            rejected: Family::default(),
            suspicious: Family::default(),
            audit_dropped: Counter::default(),
            commit_batch: Histogram::new(exponential_buckets(1.0, 2.0, 10)),
            store_errors: Family::default(),
            store_ops: Family::new_with_constructor(request_histogram),
            live: Mutex::new(HashMap::new()),
            tools: RwLock::new(HashSet::new()),
        };
        {
            let mut r = inner.registry.write();
            let i = &inner;
            r.register(
                "mcp_tasks_tasks",
                "Stored tasks by status (read from the store at scrape time)",
                i.tasks.clone(),
            );
            r.register(
                "mcp_tasks_task_transitions",
                "Task status changes by new status and tool (creation counts as working)",
                i.transitions.clone(),
            );
            r.register(
                "mcp_tasks_task_duration_seconds",
                "Time from a task's creation to its terminal status, by tool and status",
                i.task_duration.clone(),
            );
            r.register(
                "mcp_tasks_input_required_seconds",
                "Time a task spent in input_required, per stay",
                i.input_required.clone(),
            );
            r.register(
                "mcp_tasks_requests",
                "JSON-RPC requests answered, by method, era (2025-11-25 or 2026-07-28) and outcome (ok or error)",
                i.requests.clone(),
            );
            r.register(
                "mcp_tasks_request_duration_seconds",
                "Time to answer a JSON-RPC request, by method and era (2025-11-25 or 2026-07-28)",
                i.request_duration.clone(),
            );
            r.register(
                "mcp_tasks_gateway_upstream_restarts",
                "Gateway upstream connections started again after one ended or failed to start",
                i.upstream_restarts.clone(),
            );
            r.register(
                "mcp_tasks_gateway_upstream_call_duration_seconds",
                "Time of a gateway request to its upstream, by method and outcome (ok or error)",
                i.upstream_calls.clone(),
            );
            r.register(
                "mcp_tasks_result_waits",
                "tasks/result requests waiting for their task to finish",
                i.result_waits.clone(),
            );
            r.register(
                "mcp_tasks_http_sessions",
                "Live Streamable HTTP sessions",
                i.http_sessions.clone(),
            );
            r.register(
                "mcp_tasks_sse_streams",
                "Open SSE streams",
                i.sse_streams.clone(),
            );
            r.register(
                "mcp_tasks_failed_lookups",
                "tasks/get, tasks/result or tasks/cancel of an unknown or foreign task id",
                i.failed_lookups.clone(),
            );
            r.register(
                "mcp_tasks_task_expirations",
                "Tasks deleted because their TTL passed",
                i.expirations.clone(),
            );
            r.register(
                "mcp_tasks_rejected_requests",
                "Requests refused before a handler, by reason",
                i.rejected.clone(),
            );
            r.register(
                "mcp_tasks_suspicious_patterns",
                "Requesters seen with a suspicious pattern (many failed lookups, over-fast polling), once per requester and window, by pattern",
                i.suspicious.clone(),
            );
            r.register(
                "mcp_tasks_audit_dropped",
                "Audit lines dropped because the audit log's queue was full",
                i.audit_dropped.clone(),
            );
            r.register(
                "mcp_tasks_store_commit_batch_size",
                "Changes written per store commit (SQLite group commit)",
                i.commit_batch.clone(),
            );
            r.register(
                "mcp_tasks_store_errors",
                "Failed store operations, by operation",
                i.store_errors.clone(),
            );
            r.register(
                "mcp_tasks_store_operation_duration_seconds",
                "Time of a store operation, by operation (stores wrapped in Instrumented)",
                i.store_ops.clone(),
            );
        }
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The tool names used as label values (any other tool is `other`).
    pub fn set_tools<I, S>(&self, tools: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        *self.inner.tools.write() = tools.into_iter().map(Into::into).collect();
    }

    /// The `tool` label of a task wrapping `method` for `tool`: the tool's name when it
    /// is one of [`Self::set_tools`], the method's label for a task that is not a tool
    /// call, else `other`.
    fn tool_label(&self, method: &str, tool: Option<&str>) -> String {
        if method != methods::TOOLS_CALL {
            return method_label(method).to_owned();
        }
        match tool {
            Some(n) if self.inner.tools.read().contains(n) => n.to_owned(),
            _ => "other".to_owned(),
        }
    }

    /// A task was created (in `working`) for `tool` (the `name` of a `tools/call`).
    pub fn task_created(&self, rec: &TaskRecord, tool: Option<&str>) {
        let tool = self.tool_label(&rec.task.method, tool);
        self.inner
            .transitions
            .get_or_create(&StatusTool {
                status: rec.status.as_str(),
                tool: tool.clone(),
            })
            .inc();
        self.inner.live.lock().insert(
            rec.task.task_id.clone(),
            Live {
                tool,
                input_since_ms: None,
            },
        );
    }

    /// A transition of a task was applied; `rec` is the record after it.
    pub fn task_changed(&self, rec: &TaskRecord) {
        let now = rec.last_updated_at_ms;
        let tool = {
            let mut live = self.inner.live.lock();
            let entry = live.get_mut(&rec.task.task_id);
            let tool = entry
                .as_ref()
                .map_or_else(|| "other".to_owned(), |l| l.tool.clone());
            if let Some(l) = entry {
                if let Some(since) = l.input_since_ms.take() {
                    self.inner.input_required.observe(seconds(now - since));
                }
                if rec.status == TaskStatus::InputRequired {
                    l.input_since_ms = Some(now);
                }
            }
            if rec.status.is_terminal() {
                live.remove(&rec.task.task_id);
            }
            tool
        };
        let labels = StatusTool {
            status: rec.status.as_str(),
            tool,
        };
        if rec.status.is_terminal() {
            self.inner
                .task_duration
                .get_or_create(&labels)
                .observe(seconds(now - rec.task.created_at_ms));
        }
        self.inner.transitions.get_or_create(&labels).inc();
    }

    /// A task's TTL passed and it was deleted.
    pub fn task_expired(&self, task_id: &str) {
        self.inner.live.lock().remove(task_id);
        self.inner.expirations.inc();
    }

    /// A `tasks/get`, `tasks/result` or `tasks/cancel` named a task that does not exist
    /// or is not the requester's.
    pub fn failed_lookup(&self) {
        self.inner.failed_lookups.inc();
    }

    /// A requester showed a suspicious pattern (`failed_lookups`, `fast_polling`).
    pub fn suspicious(&self, pattern: &'static str) {
        self.inner
            .suspicious
            .get_or_create(&PatternLabel { pattern })
            .inc();
    }

    /// An audit line was dropped (its queue was full).
    pub fn audit_dropped(&self) {
        self.inner.audit_dropped.inc();
    }

    /// A `tasks/result` starts waiting; the wait ends when the guard drops.
    pub fn result_wait(&self) -> GaugeGuard {
        self.inner.result_waits.inc();
        GaugeGuard(self.inner.result_waits.clone())
    }

    /// A request was refused before a handler.
    pub fn rejected(&self, why: Rejection) {
        self.inner
            .rejected
            .get_or_create(&ReasonLabel {
                reason: why.label(),
            })
            .inc();
    }

    /// A JSON-RPC request of `method` served in `revision` starts (its dated name is the
    /// `era` label: one value per [`Revision`], whatever older version a session
    /// negotiated); call
    /// [`RequestTimer::finish`] with its result.
    pub fn request(&self, method: &str, revision: Revision) -> RequestTimer {
        RequestTimer {
            metrics: self.clone(),
            method: method_label(method),
            era: revision.as_str(),
            series: series_index(method, revision),
            started: Instant::now(),
        }
    }

    /// A gateway starts its upstream again (after the connection ended or a start failed).
    pub fn upstream_restart(&self) {
        self.inner.upstream_restarts.inc();
    }

    /// A gateway request `method` to its upstream took `took` (`ok`: answered with a
    /// result).
    pub fn upstream_call(&self, method: &str, took: Duration, ok: bool) {
        self.inner
            .upstream_calls
            .get_or_create(&MethodOutcome {
                method: method_label(method),
                outcome: if ok { "ok" } else { "error" },
            })
            .observe(took.as_secs_f64());
    }

    /// A store commit wrote `changes` changes.
    pub fn commit_batch(&self, changes: usize) {
        #[allow(clippy::cast_precision_loss)]
        self.inner.commit_batch.observe(changes as f64);
    }

    /// A store operation `op` took `took`.
    pub fn store_operation(&self, op: &'static str, took: Duration) {
        self.inner
            .store_ops
            .get_or_create(&OpLabel { op })
            .observe(took.as_secs_f64());
    }

    /// A store operation `op` failed.
    pub fn store_error(&self, op: &'static str) {
        self.inner.store_errors.get_or_create(&OpLabel { op }).inc();
    }

    /// The HTTP transport's live sessions and open SSE streams (set at scrape time).
    pub fn set_http(&self, sessions: usize, sse_streams: usize) {
        self.inner
            .http_sessions
            .set(i64::try_from(sessions).unwrap_or(i64::MAX));
        self.inner
            .sse_streams
            .set(i64::try_from(sse_streams).unwrap_or(i64::MAX));
    }
}

/// Decrements a gauge when dropped.
#[derive(Debug)]
pub struct GaugeGuard(Gauge);

impl Drop for GaugeGuard {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Times one request; see [`Metrics::request`].
pub struct RequestTimer {
    metrics: Metrics,
    method: &'static str,
    era: &'static str,
    /// Its place among [`Inner::request_series`].
    series: usize,
    started: Instant,
}

impl RequestTimer {
    /// The request was answered (`ok`: with a result, else with an error).
    pub fn finish(self, ok: bool) {
        let inner = &self.metrics.inner;
        let (method, era) = (self.method, self.era);
        let Some(series) = inner.request_series.get(self.series) else {
            return;
        };
        series
            .duration
            .get_or_init(|| {
                inner
                    .request_duration
                    .get_or_create(&MethodLabel { method, era })
                    .clone()
            })
            .observe(self.started.elapsed().as_secs_f64());
        let (counter, outcome) = if ok {
            (&series.ok, "ok")
        } else {
            (&series.error, "error")
        };
        counter
            .get_or_init(|| {
                inner
                    .requests
                    .get_or_create(&MethodEraOutcome {
                        method,
                        era,
                        outcome,
                    })
                    .clone()
            })
            .inc();
    }
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
