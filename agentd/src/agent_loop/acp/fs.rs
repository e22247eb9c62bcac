//! `fs/read_text_file` and `fs/write_text_file` of an external ACP agent, served under
//! agentd's own rules, as its `read_file` and `write_file` tools would be: the path is
//! resolved and zoned (the data dir is never reachable), the agent's rules and grants
//! decide, an `ask` becomes a waiting tool call a client answers, and the file is opened
//! without following links, bound to the path the prompt showed.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::Responder;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_proto::{
    PermissionLevel, PermissionPrompt, PermissionResolution, Remember, ToolCallStatus,
};

use super::super::{CANCELLED_BY_USER, DENIED_BY_USER, End, Run};
use crate::acp_backend::{Pending, Turn};
use crate::store::{Grant, GrantScope, ToolExecution, now_ms};
use crate::tools::Access;
use crate::tools::center::Outcome;
use crate::tools::permission::{Ask, Decision};
use crate::tools::sandbox::{OpenFor, ResolvedPath, open_resolved};

/// The largest file `fs/read_text_file` reads.
const MAX_READ_BYTES: u64 = 16 * 1024 * 1024;
/// Characters of a write's content kept in its call's arguments (what a prompt shows).
const SHOWN_CHARS: usize = 2000;

const READ_CALL: &str = "fs/read_text_file";
const WRITE_CALL: &str = "fs/write_text_file";

fn refused(message: impl Into<String>) -> agent_client_protocol::Error {
    agent_client_protocol::Error::invalid_params().data(serde_json::json!(message.into()))
}

