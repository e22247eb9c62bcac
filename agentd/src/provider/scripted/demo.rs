//! The built-in demo model (provider `demo`, model `echo`): what a daemon with no API key
//! answers with, so a newcomer can try a tool call, its permission prompt and the answer
//! offline.
//!
//! A few plain requests become a call of a builtin tool, when the request offers that tool
//! (an agent in `chat` mode is offered none, so it only echoes):
//!
//! | the user writes                          | the demo calls                     |
//! |------------------------------------------|------------------------------------|
//! | `run <command>`, `execute <command>`     | `bash {command}`                   |
//! | `read <path>`, `cat <path>`, `open <path>` | `read_file {path}`               |
//! | `list the files`, `list files in <path>` | `list_directory {path?}`           |
//!
//! When the tool results come back, it answers with their first lines. Anything else is
//! echoed. It decides from the request alone, so it is deterministic; it never calls a tool
//! the request does not offer. What it must not do: pretend to understand more than these
//! phrases.

use super::{ScriptToolCall, Turn};
use crate::provider::{ChatMessage, ProviderRequest};

/// Lines of a tool result the demo's answer quotes.
const QUOTED_LINES: usize = 8;

/// The demo's answer to `request`.
pub(super) fn answer(request: &ProviderRequest) -> Turn {
    if let Some(text) = summary_of_results(&request.messages) {
        return Turn {
            text,
            ..Turn::default()
        };
    }
    let said = request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            ChatMessage::User { content, .. } => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or("");
    let offered = |name: &str| request.tools.iter().any(|t| t.name == name);
    if let Some(call) = understood(said).filter(|c| offered(c.tool)) {
        return Turn {
            text: call.intro,
            tool_calls: vec![ScriptToolCall {
                name: call.tool.into(),
                arguments: call.arguments,
            }],
            ..Turn::default()
        };
    }
    let mut text = format!(
        "This is agentd's built-in demo model: no real model is configured \
         (set OPENAI_API_KEY or add a provider to the config file). You said: {said}"
    );
    let tries: Vec<&str> = [
        ("list_directory", "\"list the files\""),
        ("read_file", "\"read README.md\""),
        ("bash", "\"run ls\""),
    ]
    .into_iter()
    .filter(|(tool, _)| offered(tool))
    .map(|(_, phrase)| phrase)
    .collect();
    if !tries.is_empty() {
        text.push_str(&format!(
            "\n\nTo see it use a tool, try: {}.",
            tries.join(", ")
        ));
    }
    Turn {
        text,
        ..Turn::default()
    }
}

/// A request the demo understood: which tool, with what, and what it says first.
#[derive(Debug, PartialEq)]
struct Understood {
    tool: &'static str,
    arguments: toml::Value,
    intro: String,
}

/// The text after a first word that is one of `words` (any case), trimmed; `None` when the
/// text starts otherwise or nothing follows.
fn after_word<'a>(text: &'a str, words: &[&str]) -> Option<&'a str> {
    let (first, rest) = text.trim().split_once(char::is_whitespace)?;
    let rest = rest.trim();
    (words.iter().any(|w| first.eq_ignore_ascii_case(w)) && !rest.is_empty()).then_some(rest)
}

/// A path as a person writes it in a sentence: without quotes or a full stop.
fn bare_path(text: &str) -> &str {
    text.trim()
        .trim_end_matches(['.', '?', '!'])
        .trim_matches(['"', '\'', '`'])
}

fn table(pairs: &[(&str, &str)]) -> toml::Value {
    toml::Value::Table(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), toml::Value::String((*v).to_owned())))
            .collect(),
    )
}

/// The tool call a user message asks for, if it is one of the demo's phrases.
fn understood(said: &str) -> Option<Understood> {
    if let Some(command) = after_word(said, &["run", "execute"]) {
        return Some(Understood {
            tool: "bash",
            arguments: table(&[("command", command)]),
            intro: format!("I'll run `{command}`."),
        });
    }
    if let Some(rest) = after_word(said, &["read", "cat", "open"]) {
        let rest = after_word(rest, &["the"]).unwrap_or(rest);
        let rest = after_word(rest, &["file"]).unwrap_or(rest);
        let path = bare_path(rest);
        return (!path.is_empty()).then(|| Understood {
            tool: "read_file",
            arguments: table(&[("path", path)]),
            intro: format!("Let me read {path}."),
        });
    }
    if let Some(rest) = after_word(said, &["list"]) {
        let rest = after_word(rest, &["the"]).unwrap_or(rest);
        let rest = rest.trim_end_matches(['.', '?', '!']);
        let (what, place) = match rest.split_once(" in ") {
            Some((what, place)) => (what, Some(bare_path(place))),
            None => (rest, None),
        };
        if !matches!(what.trim().to_ascii_lowercase().as_str(), "files" | "file") {
            return None;
        }
        return Some(match place.filter(|p| !p.is_empty()) {
            Some(path) => Understood {
                tool: "list_directory",
                arguments: table(&[("path", path)]),
                intro: format!("Let me list the files in {path}."),
            },
            None => Understood {
                tool: "list_directory",
                arguments: table(&[]),
                intro: "Let me list the files.".into(),
            },
        });
    }
    None
}

