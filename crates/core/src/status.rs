//! The task status state machine: the only place that knows which transitions are legal.
//!
//! Spec: "Receivers MUST only transition tasks through the following valid paths:
//! From `working`: may move to `input_required`, `completed`, `failed`, or `cancelled`;
//! From `input_required`: may move to `working`, `completed`, `failed`, or `cancelled`;
//! Tasks in `completed`, `failed`, or `cancelled` status are in a terminal state and MUST
//! NOT transition to any other state."

pub use mcp_tasks_proto::mcp::TaskStatus;

/// The statuses a task may be in for a transition to `to` to be legal.
///
/// Stores apply a transition as one compare-and-swap: `UPDATE … WHERE status IN
/// (allowed_predecessors(to))`. `working -> working` is not a transition.
pub fn allowed_predecessors(to: TaskStatus) -> &'static [TaskStatus] {
    use TaskStatus::{InputRequired, Working};
    match to {
        TaskStatus::Working => &[InputRequired],
        TaskStatus::InputRequired => &[Working],
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled => {
            &[Working, InputRequired]
        }
    }
}

/// Whether `from -> to` is a legal transition.
pub fn can_transition(from: TaskStatus, to: TaskStatus) -> bool {
    allowed_predecessors(to).contains(&from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_states_have_no_successor() {
        for from in TaskStatus::ALL.into_iter().filter(|s| s.is_terminal()) {
            for to in TaskStatus::ALL {
                assert!(!can_transition(from, to), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn the_spec_paths_are_legal() {
        use TaskStatus::*;
        for to in [InputRequired, Completed, Failed, Cancelled] {
            assert!(can_transition(Working, to));
        }
        for to in [Working, Completed, Failed, Cancelled] {
            assert!(can_transition(InputRequired, to));
        }
        assert!(!can_transition(Working, Working));
        assert!(!can_transition(InputRequired, InputRequired));
    }
}
