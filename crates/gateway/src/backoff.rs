//! Restart delays of a supervised upstream: 1 s doubling up to 60 s (the workspace's one
//! backoff, [`backon`]'s exponential one), with up to a quarter more of jitter.

use std::time::Duration;

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};

/// First delay.
pub(crate) const MIN: Duration = Duration::from_secs(1);
/// Largest delay.
pub(crate) const MAX: Duration = Duration::from_secs(60);

/// The delays before restarts 1, 2, ... of a connection: `1 s * 2^(n-1)`, capped at 60 s.
/// Started afresh once a connection stayed up long enough.
pub(crate) fn restarts() -> ExponentialBackoff {
    ExponentialBuilder::new()
        .with_min_delay(MIN)
        .with_max_delay(MAX)
        .without_max_times()
        .build()
}

/// `base` plus up to a quarter more of random jitter (so that many gateways restarted by
/// the same event do not hammer their upstreams in step), never above 60 s.
pub(crate) fn jittered(base: Duration) -> Duration {
    let mut b = [0u8; 2];
    let r = if getrandom::fill(&mut b).is_ok() {
        u16::from_le_bytes(b)
    } else {
        0
    };
    let jitter = base.mul_f64(f64::from(r) / f64::from(u16::MAX) / 4.0);
    (base + jitter).clamp(MIN, MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_from_one_second_to_sixty_with_bounded_jitter() {
        for _ in 0..50 {
            let mut delays = restarts().map(jittered);
            let d1 = delays.next().unwrap();
            assert!(d1 >= MIN && d1 <= Duration::from_millis(1250), "{d1:?}");
            let _ = delays.next();
            let d3 = delays.next().unwrap();
            assert!(
                d3 >= Duration::from_secs(4) && d3 <= Duration::from_secs(5),
                "{d3:?}"
            );
            let d7 = delays.nth(3).unwrap();
            assert!(d7 >= Duration::from_secs(60) - Duration::from_millis(1));
            assert_eq!(delays.nth(100), Some(MAX));
        }
    }
}
