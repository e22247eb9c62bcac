//! What ACP values mean to agentd: the option an answer picks, the level a kind of call
//! asks at, names, and the result text of a finished call. Pure; table-tested.

use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    SelectedPermissionOutcome, ToolCallContent, ToolKind,
};
use agent_proto::{PermissionLevel, PermissionResolution};

/// The option an answer picks: allow always for a remembered grant when offered, else
/// allow once; reject once for a denial. An answer with no matching option is a
/// cancellation (never an allow the agent did not offer).
pub(super) fn permission_outcome(
    options: &[PermissionOption],
    resolution: PermissionResolution,
) -> RequestPermissionOutcome {
    if resolution.cancelled {
        return RequestPermissionOutcome::Cancelled;
    }
    let find = |kind: PermissionOptionKind| options.iter().find(|o| o.kind == kind);
    let chosen = if resolution.granted {
        let always = resolution.remember != agent_proto::Remember::Once;
        always
            .then(|| find(PermissionOptionKind::AllowAlways))
            .flatten()
            .or_else(|| find(PermissionOptionKind::AllowOnce))
    } else {
        find(PermissionOptionKind::RejectOnce).or_else(|| find(PermissionOptionKind::RejectAlways))
    };
    match chosen {
        Some(option) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
            option.option_id.clone(),
        )),
        None => RequestPermissionOutcome::Cancelled,
    }
}

/// The level a prompt of this kind of call shows (what it may do).
pub(super) fn level_of(kind: ToolKind) -> PermissionLevel {
    match kind {
        ToolKind::Read | ToolKind::Search | ToolKind::Think => PermissionLevel::Read,
        ToolKind::Edit | ToolKind::Delete | ToolKind::Move => PermissionLevel::Write,
        ToolKind::Fetch => PermissionLevel::Network,
        // Anything else may run anything.
        _ => PermissionLevel::Execute,
    }
}

pub(super) fn kind_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        _ => "other",
    }
}

pub(super) fn option_kind_name(kind: &PermissionOptionKind) -> &'static str {
    match kind {
        PermissionOptionKind::AllowOnce => "allow once",
        PermissionOptionKind::AllowAlways => "allow always",
        PermissionOptionKind::RejectOnce => "reject once",
        PermissionOptionKind::RejectAlways => "reject always",
        _ => "other",
    }
}

/// A finished call's result: its text content, diffs named, else its raw output.
pub(super) fn result_text(
    content: &[ToolCallContent],
    raw_output: Option<&serde_json::Value>,
) -> String {
    let mut parts = Vec::new();
    for item in content {
        match item {
            ToolCallContent::Content(c) => {
                if let ContentBlock::Text(t) = &c.content {
                    parts.push(t.text.clone());
                }
            }
            ToolCallContent::Diff(d) => {
                parts.push(format!("edited {}", d.path.display()));
            }
            _ => {}
        }
    }
    if parts.is_empty()
        && let Some(raw) = raw_output
    {
        parts.push(match raw {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        });
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::Remember;

    fn options() -> Vec<PermissionOption> {
        vec![
            PermissionOption::new("once", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("always", "Always", PermissionOptionKind::AllowAlways),
            PermissionOption::new("no", "Reject", PermissionOptionKind::RejectOnce),
        ]
    }

    fn picked(outcome: RequestPermissionOutcome) -> Option<String> {
        match outcome {
            RequestPermissionOutcome::Selected(s) => Some(s.option_id.to_string()),
            _ => None,
        }
    }

    fn answer(granted: bool, remember: Remember, cancelled: bool) -> PermissionResolution {
        PermissionResolution {
            granted,
            remember,
            cancelled,
        }
    }

    #[test]
    fn answers_pick_the_offered_option_or_cancel() {
        let o = options();
        assert_eq!(
            picked(permission_outcome(&o, answer(true, Remember::Once, false))).as_deref(),
            Some("once")
        );
        assert_eq!(
            picked(permission_outcome(
                &o,
                answer(true, Remember::Session, false)
            ))
            .as_deref(),
            Some("always")
        );
        assert_eq!(
            picked(permission_outcome(&o, answer(false, Remember::Once, false))).as_deref(),
            Some("no")
        );
        assert_eq!(
            picked(permission_outcome(&o, answer(true, Remember::Once, true))),
            None
        );
        // Nothing to allow with: never an allow the agent did not offer.
        let only_reject = vec![o[2].clone()];
        assert_eq!(
            picked(permission_outcome(
                &only_reject,
                answer(true, Remember::Once, false)
            )),
            None
        );
        // Always asked but only once offered: once.
        let only_once = vec![o[0].clone()];
        assert_eq!(
            picked(permission_outcome(
                &only_once,
                answer(true, Remember::Always, false)
            ))
            .as_deref(),
            Some("once")
        );
    }

    #[test]
    fn unknown_kinds_ask_at_the_strictest_level() {
        assert_eq!(level_of(ToolKind::Read), PermissionLevel::Read);
        assert_eq!(level_of(ToolKind::Edit), PermissionLevel::Write);
        assert_eq!(level_of(ToolKind::Fetch), PermissionLevel::Network);
        assert_eq!(level_of(ToolKind::Other), PermissionLevel::Execute);
        assert_eq!(level_of(ToolKind::SwitchMode), PermissionLevel::Execute);
    }
}
