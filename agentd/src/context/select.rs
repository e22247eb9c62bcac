//! What one request holds: which stored messages come before the call, which message the
//! call continues, and which summary stands in for the oldest ones. The run and
//! `getMessageRequestPreview` both ask here, so a preview is the request that is sent.

use agent_proto::{Message, MessageStatus, Role};

use crate::store::Summary;

/// Which model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point<'a> {
    /// The agent's next call: it continues the last answer if that one is unfinished.
    Next,
    /// A call that continues message `id` (a run writing it).
    Continuing(&'a str),
    /// The first call of message `id` (it began that answer).
    Began(&'a str),
}

/// The messages and summary of one call.
#[derive(Debug, Clone)]
pub struct Selection<'h> {
    /// The stored messages before the call's own answer.
    pub before: &'h [Message],
    /// The answer the call continues, as stored, if it continues one.
    pub current: Option<&'h Message>,
    /// The summary in force for the call.
    pub summary: Option<Summary>,
}

/// Selects what the call at `point` holds from an agent's `history` and `summaries`
/// (oldest first). `Err` names the message that is not in the history.
pub fn select<'h>(
    history: &'h [Message],
    summaries: Vec<Summary>,
    point: Point<'_>,
) -> Result<Selection<'h>, String> {
    let position = |id: &str| {
        history
            .iter()
            .position(|m| m.id == id)
            .ok_or_else(|| id.to_owned())
    };
    let newest = |summaries: Vec<Summary>| summaries.into_iter().next_back();
    match point {
        Point::Next => match history.last() {
            Some(last) if unfinished_answer(last) => {
                select(history, summaries, Point::Continuing(&last.id))
            }
            _ => Ok(Selection {
                before: history,
                current: None,
                summary: newest(summaries),
            }),
        },
        Point::Continuing(id) => {
            let at = position(id)?;
            Ok(Selection {
                before: &history[..at],
                current: history.get(at),
                summary: newest(summaries),
            })
        }
        Point::Began(id) => {
            let at = position(id)?;
            let before = &history[..at];
            // The summary in force then: the newest made before the answer ended that
            // covers earlier messages.
            let ended = history[at].updated_at;
            let summary = summaries.into_iter().rfind(|s| {
                s.created_at <= ended && before.iter().any(|m| m.id == s.through_message_id)
            });
            Ok(Selection {
                before,
                current: None,
                summary,
            })
        }
    }
}

/// An answer a run is still writing, or will go on writing.
fn unfinished_answer(message: &Message) -> bool {
    message.role == Role::Assistant
        && matches!(
            message.status,
            MessageStatus::Waiting | MessageStatus::Streaming | MessageStatus::Pending
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(id: &str, role: Role, status: MessageStatus, at: i64) -> Message {
        Message::new(id, "a", role, Vec::new(), status, at)
    }

    fn summary(through: &str, at: i64) -> Summary {
        Summary {
            agent_id: "a".into(),
            through_message_id: through.into(),
            text: format!("up to {through}"),
            summarized_messages: 2,
            before_tokens: 10,
            after_tokens: 2,
            created_at: at,
        }
    }

    #[test]
    fn each_point_selects_its_messages_and_summary() {
        use MessageStatus::{Done, Streaming};
        let history = vec![
            message("u1", Role::User, Done, 1),
            message("a1", Role::Assistant, Done, 2),
            message("u2", Role::User, Done, 3),
            message("a2", Role::Assistant, Done, 6),
            message("u3", Role::User, Done, 7),
            message("a3", Role::Assistant, Streaming, 8),
        ];
        let summaries = || vec![summary("a1", 5), summary("a2", 7)];
        let ids = |m: &[Message]| m.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
        // (point, before, current, summary through)
        type Case<'a> = (Point<'a>, &'a [&'a str], Option<&'a str>, Option<&'a str>);
        let cases: &[Case] = &[
            (
                Point::Next,
                &["u1", "a1", "u2", "a2", "u3"],
                Some("a3"),
                Some("a2"),
            ),
            (
                Point::Continuing("a3"),
                &["u1", "a1", "u2", "a2", "u3"],
                Some("a3"),
                Some("a2"),
            ),
            (Point::Began("a2"), &["u1", "a1", "u2"], None, Some("a1")),
            (Point::Began("a1"), &["u1"], None, None),
        ];
        for (point, before, current, through) in cases {
            let got = select(&history, summaries(), *point).unwrap();
            assert_eq!(ids(got.before), *before, "{point:?}");
            assert_eq!(got.current.map(|m| m.id.as_str()), *current, "{point:?}");
            assert_eq!(
                got.summary.as_ref().map(|s| s.through_message_id.as_str()),
                *through,
                "{point:?}"
            );
        }
        // A finished last answer: the next call continues nothing.
        let done = &history[..4];
        let next = select(done, summaries(), Point::Next).unwrap();
        assert_eq!(next.before.len(), 4);
        assert!(next.current.is_none());
        assert_eq!(
            select(&history, summaries(), Point::Began("nope")).unwrap_err(),
            "nope"
        );
    }
}
