//! Restart delays of a supervised upstream: 1 s doubling up to 60 s, with jitter.

use std::time::Duration;

/// First delay.
pub(crate) const MIN: Duration = Duration::from_secs(1);
/// Largest delay.
pub(crate) const MAX: Duration = Duration::from_secs(60);

/// The delay before restart number `attempt` (1-based): `1 s * 2^(attempt-1)`, capped at
/// 60 s, plus up to a quarter more of random jitter (so that many gateways restarted by
/// the same event do not hammer their upstreams in step), never above 60 s.
pub(crate) fn delay(attempt: u32) -> Duration {
    let exp = attempt.saturating_sub(1).min(6);
    let base = MIN.saturating_mul(1 << exp).min(MAX);
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
            let d1 = delay(1);
            assert!(d1 >= MIN && d1 <= Duration::from_millis(1250), "{d1:?}");
            let d3 = delay(3);
            assert!(
                d3 >= Duration::from_secs(4) && d3 <= Duration::from_secs(5),
                "{d3:?}"
            );
            assert!(delay(7) >= Duration::from_secs(60) - Duration::from_millis(1));
            assert_eq!(delay(100), MAX);
        }
    }
}
