//! Receiver policy: TTLs, poll interval, limits.

use crate::error::EngineError;
use crate::store::Limits;
use serde_json::Value;

/// Default of [`Limits::max_tasks`] in [`Policy::limits`].
pub const DEFAULT_MAX_STORED_TASKS: u64 = 10_000;
/// Default of [`Limits::max_bytes`] in [`Policy::limits`]: 256 MiB.
pub const DEFAULT_MAX_STORED_BYTES: u64 = 256 << 20;
/// Default of [`Limits::max_total_bytes`] in [`Policy::limits`]: 1 GiB.
pub const DEFAULT_MAX_STORE_BYTES: u64 = 1 << 30;

/// The knobs of the receiver.
#[non_exhaustive]
#[derive(Debug, Clone)]
pub struct Policy {
    /// TTL when the requestor asks for none. `None` is unlimited.
    pub default_ttl_ms: Option<u64>,
    /// Largest TTL granted. `None` is unlimited.
    pub max_ttl_ms: Option<u64>,
    /// Suggested poll interval.
    pub poll_interval_ms: u64,
    /// The limits a task creation (and a task's outcome) is checked against: per
    /// requester, its non-terminal tasks, its stored tasks (any status, until their TTL
    /// deletes them) and their bytes (requests and outcomes); the bytes of the whole store.
    pub limits: Limits,
    /// How long the engine keeps retrying to store a task's outcome when the store fails
    /// (disk full, ...) before it stores a failure naming the cause instead; also how long
    /// a waiting `tasks/result` reads its task again while the store is unavailable.
    pub outcome_retry_ms: u64,
    /// `tasks/list` page size.
    pub page_size: usize,
    /// How often the sweeper deletes expired tasks.
    pub sweep_interval_ms: u64,
    /// Lease length of an executor; renewed every third of it.
    pub lease_ms: u64,
    /// Most requests one task may have waiting for its requestor's answer at once
    /// (`input_required`); one more fails at once in the task, nothing is queued.
    pub max_pending_inputs_per_task: usize,
}

/// Default of [`Policy::max_pending_inputs_per_task`].
pub const DEFAULT_MAX_PENDING_INPUTS: usize = 16;

impl Default for Policy {
    fn default() -> Self {
        Self {
            default_ttl_ms: Some(3_600_000),
            max_ttl_ms: Some(86_400_000),
            poll_interval_ms: 1000,
            limits: Limits {
                max_active: Some(1000),
                max_tasks: Some(DEFAULT_MAX_STORED_TASKS),
                max_bytes: Some(DEFAULT_MAX_STORED_BYTES),
                max_total_bytes: Some(DEFAULT_MAX_STORE_BYTES),
            },
            outcome_retry_ms: 60_000,
            page_size: 100,
            sweep_interval_ms: 1000,
            lease_ms: 15_000,
            max_pending_inputs_per_task: DEFAULT_MAX_PENDING_INPUTS,
        }
    }
}

impl Policy {
    /// The actual TTL for the `task` field of a request.
    ///
    /// Spec: "Receivers MAY override the requested `ttl` duration." and "Receivers SHOULD
    /// enforce maximum `ttl` durations to prevent indefinite resource retention."
    ///
    /// # Errors
    /// [`EngineError::InvalidParams`] when `task` is not an object or `ttl` is not a
    /// non-negative integer (or null).
    ///
    /// Every non-negative integer is clamped alike: one beyond `u64` (a valid JSON integer
    /// such as `100000000000000000000`, which `serde_json` reads as an `f64`) counts as
    /// `u64::MAX`, and a number with no fractional part (`5.0`, `1e3`) is that integer, as
    /// JSON Schema's `"integer"` has it.
    pub fn resolve_ttl(&self, task: &Value) -> Result<Option<u64>, EngineError> {
        let Some(obj) = task.as_object() else {
            return Err(EngineError::InvalidParams(
                "`task` must be an object".into(),
            ));
        };
        let requested = match obj.get("ttl") {
            None | Some(Value::Null) => None,
            Some(v) => Some(ttl_millis(v).ok_or_else(|| {
                EngineError::InvalidParams(format!(
                    "`task.ttl` must be a non-negative integer number of milliseconds, got {v}"
                ))
            })?),
        };
        let wanted = requested.or(self.default_ttl_ms);
        Ok(match (wanted, self.max_ttl_ms) {
            (Some(w), Some(max)) => Some(w.min(max)),
            (None, Some(max)) => Some(max),
            (w, None) => w,
        })
    }
}

/// A non-negative integer JSON number as `u64`, saturating above `u64::MAX`; `None` for a
/// negative or fractional number, a non-finite one, and anything that is not a number.
fn ttl_millis(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    if v.is_i64() || !f.is_finite() || f < 0.0 || f.fract() != 0.0 {
        return None;
    }
    // `as` saturates: every integer at or beyond 2^64 becomes u64::MAX.
    Some(f as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ttl_defaults_clamps_and_validates() {
        let p = Policy::default();
        assert_eq!(p.resolve_ttl(&json!({})).unwrap(), Some(3_600_000));
        assert_eq!(
            p.resolve_ttl(&json!({"ttl": null})).unwrap(),
            Some(3_600_000)
        );
        assert_eq!(p.resolve_ttl(&json!({"ttl": 5})).unwrap(), Some(5));
        assert_eq!(
            p.resolve_ttl(&json!({"ttl": 999_999_999_999u64})).unwrap(),
            Some(86_400_000)
        );
        assert!(p.resolve_ttl(&json!({"ttl": -1})).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": 1.5})).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": "5"})).is_err());
        assert!(p.resolve_ttl(&json!(3)).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": -0.5})).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": -1e30})).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": i64::MIN})).is_err());
        assert!(p.resolve_ttl(&json!({"ttl": true})).is_err());
        let unlimited = Policy {
            max_ttl_ms: None,
            default_ttl_ms: None,
            ..Policy::default()
        };
        assert_eq!(unlimited.resolve_ttl(&json!({})).unwrap(), None);
        assert_eq!(unlimited.resolve_ttl(&json!({"ttl": 7})).unwrap(), Some(7));
    }

    /// Issue 15 #16: an integer beyond u64 was refused ("must be a non-negative integer")
    /// while 2^63 was clamped; every non-negative integer is clamped alike now.
    #[test]
    fn integers_beyond_u64_are_clamped_like_the_others() {
        let p = Policy::default();
        let max = Some(86_400_000);
        for raw in [
            r#"{"ttl": 9223372036854775808}"#,
            r#"{"ttl": 18446744073709551615}"#,
            r#"{"ttl": 18446744073709551616}"#,
            r#"{"ttl": 100000000000000000000}"#,
            r#"{"ttl": 1e300}"#,
        ] {
            let v: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(p.resolve_ttl(&v).unwrap(), max, "{raw}");
        }
        let exact: Value = serde_json::from_str(r#"{"ttl": 5.0}"#).unwrap();
        assert_eq!(p.resolve_ttl(&exact).unwrap(), Some(5));
        let unlimited = Policy {
            max_ttl_ms: None,
            ..Policy::default()
        };
        let big: Value = serde_json::from_str(r#"{"ttl": 100000000000000000000}"#).unwrap();
        assert_eq!(unlimited.resolve_ttl(&big).unwrap(), Some(u64::MAX));
    }
}