impl Run<'_> {
    /// Serves a read now, refuses it, or (the rules ask) returns the id of the waiting
    /// call it became.
    pub(super) async fn fs_read(
        &mut self,
        turn: &mut Turn,
        request: Box<ReadTextFileRequest>,
        responder: Responder<ReadTextFileResponse>,
    ) -> Result<Option<String>, End> {
        let raw = request.path.display().to_string();
        let arguments = serde_json::json!({
            "path": raw, "line": request.line, "limit": request.limit,
        });
        match self.fs_decide(&raw, PermissionLevel::Read).await? {
            Err(why) => {
                let _ = responder.respond_with_error(refused(why));
                Ok(None)
            }
            Ok((resolved, Decision::Allow)) => {
                let answer = read_text(resolved.path, request.line, request.limit).await;
                let _ = responder
                    .respond_with_result(answer.map(ReadTextFileResponse::new).map_err(refused));
                Ok(None)
            }
            Ok((_, Decision::Deny(why))) => {
                let _ = responder.respond_with_error(refused(why));
                Ok(None)
            }
            Ok((resolved, Decision::Ask(ask))) => {
                let id = self.fs_call(READ_CALL, arguments, &resolved, ask).await?;
                turn.pending
                    .insert(id.clone(), Pending::Read { request, responder });
                Ok(Some(id))
            }
        }
    }

    /// Serves a write now, refuses it, or returns the id of the waiting call it became.
    pub(super) async fn fs_write(
        &mut self,
        turn: &mut Turn,
        request: Box<WriteTextFileRequest>,
        responder: Responder<WriteTextFileResponse>,
    ) -> Result<Option<String>, End> {
        let raw = request.path.display().to_string();
        let shown: String = request.content.chars().take(SHOWN_CHARS).collect();
        let arguments = serde_json::json!({
            "path": raw,
            "content": shown,
            "bytes": request.content.len(),
        });
        match self.fs_decide(&raw, PermissionLevel::Write).await? {
            Err(why) | Ok((_, Decision::Deny(why))) => {
                let _ = responder.respond_with_error(refused(why));
                Ok(None)
            }
            Ok((resolved, Decision::Allow)) => {
                let answer = write_text(resolved.path, request.content).await;
                let _ = responder.respond_with_result(
                    answer
                        .map(|()| WriteTextFileResponse::new())
                        .map_err(refused),
                );
                Ok(None)
            }
            Ok((resolved, Decision::Ask(ask))) => {
                let id = self.fs_call(WRITE_CALL, arguments, &resolved, ask).await?;
                turn.pending
                    .insert(id.clone(), Pending::Write { request, responder });
                Ok(Some(id))
            }
        }
    }

    /// The answer to an `fs/*` request's prompt: served (the grant remembered if asked),
    /// or refused; the call gets its result.
    pub(super) async fn answer_fs(
        &mut self,
        id: &str,
        pending: Pending,
        resolution: PermissionResolution,
    ) -> Result<(), End> {
        let shown = self
            .writer
            .call_mut(id)
            .and_then(|c| c.permission_paths.clone())
            .and_then(|p| p.into_iter().next())
            .map(PathBuf::from);
        let no = if resolution.cancelled {
            Some((ToolCallStatus::Cancelled, CANCELLED_BY_USER))
        } else if !resolution.granted {
            Some((ToolCallStatus::Denied, DENIED_BY_USER))
        } else {
            None
        };
        let (level, raw) = match &pending {
            Pending::Read { request, .. } => {
                (PermissionLevel::Read, request.path.display().to_string())
            }
            Pending::Write { request, .. } => {
                (PermissionLevel::Write, request.path.display().to_string())
            }
            Pending::Permission { .. } => return Ok(()),
        };
        // Served only at the path the prompt showed (not one swapped in since).
        let path = match (no, self.fs_decide(&raw, level).await?) {
            (Some(_), _) => Err(String::new()),
            (None, Ok((resolved, _))) if Some(&resolved.path) == shown.as_ref() => {
                if resolution.remember != Remember::Once {
                    self.remember_fs(&resolved, level, resolution.remember)
                        .await?;
                }
                Ok(resolved.path)
            }
            (None, Ok((resolved, _))) => Err(format!(
                "{} resolves to {} now, not to the path that was allowed",
                raw,
                resolved.path.display()
            )),
            (None, Err(why)) => Err(why),
        };
        let outcome = match (pending, path) {
            (Pending::Read { request, responder }, Ok(path)) => {
                let answer = read_text(path, request.line, request.limit).await;
                let outcome = match &answer {
                    Ok(text) => Outcome::settled(
                        ToolCallStatus::Success,
                        format!("read {} lines", text.lines().count()),
                    ),
                    Err(e) => Outcome::settled(ToolCallStatus::Error, e.clone()),
                };
                let _ = responder
                    .respond_with_result(answer.map(ReadTextFileResponse::new).map_err(refused));
                outcome
            }
            (Pending::Write { request, responder }, Ok(path)) => {
                let bytes = request.content.len();
                let answer = write_text(path, request.content).await;
                let outcome = match &answer {
                    Ok(()) => {
                        Outcome::settled(ToolCallStatus::Success, format!("wrote {bytes} bytes"))
                    }
                    Err(e) => Outcome::settled(ToolCallStatus::Error, e.clone()),
                };
                let _ = responder.respond_with_result(
                    answer
                        .map(|()| WriteTextFileResponse::new())
                        .map_err(refused),
                );
                outcome
            }
            (Pending::Read { responder, .. }, Err(why)) => {
                let (status, text) = no.unwrap_or((ToolCallStatus::Error, ""));
                let text = if why.is_empty() { text.to_owned() } else { why };
                let _ = responder.respond_with_error(refused(text.clone()));
                Outcome::settled(status, text)
            }
            (Pending::Write { responder, .. }, Err(why)) => {
                let (status, text) = no.unwrap_or((ToolCallStatus::Error, ""));
                let text = if why.is_empty() { text.to_owned() } else { why };
                let _ = responder.respond_with_error(refused(text.clone()));
                Outcome::settled(status, text)
            }
            (Pending::Permission { .. }, _) => return Ok(()),
        };
        self.settle(id, outcome).await
    }

    /// The path resolved and zoned, and what the rules say; `Err` when the path cannot
    /// be worked out (the reason for the agent).
    async fn fs_decide(
        &mut self,
        raw: &str,
        level: PermissionLevel,
    ) -> Result<Result<(ResolvedPath, Decision), String>, End> {
        let ctx = match self.tool_context() {
            Ok(ctx) => ctx,
            Err(e) => return Ok(Err(e)),
        };
        if !Path::new(raw).is_absolute() {
            return Ok(Err(format!("{raw} is not an absolute path")));
        }
        let resolved = match ctx.sandbox.resolve(raw) {
            Ok(r) => r,
            Err(e) => return Ok(Err(e)),
        };
        let grants = self.store.grants_for(&self.agent.id).await?;
        let access = Access::Paths {
            level,
            paths: vec![resolved.clone()],
        };
        let tool = tool_of(level);
        Ok(Ok((
            resolved,
            self.tools.decide_access(self.agent, tool, &access, &grants),
        )))
    }

    /// Stores the grants a `session`/`always` answer to an `fs/*` prompt asked for.
    async fn remember_fs(
        &mut self,
        resolved: &ResolvedPath,
        level: PermissionLevel,
        remember: Remember,
    ) -> Result<(), End> {
        let scope = match remember {
            Remember::Once => return Ok(()),
            Remember::Session => GrantScope::Session,
            Remember::Always => GrantScope::Always,
        };
        let grants = self.store.grants_for(&self.agent.id).await?;
        let access = Access::Paths {
            level,
            paths: vec![resolved.clone()],
        };
        if let Decision::Ask(ask) =
            self.tools
                .decide_access(self.agent, tool_of(level), &access, &grants)
        {
            for (level, key) in &ask.grant_keys {
                let grant = Grant {
                    scope,
                    level: *level,
                    key: key.clone(),
                };
                self.store.add_grant(&self.agent.id, &grant).await?;
            }
        }
        Ok(())
    }

    /// A call in the message for an `fs/*` request the rules ask about, with its prompt.
    async fn fs_call(
        &mut self,
        name: &str,
        arguments: serde_json::Value,
        resolved: &ResolvedPath,
        ask: Ask,
    ) -> Result<String, End> {
        let id = self
            .writer
            .start_call(&format!("fs_{}", uuid::Uuid::now_v7().simple()), name);
        let path = resolved.path.display().to_string();
        let prompt = PermissionPrompt {
            permission_type: ask.level,
            description: ask.description,
            command: None,
            command_display: None,
            signature: None,
            paths: (!ask.paths.is_empty()).then_some(ask.paths),
            risk: ask.risk,
            rememberable: !ask.grant_keys.is_empty(),
            network_access: false,
            outside_sandbox: false,
        };
        if let Some(call) = self.writer.call_mut(&id) {
            call.arguments = arguments.clone();
            call.status = ToolCallStatus::WaitingPermission;
            call.permission_paths = Some(vec![path]);
            call.prompt = Some(Box::new(prompt));
        }
        self.writer.flush().await?;
        self.store
            .record_tool_start(&ToolExecution {
                agent_id: self.agent.id.clone(),
                message_id: self.writer.id().to_owned(),
                tool_call_id: id.clone(),
                tool_name: name.to_owned(),
                input: arguments.to_string(),
                started_at: now_ms(),
            })
            .await?;
        let message_id = self.writer.id().to_owned();
        self.emit(agent_proto::EventKind::ToolCallStarted {
            message_id: message_id.clone(),
            tool_call_id: id.clone(),
            name: name.to_owned(),
        })
        .await?;
        self.emit(agent_proto::EventKind::ToolCallReady {
            message_id,
            tool_call_id: id.clone(),
            name: name.to_owned(),
            arguments,
        })
        .await?;
        Ok(id)
    }
}

