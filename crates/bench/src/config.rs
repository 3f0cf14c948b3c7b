//! A run's settings: the workloads ([`Scenario`]), the names of the operations they
//! measure ([`op`]) and the configuration of a run ([`Config`]). Read by the run
//! (`scenario.rs`) and by the report (`report.rs`).

use std::time::Duration;

use mcp_tasks_proto::Revision;

use crate::message::Endpoint;

/// What the virtual clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Task-augmented `tools/call` of the work tool (0 ms by default), as fast as possible.
    Create,
    /// `tasks/get` of random ids among K tasks created beforehand.
    Get,
    /// Create, poll `tasks/get` every `poll_ms`, then `tasks/result` (modern: poll until
    /// the task is terminal; the result comes inline in that last `tasks/get`).
    Lifecycle,
    /// Create, poll `tasks/get` as often as the task's `pollInterval` says, then
    /// `tasks/result` (modern: as `Lifecycle`, at the task's `pollIntervalMs`).
    LifecyclePollInterval,
    /// Create, open `tasks/result` at once; the figure is how late the result arrives:
    /// arrival - (create sent + work ms).
    ResultWait,
    /// Page through K stored tasks with `tasks/list`, over and over.
    List,
}

impl Scenario {
    /// Every scenario, in the order they are documented.
    pub const ALL: [Scenario; 6] = [
        Self::Create,
        Self::Get,
        Self::Lifecycle,
        Self::LifecyclePollInterval,
        Self::ResultWait,
        Self::List,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Get => "get",
            Self::Lifecycle => "lifecycle",
            Self::LifecyclePollInterval => "lifecycle-poll-interval",
            Self::ResultWait => "result-wait",
            Self::List => "list",
        }
    }

    /// Whether the scenario has a form in `revision` (2026-07-28 has no `tasks/result` and no
    /// `tasks/list`).
    pub fn in_revision(self, revision: Revision) -> bool {
        !revision.tasks_are_extension() || !matches!(self, Self::ResultWait | Self::List)
    }

    /// The work (ms of `sleep`) when none is given.
    pub fn default_work_ms(self) -> u64 {
        match self {
            Self::Create | Self::Get | Self::List => 0,
            Self::Lifecycle | Self::LifecyclePollInterval | Self::ResultWait => 100,
        }
    }
}

impl std::str::FromStr for Scenario {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|sc| sc.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|s| s.name()).collect();
                format!("unknown scenario `{s}` (one of: {})", names.join(", "))
            })
    }
}

/// Names of the measured operations.
pub mod op {
    /// A task-augmented `tools/call` (task creation).
    pub const CREATE: &str = "tools/call";
    /// `tasks/get`.
    pub const GET: &str = "tasks/get";
    /// `tasks/result`.
    pub const RESULT: &str = "tasks/result";
    /// `tasks/list` (one page).
    pub const LIST: &str = "tasks/list";
    /// A whole lifecycle: create sent to result received.
    pub const LIFECYCLE: &str = "lifecycle";
    /// How late a result arrives: arrival - (create sent + work).
    pub const LATENESS: &str = "result-lateness";
    /// A result's wait beyond its task: arrival - the task's completion as its server
    /// recorded it (`lastUpdatedAt`, whole milliseconds: up to 1 ms more than the wait).
    pub const OVERHEAD: &str = "result-overhead";
}

/// A run's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The server.
    pub endpoint: Endpoint,
    /// `result-wait`: send `tasks/result` here instead (another replica sharing the
    /// sessions and the store of `endpoint`), so that waiter and executor differ.
    pub wait_endpoint: Option<Endpoint>,
    /// The protocol revision spoken (`--era`, named in reports by
    /// [`crate::message::era_name`]).
    pub revision: Revision,
    /// The workload.
    pub scenario: Scenario,
    /// Virtual clients (each its own MCP session and connection).
    pub concurrency: usize,
    /// How long to run.
    pub length: Length,
    /// The `ms` argument of the work tool (for `get` and `list`, of the K tasks created
    /// first); `None` is the scenario's default.
    pub work_ms: Option<u64>,
    /// Poll period of `lifecycle`.
    pub poll_ms: u64,
    /// The K tasks created before measuring (`get`, `list`).
    pub seeding: Seeding,
    /// The `ttl` asked for each task (`None`: no `ttl` field).
    pub ttl_ms: Option<u64>,
    /// The work tool (`sleep`, taking `{ms}`).
    pub tool: String,
    /// The server's process, to read its CPU and memory.
    pub server_pid: Option<u32>,
    /// Longest wait for one answer (besides the work itself).
    pub timeout: Duration,
    /// Print progress to stderr.
    pub progress: bool,
}

impl Config {
    /// Defaults for `scenario` against `endpoint`.
    pub fn new(endpoint: Endpoint, scenario: Scenario) -> Self {
        Self {
            endpoint,
            wait_endpoint: None,
            revision: Revision::V2025_11_25,
            scenario,
            concurrency: 16,
            length: Length {
                duration: Duration::from_secs(10),
                warmup: Duration::from_secs(2),
                requests: None,
            },
            work_ms: None,
            poll_ms: 50,
            seeding: Seeding {
                tasks: 1000,
                concurrency: 32,
                list: true,
            },
            ttl_ms: Some(3_600_000),
            tool: "sleep".into(),
            server_pid: None,
            timeout: Duration::from_secs(30),
            progress: false,
        }
    }

    /// The work in ms.
    pub fn work(&self) -> u64 {
        self.work_ms
            .unwrap_or_else(|| self.scenario.default_work_ms())
    }

    /// Whether the K tasks are created before measuring: always for `get`, for `list`
    /// unless [`Seeding::list`] is off.
    pub fn seeds(&self) -> bool {
        self.scenario == Scenario::Get || (self.scenario == Scenario::List && self.seeding.list)
    }
}

/// How long a run lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Length {
    /// How long to measure (a cap when `requests` is set).
    pub duration: Duration,
    /// How long to run before measuring.
    pub warmup: Duration,
    /// Stop after this many measured iterations instead of after `duration`.
    pub requests: Option<u64>,
}

/// The K tasks created before measuring: those `get` reads, those `list` pages through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seeding {
    /// K: tasks created beforehand for `get`, stored for `list`.
    pub tasks: u64,
    /// Connections that create them.
    pub concurrency: usize,
    /// `list`: create them first (else page through what the server holds).
    pub list: bool,
}
