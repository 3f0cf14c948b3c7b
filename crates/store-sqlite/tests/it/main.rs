//! The integration tests of the SQLite store, in one test binary. The tests that need a
//! second process (`cross_process_wake`, `faults`) run one test of this binary again as a
//! child (`common::run_child`), with the environment set in the child only.

mod common;

mod conformance;
mod cross_process_wake;
mod faults;
mod group_commit;
mod kept_summaries;
mod metrics;
mod open_refusals;
mod quota_counts;
