//! Files attached to a message (`{"type": "file", "path": ...}`): a text file up to the cap
//! (`[limits] max_attached_text_bytes`) is read into the message with its path and line
//! count; a larger or binary one is named with its size and type, for the agent to read
//! with its tools. The file is the sender's choice (a client of the same user), read once,
//! when the message is sent: the message keeps what it was then.

use std::io::Read;
use std::path::Path;

use super::SessionError;

/// The text a `file` part becomes.
pub(super) fn attached_file(path: &str, cap: usize) -> Result<String, SessionError> {
    let invalid = |m: String| SessionError::InvalidParams(m);
    let file = Path::new(path);
    if !file.is_absolute() {
        return Err(invalid(format!(
            "an attached file's path must be absolute, not {path:?}"
        )));
    }
    let meta = std::fs::metadata(file)
        .map_err(|e| invalid(format!("cannot read the attached file {path}: {e}")))?;
    if !meta.is_file() {
        return Err(invalid(format!(
            "the attached {path} is not a file (attach files one by one)"
        )));
    }
    let size = meta.len();
    // Read at most the cap and a bit: enough to tell the type, never a whole large file.
    let want = u64::try_from(cap)
        .unwrap_or(u64::MAX)
        .saturating_add(1)
        .max(512);
    let mut head = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(want).read_to_end(&mut head))
        .map_err(|e| invalid(format!("cannot read the attached file {path}: {e}")))?;
    let text = std::str::from_utf8(&head)
        .ok()
        .filter(|t| !t.contains('\0'));
    match text {
        Some(text)
            if u64::try_from(text.len()).unwrap_or(u64::MAX) == size && text.len() <= cap =>
        {
            Ok(inline(path, text))
        }
        Some(_) if size > u64::try_from(cap).unwrap_or(u64::MAX) => Ok(format!(
            "[attached file: {path}, {} of text; not included: over the {} attachment limit. Read it with your tools if you need it]",
            bytes(size),
            bytes(u64::try_from(cap).unwrap_or(u64::MAX))
        )),
        _ => Ok(format!(
            "[attached file: {path}, {}, {}; not included: not text. Use your tools if you need it]",
            bytes(size),
            kind_of(&head)
        )),
    }
}

/// A text file as the model reads it: a header, then the text in a fence no line of it
/// can close.
fn inline(path: &str, text: &str) -> String {
    let lines = text.lines().count();
    let longest_run = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!(
        "[attached file: {path} ({lines} line{})]\n{fence}\n{body}\n{fence}",
        if lines == 1 { "" } else { "s" }
    )
}

/// What a binary file is, by its first bytes.
fn kind_of(head: &[u8]) -> &'static str {
    const KINDS: &[(&[u8], &str)] = &[
        (b"%PDF-", "a PDF document"),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"PK\x03\x04", "a zip archive (or a document made of one)"),
        (b"\x1f\x8b", "gzip data"),
        (b"\x7fELF", "an executable (ELF)"),
        (b"SQLite format 3\0", "an SQLite database"),
    ];
    KINDS
        .iter()
        .find(|(magic, _)| head.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind)
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1024 * 1024 => format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0)),
        n if n >= 1024 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_an_attached_file_becomes() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(path("a.rs"), "fn main() {}\n// ``` inside\n").unwrap();
        std::fs::write(path("big.txt"), "x".repeat(2000)).unwrap();
        std::fs::write(path("doc.pdf"), b"%PDF-1.7\n\x00\x01binary").unwrap();
        std::fs::write(path("one"), "single").unwrap();
        assert_eq!(
            attached_file(&path("a.rs"), 1024).unwrap(),
            format!(
                "[attached file: {} (2 lines)]\n````\nfn main() {{}}\n// ``` inside\n````",
                path("a.rs")
            )
        );
        assert_eq!(
            attached_file(&path("one"), 1024).unwrap(),
            format!(
                "[attached file: {} (1 line)]\n```\nsingle\n```",
                path("one")
            )
        );
        let big = attached_file(&path("big.txt"), 1024).unwrap();
        assert!(
            big.contains("2.0 KiB of text; not included: over the 1.0 KiB"),
            "{big}"
        );
        let pdf = attached_file(&path("doc.pdf"), 1024).unwrap();
        assert!(
            pdf.contains("a PDF document; not included: not text"),
            "{pdf}"
        );
        // A cap of 0 names every file.
        assert!(
            attached_file(&path("one"), 0)
                .unwrap()
                .contains("not included")
        );
        for bad in [
            "relative.txt".to_owned(),
            path("missing"),
            dir.path().display().to_string(),
        ] {
            assert!(matches!(
                attached_file(&bad, 1024),
                Err(SessionError::InvalidParams(_))
            ));
        }
    }
}
