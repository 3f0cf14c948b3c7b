//! CPU time and memory of this process (getrusage) and of the server (`/proc/PID`).

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use nix::sys::time::TimeValLike;

/// User + system CPU time this process has used so far.
pub fn own() -> Duration {
    match getrusage(UsageWho::RUSAGE_SELF) {
        Ok(u) => {
            let us = u.user_time().num_microseconds() + u.system_time().num_microseconds();
            Duration::from_micros(u64::try_from(us).unwrap_or(0))
        }
        Err(_) => Duration::ZERO,
    }
}

fn clock_ticks() -> u64 {
    nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .and_then(|t| u64::try_from(t).ok())
        .filter(|t| *t > 0)
        .unwrap_or(100)
}

/// User + system CPU time of `pid` from the text of `/proc/PID/stat`.
pub fn parse_stat(stat: &str, ticks_per_s: u64) -> Option<Duration> {
    // The command name (field 2) may hold spaces and parentheses: fields after it start
    // after the last `)`. utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = utime + stime;
    Some(Duration::from_micros(ticks * 1_000_000 / ticks_per_s))
}

/// User + system CPU time `pid` has used so far (its threads included).
pub fn process(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat, clock_ticks())
}

/// Resident memory of `pid` now and at its peak, in KiB (`VmRSS`, `VmHWM`).
pub fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_after_a_tricky_name() {
        let stat = "1234 (we ird) name)) S 1 1234 1234 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 3 0 100 1000 200 18446744073709551615";
        assert_eq!(parse_stat(stat, 100), Some(Duration::from_secs(3)));
        assert_eq!(parse_stat("garbage", 100), None);
    }

    #[test]
    fn own_process_is_readable() {
        let pid = std::process::id();
        // Burn a little CPU so that the counters move.
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        assert!(x != 1);
        assert!(process(pid).is_some());
        let (rss, hwm) = memory(pid).unwrap();
        assert!(rss > 0 && hwm >= rss);
        assert!(own() > Duration::ZERO);
    }
}
