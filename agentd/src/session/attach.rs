//! Files attached to a message (`{"type": "file", "path": ...}`): a text file up to the cap
//! (`[limits] max_attached_text_bytes`) is read into the message with its path and line
//! count; a PDF (told by its first bytes, `%PDF-`) up to `max_attached_document_bytes` is
//! copied into the agent's folder and becomes a document block (context decides whether
//! the model gets its bytes or its path); a larger or other binary file is named with its
//! size and type, for the agent to read with its tools. The file is the sender's choice (a
//! client of the same user), read once, when the message is sent: the message keeps what
//! it was then.

use std::io::Read;
use std::path::{Path, PathBuf};

use agent_proto::Block;

use super::SessionError;

/// The type of the documents kept with a message.
const PDF: &str = "application/pdf";

/// Where a message's files are kept and how large the ones read in may be.
#[derive(Debug, Clone)]
pub(super) struct Attachments {
    /// The agent's folder for the images of its messages.
    pub(super) images_dir: PathBuf,
    /// The agent's folder for the documents of its messages.
    pub(super) documents_dir: PathBuf,
    /// A text file up to this many bytes is read into the message.
    pub(super) text_cap: usize,
    /// A PDF up to this many bytes is kept as a document block.
    pub(super) document_cap: usize,
}

impl Attachments {
    /// The folders of the agent whose offload folder is `offload_dir`, with the caps of
    /// the config.
    pub(super) fn new(offload_dir: &Path, config: &super::SessionConfig) -> Attachments {
        Attachments {
            images_dir: offload_dir.join("images"),
            documents_dir: offload_dir.join("documents"),
            text_cap: config.max_attached_text_bytes,
            document_cap: config.max_attached_document_bytes,
        }
    }
}

/// What a `file` part becomes: text for the message, or a document block.
#[derive(Debug)]
pub(super) enum Attached {
    Text(String),
    Document(Kept),
}

/// A PDF read in, to be kept once the whole message is checked.
#[derive(Debug)]
pub(super) struct Kept {
    /// The attached file's name.
    name: String,
    bytes: Vec<u8>,
}

impl Kept {
    /// Writes the copy into the documents folder: the message's document block.
    pub(super) fn store(self, documents_dir: &Path) -> Result<Block, SessionError> {
        std::fs::create_dir_all(documents_dir).map_err(|e| {
            SessionError::Internal(format!("cannot create {}: {e}", documents_dir.display()))
        })?;
        let stored = documents_dir.join(format!("{}.pdf", uuid::Uuid::new_v4().simple()));
        std::fs::write(&stored, &self.bytes)
            .map_err(|e| SessionError::Internal(format!("cannot store the document: {e}")))?;
        Ok(Block::Document {
            mime_type: PDF.to_owned(),
            path: stored.display().to_string(),
            name: self.name,
            size: self.bytes.len() as u64,
        })
    }
}

/// What a `file` part becomes: a PDF within the cap is read in to be kept as a document
/// (`Kept::store`, once the whole message is checked); anything else is text.
pub(super) fn attach(path: &str, limits: &Attachments) -> Result<Attached, SessionError> {
    match pdf_document(path, limits)? {
        Pdf::Kept(block) => Ok(Attached::Document(block)),
        Pdf::TooLarge(size) => Ok(Attached::Text(format!(
            "[attached file: {path}, {}, a PDF document; not included: over the {} document limit. Read it with your tools if you need it]",
            bytes(size),
            bytes(u64::try_from(limits.document_cap).unwrap_or(u64::MAX))
        ))),
        Pdf::No => attached_file(path, limits.text_cap).map(Attached::Text),
    }
}

/// Whether an attached file is a PDF kept as a document.
enum Pdf {
    /// Not a PDF (or not a readable file: `attached_file` says why).
    No,
    /// A PDF over the cap, of this many bytes.
    TooLarge(u64),
    Kept(Kept),
}

