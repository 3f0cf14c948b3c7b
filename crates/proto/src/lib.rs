//! Wire model of mcp-tasks.
//!
//! The JSON-RPC 2.0 envelope ([`jsonrpc`]), the one wire error type ([`ErrorObject`]) and
//! the MCP 2025-11-25 types our code interprets ([`mcp`]), and those of 2026-07-28 with the
//! tasks extension ([`modern`]). Everything we only pass through
//! stays raw JSON; every typed struct keeps the fields it does not know in an `extra` map so
//! that a parse/serialize round trip loses nothing. Besides the wire, the record of a
//! session shared between the replicas of a server ([`session::SharedSession`]), which the
//! transport and the stores both handle. This crate does no I/O.

pub mod budget;
mod builder;
mod debug;
pub mod error;
#[doc(hidden)]
pub mod fuzz;
pub mod jsonrpc;
pub mod logged;
pub mod mcp;
pub mod meta;
pub mod methods;
pub mod modern;
pub mod revision;
pub mod session;
pub mod tool_result;
pub mod trace;

pub use budget::json_len;
pub use error::{ErrorObject, codes};
pub use jsonrpc::{
    ErrorResponse, Message, Notification, ParseFailure, Request, RequestId, Response,
};
pub use revision::{Revision, RevisionChoice};
pub use tool_result::{CallToolResult, ContentBlock, ResourceContents};
