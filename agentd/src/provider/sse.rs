//! A Server-Sent Events decoder: bytes in, events out, nothing else.
//!
//! Pure and incremental (a line may be split across any number of chunks). Lines end with
//! LF, CRLF or a bare CR, as the SSE format allows (some servers send CR only); a CRLF split
//! between two chunks is still one line end. Unlike a strict
//! SSE client it reports lines that are not SSE fields as [`SseItem::Junk`], because for an
//! LLM API such a line means something is wrong (a proxy's HTML page, a plain-text error)
//! and its text is exactly what the user needs to see.

/// Longest line accepted; a longer one is [`SseItem::Overflow`].
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A complete event: its `event:` name (if any) and its `data:` lines joined by `\n`.
    Event { event: Option<String>, data: String },
    /// A line that is not an SSE field, comment or blank line.
    Junk(String),
    /// A line longer than [`MAX_LINE_BYTES`]; decoding should stop.
    Overflow,
}

#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The last byte seen ended a line with CR: an LF right after it belongs to that end.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the items completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        let mut rest = bytes;
        if std::mem::take(&mut self.after_cr) && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&rest[..pos]);
            let cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, &mut out);
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > MAX_LINE_BYTES {
            self.line.clear();
            out.push(SseItem::Overflow);
        }
        out
    }

    /// Ends the input: a last line without a newline and an event without its blank line
    /// are still delivered.
    pub fn finish(&mut self) -> Vec<SseItem> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, &mut out);
        }
        self.dispatch(&mut out);
        out
    }

    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseItem>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        // Valid UTF-8 (nearly every line) is checked by the fast check; only a line that
        // fails it pays the lossy decoding.
        let line = match std::str::from_utf8(line) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(_) => String::from_utf8_lossy(line),
        };
        if line.starts_with(':') {
            return; // comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                let data = self.data.get_or_insert_with(String::new);
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(value);
            }
            "event" => self.event = Some(value.to_owned()),
            "id" | "retry" => {}
            _ => out.push(SseItem::Junk(line.into_owned())),
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if let Some(data) = self.data.take() {
            out.push(SseItem::Event {
                event: self.event.take(),
                data,
            });
        }
        self.event = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(data: &str) -> SseItem {
        SseItem::Event {
            event: None,
            data: data.into(),
        }
    }

    #[test]
    fn decodes_whatever_the_chunking() {
        let input = "data: {\"a\":1}\n\n: keep-alive\n\nevent: ping\ndata: x\ndata: y\n\r\ndata: [DONE]\n\n";
        // The same stream with CRLF and with bare CR line ends.
        let crlf = input.replace('\n', "\r\n").replace("\r\r\n", "\r\n");
        let cr = input.replace("\r\n", "\n").replace('\n', "\r");
        let expected = vec![
            ev("{\"a\":1}"),
            SseItem::Event {
                event: Some("ping".into()),
                data: "x\ny".into(),
            },
            ev("[DONE]"),
        ];
        for text in [input, crlf.as_str(), cr.as_str()] {
            for chunk in [1, 2, 3, 7, 64] {
                let mut decoder = SseDecoder::new();
                let mut got = Vec::new();
                for piece in text.as_bytes().chunks(chunk) {
                    got.extend(decoder.push(piece));
                }
                got.extend(decoder.finish());
                assert_eq!(got, expected, "chunk size {chunk} of {text:?}");
            }
        }
    }

    #[test]
    fn table() {
        let cases: &[(&str, Vec<SseItem>)] = &[
            ("data:no-space\n\n", vec![ev("no-space")]),
            ("data: a\r\n\r\n", vec![ev("a")]),
            // bare CR ends lines too; CR then LF is one line end, not two
            (
                "data: a\rdata: b\r\rdata: c\r\n\r\n",
                vec![ev("a\nb"), ev("c")],
            ),
            (
                "<html>oops</html>\n",
                vec![SseItem::Junk("<html>oops</html>".into())],
            ),
            ("id: 3\nretry: 10\ndata: z\n\n", vec![ev("z")]),
            // an unterminated last event is still delivered at the end
            ("data: tail", vec![ev("tail")]),
            ("event: only\n\n", vec![]),
        ];
        for (input, expected) in cases {
            let mut decoder = SseDecoder::new();
            let mut got = decoder.push(input.as_bytes());
            got.extend(decoder.finish());
            assert_eq!(&got, expected, "input {input:?}");
        }
    }

    #[test]
    fn overlong_line_is_reported() {
        let mut decoder = SseDecoder::new();
        let big = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(decoder.push(&big), vec![SseItem::Overflow]);
    }
}
