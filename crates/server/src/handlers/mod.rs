//! One file per protocol method.

pub mod initialize;
pub mod tasks;
pub mod tools_call;
pub mod tools_list;
