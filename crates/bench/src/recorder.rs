//! What one virtual client records of its calls, and the measured window they share.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::McpClient;
use crate::config::{Config, op};
use crate::message::{CallError, Reply};
use crate::stats::Stats;
use crate::wire::{create_params, created_task};

/// The measured window and its budget, shared by the clients.
pub(crate) struct Window {
    pub(crate) start: Instant,
    pub(crate) end: Instant,
    pub(crate) budget: Option<AtomicU64>,
}

impl Window {
    /// Whether to start another iteration now; takes one from the budget once measuring.
    pub(crate) fn go(&self) -> bool {
        let now = Instant::now();
        if now >= self.end {
            return false;
        }
        match &self.budget {
            Some(b) if now >= self.start => b
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok(),
            _ => true,
        }
    }
}

/// One virtual client's view of a call: whether it counts, and its bookkeeping.
pub(crate) struct Recorder<'a> {
    pub(crate) stats: &'a mut Stats,
    pub(crate) measure_from: Instant,
}

impl Recorder<'_> {
    /// Do the call, record its latency (if it started in the measured window) or error.
    pub(crate) async fn call(
        &mut self,
        client: &mut McpClient,
        op: &'static str,
        method: &str,
        params: &Value,
    ) -> Result<(Reply, Instant), ()> {
        let started = Instant::now();
        let r = client.call(method, params).await;
        self.finish(op, started, r)
    }

    fn finish(
        &mut self,
        op: &'static str,
        started: Instant,
        r: Result<Reply, CallError>,
    ) -> Result<(Reply, Instant), ()> {
        let counts = started >= self.measure_from;
        match r {
            Ok(reply) => {
                if counts {
                    self.stats
                        .ok(op, reply.arrived.saturating_duration_since(started));
                    self.stats.last_done = Some(reply.arrived);
                }
                Ok((reply, started))
            }
            Err(e) => {
                if counts {
                    self.stats.error(op, &e);
                    self.stats.last_done = Some(Instant::now());
                }
                Err(())
            }
        }
    }

    /// Create a task (`tools/call` with `task`): its id, its `pollInterval` and when the
    /// call started; `None` when that failed (recorded).
    pub(crate) async fn create(
        &mut self,
        client: &mut McpClient,
        cfg: &Config,
        ms: u64,
    ) -> Option<(String, Option<u64>, Instant)> {
        let (reply, started) = self
            .call(
                client,
                op::CREATE,
                "tools/call",
                &create_params(cfg.revision, &cfg.tool, ms, cfg.ttl_ms),
            )
            .await
            .ok()?;
        match created_task(cfg.revision, &reply.result) {
            Ok((id, interval)) => Some((id, interval, started)),
            Err(e) => {
                self.bad(op::CREATE, started, e);
                None
            }
        }
    }

    /// Record a check that failed on an answer that was otherwise fine.
    pub(crate) fn bad(&mut self, op: &'static str, started: Instant, what: String) {
        if started >= self.measure_from {
            self.stats.error(op, &CallError::Malformed(what));
        }
    }

    pub(crate) fn derived(&mut self, op: &'static str, started: Instant, d: Duration) {
        if started >= self.measure_from {
            self.stats.ok(op, d);
        }
    }
}
