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
/// `notifications/message` (a log message)
pub const LOG_MESSAGE: &str = "notifications/message";
/// `logging/setLevel` (2025-11-25 only)
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// `resources/list`
pub const RESOURCES_LIST: &str = "resources/list";
/// `resources/templates/list`
pub const RESOURCES_TEMPLATES_LIST: &str = "resources/templates/list";
/// `resources/read`
pub const RESOURCES_READ: &str = "resources/read";
/// `resources/subscribe` (2025-11-25 only)
pub const RESOURCES_SUBSCRIBE: &str = "resources/subscribe";
/// `resources/unsubscribe` (2025-11-25 only)
pub const RESOURCES_UNSUBSCRIBE: &str = "resources/unsubscribe";
/// `notifications/resources/updated`
pub const RESOURCE_UPDATED: &str = "notifications/resources/updated";
/// `prompts/list`
pub const PROMPTS_LIST: &str = "prompts/list";
/// `prompts/get`
pub const PROMPTS_GET: &str = "prompts/get";
/// `completion/complete`
pub const COMPLETION_COMPLETE: &str = "completion/complete";
