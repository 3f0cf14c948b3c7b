//! The integration tests of the client library, in one test binary.
#![allow(missing_docs)]

mod in_process;
mod param_headers;
mod receiver;
mod version_retry;
