//! Context building: turns an agent's stored history into the provider request.
//!
//! The one place that decides what the model sees of the past: which messages, which of
//! their blocks, with which system prompt and options. Reasoning and error blocks are for
//! clients, never sent back; a failed or empty assistant turn is left out; consecutive
//! messages of one role are merged (some APIs require alternating roles).

use agent_proto::{Agent, Block, Message, MessageStatus, ModelInfo, Role};

use crate::provider::{ChatMessage, ProviderRequest};

/// The request for the next model call of `agent`. `history` is the agent's messages,
/// oldest first, up to and including the user message being answered (the assistant
/// message being written is not part of it).
pub fn build_request(agent: &Agent, history: &[Message], model: &ModelInfo) -> ProviderRequest {
    let mut messages: Vec<ChatMessage> = Vec::with_capacity(history.len());
    for message in history {
        let Some(content) = visible_text(message) else {
            continue;
        };
        match messages.last_mut() {
            Some(last) if last.role == message.role => {
                last.content.push_str("\n\n");
                last.content.push_str(&content);
            }
            _ => messages.push(ChatMessage {
                role: message.role,
                content,
            }),
        }
    }
    ProviderRequest {
        model: model.id.clone(),
        system: agent.system_prompt.clone().filter(|s| !s.trim().is_empty()),
        messages,
        max_output_tokens: agent
            .settings
            .max_output_tokens
            .map(|n| n.min(model.max_output_tokens)),
        temperature: agent.settings.temperature,
    }
}

/// The text of a message as the model should see it, or `None` to leave it out.
fn visible_text(message: &Message) -> Option<String> {
    if message.role == Role::Assistant
        && matches!(
            message.status,
            MessageStatus::Pending | MessageStatus::Streaming
        )
    {
        return None; // being written by another run: not part of this conversation yet
    }
    let mut text = String::new();
    for block in &message.blocks {
        if let Block::Text { text: t } = block {
            text.push_str(t);
        }
    }
    (!text.trim().is_empty()).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{AgentMode, AgentSettings, SessionStatus};

    fn agent(system: Option<&str>) -> Agent {
        Agent {
            id: "a".into(),
            title: "t".into(),
            mode: AgentMode::Chat,
            provider: "p".into(),
            model: "m".into(),
            system_prompt: system.map(Into::into),
            workspace: None,
            profile: None,
            settings: AgentSettings {
                temperature: Some(0.5),
                max_output_tokens: Some(99_999),
            },
            pinned: false,
            archived: false,
            status: SessionStatus::Idle,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn msg(role: Role, status: MessageStatus, blocks: Vec<Block>) -> Message {
        Message {
            id: "x".into(),
            agent_id: "a".into(),
            role,
            blocks,
            status,
            created_at: 0,
            updated_at: 0,
            usage: None,
        }
    }

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    #[test]
    fn history_becomes_alternating_text() {
        let model = ModelInfo {
            provider: "p".into(),
            id: "m".into(),
            context_window: 1000,
            max_output_tokens: 500,
            tools: false,
            vision: false,
            reasoning: false,
        };
        let history = vec![
            msg(Role::User, MessageStatus::Done, vec![text("hi")]),
            msg(
                Role::Assistant,
                MessageStatus::Done,
                vec![
                    Block::Reasoning {
                        text: "think".into(),
                    },
                    text("hel"),
                    text("lo"),
                ],
            ),
            msg(Role::User, MessageStatus::Done, vec![text("q2")]),
            // failed with no text: left out, so the two user turns merge
            msg(
                Role::Assistant,
                MessageStatus::Error,
                vec![Block::Error {
                    message: "HTTP 500".into(),
                    kind: "providerHttpError".into(),
                }],
            ),
            msg(Role::User, MessageStatus::Done, vec![text("q3")]),
            // cancelled with partial text: kept, the user saw it
            msg(
                Role::Assistant,
                MessageStatus::Cancelled,
                vec![text("part")],
            ),
            msg(Role::User, MessageStatus::Done, vec![text("q4")]),
        ];
        let request = build_request(&agent(Some("sys")), &history, &model);
        let got: Vec<(Role, &str)> = request
            .messages
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Role::User, "hi"),
                (Role::Assistant, "hello"),
                (Role::User, "q2\n\nq3"),
                (Role::Assistant, "part"),
                (Role::User, "q4"),
            ]
        );
        assert_eq!(request.system.as_deref(), Some("sys"));
        assert_eq!(request.max_output_tokens, Some(500), "capped by the model");
        assert_eq!(request.temperature, Some(0.5));
        assert_eq!(
            build_request(&agent(Some("  ")), &history, &model).system,
            None
        );
    }
}
