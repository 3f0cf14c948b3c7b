//! One file per protocol method.

pub(crate) mod initialize;
pub(crate) mod tasks;
pub(crate) mod tools_call;
pub(crate) mod tools_list;
