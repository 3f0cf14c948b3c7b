//! Wall-clock time in milliseconds since the Unix epoch, and its RFC 3339 form.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of the current time. Tests substitute a manual clock.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// RFC 3339 UTC with milliseconds, e.g. `2025-11-25T10:30:00.123Z`.
///
/// Spec: "Receivers MUST include a `createdAt` ISO 8601-formatted timestamp in all task
/// responses".
pub fn rfc3339(ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_utc_with_millis() {
        assert_eq!(
            super::rfc3339(1_764_066_600_123),
            "2025-11-25T10:30:00.123Z"
        );
    }
}
