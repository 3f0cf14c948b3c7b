//! 2025-11-25: following a task with `tasks/result` ([`follow_result`]), robust against a
//! receiver that answers it before the task ended: the one loop of a [`crate::Client`]'s
//! task handles and of a program that follows the tasks of a server it passes calls on to
//! (the gateway's upstream tasks). Each says how `tasks/result` is asked and what is done
//! with what is not an answer as a [`ResultAsker`].

use async_trait::async_trait;
use mcp_tasks_proto::ErrorObject;
use mcp_tasks_proto::mcp::TaskStatus;
use serde_json::Value;

use crate::ClientError;
use crate::modern::TaskDetail;

/// What a [`ResultAsker`] does after a `tasks/result` that did not give the outcome.
#[derive(Debug)]
pub enum Next<E> {
    /// Ask `tasks/result` again.
    Again,
    /// Stop following the task with this error.
    Stop(E),
}

/// How the `tasks/result` of one task is asked for, and what is done with what is not
/// the task's outcome.
#[async_trait]
pub trait ResultAsker: Send + Sync {
    /// What following the task stops with when it gets no outcome.
    type Error: Send;
    /// Why a `tasks/result` got no answer (as [`Self::answer_of`] tells it).
    type Lost: Send;

    /// `tasks/result` of `task_id`.
    ///
    /// # Errors
    /// The request's.
    async fn result(&self, task_id: &str) -> Result<Value, ClientError>;

    /// The error `e` that `tasks/result` failed with: the answer about the task (the
    /// task's own outcome, or an early answer), or why there was none.
    ///
    /// # Errors
    /// Why the request got no answer.
    fn answer_of(&self, e: ClientError) -> Result<ErrorObject, Self::Lost>;

    /// Whether the task is known to be terminal by other means (read before each
    /// `tasks/result`: an error answer is then its outcome).
    fn known_terminal(&self) -> bool {
        false
    }

    /// The task as [`super::settle`] reads it: terminal, or waiting for input.
    ///
    /// # Errors
    /// That of `tasks/get`.
    async fn settle(&self, task_id: &str) -> Result<TaskDetail, ClientError>;

    /// A `tasks/result` got no answer (`lost`).
    async fn lost(&self, task_id: &str, lost: Self::Lost) -> Next<Self::Error>;

    /// [`Self::settle`] failed with `e` after `tasks/result` answered `answer` before the
    /// task was known to be terminal.
    async fn unsettled(
        &self,
        task_id: &str,
        e: ClientError,
        answer: ErrorObject,
    ) -> Next<Self::Error>;
}

/// The outcome of a task followed with `tasks/result`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ResultEnd {
    /// The `tasks/result` answer: the result, or the JSON-RPC error the task ended with.
    pub outcome: Result<Value, ErrorObject>,
    /// The task's status when `tasks/get` last showed it terminal, if it did.
    pub terminal: Option<TaskStatus>,
}

