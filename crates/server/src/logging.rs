//! Log messages from a tool to the client (`notifications/message`), above the level the
//! client asked for.
//!
//! 2025-11-25 (logging): "To configure the minimum log level, clients MAY send a
//! `logging/setLevel` request", per session. 2026-07-28 (changelog): "Log level is now set
//! per-request via `io.modelcontextprotocol/logLevel` in `_meta`; servers MUST NOT emit
//! `notifications/message` for requests that did not include this field".

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use mcp_tasks_proto::ErrorObject;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The severity of a log message (`LoggingLevel`, RFC 5424), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// General informational messages.
    Info,
    /// Normal but significant events.
    Notice,
    /// Warning conditions.
    Warning,
    /// Error conditions.
    Error,
    /// Critical conditions.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [Self; 8] = [
        Self::Debug,
        Self::Info,
        Self::Notice,
        Self::Warning,
        Self::Error,
        Self::Critical,
        Self::Alert,
        Self::Emergency,
    ];

    /// The level named `name` (`"info"`, ...).
    pub fn parse(name: &str) -> Option<Self> {
        Self::deserialize(Value::from(name)).ok()
    }

    /// The wire name (`"info"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// No message passes.
const OFF: u8 = u8::MAX;

/// The least severe level that is sent, shared by a session and the calls it runs (a
/// `logging/setLevel` during a call applies to the messages it sends after), or fixed for
/// one 2026-07-28 request. Off until set.
#[derive(Debug, Clone)]
pub struct LogThreshold(Arc<AtomicU8>);

impl Default for LogThreshold {
    fn default() -> Self {
        Self::off()
    }
}

impl LogThreshold {
    /// Nothing is sent.
    pub fn off() -> Self {
        Self(Arc::new(AtomicU8::new(OFF)))
    }

    /// Messages of `level` and more severe are sent; `None`: nothing is.
    pub fn at(level: Option<LogLevel>) -> Self {
        let t = Self::off();
        t.set(level);
        t
    }

    /// Change the level (every holder sees it).
    pub fn set(&self, level: Option<LogLevel>) {
        let v = level.map_or(OFF, |l| l as u8);
        self.0.store(v, Ordering::Relaxed);
    }

    /// Whether a message of `level` is sent.
    pub fn passes(&self, level: LogLevel) -> bool {
        let t = self.0.load(Ordering::Relaxed);
        t != OFF && level as u8 >= t
    }
}

/// The level of a 2026-07-28 request's `_meta["io.modelcontextprotocol/logLevel"]`.
///
/// # Errors
/// -32602 for a name that is not a `LoggingLevel`.
pub(crate) fn meta_level(name: Option<&str>) -> Result<Option<LogLevel>, ErrorObject> {
    name.map(|n| {
        LogLevel::parse(n).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "`io.modelcontextprotocol/logLevel` must be a LoggingLevel (debug ... emergency), not `{n}`"
            ))
        })
    })
    .transpose()
}

/// The params of `logging/setLevel`: its level.
///
/// # Errors
/// -32602 when `level` is missing or not a `LoggingLevel`.
pub(crate) fn set_level_params(params: Option<&Value>) -> Result<LogLevel, ErrorObject> {
    params
        .and_then(|p| p.get("level"))
        .and_then(Value::as_str)
        .and_then(LogLevel::parse)
        .ok_or_else(|| {
            ErrorObject::invalid_params(
                "`level` must be a LoggingLevel: debug, info, notice, warning, error, critical, alert or emergency",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn threshold_passes_the_level_and_above_and_nothing_when_off() {
        let t = LogThreshold::default();
        assert!(LogLevel::ALL.iter().all(|l| !t.passes(*l)));
        t.set(Some(LogLevel::Warning));
        assert!(!t.passes(LogLevel::Info));
        assert!(t.passes(LogLevel::Warning));
        assert!(t.passes(LogLevel::Emergency));
        let shared = t.clone();
        t.set(Some(LogLevel::Debug));
        assert!(shared.passes(LogLevel::Debug), "a clone shares the level");
        t.set(None);
        assert!(!shared.passes(LogLevel::Emergency));
    }

    #[test]
    fn levels_parse_by_wire_name_only() {
        for l in LogLevel::ALL {
            assert_eq!(LogLevel::parse(l.as_str()), Some(l));
        }
        assert_eq!(LogLevel::parse("INFO"), None);
        assert_eq!(meta_level(Some("loud")).unwrap_err().code, -32602);
        assert_eq!(meta_level(None).unwrap(), None);
        assert_eq!(
            set_level_params(Some(&json!({"level": "notice"}))).unwrap(),
            LogLevel::Notice
        );
        assert_eq!(set_level_params(Some(&json!({}))).unwrap_err().code, -32602);
    }
}
