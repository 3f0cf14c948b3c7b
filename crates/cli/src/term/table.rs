//! The table of `mcp-tasks tasks watch`: one row per task (id, status, age,
//! statusMessage), oldest first, the newest `rows` shown.

use std::time::SystemTime;

use mcp_tasks_client::Task;

use crate::term::{bold, dim};

/// How old a task is, from its `createdAt` (`?` when it cannot be read).
pub(crate) fn age(created_at: &str, now: SystemTime) -> String {
    match humantime::parse_rfc3339_weak(created_at) {
        Ok(t) => super::duration(now.duration_since(t).unwrap_or_default()),
        Err(_) => "?".into(),
    }
}

/// The lines of the table (header, rows, footer).
pub(crate) fn render(tasks: &[Task], rows: usize, now: SystemTime, footer: &str) -> Vec<String> {
    let shown = &tasks[tasks.len().saturating_sub(rows)..];
    let id_width = shown
        .iter()
        .map(|t| t.task_id.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut lines = vec![bold(&format!(
        "{:<id_width$}  {:<14}  {:>7}  MESSAGE",
        "TASK", "STATUS", "AGE"
    ))];
    for t in shown {
        lines.push(format!(
            "{:<id_width$}  {:<14}  {:>7}  {}",
            t.task_id,
            t.status.as_str(),
            age(&t.created_at, now),
            t.status_message.as_deref().unwrap_or("")
        ));
    }
    if tasks.is_empty() {
        lines.push(dim("(no tasks yet)"));
    } else if shown.len() < tasks.len() {
        lines.push(dim(&format!(
            "({} older tasks not shown)",
            tasks.len() - shown.len()
        )));
    }
    lines.push(dim(footer));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_client::TaskStatus;
    use std::time::Duration;

    fn task(id: &str, status: TaskStatus, created: &str, message: Option<&str>) -> Task {
        Task {
            task_id: id.into(),
            status,
            status_message: message.map(str::to_owned),
            created_at: created.into(),
            last_updated_at: created.into(),
            ttl: None,
            poll_interval: None,
        }
    }

    #[test]
    fn rows_show_status_age_and_message() {
        let now = humantime::parse_rfc3339("2025-11-25T10:01:05Z").unwrap();
        let tasks = vec![
            task("a", TaskStatus::Completed, "2025-11-25T10:00:00.000Z", None),
            task(
                "b",
                TaskStatus::Working,
                "2025-11-25T10:01:00Z",
                Some("Sleeping"),
            ),
        ];
        let lines = render(&tasks, 10, now, "footer");
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1], "a     completed         1m05s  ");
        assert_eq!(lines[2], "b     working            5.0s  Sleeping");
        let lines = render(&tasks, 1, now, "footer");
        assert!(lines[1].starts_with("b "));
        assert!(lines[2].contains("1 older tasks not shown"));
        assert!(render(&[], 5, now, "f")[1].contains("no tasks yet"));
        assert_eq!(age("garbage", now), "?");
        assert_eq!(
            age("2025-11-25T10:01:05Z", now + Duration::from_millis(300)),
            "300ms"
        );
    }
}
