//! The one syntax of every duration flag (`serve`, `call`, `tasks`, `bench`): a bare
//! number is milliseconds (`1500`), anything else a [`humantime`] duration (`1.5s`,
//! `30s`, `24h`, `1h 30m`). The parsers are clap value parsers, so a bad value is refused
//! by clap with a message naming the flag, before the command runs.

use std::time::Duration;

/// The help text that says what a DURATION is.
pub(crate) const HELP: &str = "\
A DURATION is milliseconds as a bare number (`1500`), or a duration like `1.5s`, `30s`,
`24h`, `1h 30m`.";

/// A duration flag's value: `1500` (milliseconds), `1.5s`, `24h`.
///
/// # Errors
/// A message saying what is accepted (clap puts the flag's name before it).
pub(crate) fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<u64>() {
        return Ok(Duration::from_millis(ms));
    }
    humantime::parse_duration(s)
        .map_err(|e| format!("not milliseconds or a duration like `10s` or `24h` ({e})"))
}

/// A duration, or none at all (the flag's keyword for it, such as `unlimited`, given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MaybeDuration(pub(crate) Option<Duration>);

impl MaybeDuration {
    /// The duration in whole milliseconds (saturating), `None` when there is none.
    pub(crate) fn millis(self) -> Option<u64> {
        self.0.map(millis)
    }
}

/// [`parse`], or `unlimited` for no bound.
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_or_unlimited(s: &str) -> Result<MaybeDuration, String> {
    keyword_or(s, "unlimited")
}

/// [`parse`], or `none` for none.
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_or_none(s: &str) -> Result<MaybeDuration, String> {
    keyword_or(s, "none")
}

fn keyword_or(s: &str, keyword: &str) -> Result<MaybeDuration, String> {
    if s.trim() == keyword {
        return Ok(MaybeDuration(None));
    }
    parse(s)
        .map(|d| MaybeDuration(Some(d)))
        .map_err(|e| format!("{e}, nor `{keyword}`"))
}

/// `d` in whole milliseconds, saturating.
pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_number_is_milliseconds_and_units_are_humantime() {
        assert_eq!(parse("1500"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
        assert_eq!(parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse("1h 30m"), Ok(Duration::from_secs(5_400)));
        assert!(parse("soon").unwrap_err().contains("not milliseconds"));
        assert!(parse("-5").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn keywords_mean_none_only_where_allowed() {
        assert_eq!(parse_or_unlimited("unlimited"), Ok(MaybeDuration(None)));
        assert_eq!(parse_or_unlimited("90000").unwrap().millis(), Some(90_000));
        assert!(
            parse_or_unlimited("none")
                .unwrap_err()
                .contains("`unlimited`")
        );
        assert_eq!(parse_or_none("none"), Ok(MaybeDuration(None)));
        assert_eq!(parse_or_none("1h").unwrap().millis(), Some(3_600_000));
        assert!(parse("unlimited").is_err());
    }
}
