//! The last admitted `tasks/get` of each (requester, task), for the `poll` limit of
//! [`super::RateLimits`].

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The hasher of the rate limits' maps: foldhash, seeded at random per process (a keyed
/// hash, several times cheaper than the standard library's SipHash on these short keys).
/// Their keys are quota keys (a principal, a session id or a client address) and task
/// ids, which the server makes; a client picks at most its address, and every map is
/// bounded.
pub(super) type FastHash = foldhash::fast::RandomState;

/// The last admitted `tasks/get` of each (requester, task), by requester then task, so
/// that a poll of a task seen before is looked up and recorded without a copy of either
/// key (a `tasks/get` of a polling client is the most frequent request).
#[derive(Default)]
pub(super) struct Polls {
    by_key: HashMap<String, HashMap<String, Instant, FastHash>, FastHash>,
    /// Entries over all requesters (bounded by the `max` of [`Self::record`]).
    len: usize,
}

impl Polls {
    /// When `key` last polled `task_id`, if it is remembered.
    pub(super) fn last(&self, key: &str, task_id: &str) -> Option<Instant> {
        self.by_key.get(key)?.get(task_id).copied()
    }

    /// `key` polled `task_id` at `now`. Past `max` entries, those older than a minute are
    /// forgotten, and all of them when that is not enough.
    pub(super) fn record(&mut self, key: &str, task_id: &str, now: Instant, max: usize) {
        if let Some(t) = self.by_key.get_mut(key).and_then(|m| m.get_mut(task_id)) {
            *t = now;
            return;
        }
        if self.len >= max {
            let recent = |t: &Instant| now.duration_since(*t) < Duration::from_secs(60);
            for m in self.by_key.values_mut() {
                m.retain(|_, t| recent(t));
            }
            self.by_key.retain(|_, m| !m.is_empty());
            self.len = self.by_key.values().map(HashMap::len).sum();
            if self.len >= max {
                self.by_key.clear();
                self.len = 0;
            }
        }
        match self.by_key.get_mut(key) {
            Some(m) => {
                m.insert(task_id.to_owned(), now);
            }
            None => {
                let mut m = HashMap::with_hasher(FastHash::default());
                m.insert(task_id.to_owned(), now);
                self.by_key.insert(key.to_owned(), m);
            }
        }
        self.len += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1_000;

    /// A poll seen before is updated in place; past the bound, entries older than a
    /// minute go first, and everything when all are recent.
    #[test]
    fn polls_are_remembered_within_the_bound() {
        let mut p = Polls::default();
        let t0 = Instant::now();
        p.record("k", "a", t0, MAX);
        p.record("k", "a", t0 + Duration::from_secs(1), MAX);
        assert_eq!(p.len, 1);
        assert_eq!(p.last("k", "a"), Some(t0 + Duration::from_secs(1)));
        assert_eq!(p.last("k", "b"), None);
        assert_eq!(p.last("j", "a"), None);
        for i in 1..MAX {
            p.record("k", &format!("t{i}"), t0, MAX);
        }
        assert_eq!(p.len, MAX);
        // Two minutes on, every entry is more than a minute old: all are forgotten, and
        // the new one is kept.
        let later = t0 + Duration::from_secs(120);
        p.record("j", "new", later, MAX);
        assert_eq!(p.len, 1);
        assert_eq!(p.last("j", "new"), Some(later));
        assert_eq!(p.last("k", "a"), None);
        // All recent: cleared.
        for i in 1..MAX {
            p.record("k", &format!("t{i}"), later, MAX);
        }
        assert_eq!(p.len, MAX);
        p.record("k", "over", later, MAX);
        assert_eq!(p.len, 1);
        assert_eq!(p.last("k", "over"), Some(later));
    }
}
