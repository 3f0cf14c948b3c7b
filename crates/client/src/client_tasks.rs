//! The tasks methods of a [`Client`]: resuming a task by id, `tasks/get` (with what
//! 2026-07-28 inlines), `tasks/update`, `tasks/cancel`, `tasks/list`, and the shared
//! state of a task's handles on the connection.

use std::collections::HashSet;
use std::sync::Arc;

use mcp_tasks_proto::mcp::Task;
use mcp_tasks_proto::methods;
use mcp_tasks_proto::modern as wire;
use serde_json::{Map, Value, json};

use crate::ClientError;
use crate::client::{Client, MAX_PAGES, next_cursor};
use crate::modern::{self, TaskDetail, TaskDetailExt};
use crate::task::TaskHandle;
use crate::task_state::TaskShared;
use crate::types::parse_task;

impl Client {
    /// Resume a task by id (from an earlier connection, another process, a list):
    /// `tasks/get`, then a handle.
    ///
    /// # Errors
    /// The server's error (-32602 for an unknown or expired task).
    pub async fn task(&self, task_id: &str) -> Result<TaskHandle, ClientError> {
        let task = self.get_task(task_id).await?;
        Ok(TaskHandle::new(
            self.clone(),
            self.register(task),
            None,
            None,
        ))
    }

    /// `tasks/get`.
    ///
    /// # Errors
    /// The server's error (-32602 for an unknown or expired task).
    pub async fn get_task(&self, task_id: &str) -> Result<Task, ClientError> {
        Ok(self.get_task_detail(task_id).await?.task)
    }

    /// `tasks/get` with what 2026-07-28 inlines: the result, the error or the questions
    /// (2025-11-25 carries none of them: only the task).
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] from a 2026-07-28 server without the tasks extension
    /// ([`Self::revision_refusal`]); the server's error (an unknown or expired task).
    pub async fn get_task_detail(&self, task_id: &str) -> Result<TaskDetail, ClientError> {
        if let Some(e) = self.revision_refusal(methods::TASKS_GET) {
            return Err(e);
        }
        let v = self
            .request(methods::TASKS_GET, Some(json!({ "taskId": task_id })))
            .await?;
        let detail = TaskDetail::parse(&v)?;
        let task = detail.task.clone();
        if let Some(s) = self
            .inner
            .rpc
            .shared
            .tasks
            .lock()
            .get(task_id)
            .and_then(std::sync::Weak::upgrade)
        {
            s.observe(task);
        }
        Ok(detail)
    }

    /// 2026-07-28: `tasks/update` with `responses` (answers to the task's
    /// `inputRequests`, by key).
    ///
    /// # Errors
    /// The server's error (an unknown task).
    pub async fn update_task(
        &self,
        task_id: &str,
        responses: Map<String, Value>,
    ) -> Result<(), ClientError> {
        self.request(
            wire::methods::TASKS_UPDATE,
            Some(modern::update_params(task_id, responses)),
        )
        .await
        .map(drop)
    }

    /// `tasks/cancel`.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] when the server does not declare `tasks.cancel` (in
    /// 2026-07-28: the tasks extension); the server's error (-32602 for a terminal or
    /// unknown task).
    pub async fn cancel_task(&self, task_id: &str) -> Result<Task, ClientError> {
        let v = self.cancel_task_raw(task_id).await?;
        if self.revision().tasks_are_extension() {
            // The extension acknowledges with an empty result: read the task.
            return self.get_task(task_id).await;
        }
        parse_task(&v)
    }

    pub(crate) async fn cancel_task_raw(&self, task_id: &str) -> Result<Value, ClientError> {
        self.check_tasks_method(methods::TASKS_CANCEL, |t| t.cancel)?;
        self.request(methods::TASKS_CANCEL, Some(json!({ "taskId": task_id })))
            .await
    }

    /// One page of `tasks/list`: the tasks and the next cursor.
    ///
    /// # Errors
    /// [`ClientError::Unsupported`] when the server does not declare `tasks.list`; the
    /// server's error (-32602 for a bad cursor).
    pub async fn list_tasks_page(
        &self,
        cursor: Option<&str>,
    ) -> Result<(Vec<Task>, Option<String>), ClientError> {
        self.check_tasks_method(methods::TASKS_LIST, |t| t.list)?;
        let params = cursor.map(|c| json!({ "cursor": c }));
        let v = self.request(methods::TASKS_LIST, params).await?;
        let tasks = v
            .get("tasks")
            .and_then(Value::as_array)
            .ok_or_else(|| ClientError::Protocol(format!("tasks/list without `tasks`: {v}")))?
            .iter()
            .map(parse_task)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((tasks, next_cursor(&v)))
    }

    /// `tasks/list`, following the opaque cursor through every page.
    ///
    /// # Errors
    /// As [`Self::list_tasks_page`].
    pub async fn list_tasks(&self) -> Result<Vec<Task>, ClientError> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let (page, next) = self.list_tasks_page(cursor.as_deref()).await?;
            all.extend(page);
            match next {
                Some(c) if seen.insert(c.clone()) => cursor = Some(c),
                _ => break,
            }
        }
        Ok(all)
    }

    /// Refuse `method` (`tasks/cancel`, `tasks/list`) before it is sent: the revision
    /// refuses it ([`Self::revision_refusal`]), or the server's tasks capabilities do not
    /// declare it (`declared` reads the capability).
    fn check_tasks_method(
        &self,
        method: &str,
        declared: impl FnOnce(&crate::TaskCapabilities) -> bool,
    ) -> Result<(), ClientError> {
        if let Some(e) = self.revision_refusal(method) {
            return Err(e);
        }
        if !declared(&self.server_tasks()) {
            let key = method.trim_start_matches("tasks/");
            return Err(ClientError::unsupported(
                method,
                format!("its capabilities do not declare tasks.{key}"),
            ));
        }
        Ok(())
    }

    /// The shared state of `task`'s handles on this connection.
    pub(crate) fn register(&self, task: Task) -> Arc<TaskShared> {
        let mut tasks = self.inner.rpc.shared.tasks.lock();
        if let Some(s) = tasks.get(&task.task_id).and_then(std::sync::Weak::upgrade) {
            s.observe(task);
            return s;
        }
        tasks.retain(|_, w| w.strong_count() > 0);
        let s = TaskShared::new(task);
        tasks.insert(s.task_id.clone(), Arc::downgrade(&s));
        s
    }
}
