//! The integration tests of the `mcp-tasks` binary, in one test binary (one link instead
//! of one per file). Each module is one behaviour; the helpers are `common` (our server
//! over stdio as a child process), `http_common` (over Streamable HTTP), `gateway_common`
//! (the gateway and its fixtures), `client_support` and `term_support` (the CLI as a
//! requestor, on a pipe or a pseudo-terminal).
//!
//! Every test here talks to child processes of its own (servers on ports of their own, in
//! scratch directories of their own) and sets no process-wide state (environment, working
//! directory, signal handlers) of the test process, so the tests run safely as threads of
//! one process (`cargo test`) as well as one process each (`cargo nextest`).
#![allow(missing_docs)]

// Helpers.
mod client_support;
mod common;
mod gateway_common;
mod http_common;
mod term_support;

// Behaviours.
mod audit_log;
mod bad_input;
mod bench_smoke;
mod bounds_logs_hosts;
mod cli_auto;
mod cli_call;
mod cli_modern;
mod cli_no_tasks;
mod cli_tasks;
mod client_era_cache;
mod client_http;
mod client_modern;
mod client_receiver_ts;
mod client_stdio;
mod client_ts_interop;
mod config_file;
mod crash_sqlite;
mod create_task;
mod demo_tools;
mod fuzz_corpus;
mod gateway_bridge;
mod gateway_everything;
mod gateway_hardening;
mod gateway_http_upstream;
mod gateway_modern;
mod gateway_modern_questions;
mod gateway_passthrough;
mod gateway_policy;
mod gateway_replicas;
mod gateway_restart;
mod gateway_reverse;
mod gateway_reverse_http;
mod gateway_sessions;
mod gateway_supervision;
mod gateway_upstream_tasks;
mod http_auth;
mod http_body_limit;
mod http_content_types;
mod http_input_required;
mod http_inspector;
mod http_oauth;
mod http_origin;
mod http_progress;
mod http_resource_bounds;
mod http_resumption;
mod http_scale;
mod http_sessions;
mod http_shutdown;
mod http_sse;
mod http_storage;
mod http_tls;
mod http_ts_sdk;
mod http_unauthenticated;
mod input_required;
mod inspector_modern;
mod interop_ext_tasks;
mod interop_fastmcp;
mod interop_fastmcp_server;
mod lifecycle;
mod limits;
mod log_format;
mod log_trace;
mod metrics;
mod metrics_gateway;
mod modern_anonymous;
mod modern_bad_input;
mod modern_era;
mod modern_wire;
mod pg_outage_wait;
mod pg_restart;
mod postgres_store;
mod process;
mod rate_limits;
mod replicas;
mod replicas_failover;
mod replicas_input;
mod replicas_mrtr;
mod replicas_plain;
mod replicas_rate;
mod replicas_streams;
mod replicas_ts;
mod replicas_wake;
mod status_notifications;
mod task_progress;
mod task_support;
mod tasks_cancel;
mod tasks_get;
mod tasks_list;
mod tasks_result;
mod term_pty;
mod term_watch;
mod ttl;
mod two_principals;
mod ui_api;
mod ui_browser;
mod walkthrough;
