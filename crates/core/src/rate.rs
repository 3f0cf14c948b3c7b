//! Rate limits per requester ([`RateLimits`], built on `governor`'s GCRA) and the
//! detection of suspicious patterns ([`Watch`]).
//!
//! Spec (security, task isolation): "receivers SHOULD implement rate limiting on task
//! operations to prevent denial-of-service and enumeration attacks." Four limits, each
//! keyed by the requester's [`quota key`](crate::Requester::quota_key) (its principal;
//! else its HTTP session; the stdio peer is one key), so that one requester's traffic
//! never spends another's allowance:
//!
//! * [`Kind::Create`]: task creations;
//! * [`Kind::Poll`]: `tasks/get` of a task sooner than its `pollInterval` after the
//!   requester's previous one (an over-fast poll; polls at the interval are never
//!   limited). Spec (SEP-2663): "Servers MAY rate-limit clients polling more frequently
//!   than the recorded `pollIntervalMs`." Off unless configured;
//! * [`Kind::LookupFailures`]: `tasks/get`, `tasks/result` and `tasks/cancel` of unknown
//!   or foreign task ids (the enumeration signal): once spent, every lookup of the
//!   requester is refused until the allowance refills;
//! * [`Kind::Requests`]: every request.
//!
//! A refused request is answered with the JSON-RPC error [`codes::RATE_LIMITED`] whose
//! `data.retryAfterMs` says when to retry (HTTP: status 429 with `Retry-After`), and
//! changes nothing.

use std::collections::HashMap;
use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota};
use mcp_tasks_proto::{ErrorObject, codes};
use parking_lot::Mutex;
use serde_json::json;

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Task creations.
    Create,
    /// `tasks/get` sooner than the task's `pollInterval` after the previous one.
    Poll,
    /// Lookups of unknown or foreign task ids.
    LookupFailures,
    /// Every request.
    Requests,
}

impl Kind {
    /// Every kind, in the order of the `--rate-limit` documentation.
    pub const ALL: [Kind; 4] = [
        Kind::Create,
        Kind::Poll,
        Kind::LookupFailures,
        Kind::Requests,
    ];

    /// Its name in `--rate-limit` and in `data.limit` of a refusal.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Create => "create",
            Kind::Poll => "poll",
            Kind::LookupFailures => "lookup-failures",
            Kind::Requests => "requests",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One limit: `count` per `period`, with bursts of up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// How many per period.
    pub count: NonZeroU32,
    /// The period.
    pub period: Duration,
    /// Most admitted at once (the bucket's size); `count` unless given.
    pub burst: NonZeroU32,
}

impl Rate {
    /// `count` per `period`, bursts of `count`.
    pub fn new(count: NonZeroU32, period: Duration) -> Self {
        Self {
            count,
            period,
            burst: count,
        }
    }

    fn quota(self) -> Quota {
        let cell = (self.period / self.count.get()).max(Duration::from_nanos(1));
        Quota::with_period(cell)
            .unwrap_or_else(|| Quota::per_second(self.count))
            .allow_burst(self.burst)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.period.as_millis() {
            1_000 => "s".to_owned(),
            60_000 => "m".to_owned(),
            3_600_000 => "h".to_owned(),
            ms => format!("{ms}ms"),
        };
        write!(f, "{}/{unit},burst={}", self.count, self.burst)
    }
}

/// The four limits; `None` is unlimited.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RateLimitConfig {
    limits: [Option<Rate>; 4],
}

/// Default of the `lookup-failures` limit of `mcp-tasks serve`: 10 per second, bursts of
/// 100 (a client that loses track of a few tasks is never refused; an enumeration is).
pub const DEFAULT_LOOKUP_FAILURES: Rate = Rate {
    count: NonZeroU32::new(10).expect("non-zero"),
    period: Duration::from_secs(1),
    burst: NonZeroU32::new(100).expect("non-zero"),
};

impl RateLimitConfig {
    /// The limit of `kind`.
    pub fn get(&self, kind: Kind) -> Option<Rate> {
        self.limits[kind.index()]
    }

