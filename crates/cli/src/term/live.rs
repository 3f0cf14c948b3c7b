//! The live line of `mcp-tasks call` on a terminal: a spinner, the task's status, its
//! `statusMessage`, the elapsed time, and a progress bar when the progress has a total.
//!
//! ```text
//! ⠹ sleep · working · 3.2s · [██████░░░░░░░░░░░░░░] 3/10 · Sleeping
//! ```

use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressState, ProgressStyle};
use mcp_tasks_client::Task;
use parking_lot::Mutex;

use crate::term::{Screen, bold};

/// The spinner's frames, and (last, never seen: the line is cleared at the end) its
/// finished state.
const SPINNER: [&str; 11] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", " "];
const BAR: usize = 20;

/// A `notifications/progress` as shown.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Progress {
    pub(crate) progress: f64,
    pub(crate) total: Option<f64>,
    pub(crate) message: Option<String>,
}

/// What the line shows.
#[derive(Debug, Clone)]
pub(crate) struct LiveState {
    /// The tool (or what is being waited for).
    pub(crate) what: String,
    /// The task, once there is one.
    pub(crate) task: Option<Task>,
    /// The last progress.
    pub(crate) progress: Option<Progress>,
}

/// The live line, redrawn every 100 ms until [`Live::finish`] (see [`Screen::live`]).
pub(crate) struct Live {
    state: Arc<Mutex<LiveState>>,
}

impl Live {
    /// Show the line for `what` (only on a terminal: elsewhere nothing is drawn).
    pub(crate) fn start(what: &str) -> Self {
        let state = Arc::new(Mutex::new(LiveState {
            what: what.to_owned(),
            task: None,
            progress: None,
        }));
        let shared = Arc::clone(&state);
        let style = ProgressStyle::with_template("{spinner} {line}")
            .expect("a valid template")
            .tick_strings(&SPINNER)
            .with_key(
                "line",
                move |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = w.write_str(&render(&shared.lock(), s.elapsed()));
                },
            );
        Screen::get().live(style);
        Self { state }
    }

    fn with(&self, f: impl FnOnce(&mut LiveState)) {
        f(&mut self.state.lock());
    }

    /// The task as last seen.
    pub(crate) fn task(&self, t: &Task) {
        self.with(|s| s.task = Some(t.clone()));
    }

    /// A progress notification.
    pub(crate) fn progress(&self, p: Progress) {
        self.with(|s| s.progress = Some(p));
    }

    /// Stop and take the line away.
    pub(crate) fn finish(&self) {
        Screen::get().clear_live();
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.finish();
    }
}

fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// `[████░░░░] 3/10`, or `3` without a total.
pub(crate) fn progress_text(p: &Progress) -> String {
    match p.total {
        Some(total) if total > 0.0 => {
            let ratio = (p.progress / total).clamp(0.0, 1.0);
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                clippy::cast_precision_loss
            )]
            let filled = ((ratio * BAR as f64).round() as usize).min(BAR);
            format!(
                "[{}{}] {}/{}",
                "█".repeat(filled),
                "░".repeat(BAR - filled),
                number(p.progress),
                number(total)
            )
        }
        _ => format!("progress {}", number(p.progress)),
    }
}

/// The line for `state`, `elapsed` after the start (after the spinner).
pub(crate) fn render(state: &LiveState, elapsed: Duration) -> String {
    let mut parts = vec![state.what.clone()];
    match &state.task {
        Some(t) => parts.push(bold(t.status.as_str())),
        None => parts.push(bold("running")),
    }
    parts.push(super::duration(elapsed));
    if let Some(p) = &state.progress {
        parts.push(progress_text(p));
    }
    let message = state
        .task
        .as_ref()
        .and_then(|t| t.status_message.clone())
        .or_else(|| state.progress.as_ref().and_then(|p| p.message.clone()));
    if let Some(m) = message {
        parts.push(m);
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_tasks_client::TaskStatus;

    fn task(status: TaskStatus, message: Option<&str>) -> Task {
        Task {
            task_id: "t".into(),
            status,
            status_message: message.map(str::to_owned),
            created_at: String::new(),
            last_updated_at: String::new(),
            ttl: None,
            poll_interval: None,
        }
    }

    #[test]
    fn the_line_shows_status_message_time_and_progress() {
        let mut st = LiveState {
            what: "sleep".into(),
            task: None,
            progress: None,
        };
        assert_eq!(
            render(&st, Duration::from_millis(300)),
            "sleep · \x1b[1mrunning\x1b[0m · 300ms"
        );
        st.task = Some(task(TaskStatus::InputRequired, Some("Waiting for input")));
        st.progress = Some(Progress {
            progress: 3.0,
            total: Some(10.0),
            message: Some("step 3".into()),
        });
        assert_eq!(
            render(&st, Duration::from_millis(3250)),
            "sleep · \x1b[1minput_required\x1b[0m · 3.2s · [██████░░░░░░░░░░░░░░] 3/10 · Waiting for input"
        );
        st.task = Some(task(TaskStatus::Working, None));
        assert!(render(&st, Duration::ZERO).ends_with("3/10 · step 3"));
    }

    #[test]
    fn progress_without_a_total_has_no_bar() {
        let p = Progress {
            progress: 2.5,
            total: None,
            message: None,
        };
        assert_eq!(progress_text(&p), "progress 2.5");
        let p = Progress {
            progress: 12.0,
            total: Some(10.0),
            message: None,
        };
        assert_eq!(progress_text(&p), format!("[{}] 12/10", "█".repeat(20)));
    }
}
