//! The task domain of mcp-tasks.
//!
//! * [`status`]: the state machine, in one place;
//! * [`record`]: [`TaskRecord`] and the exact [`Outcome`] of a task;
//! * [`store`]: the [`TaskStore`] trait every backend implements (atomic compare-and-swap
//!   transitions, change wake-ups, keyset listing, TTL sweeps, leases);
//! * [`memory`]: the in-memory store;
//! * [`schema`]: the schema-version checks every persistent store makes;
//! * [`policy`], [`cursor`], [`clock`], [`wake`]: the pieces the engine is made of;
//! * [`metrics`]: the Prometheus metrics of a server (one registry each), and
//!   [`instrumented`], a store wrapper that times and counts store operations;
//! * [`engine`]: the receiver engine, generic over the request a task wraps and over the
//!   transport (it talks to peers through [`channel::RequestorChannel`]);
//! * [`guard`]: the rate limits ([`rate`]), the watch for suspicious patterns and the
//!   audit trail ([`audit`]) of a server;
//! * [`serve`]: `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` answered from
//!   an engine, the same for every receiver (server or client).
//!
//! This crate never depends on the RPC layer.

pub mod audit;
pub mod buckets;
pub mod channel;
pub mod clock;
pub mod cursor;
pub mod engine;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod guard;
pub mod history;
pub mod inputs;
pub mod instrumented;
pub mod memory;
pub mod metrics;
pub mod policy;
pub mod rate;
pub mod record;
mod requester;
pub mod schema;
pub mod serve;
pub mod status;
pub mod store;
pub mod wake;

pub use channel::{RequestSender, RequestorChannel, SendFn};
pub use clock::{Clock, SystemClock};
pub use engine::{Requester, Resumed, Resumer, TaskEngine};
pub use error::{EngineError, Limit, StoreError};
pub use guard::Guard;
pub use history::{HISTORY_MAX, HistoryEntry};
pub use inputs::{InputRequest, TaskInputs};
pub use instrumented::Instrumented;
pub use memory::MemoryStore;
pub use metrics::Metrics;
pub use policy::Policy;
pub use record::{NewTask, Outcome, OutcomeKind, TaskRecord};
pub use store::{
    AdoptQuery, Limits, ListOrder, ListQuery, ListScope, OrphanSweep, TaskNotes, TaskStore,
    Transition, TransitionResult,
};