/// The builtin tool an `fs/*` request is decided as.
fn tool_of(level: PermissionLevel) -> &'static str {
    if level == PermissionLevel::Write {
        "write_file"
    } else {
        "read_file"
    }
}

/// Reads a text file (not following links), from 1-based `line`, at most `limit` lines.
async fn read_text(path: PathBuf, line: Option<u32>, limit: Option<u32>) -> Result<String, String> {
    let read = tokio::task::spawn_blocking(move || {
        use std::io::Read;
        let opened = open_resolved(&path, OpenFor::Read)?;
        let size = opened
            .file
            .metadata()
            .map_err(|e| format!("cannot inspect {}: {e}", path.display()))?
            .len();
        if size > MAX_READ_BYTES {
            return Err(format!(
                "{} is {size} bytes, over the {MAX_READ_BYTES}-byte limit of fs/read_text_file",
                path.display()
            ));
        }
        let mut bytes = Vec::new();
        (&opened.file)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", path.display()))
    })
    .await
    .map_err(|e| format!("the read failed: {e}"))??;
    Ok(lines_of(&read, line, limit))
}

/// `limit` lines of `text` from 1-based `line` (all of it when both are absent).
fn lines_of(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_owned();
    }
    let skip = line.map_or(0, |l| l.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |l| l as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

/// Replaces a file's content (created with its folders if absent), not following links.
async fn write_text(path: PathBuf, content: String) -> Result<(), String> {
    tokio::task::spawn_blocking(move || {
        use std::io::Write;
        let opened = open_resolved(&path, OpenFor::Write)?;
        opened
            .file
            .set_len(0)
            .and_then(|()| (&opened.file).write_all(content.as_bytes()))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))
    })
    .await
    .map_err(|e| format!("the write failed: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::lines_of;

    #[test]
    fn line_ranges_are_one_based() {
        let text = "a\nb\nc\n";
        assert_eq!(lines_of(text, None, None), text);
        assert_eq!(lines_of(text, Some(2), None), "b\nc\n");
        assert_eq!(lines_of(text, Some(2), Some(1)), "b\n");
        assert_eq!(lines_of(text, None, Some(2)), "a\nb\n");
        assert_eq!(lines_of(text, Some(0), Some(1)), "a\n");
        assert_eq!(lines_of(text, Some(9), None), "");
    }
}
