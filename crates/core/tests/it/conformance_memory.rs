//! The in-memory store passes the store conformance suite: one test per check.

use std::sync::Arc;

use mcp_tasks_core::MemoryStore;
use mcp_tasks_testkit::conformance::Store;

mcp_tasks_testkit::conformance_tests! {
    make: || async { Arc::new(MemoryStore::new()) as Store },
    leases: ProcessLocal,
}

/// The suite must be able to fail: each broken store below violates one invariant, and
/// the check for it must catch that.
mod the_suite_catches {
    use std::sync::Arc;

    use async_trait::async_trait;
    use mcp_tasks_core::{
        Limits, ListQuery, ListScope, MemoryStore, NewTask, OrphanSweep, StoreError, TaskRecord,
        TaskStore, Transition, TransitionResult,
    };
    use mcp_tasks_testkit::conformance::{self, Leases, Store};
    use tokio::sync::watch;

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Bug {
        /// Wakes no one.
        NoWake,
        /// Reports a terminal transition of a terminal task as applied.
        SecondWinner,
        /// Lets a terminal task go back to working.
        TerminalReopens,
        /// Drops the first task of every page after the first.
        SkipsOnPage,
        /// Lists every task whatever the scope.
        LeaksOwners,
        /// Ignores max_active.
        NoLimit,
        /// Counts limits by owner, not by quota key.
        CountsByOwner,
        /// Ignores the stored-task and stored-byte limits of a creation.
        NoStoredLimits,
        /// Stores an outcome whatever its size (ignores the limits of `transition_within`).
        OutcomeUnlimited,
        /// Deletes tasks one millisecond before they expire.
        EarlyExpiry,
        /// Stores a re-serialised outcome instead of the exact bytes.
        ReformatsOutcome,
    }

    struct Broken {
        inner: MemoryStore,
        bug: Bug,
        silent: watch::Sender<u64>,
    }

    fn broken(bug: Bug) -> Store {
        Arc::new(Broken {
            inner: MemoryStore::new(),
            bug,
            silent: watch::channel(0).0,
        })
    }

    #[async_trait]
    impl TaskStore for Broken {
        async fn create(&self, mut t: NewTask, limits: &Limits) -> Result<TaskRecord, StoreError> {
            let mut limits = *limits;
            match self.bug {
                Bug::NoLimit => limits.max_active = None,
                Bug::NoStoredLimits => {
                    limits.max_tasks = None;
                    limits.max_bytes = None;
                    limits.max_total_bytes = None;
                }
                Bug::CountsByOwner => t.quota_key = format!("{:?}", t.owner),
                _ => {}
            }
            self.inner.create(t, &limits).await
        }
        async fn transition_within(
            &self,
            t: Transition,
            limits: &Limits,
        ) -> Result<TransitionResult, StoreError> {
            if self.bug == Bug::OutcomeUnlimited {
                self.inner.transition(t).await
            } else {
                self.inner.transition_within(t, limits).await
            }
        }
        async fn get(&self, id: &str) -> Result<Option<TaskRecord>, StoreError> {
            self.inner.get(id).await
        }
        async fn transition(&self, mut t: Transition) -> Result<TransitionResult, StoreError> {
            let current = self.inner.get(&t.task_id).await?;
            if let Some(cur) = current.filter(|c| c.status.is_terminal()) {
                match self.bug {
                    Bug::SecondWinner if t.to.is_terminal() => {
                        let mut rec = cur;
                        rec.status = t.to;
                        rec.outcome = t.outcome;
                        return Ok(TransitionResult::Applied(rec));
                    }
                    Bug::TerminalReopens => {
                        let mut rec = cur;
                        rec.status = t.to;
                        return Ok(TransitionResult::Applied(rec));
                    }
                    _ => {}
                }
            }
            if let (Bug::ReformatsOutcome, Some(o)) = (self.bug, &mut t.outcome) {
                let v: serde_json::Value = serde_json::from_str(&o.json).unwrap();
                o.json = v.to_string();
            }
            self.inner.transition(t).await
        }
        async fn list(&self, mut q: ListQuery) -> Result<Vec<TaskRecord>, StoreError> {
            if self.bug == Bug::LeaksOwners {
                q.scope = ListScope::All;
            }
            let after = q.after_seq;
            let mut page = self.inner.list(q).await?;
            if self.bug == Bug::SkipsOnPage && after.is_some() && !page.is_empty() {
                page.remove(0);
            }
            Ok(page)
        }
        async fn delete_expired(&self, now: i64, limit: usize) -> Result<Vec<String>, StoreError> {
            let now = if self.bug == Bug::EarlyExpiry {
                now + 1
            } else {
                now
            };
            self.inner.delete_expired(now, limit).await
        }
        async fn cursor_key(&self) -> Result<[u8; 32], StoreError> {
            self.inner.cursor_key().await
        }
        async fn heartbeat(&self, e: &str, until: i64) -> Result<(), StoreError> {
            self.inner.heartbeat(e, until).await
        }
        async fn fail_orphans(&self, s: OrphanSweep) -> Result<Vec<TaskRecord>, StoreError> {
            self.inner.fail_orphans(s).await
        }
        fn subscribe(&self, id: &str) -> watch::Receiver<u64> {
            if self.bug == Bug::NoWake {
                self.silent.subscribe()
            } else {
                self.inner.subscribe(id)
            }
        }
    }

    async fn fails<F: std::future::Future<Output = ()> + Send + 'static>(check: F) -> bool {
        tokio::spawn(check).await.is_err_and(|e| e.is_panic())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn each_broken_invariant() {
        assert!(
            fails(conformance::wake_ups(
                broken(Bug::NoWake),
                Leases::ProcessLocal
            ))
            .await
        );
        assert!(
            fails(async {
                conformance::racing_terminals(
                    &|| async { broken(Bug::SecondWinner) },
                    Leases::ProcessLocal,
                )
                .await;
            })
            .await,
            "two terminal winners must be caught"
        );
        assert!(
            fails(conformance::terminal_never_changes(broken(
                Bug::TerminalReopens
            )))
            .await
        );
        assert!(fails(conformance::keyset_pagination(broken(Bug::SkipsOnPage))).await);
        assert!(
            fails(conformance::pagination_under_concurrent_inserts(broken(
                Bug::SkipsOnPage
            )))
            .await
        );
        assert!(fails(conformance::owner_isolation(broken(Bug::LeaksOwners))).await);
        assert!(fails(conformance::max_active_per_owner(broken(Bug::NoLimit))).await);
        assert!(
            fails(conformance::quota_keys_not_owners(broken(
                Bug::CountsByOwner
            )))
            .await
        );
        assert!(fails(conformance::stored_tasks_limit(broken(Bug::NoStoredLimits))).await);
        assert!(
            fails(conformance::stored_bytes_limits(
                broken(Bug::NoStoredLimits),
                Leases::ProcessLocal
            ))
            .await
        );
        assert!(
            fails(conformance::stored_bytes_limits(
                broken(Bug::OutcomeUnlimited),
                Leases::ProcessLocal
            ))
            .await
        );
        assert!(fails(conformance::ttl_deletion(broken(Bug::EarlyExpiry))).await);
        assert!(
            fails(conformance::legal_transitions(broken(
                Bug::ReformatsOutcome
            )))
            .await
        );
    }
}