    /// Set (or, with `None`, lift) the limit of `kind`.
    pub fn set(&mut self, kind: Kind, rate: Option<Rate>) {
        self.limits[kind.index()] = rate;
    }

    /// Apply one `--rate-limit` value: `KIND=N/UNIT[,burst=B]` or `KIND=off`, where KIND
    /// is `create`, `poll`, `lookup-failures` or `requests` and UNIT `s`, `m` or `h`.
    /// Several may be given in one value, separated by `;`.
    ///
    /// # Errors
    /// What is wrong with the value, naming the accepted forms.
    pub fn apply(&mut self, spec: &str) -> Result<(), String> {
        for one in spec.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (kind, rate) = parse_one(one)?;
            self.set(kind, rate);
        }
        Ok(())
    }
}

const FORMS: &str = "expected KIND=N/UNIT[,burst=B] or KIND=off, KIND one of create, poll, lookup-failures, requests and UNIT one of s, m, h (e.g. `create=20/s,burst=40`)";

fn parse_one(s: &str) -> Result<(Kind, Option<Rate>), String> {
    let bad = |why: &str| format!("--rate-limit `{s}`: {why}; {FORMS}");
    let (kind, rest) = s.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let kind = Kind::ALL
        .into_iter()
        .find(|k| k.name() == kind.trim())
        .ok_or_else(|| bad("unknown limit"))?;
    if rest.trim() == "off" {
        return Ok((kind, None));
    }
    let mut parts = rest.split(',').map(str::trim);
    let rate = parts.next().unwrap_or_default();
    let (count, unit) = rate.split_once('/').ok_or_else(|| bad("no `/UNIT`"))?;
    let count: u32 = count.trim().parse().map_err(|_| bad("N is not a number"))?;
    let count = NonZeroU32::new(count).ok_or_else(|| bad("N must be at least 1 (or use `off`)"))?;
    let period = match unit.trim() {
        "s" => Duration::from_secs(1),
        "m" => Duration::from_secs(60),
        "h" => Duration::from_secs(3600),
        _ => return Err(bad("unknown unit")),
    };
    let mut out = Rate::new(count, period);
    for p in parts {
        let b = p
            .strip_prefix("burst=")
            .ok_or_else(|| bad("unknown option"))?;
        let b: u32 = b.parse().map_err(|_| bad("burst is not a number"))?;
        out.burst = NonZeroU32::new(b).ok_or_else(|| bad("burst must be at least 1"))?;
    }
    Ok((kind, Some(out)))
}

impl FromStr for RateLimitConfig {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut c = Self::default();
        c.apply(s)?;
        Ok(c)
    }
}

/// A request refused by a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// The limit that refused it.
    pub kind: Kind,
    /// When it may be retried.
    pub retry_after: Duration,
}

