//! The integration tests of the task engine and the in-memory store, in one test binary.
#![allow(missing_docs)]

mod conformance_memory;
mod engine_dashboard;
mod engine_guard;
mod engine_one_read;
mod engine_props;
mod engine_store_faults;
mod relay_owner;
