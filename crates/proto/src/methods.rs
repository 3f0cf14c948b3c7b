//! Method names of the messages we interpret.

/// `initialize`
pub const INITIALIZE: &str = "initialize";
/// `notifications/initialized`
pub const INITIALIZED: &str = "notifications/initialized";
/// `ping`
pub const PING: &str = "ping";
/// `server/discover` (2026-07-28), answered -32601 so that newer clients fall back.
pub const SERVER_DISCOVER: &str = "server/discover";
/// `tools/list`
pub const TOOLS_LIST: &str = "tools/list";
/// `tools/call`
pub const TOOLS_CALL: &str = "tools/call";
/// `tasks/get`
pub const TASKS_GET: &str = "tasks/get";
/// `tasks/result`
pub const TASKS_RESULT: &str = "tasks/result";
/// `tasks/list`
pub const TASKS_LIST: &str = "tasks/list";
/// `tasks/cancel`
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// `notifications/tasks/status`
pub const TASK_STATUS: &str = "notifications/tasks/status";
/// `notifications/cancelled`
pub const CANCELLED: &str = "notifications/cancelled";
/// `notifications/progress`
pub const PROGRESS: &str = "notifications/progress";
/// `elicitation/create`
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage`
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
