//! Exit statuses and how errors are reported.

use agent_proto::LoopFinishReason;
use agent_proto::client::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Ok,
    Error,
    Cancelled,
    OtherReason,
    Unreachable,
    Interrupted,
}

impl Exit {
    pub(crate) fn code(self) -> i32 {
        match self {
            Exit::Ok => 0,
            Exit::Error => 1,
            Exit::Cancelled => 2,
            Exit::OtherReason => 3,
            Exit::Unreachable => 4,
            Exit::Interrupted => 130,
        }
    }

    /// The exit status for how a run ended: 0 only when it completed.
    pub(crate) fn of_run(reason: LoopFinishReason) -> Exit {
        match reason {
            LoopFinishReason::Completed => Exit::Ok,
            LoopFinishReason::Error => Exit::Error,
            LoopFinishReason::Cancelled => Exit::Cancelled,
            LoopFinishReason::MaxSteps
            | LoopFinishReason::MaxTokens
            | LoopFinishReason::Refused
            | LoopFinishReason::WaitingPermission
            | LoopFinishReason::WaitingQuestion
            | LoopFinishReason::Paused => Exit::OtherReason,
        }
    }
}

/// Prints a call's error as `error: <message> (<kind>)` and picks the exit status.
pub(crate) fn report(error: &anyhow::Error) -> Exit {
    match error.downcast_ref::<Error>() {
        Some(Error::Call(obj)) => {
            let kind = obj
                .data()
                .and_then(|d| serde_json::from_str::<serde_json::Value>(d.get()).ok())
                .and_then(|d| d["kind"].as_str().map(str::to_owned))
                .unwrap_or_else(|| obj.code().to_string());
            eprintln!("error: {} ({kind})", obj.message());
            Exit::Error
        }
        Some(Error::RestartNeeded(_) | Error::Transport(_)) => {
            eprintln!("error: lost the connection to agentd: {error}");
            Exit::Unreachable
        }
        _ => {
            eprintln!("error: {error:#}");
            Exit::Error
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_completed_run_is_success() {
        let cases = [
            (LoopFinishReason::Completed, 0),
            (LoopFinishReason::Error, 1),
            (LoopFinishReason::Cancelled, 2),
            (LoopFinishReason::MaxSteps, 3),
            (LoopFinishReason::WaitingPermission, 3),
            (LoopFinishReason::WaitingQuestion, 3),
            (LoopFinishReason::Paused, 3),
        ];
        for (reason, code) in cases {
            assert_eq!(Exit::of_run(reason).code(), code, "{reason:?}");
        }
    }
}
