//! [`Guard`]: the rate limits, the watch for suspicious patterns and the audit trail of
//! one server, in one handle that the engine and every session share.
//!
//! Every refusal is answered with [`codes::RATE_LIMITED`](mcp_tasks_proto::codes::RATE_LIMITED),
//! counted (`mcp_tasks_rejected_requests_total{reason="rate_limited"}`) and audited
//! (`rate_limited`); a requester that reaches a suspicious figure is warned about once per
//! window (`tracing` warning with the principal and the figures) and counted
//! (`mcp_tasks_suspicious_patterns_total{pattern}`). Metrics never carry principals.

use std::sync::Arc;
use std::time::Duration;

use mcp_tasks_proto::ErrorObject;

use crate::audit::{Audit, Event, EventKind};
use crate::metrics::{Metrics, Rejection};
use crate::rate::{Kind, Pattern, RateLimitConfig, RateLimits, Refused, Watch};
use crate::requester::Requester;

struct Inner {
    limits: RateLimits,
    watch: Watch,
    audit: Audit,
    metrics: std::sync::OnceLock<Metrics>,
}

/// The limits, watch and audit trail of a server. Cheap to clone. [`Guard::default`]:
/// no limits, the default watch, `tracing` audit lines only.
#[derive(Clone)]
pub struct Guard {
    inner: Arc<Inner>,
}

mcp_tasks_proto::debug_non_exhaustive!(Guard, |s| {
    limits: s.inner.limits,
    watch: s.inner.watch,
    audit: s.inner.audit
});

impl Default for Guard {
    fn default() -> Self {
        Self::new(
            RateLimitConfig::default(),
            Watch::default(),
            Audit::default(),
        )
    }
}

impl Guard {
    /// A guard with these limits, watch and audit trail.
    pub fn new(limits: RateLimitConfig, watch: Watch, audit: Audit) -> Self {
        Self {
            inner: Arc::new(Inner {
                limits: RateLimits::new(limits),
                watch,
                audit,
                metrics: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Count into `metrics` (once).
    pub fn set_metrics(&self, metrics: Metrics) {
        self.inner.audit.set_metrics(metrics.clone());
        let _ = self.inner.metrics.set(metrics);
    }

    /// The audit trail.
    pub fn audit(&self) -> &Audit {
        &self.inner.audit
    }

    /// The limiters.
    pub fn limits(&self) -> &RateLimits {
        &self.inner.limits
    }

    /// Record an audit event.
    pub fn record(&self, event: Event) {
        self.inner.audit.record(event);
    }

    /// Record the audit event `event` makes, made only when it is written anywhere
    /// ([`Audit::wanted`]): what every request pays for the audit trail when it is off.
    pub fn record_with(&self, event: impl FnOnce() -> Event) {
        if self.inner.audit.wanted() {
            self.inner.audit.record(event());
        }
    }

    /// `who`'s `method` was refused by `r`: counted, logged at debug and audited; `r`.
    pub fn refused(&self, who: &Requester, method: &str, r: Refused) -> Refused {
        if let Some(m) = self.inner.metrics.get() {
            m.rejected(Rejection::RateLimited);
        }
        tracing::debug!(principal = who.principal.as_deref(), limit = r.kind.name(), method = %mcp_tasks_proto::logged::capped(method), retry_after_ms = r.retry_after_ms(), "request rate limited");
        self.record(
            Event::new(EventKind::RateLimited)
                .who(who)
                .method(method)
                .outcome("refused")
                .with("limit", r.kind.name())
                .with("retryAfterMs", r.retry_after_ms()),
        );
        r
    }

    /// A request of `who` for `method`: the `requests` limit.
    ///
    /// # Errors
    /// The JSON-RPC error of the refusal.
    pub fn admit_request(&self, who: &Requester, method: &str) -> Result<(), ErrorObject> {
        self.inner
            .limits
            .check(Kind::Requests, &who.quota_key())
            .map_err(|r| self.refused(who, method, r).to_error())
    }

    /// A task creation by `who`: the `create` limit.
    ///
    /// # Errors
    /// The refusal.
    pub fn admit_create(&self, who: &Requester, method: &str) -> Result<(), Refused> {
        // Without a `create` limit (the default) there is nothing to spend: no key made.
        if self.inner.limits.config().get(Kind::Create).is_none() {
            return Ok(());
        }
        self.inner
            .limits
            .check(Kind::Create, &who.quota_key())
            .map_err(|r| self.refused(who, method, r))
    }

    /// A task lookup by `who`: refused while its `lookup-failures` allowance is spent.
    ///
    /// # Errors
    /// The refusal.
    pub fn admit_lookup(&self, who: &Requester, method: &str) -> Result<(), Refused> {
        // No requester blocked (the usual case): no key made.
        if !self.inner.limits.any_blocked() {
            return Ok(());
        }
        self.inner
            .limits
            .lookup_allowed(&who.quota_key())
            .map_err(|r| self.refused(who, method, r))
    }

    /// A lookup of `task_id` by `who` named an unknown or foreign task: spent from its
    /// allowance, watched, audited.
    pub fn lookup_failed(&self, who: &Requester, method: &str, task_id: &str) {
        let key = who.quota_key();
        self.inner.limits.lookup_failed(&key);
        self.record(
            Event::new(EventKind::LookupFailed)
                .who(who)
                .task(task_id)
                .method(method)
                .outcome("not_found"),
        );
        if let Some(n) = self.inner.watch.record(Pattern::FailedLookups, &key) {
            self.suspicious(Pattern::FailedLookups, who, n);
        }
    }

    /// A `tasks/get` of `task_id` by `who`, whose poll interval is `interval`: watched
    /// when over-fast, refused when over-fast past the `poll` allowance.
    ///
    /// # Errors
    /// The refusal.
    pub fn poll(
        &self,
        who: &Requester,
        method: &str,
        task_id: &str,
        interval: Duration,
    ) -> Result<(), Refused> {
        let key = who.quota_key();
        let fast = self.inner.limits.poll(&key, task_id, interval);
        if !matches!(fast, Ok(false))
            && let Some(n) = self.inner.watch.record(Pattern::FastPolling, &key)
        {
            self.suspicious(Pattern::FastPolling, who, n);
        }
        fast.map(|_| ()).map_err(|r| self.refused(who, method, r))
    }

    fn suspicious(&self, pattern: Pattern, who: &Requester, count: u32) {
        if let Some(m) = self.inner.metrics.get() {
            m.suspicious(pattern.label());
        }
        let what = match pattern {
            Pattern::FailedLookups => "many lookups of unknown or foreign task ids",
            Pattern::FastPolling => "many polls faster than the tasks' pollInterval",
        };
        tracing::warn!(
            principal = who.principal.as_deref(),
            requester = if who.principal.is_some() {
                "principal"
            } else if who.sees_all {
                "stdio peer"
            } else {
                "anonymous session"
            },
            pattern = pattern.label(),
            count,
            window_s = self.inner.watch.window().as_secs(),
            "suspicious: {what} from one requester"
        );
    }
}