/// Ask `tasks/result` of `task_id` until it gives the task's outcome.
///
/// Spec: "When a receiver receives a `tasks/result` request for a task in a non-terminal
/// status, it MUST block the response until the task reaches a terminal status." Some do
/// not: FastMCP 3 answers a running task at once with -32602 "Task not completed yet". So
/// an error answer is the task's outcome only when the `tasks/result` was sent once the
/// task was known to be terminal ([`ResultAsker::known_terminal`], or a [`super::settle`]
/// that showed it terminal): otherwise the task is settled ([`ResultAsker::settle`]:
/// `tasks/get` until it is terminal, or waits for input, whose questions travel on
/// `tasks/result`) and `tasks/result` is sent again.
///
/// # Errors
/// What the asker stops with ([`ResultAsker::lost`], [`ResultAsker::unsettled`]).
pub async fn follow_result<A: ResultAsker + ?Sized>(
    asker: &A,
    task_id: &str,
) -> Result<ResultEnd, A::Error> {
    let mut known_terminal = false;
    let mut terminal: Option<TaskStatus> = None;
    loop {
        // Whether this tasks/result is sent once the task is known to be terminal.
        known_terminal = known_terminal || terminal.is_some() || asker.known_terminal();
        let error = match asker.result(task_id).await {
            Ok(v) => {
                return Ok(ResultEnd {
                    outcome: Ok(v),
                    terminal,
                });
            }
            Err(e) => e,
        };
        let answer = match asker.answer_of(error) {
            Ok(answer) => answer,
            Err(lost) => match asker.lost(task_id, lost).await {
                Next::Again => continue,
                Next::Stop(e) => return Err(e),
            },
        };
        if known_terminal {
            return Ok(ResultEnd {
                outcome: Err(answer),
                terminal,
            });
        }
        match asker.settle(task_id).await {
            Ok(d) if d.task.status.is_terminal() => {
                tracing::debug!(task_id = %task_id, error = %answer.message, "tasks/result answered before the task ended; asking again");
                terminal = Some(d.task.status);
            }
            Ok(_) => {
                tracing::debug!(task_id = %task_id, error = %answer.message, "tasks/result answered early; the task waits for input: asking again");
            }
            Err(e) => match asker.unsettled(task_id, e, answer).await {
                Next::Again => {}
                Next::Stop(e) => return Err(e),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modern::TaskDetailExt;
    use parking_lot::Mutex;
    use serde_json::json;

    /// Answers `tasks/result` and `tasks/get` from scripts; counts what was lost.
    struct Script {
        results: Mutex<Vec<Result<Value, ClientError>>>,
        gets: Mutex<Vec<&'static str>>,
        lost: Mutex<u32>,
    }

    fn script(mut results: Vec<Result<Value, ClientError>>, mut gets: Vec<&'static str>) -> Script {
        results.reverse();
        gets.reverse();
        Script {
            results: Mutex::new(results),
            gets: Mutex::new(gets),
            lost: Mutex::new(0),
        }
    }

    fn early() -> Result<Value, ClientError> {
        Err(ClientError::Rpc {
            method: "tasks/result".into(),
            error: ErrorObject::new(-32602, "Task not completed yet"),
        })
    }

    #[async_trait]
    impl ResultAsker for Script {
        type Error = String;
        type Lost = ClientError;
        async fn result(&self, _: &str) -> Result<Value, ClientError> {
            self.results.lock().pop().expect("a scripted tasks/result")
        }
        fn answer_of(&self, e: ClientError) -> Result<ErrorObject, ClientError> {
            match e {
                ClientError::Rpc { error, .. } => Ok(error),
                e => Err(e),
            }
        }
        async fn settle(&self, _: &str) -> Result<TaskDetail, ClientError> {
            let status = self.gets.lock().pop().expect("a scripted tasks/get");
            if status == "gone" {
                return Err(ClientError::Rpc {
                    method: "tasks/get".into(),
                    error: ErrorObject::new(-32602, "unknown task"),
                });
            }
            TaskDetail::parse(
                &json!({"taskId": "t", "status": status, "createdAt": "", "lastUpdatedAt": "", "ttl": null}),
            )
        }
        async fn lost(&self, _: &str, _: ClientError) -> Next<String> {
            *self.lost.lock() += 1;
            Next::Again
        }
        async fn unsettled(&self, _: &str, e: ClientError, _: ErrorObject) -> Next<String> {
            Next::Stop(e.to_string())
        }
    }

    #[tokio::test]
    async fn an_early_error_is_settled_and_asked_again_and_one_after_the_end_stands() {
        // Early while the task waits for input, then the result.
        let s = script(
            vec![early(), Ok(json!({"content": []}))],
            vec!["input_required"],
        );
        let end = follow_result(&s, "t").await.unwrap();
        assert_eq!(end.outcome, Ok(json!({"content": []})));
        assert_eq!(end.terminal, None);
        // Early, the task found terminal: the next error is its outcome.
        let s = script(vec![early(), early()], vec!["failed"]);
        let end = follow_result(&s, "t").await.unwrap();
        assert_eq!(end.outcome.unwrap_err().code, -32602);
        assert_eq!(end.terminal, Some(TaskStatus::Failed));
    }

    #[tokio::test]
    async fn a_lost_answer_is_the_askers_and_an_unsettled_task_stops_as_it_says() {
        let lost = || {
            Err(ClientError::Timeout {
                method: "tasks/result".into(),
                timeout: std::time::Duration::from_secs(1),
            })
        };
        let s = script(vec![lost(), Ok(json!({"content": []}))], vec![]);
        assert!(follow_result(&s, "t").await.unwrap().outcome.is_ok());
        assert_eq!(*s.lost.lock(), 1);
        let s = script(vec![early()], vec!["gone"]);
        let e = follow_result(&s, "t").await.unwrap_err();
        assert!(e.contains("unknown task"), "{e}");
    }
}