/// When the request ends with tool results (the demo's calls came back): an answer quoting
/// the first lines of each.
fn summary_of_results(messages: &[ChatMessage]) -> Option<String> {
    let results: Vec<(&str, &str)> = messages
        .iter()
        .rev()
        .map_while(|m| match m {
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => Some((tool_call_id.as_str(), content.as_str())),
            _ => None,
        })
        .collect();
    if results.is_empty() {
        return None;
    }
    let calls = messages.iter().rev().find_map(|m| match m {
        ChatMessage::Assistant { tool_calls, .. } => Some(tool_calls),
        _ => None,
    });
    let mut parts = Vec::new();
    for (id, content) in results.into_iter().rev() {
        let call = calls.and_then(|calls| calls.iter().find(|c| c.id == id));
        let arguments: serde_json::Value = call
            .and_then(|c| serde_json::from_str(&c.arguments).ok())
            .unwrap_or_default();
        let argument = |key: &str| arguments[key].as_str().unwrap_or_default().to_owned();
        let heading = match call.map(|c| c.name.as_str()) {
            Some("bash") => format!("`{}` printed:", argument("command")),
            Some("read_file") => format!("{} begins with:", argument("path")),
            Some("list_directory") => "The folder holds:".to_owned(),
            Some(name) => format!("`{name}` returned:"),
            None => "The tool returned:".to_owned(),
        };
        parts.push(format!("{heading}\n\n{}", first_lines(content)));
    }
    Some(parts.join("\n\n"))
}

/// The first lines of a tool result, indented (a code block in markdown), and how many more
/// there were.
fn first_lines(content: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(QUOTED_LINES)
        .map(|l| format!("    {l}"))
        .collect();
    if lines.is_empty() {
        out.push("    (nothing)".into());
    }
    if lines.len() > QUOTED_LINES {
        out.push(format!("({} more lines)", lines.len() - QUOTED_LINES));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ToolCallRequest, ToolSpec};

    fn request(messages: Vec<ChatMessage>, tools: &[&str]) -> ProviderRequest {
        ProviderRequest {
            model: "echo".into(),
            system: None,
            messages,
            tools: tools
                .iter()
                .map(|name| ToolSpec {
                    name: (*name).into(),
                    description: String::new(),
                    parameters: serde_json::json!({}),
                })
                .collect(),
            max_output_tokens: None,
            temperature: None,
            options: Default::default(),
        }
    }

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: text.into(),
            images: vec![],
            documents: vec![],
        }
    }

    /// What the demo does with one user message: `tool json-arguments`, or `echo`.
    fn call_of(said: &str, tools: &[&str]) -> String {
        let turn = answer(&request(vec![user(said)], tools));
        match turn.tool_calls.as_slice() {
            [] if turn.text.contains("You said: ") => "echo".into(),
            [call] => format!(
                "{} {}",
                call.name,
                serde_json::to_string(&call.arguments).unwrap()
            ),
            other => panic!("{said:?}: {other:?}"),
        }
    }

    #[test]
    fn phrases_become_calls_of_offered_tools() {
        let all = ["bash", "read_file", "list_directory"];
        let cases: &[(&str, &[&str], &str)] = &[
            ("run ls", &all, r#"bash {"command":"ls"}"#),
            ("Run git log -3", &all, r#"bash {"command":"git log -3"}"#),
            ("execute echo Hi.", &all, r#"bash {"command":"echo Hi."}"#),
            ("read README.md", &all, r#"read_file {"path":"README.md"}"#),
            (
                "Read the file `src/main.rs`.",
                &all,
                r#"read_file {"path":"src/main.rs"}"#,
            ),
            ("list the files", &all, "list_directory {}"),
            (
                "List files in src?",
                &all,
                r#"list_directory {"path":"src"}"#,
            ),
            // Not offered (chat mode, or a profile without it): echoed.
            ("run ls", &[], "echo"),
            ("run ls", &["read_file"], "echo"),
            ("read README.md", &["bash"], "echo"),
            // Not one of the phrases.
            ("run", &all, "echo"),
            ("list the agents", &all, "echo"),
            ("Hello there", &all, "echo"),
            ("running late", &all, "echo"),
        ];
        for (said, tools, expected) in cases {
            assert_eq!(call_of(said, tools), *expected, "{said:?} with {tools:?}");
        }
    }

    #[test]
    fn the_echo_names_the_phrases_of_the_offered_tools() {
        let turn = answer(&request(vec![user("hi")], &["bash", "read_file"]));
        assert!(
            turn.text.ends_with(
                "You said: hi\n\nTo see it use a tool, try: \"read README.md\", \"run ls\"."
            ),
            "{}",
            turn.text
        );
        let turn = answer(&request(vec![user("hi")], &[]));
        assert!(turn.text.ends_with("You said: hi"), "{}", turn.text);
    }

    #[test]
    fn results_are_answered_with_their_first_lines() {
        let lines: Vec<String> = (1..=10).map(|i| format!("line {i}")).collect();
        let messages = vec![
            user("run seq 10"),
            ChatMessage::Assistant {
                content: "I'll run `seq 10`.".into(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"seq 10"}"#.into(),
                    signature: None,
                }],
                reasoning: vec![],
                order: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                content: lines.join("\n"),
                is_error: false,
            },
        ];
        let turn = answer(&request(messages, &["bash"]));
        assert!(turn.tool_calls.is_empty());
        assert_eq!(
            turn.text,
            "`seq 10` printed:\n\n    line 1\n    line 2\n    line 3\n    line 4\n    line 5\n    \
             line 6\n    line 7\n    line 8\n(2 more lines)"
        );
    }
}
