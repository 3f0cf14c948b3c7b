//! Benchmarks of the SQLite task store (filled in below).
#![allow(missing_docs)]
fn main() {}