/// A PDF file up to the cap is read in, to be kept as a document.
fn pdf_document(path: &str, limits: &Attachments) -> Result<Pdf, SessionError> {
    let invalid = |m: String| SessionError::InvalidParams(m);
    let unreadable =
        |e: std::io::Error| invalid(format!("cannot read the attached file {path}: {e}"));
    let file = Path::new(path);
    if !file.is_absolute() || !file.is_file() {
        return Ok(Pdf::No);
    }
    const MAGIC: &[u8] = b"%PDF-";
    let mut f = std::fs::File::open(file).map_err(unreadable)?;
    let mut bytes = Vec::new();
    (&mut f)
        .take(MAGIC.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes != MAGIC {
        return Ok(Pdf::No);
    }
    // Read up to the cap and one byte: a larger file is not read through, it is named.
    let cap = u64::try_from(limits.document_cap).unwrap_or(u64::MAX);
    f.take(cap.saturating_add(1).saturating_sub(MAGIC.len() as u64))
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > cap {
        let size = std::fs::metadata(file).map_err(unreadable)?.len();
        return Ok(Pdf::TooLarge(size));
    }
    let name = file.file_name().map_or_else(
        || "document.pdf".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    Ok(Pdf::Kept(Kept { name, bytes }))
}

/// The text a `file` part becomes.
fn attached_file(path: &str, cap: usize) -> Result<String, SessionError> {
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
    use agent_proto::{ContentPart, MessageContent};

    #[test]
    fn pdfs_are_kept_as_documents_up_to_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).display().to_string();
        let limits = Attachments {
            images_dir: dir.path().join("images"),
            documents_dir: dir.path().join("documents"),
            text_cap: 1024,
            document_cap: 64,
        };
        let pdf = b"%PDF-1.7\n\x00\x01binary\n%%EOF\n".to_vec();
        std::fs::write(path("spec.pdf"), &pdf).unwrap();
        // Told by content, not by name.
        std::fs::write(path("scan.bin"), &pdf).unwrap();
        std::fs::write(path("fake.pdf"), "not a pdf\n").unwrap();
        let mut big = pdf.clone();
        big.resize(65, b' ');
        std::fs::write(path("big.pdf"), &big).unwrap();
        let mut exact = pdf.clone();
        exact.resize(64, b' ');
        std::fs::write(path("exact.pdf"), &exact).unwrap();
        for (name, bytes) in [
            ("spec.pdf", &pdf),
            ("scan.bin", &pdf),
            ("exact.pdf", &exact),
        ] {
            let Attached::Document(kept) = attach(&path(name), &limits).unwrap() else {
                panic!("{name} is not a document");
            };
            let Block::Document {
                mime_type,
                path: stored,
                name: kept,
                size,
            } = kept.store(&limits.documents_dir).unwrap()
            else {
                panic!("{name} is not a document");
            };
            assert_eq!(
                (mime_type.as_str(), kept.as_str(), size),
                ("application/pdf", name, bytes.len() as u64)
            );
            assert!(stored.starts_with(&path("documents")), "{stored}");
            assert!(stored.ends_with(".pdf"), "{stored}");
            assert_eq!(&std::fs::read(&stored).unwrap(), bytes, "a copy of {name}");
        }
        let Attached::Text(text) = attach(&path("fake.pdf"), &limits).unwrap() else {
            panic!("a text file named .pdf is text");
        };
        assert!(text.contains("```\nnot a pdf\n```"), "{text}");
        let Attached::Text(text) = attach(&path("big.pdf"), &limits).unwrap() else {
            panic!("a PDF over the cap is named");
        };
        assert_eq!(
            text,
            format!(
                "[attached file: {}, 65 bytes, a PDF document; not included: over the 64 bytes document limit. Read it with your tools if you need it]",
                path("big.pdf")
            )
        );
        // A cap of 0 keeps none.
        let none = Attachments {
            document_cap: 0,
            ..limits.clone()
        };
        assert!(matches!(
            attach(&path("spec.pdf"), &none),
            Ok(Attached::Text(_))
        ));
        // A document alone is a message; it comes after the text.
        let blocks = super::super::input::user_blocks(
            MessageContent::Parts(vec![ContentPart::File {
                path: path("spec.pdf"),
            }]),
            &limits,
        )
        .unwrap();
        assert!(
            matches!(blocks.as_slice(), [Block::Document { .. }]),
            "{blocks:?}"
        );
        let blocks = super::super::input::user_blocks(
            MessageContent::Parts(vec![
                ContentPart::File {
                    path: path("spec.pdf"),
                },
                ContentPart::Text {
                    text: "read it".into(),
                },
            ]),
            &limits,
        )
        .unwrap();
        assert!(
            matches!(blocks.as_slice(), [Block::Text { text }, Block::Document { .. }] if text == "read it"),
            "{blocks:?}"
        );
        // Unreadable paths are refused as before; a message refused keeps no copy.
        assert!(matches!(
            attach("relative.pdf", &limits),
            Err(SessionError::InvalidParams(_))
        ));
        let fresh = Attachments {
            documents_dir: dir.path().join("fresh"),
            ..limits.clone()
        };
        let refused = super::super::input::user_blocks(
            MessageContent::Parts(vec![
                ContentPart::File {
                    path: path("spec.pdf"),
                },
                ContentPart::File {
                    path: path("missing"),
                },
            ]),
            &fresh,
        );
        assert!(matches!(refused, Err(SessionError::InvalidParams(_))));
        assert!(
            !fresh.documents_dir.exists(),
            "a refused message left a copy"
        );
    }

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
