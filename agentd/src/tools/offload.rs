//! Offload: a tool result too large for the context goes to a file, and the model gets a
//! stub (sizes, a head-and-tail preview, and the absolute path to page through with
//! `read_file`). Files live in `<data_dir>/sessions/<agentId>/tool_<toolCallId>.offload`.

use std::path::{Path, PathBuf};

/// Results longer than this (in characters) are offloaded by default.
pub const DEFAULT_THRESHOLD: usize = 3000;
/// Characters of the head and the tail shown in the stub (the tail matters: errors sit
/// at the end).
const HEAD_CHARS: usize = 560;
const TAIL_CHARS: usize = 280;

/// The file name of a call's offload; ids from the model are reduced to safe characters.
pub fn file_name(tool_call_id: &str) -> String {
    let safe: String = tool_call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    format!("tool_{safe}.offload")
}

/// Writes `content` to the agent's offload folder and returns the file's path.
pub fn write(dir: &Path, tool_call_id: &str, content: &str) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join(file_name(tool_call_id));
    std::fs::write(&path, content)?;
    Ok(path)
}

/// The stub the model gets instead of `content` (under 1024 characters).
pub fn stub(content: &str, path: &Path) -> String {
    let chars = content.chars().count();
    let lines = content.lines().count();
    let head: String = content.chars().take(HEAD_CHARS).collect();
    let tail: String = {
        let skip = chars.saturating_sub(TAIL_CHARS).max(HEAD_CHARS);
        content.chars().skip(skip).collect()
    };
    format!(
        "[output offloaded: {chars} chars, {lines} lines; full text in {}; read it with read_file (offset/limit page through it)]\n\
         --- head ---\n{head}\n--- tail ---\n{tail}",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stub_has_sizes_preview_and_path_under_1024_chars() {
        let dir = tempfile::tempdir().unwrap();
        let content: String = (0..500)
            .map(|i| format!("line {i} of the output\n"))
            .collect();
        let path = write(dir.path(), "call_1", &content).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), content);
        assert_eq!(path.file_name().unwrap(), "tool_call_1.offload");
        let stub = stub(&content, &path);
        assert!(
            stub.chars().count() < 1024 + path.display().to_string().len(),
            "{}",
            stub.len()
        );
        assert!(stub.contains(&format!("{} chars", content.chars().count())));
        assert!(stub.contains("500 lines"));
        assert!(stub.contains(&path.display().to_string()));
        assert!(stub.contains("line 0 of the output"), "head");
        assert!(stub.contains("line 499 of the output"), "tail");
    }

    #[test]
    fn ids_cannot_escape_the_folder() {
        assert_eq!(
            file_name("../../etc/passwd"),
            "tool_______etc_passwd.offload"
        );
        assert_eq!(file_name("call_AZ-9"), "tool_call_AZ-9.offload");
    }
}
