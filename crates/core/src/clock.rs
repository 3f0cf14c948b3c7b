//! Wall-clock time in milliseconds since the Unix epoch, and its RFC 3339 form.

use std::time::{SystemTime, UNIX_EPOCH};

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
///
/// Written by hand rather than through `humantime::format_rfc3339_millis(..).to_string()`:
/// every task on the wire carries two of these, and the `Display` round trip (a
/// `Formatter`, a growing `String`) cost about 650 instructions each, a sixtieth of a
/// `tasks/get` (docs/performance.md, "The get, trimmed"). The fixed layout needs only the
/// civil date of a day number. A time before the epoch is written as the epoch (as
/// before), one past year 9999 as its last instant: RFC 3339 has four-digit years (and
/// humantime's `to_string` panicked on them).
pub fn rfc3339(ms: i64) -> String {
    /// 9999-12-31T23:59:59.999Z, the last instant of four-digit years.
    const LAST: i64 = 253_402_300_799_999;
    // 0 <= ms <= LAST: every field below fits its digits.
    let ms = ms.clamp(0, LAST) as u64;
    let (days, in_day) = (ms / 86_400_000, (ms % 86_400_000) as u32);
    let (y, m, d) = civil_from_days(days);
    let (secs, milli) = (in_day / 1000, in_day % 1000);
    let mut b = *b"0000-00-00T00:00:00.000Z";
    let two = |b: &mut [u8; 24], at: usize, v: u32| {
        b[at] = b'0' + (v / 10) as u8;
        b[at + 1] = b'0' + (v % 10) as u8;
    };
    two(&mut b, 0, y / 100);
    two(&mut b, 2, y % 100);
    two(&mut b, 5, m);
    two(&mut b, 8, d);
    two(&mut b, 11, secs / 3600);
    two(&mut b, 14, secs / 60 % 60);
    two(&mut b, 17, secs % 60);
    b[20] = b'0' + (milli / 100) as u8;
    two(&mut b, 21, milli % 100);
    // Only ASCII digits were written into an ASCII template: this cannot fail.
    String::from_utf8(b.to_vec()).unwrap_or_default()
}

/// The (year, month, day) of day `z` since 1970-01-01 (`z >= 0`), in the proleptic
/// Gregorian calendar: Howard Hinnant's `civil_from_days`, eras of 400 years starting on
/// March 1st (unsigned: no day before the epoch comes here).
fn civil_from_days(z: u64) -> (u32, u32, u32) {
    let z = z + 719_468;
    let (era, doe) = (z / 146_097, z % 146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y as u32, m as u32, d as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_utc_with_millis() {
        assert_eq!(
            super::rfc3339(1_764_066_600_123),
            "2025-11-25T10:30:00.123Z"
        );
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(-5), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::rfc3339(i64::MAX), "9999-12-31T23:59:59.999Z");
    }

    /// The hand-written form is humantime's, to the millisecond: on the edges of days,
    /// months, leap days (2000 and 2400 are leap years, 2100 is not), the last four-digit
    /// instant and past it, and on a spread of instants in between.
    #[test]
    fn writes_what_humantime_writes() {
        let humantime = |ms: i64| {
            let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap());
            humantime::format_rfc3339_millis(t).to_string()
        };
        let day = 86_400_000_i64;
        let mut instants = vec![
            0,
            1,
            day - 1,
            day,
            951_782_400_000,     // 2000-02-29
            951_868_799_999,     // 2000-02-29T23:59:59.999
            4_107_542_400_000,   // 2100-03-01
            13_574_563_200_000,  // 2400-02-29
            253_402_300_799_999, // 9999-12-31T23:59:59.999
        ];
        // A spread over four centuries: a prime step, so every field varies.
        let mut ms = 0_i64;
        while ms < 13_000_000_000_000 {
            instants.push(ms);
            ms += 1_234_567_891;
        }
        for ms in instants {
            assert_eq!(rfc3339(ms), humantime(ms), "{ms}");
        }
    }
}