impl Refused {
    /// Milliseconds until a retry may pass (at least 1).
    pub fn retry_after_ms(&self) -> u64 {
        u64::try_from(self.retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// The JSON-RPC error: code [`codes::RATE_LIMITED`], `data.limit` and
    /// `data.retryAfterMs`.
    pub fn to_error(&self) -> ErrorObject {
        ErrorObject::new(
            codes::RATE_LIMITED,
            format!(
                "Rate limited: too many {} for this requester; retry in {} ms",
                match self.kind {
                    Kind::Create => "task creations",
                    Kind::Poll => "polls faster than the task's pollInterval",
                    Kind::LookupFailures => "lookups of unknown task ids",
                    Kind::Requests => "requests",
                },
                self.retry_after_ms()
            ),
        )
        .with_data(json!({ "limit": self.kind.name(), "retryAfterMs": self.retry_after_ms() }))
    }
}

/// Most keys a limiter keeps before it forgets those back at a full allowance.
const MAX_KEYS: usize = 10_000;
/// Most tasks whose last poll is remembered (a poll of a forgotten one is not over-fast).
const MAX_POLLS: usize = 100_000;

type Limiter = DefaultKeyedRateLimiter<String>;

mod polls;
use polls::{FastHash, Polls};

/// The limiters of a server, shared by every session. Cheap to share (`Arc` it).
pub struct RateLimits {
    config: RateLimitConfig,
    limiters: [Option<Limiter>; 4],
    /// Requesters whose lookup-failure allowance is spent, until when.
    blocked: Mutex<HashMap<String, Instant, FastHash>>,
    /// The last admitted `tasks/get` of each (requester, task).
    polls: Mutex<Polls>,
}

mcp_tasks_proto::debug_non_exhaustive!(RateLimits, |s| { config: s.config });

impl Default for RateLimits {
    fn default() -> Self {
        Self::new(RateLimitConfig::default())
    }
}

impl RateLimits {
    /// Limiters for `config`.
    pub fn new(config: RateLimitConfig) -> Self {
        let limiters = Kind::ALL.map(|k| config.get(k).map(|r| Limiter::keyed(r.quota())));
        Self {
            config,
            limiters,
            blocked: Mutex::new(HashMap::default()),
            polls: Mutex::new(Polls::default()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RateLimitConfig {
        &self.config
    }

    /// Spend one of `key`'s allowance of `kind`; `Err` when it is spent (then nothing
    /// is spent). Always `Ok` for a kind without a limit.
    ///
    /// # Errors
    /// The refusal, with when to retry.
    pub fn check(&self, kind: Kind, key: &str) -> Result<(), Refused> {
        let Some(limiter) = &self.limiters[kind.index()] else {
            return Ok(());
        };
        if limiter.len() > MAX_KEYS {
            limiter.retain_recent();
        }
        let key = key.to_owned();
        limiter.check_key(&key).map_err(|not_until| Refused {
            kind,
            retry_after: not_until.wait_time_from(Instant::now()),
        })
    }

    /// Whether `key` may look tasks up now: `Err` while its lookup-failure allowance is
    /// spent.
    ///
    /// # Errors
    /// The refusal, with when to retry.
    pub fn lookup_allowed(&self, key: &str) -> Result<(), Refused> {
        let mut blocked = self.blocked.lock();
        let Some(until) = blocked.get(key).copied() else {
            return Ok(());
        };
        let now = Instant::now();
        if now >= until {
            blocked.remove(key);
            return Ok(());
        }
        Err(Refused {
            kind: Kind::LookupFailures,
            retry_after: until - now,
        })
    }

    /// Whether any requester's lookups are refused at the moment (or were, and are not
    /// yet forgotten): when not, [`Self::lookup_allowed`] admits every key.
    pub fn any_blocked(&self) -> bool {
        !self.blocked.lock().is_empty()
    }

    /// A lookup of `key` failed: spend one of its allowance; once spent, its lookups are
    /// refused until the next failure would be admitted.
    pub fn lookup_failed(&self, key: &str) {
        if let Err(r) = self.check(Kind::LookupFailures, key) {
            let mut blocked = self.blocked.lock();
            let now = Instant::now();
            if blocked.len() >= MAX_KEYS {
                blocked.retain(|_, until| *until > now);
            }
            if blocked.len() < MAX_KEYS {
                blocked.insert(key.to_owned(), now + r.retry_after);
            }
        }
    }

    /// Refuse `key`'s lookups for `period` from now: its `lookup-failures` allowance is
    /// spent in the buckets every replica shares ([`crate::buckets`]).
    pub fn block_lookups(&self, key: &str, period: Duration) {
        let mut blocked = self.blocked.lock();
        let now = Instant::now();
        if blocked.len() >= MAX_KEYS {
            blocked.retain(|_, until| *until > now);
        }
        if blocked.len() < MAX_KEYS {
            let until = now + period;
            let e = blocked.entry(key.to_owned()).or_insert(until);
            *e = (*e).max(until);
        }
    }

    /// A `tasks/get` of `task_id` by `key`, whose poll interval is `interval`. Returns
    /// whether it is over-fast (sooner than `interval` after the previous admitted one),
    /// and `Err` when it is and the `poll` allowance is spent (then it is not recorded).
    ///
    /// # Errors
    /// The refusal: retry once the interval has passed or the allowance refilled,
    /// whichever comes first.
    pub fn poll(&self, key: &str, task_id: &str, interval: Duration) -> Result<bool, Refused> {
        let now = Instant::now();
        let mut polls = self.polls.lock();
        let since = polls.last(key, task_id).map(|t| now.duration_since(t));
        let fast = since.is_some_and(|s| s < interval);
        if fast && self.limiters[Kind::Poll.index()].is_some() {
            drop(polls);
            if let Err(mut r) = self.check(Kind::Poll, key) {
                let left = interval.saturating_sub(since.unwrap_or_default());
                r.retry_after = r.retry_after.min(left);
                return Err(r);
            }
            polls = self.polls.lock();
        }
        polls.record(key, task_id, now, MAX_POLLS);
        Ok(fast)
    }
}

/// A pattern [`Watch`] looks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Lookups of unknown or foreign task ids.
    FailedLookups,
    /// Polls sooner than the task's `pollInterval`.
    FastPolling,
}

impl Pattern {
    /// Its metric label.
    pub fn label(self) -> &'static str {
        match self {
            Pattern::FailedLookups => "failed_lookups",
            Pattern::FastPolling => "fast_polling",
        }
    }
}

/// Default window of [`Watch`].
pub const WATCH_WINDOW: Duration = Duration::from_secs(60);
/// Default threshold of [`Watch`]: this many events of one pattern from one requester in
/// one window is suspicious.
pub const WATCH_THRESHOLD: u32 = 20;

struct Window {
    started: Instant,
    /// Events per requester, one count per [`Pattern`].
    counts: HashMap<String, [u32; 2], FastHash>,
}

/// Spec (security, audit and logging): receivers SHOULD "Monitor for suspicious patterns
/// (e.g., many failed task lookups, excessive polling)". Counts each pattern per requester
/// in fixed windows; the event that reaches the threshold in a window is reported once
/// ([`Watch::record`] returns the count then), so one warning per window per requester.
pub struct Watch {
    window: Duration,
    threshold: u32,
    state: Mutex<Window>,
}

mcp_tasks_proto::debug_non_exhaustive!(Watch, |s| { window: s.window, threshold: s.threshold });

impl Default for Watch {
    fn default() -> Self {
        Self::new(WATCH_WINDOW, WATCH_THRESHOLD)
    }
}

impl Watch {
    /// Report `threshold` events of a pattern from one requester within `window`.
    pub fn new(window: Duration, threshold: u32) -> Self {
        Self {
            window,
            threshold: threshold.max(1),
            state: Mutex::new(Window {
                started: Instant::now(),
                counts: HashMap::default(),
            }),
        }
    }

    /// The window.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// One event of `pattern` from `key`: `Some(count)` when it makes the pattern
    /// suspicious in this window (once per window and requester).
    pub fn record(&self, pattern: Pattern, key: &str) -> Option<u32> {
        let mut st = self.state.lock();
        let now = Instant::now();
        if now.duration_since(st.started) >= self.window {
            st.started = now;
            st.counts.clear();
        }
        let threshold = self.threshold;
        let count = |counts: &mut [u32; 2]| {
            let n = &mut counts[pattern as usize];
            *n = n.saturating_add(1);
            (*n == threshold).then_some(*n)
        };
        // The usual case, a requester seen in this window: no copy of its key.
        if let Some(c) = st.counts.get_mut(key) {
            return count(c);
        }
        // Bounded: past MAX_KEYS requesters in one window, new ones share one slot.
        let slot = if st.counts.len() >= MAX_KEYS {
            "(others)"
        } else {
            key
        };
        count(st.counts.entry(slot.to_owned()).or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The limits `--rate-limit SPEC` sets.
    fn limits(spec: &str) -> RateLimits {
        RateLimits::new(spec.parse().unwrap())
    }

    #[test]
    fn parses_the_flag_forms() {
        let c: RateLimitConfig = "create=20/s,burst=40".parse().unwrap();
        let r = c.get(Kind::Create).unwrap();
        assert_eq!((r.count.get(), r.burst.get()), (20, 40));
        assert_eq!(r.period, Duration::from_secs(1));
        assert_eq!(r.to_string(), "20/s,burst=40");
        let mut c = RateLimitConfig::default();
        c.apply("poll=2/m; requests=100/h").unwrap();
        assert_eq!(c.get(Kind::Poll).unwrap().burst.get(), 2);
        assert_eq!(
            c.get(Kind::Requests).unwrap().period,
            Duration::from_secs(3600)
        );
        c.apply("poll=off").unwrap();
        assert_eq!(c.get(Kind::Poll), None);
        for bad in [
            "create",
            "create=0/s",
            "create=5/d",
            "create=x/s",
            "nope=1/s",
            "create=1/s,burst=0",
            "create=1/s,bust=2",
        ] {
            let e = bad.parse::<RateLimitConfig>().unwrap_err();
            assert!(
                e.contains("--rate-limit") && e.contains("KIND="),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_limit_refuses_past_its_burst_per_key_with_a_retry_time() {
        let l = limits("create=20/h");
        for _ in 0..20 {
            l.check(Kind::Create, "principal:a").unwrap();
        }
        let r = l.check(Kind::Create, "principal:a").unwrap_err();
        assert_eq!(r.kind, Kind::Create);
        // One cell per 3 minutes.
        assert!(r.retry_after > Duration::from_secs(60), "{r:?}");
        let e = r.to_error();
        assert_eq!(e.code, codes::RATE_LIMITED);
        assert_eq!(e.data.as_ref().unwrap()["limit"], "create");
        assert!(e.data.as_ref().unwrap()["retryAfterMs"].as_u64().unwrap() > 60_000);
        // Another key has its own allowance; unlimited kinds always pass.
        l.check(Kind::Create, "principal:b").unwrap();
        for _ in 0..1000 {
            l.check(Kind::Requests, "principal:a").unwrap();
        }
    }

    #[test]
    fn spent_lookup_failures_block_lookups_of_that_key_only() {
        let l = limits("lookup-failures=3/h");
        for _ in 0..3 {
            l.lookup_allowed("k").unwrap();
            l.lookup_failed("k");
        }
        l.lookup_allowed("k").unwrap();
        l.lookup_failed("k");
        let r = l.lookup_allowed("k").unwrap_err();
        assert_eq!(r.kind, Kind::LookupFailures);
        l.lookup_allowed("other").unwrap();
    }

    #[test]
    fn only_over_fast_polls_spend_the_poll_allowance() {
        let l = limits("poll=1/h");
        let long = Duration::from_secs(3600);
        assert_eq!(l.poll("k", "t", long), Ok(false));
        assert_eq!(l.poll("k", "t", long), Ok(true));
        let r = l.poll("k", "t", long).unwrap_err();
        assert_eq!(r.kind, Kind::Poll);
        // Another task, another key: first polls are never over-fast.
        assert_eq!(l.poll("k", "u", long), Ok(false));
        assert_eq!(l.poll("j", "t", long), Ok(false));
        // A zero interval is never over-fast.
        for _ in 0..10 {
            assert_eq!(l.poll("z", "t", Duration::ZERO), Ok(false));
        }
        // Without a poll limit, over-fast polls are only reported.
        let free = RateLimits::default();
        assert_eq!(free.poll("k", "t", long), Ok(false));
        assert_eq!(free.poll("k", "t", long), Ok(true));
        assert_eq!(free.poll("k", "t", long), Ok(true));
    }

    #[test]
    fn the_watch_reports_once_per_window_and_key() {
        let w = Watch::new(Duration::from_secs(3600), 3);
        assert_eq!(w.record(Pattern::FailedLookups, "a"), None);
        assert_eq!(w.record(Pattern::FailedLookups, "a"), None);
        assert_eq!(w.record(Pattern::FastPolling, "a"), None);
        assert_eq!(w.record(Pattern::FailedLookups, "a"), Some(3));
        assert_eq!(w.record(Pattern::FailedLookups, "a"), None);
        assert_eq!(w.record(Pattern::FailedLookups, "b"), None);
        let short = Watch::new(Duration::ZERO, 1);
        assert_eq!(short.record(Pattern::FastPolling, "a"), Some(1));
        assert_eq!(short.record(Pattern::FastPolling, "a"), Some(1));
    }
}
