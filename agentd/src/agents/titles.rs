//! Names for agents: a new agent is named after its first message at once, and with
//! `autoTitle` the model names it after its first answer. A name the daemon chose never
//! overwrites one a client set meanwhile. The session tells this service about user
//! messages and completed runs ([`RunObserver`]); nothing here runs or waits for a run.

use agent_proto::{Agent, Message, MessageStatus, Role};
use futures::future::BoxFuture;

use super::AgentService;
use crate::provider::{ChatMessage, ProviderRequest, complete};
use crate::session::{DEFAULT_TITLE, RunObserver, SessionError};
use crate::store::{AgentPatch, now_ms};

/// Longest title taken from a message or accepted from the model, in chars.
pub(crate) const TITLE_CHARS: usize = 60;

/// A title from the first line of a text: whitespace collapsed, cut at a word boundary
/// to [`TITLE_CHARS`] with an ellipsis. None for a text with no words.
pub(crate) fn title_from_text(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let whole = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if whole.chars().count() <= TITLE_CHARS {
        return Some(whole);
    }
    // Whole words that leave room for the ellipsis; a first word too long is cut.
    let mut title = String::new();
    for word in whole.split(' ') {
        let len = title.chars().count() + usize::from(!title.is_empty()) + word.chars().count();
        if len > TITLE_CHARS - 1 {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        title = whole.chars().take(TITLE_CHARS - 1).collect();
    }
    title.push('…');
    Some(title)
}

/// The model's title answer, cleaned: first line, no quotes or trailing period, no
/// "Title:" label.
pub(crate) fn clean_model_title(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let line = line
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '*' | '`' | '“' | '”'))
        .trim_end_matches('.')
        .trim();
    title_from_text(line)
}

impl RunObserver for AgentService {
    fn user_message<'a>(&'a self, agent: &'a Agent, message: &'a Message) -> BoxFuture<'a, ()> {
        Box::pin(self.title_from_first_message(agent, message))
    }

    fn run_completed<'a>(&'a self, agent_id: &'a str, message_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(self.auto_title(agent_id, message_id))
    }
}

impl AgentService {
    /// A new agent is named after its first message at once.
    async fn title_from_first_message(&self, agent: &Agent, user: &Message) {
        if agent.title != DEFAULT_TITLE {
            return;
        }
        let Some(title) = title_from_text(&user.text()) else {
            return;
        };
        self.set_title(&agent.id, title, &agent.title).await;
    }

    /// Sets a title the daemon chose, unless a client changed the title since it was
    /// `was`.
    async fn set_title(&self, agent_id: &str, title: String, was: &str) {
        let patch = AgentPatch {
            title: Some(title.clone()),
            title_was: Some(was.to_owned()),
            ..AgentPatch::default()
        };
        // Announced only when it was written (a client's title since then stays).
        let write = async || -> Result<Option<Agent>, SessionError> {
            let written = self.store.update_agent(agent_id, &patch, now_ms()).await?;
            Ok(written.filter(|agent| agent.title == title))
        };
        if let Err(e) = self.sessions.update_agent_row(agent_id, write).await {
            tracing::warn!(agent_id, "cannot save the title: {e}");
        }
    }

    /// With `autoTitle` on, after the agent's first answer completes the model writes a
    /// short title, which replaces the one taken from the first message.
    async fn auto_title(&self, agent_id: &str, message_id: &str) {
        let Ok(agent) = self.get_agent(agent_id).await else {
            return;
        };
        if agent.settings.auto_title != Some(true) {
            return;
        }
        let history = match self.store.history(&agent.id).await {
            Ok(history) => history,
            Err(e) => {
                tracing::warn!(agent_id = agent.id, "cannot read the history: {e}");
                return;
            }
        };
        let answers: Vec<&Message> = history
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .collect();
        let first_answer = match answers.as_slice() {
            [only] if only.id == message_id && only.status == MessageStatus::Done => *only,
            _ => return,
        };
        let Some(question) = history.iter().find(|m| m.role == Role::User) else {
            return;
        };
        let Some(resolved) = self.providers.resolve(&agent.provider, &agent.model) else {
            return;
        };
        let cut = |t: String| t.chars().take(1000).collect::<String>();
        let request = ProviderRequest {
            model: resolved.model.id.clone(),
            system: Some(
                "You name conversations. Answer with a title of at most 6 words, in the language of the conversation, and nothing else."
                    .into(),
            ),
            messages: vec![ChatMessage::User {
                content: format!(
                    "User: {}\n\nAssistant: {}\n\nTitle:",
                    cut(question.text()),
                    cut(first_answer.text())
                ),
                images: Vec::new(),
                documents: Vec::new(),
            }],
            tools: Vec::new(),
            max_output_tokens: Some(32.min(resolved.model.max_output_tokens.max(1))),
            temperature: None,
            options: Default::default(),
        };
        let call = async { complete(resolved.provider.as_ref(), request).await.text() };
        // A title is not worth delaying a shutdown for.
        let answer = tokio::select! {
            _ = self.sessions.shutting_down().cancelled() => return,
            answer = call => answer,
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(agent_id = agent.id, "the title call failed: {e}");
                return;
            }
        };
        if let Some(title) = clean_model_title(&answer) {
            self.set_title(&agent.id, title, &agent.title).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_from_text() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Fix the login bug", Some("Fix the login bug")),
            ("\n\n  spaced   out \n second line", Some("spaced out")),
            ("   \n ", None),
            (
                "Please refactor the session manager so that runs are spawned on a tracker and cancelled",
                Some("Please refactor the session manager so that runs are…"),
            ),
            (&"x".repeat(100), Some(&*format!("{}…", "x".repeat(59)))),
            ("修复登录页面的错误", Some("修复登录页面的错误")),
        ];
        for (text, expected) in cases {
            assert_eq!(title_from_text(text).as_deref(), *expected, "{text:?}");
        }
        assert!(
            title_from_text(&"word ".repeat(50))
                .unwrap()
                .chars()
                .count()
                <= TITLE_CHARS
        );
    }

    #[test]
    fn model_titles_are_cleaned() {
        assert_eq!(
            clean_model_title("\"Login bug fix.\"\nextra").as_deref(),
            Some("Login bug fix")
        );
        assert_eq!(
            clean_model_title("Title: **Rust build**").as_deref(),
            Some("Rust build")
        );
        assert_eq!(clean_model_title("  \n").as_deref(), None);
    }
}
