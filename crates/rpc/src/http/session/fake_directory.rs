//! A session directory for unit tests of shared sessions.

use async_trait::async_trait;
use parking_lot::Mutex;
use serde_json::json;

use super::directory::{Ended, EndedCallback, SessionDirectory, SharedSession};

/// A directory holding session "s", started by another replica; what it tells this
/// replica is delivered by the test ([`Self::deliver`]).
#[derive(Default)]
pub(super) struct OneSession {
    told: Mutex<Option<EndedCallback>>,
}

impl OneSession {
    pub(super) fn deliver(&self, e: Ended) {
        let f = self.told.lock().clone().expect("the server listens");
        f(e);
    }
}

#[async_trait]
impl SessionDirectory for OneSession {
    async fn insert(&self, _: &SharedSession, _: usize) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    async fn find(&self, id: &str, now: i64) -> Result<Option<SharedSession>, String> {
        Ok((id == "s").then(|| {
            SharedSession::new(id.to_owned(), None, "o".to_owned(), json!({}), now + 60_000)
        }))
    }
    async fn touch(&self, _: &str, _: i64) -> Result<bool, String> {
        Ok(true)
    }
    async fn remove(&self, _: &str) -> Result<(), String> {
        Ok(())
    }
    async fn sweep(&self, _: i64) -> Result<Vec<String>, String> {
        Ok(Vec::new())
    }
    async fn existing(&self, ids: &[String]) -> Result<Vec<String>, String> {
        Ok(ids.to_vec())
    }
    fn on_ended(&self, f: EndedCallback) {
        *self.told.lock() = Some(f);
    }
}
