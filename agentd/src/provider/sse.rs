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

/// Buffers the decoder keeps between events up to this capacity; a larger one (after a
/// huge event) is let go.
const KEPT_CAPACITY: usize = 64 * 1024;

/// One decoded item, lent to the caller's function while it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// A complete event: its `event:` name (if any) and its `data:` lines joined by `\n`.
    Event {
        event: Option<&'a str>,
        data: &'a str,
    },
    /// A line that is not an SSE field, comment or blank line.
    Junk(&'a str),
    /// A line longer than [`MAX_LINE_BYTES`]; decoding should stop.
    Overflow,
}

/// Decodes without an allocation per event: a line that arrived whole is read where it
/// lies, a line split across chunks is put together in a buffer kept from one line to the
/// next, and an event's data goes into a buffer kept from one event to the next.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The start of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The last byte seen ended a line with CR: an LF right after it belongs to that end.
    after_cr: bool,
    event: Option<String>,
    /// The event's `data:` lines so far; meaningful only while `has_data`.
    data: String,
    has_data: bool,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; `on` gets each item they complete, in order. An error from `on` stops
    /// the decoding and is returned (the decoder is not to be fed after that).
    pub fn push<E>(
        &mut self,
        bytes: &[u8],
        mut on: impl FnMut(SseItem<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut rest = bytes;
        if std::mem::take(&mut self.after_cr) && rest.first() == Some(&b'\n') {
            rest = &rest[1..];
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let head = &rest[..pos];
            let cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            if cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            if self.line.is_empty() {
                self.take_line(head, &mut on)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(head);
                let taken = self.take_line(&line, &mut on);
                line.clear();
                if line.capacity() <= KEPT_CAPACITY {
                    self.line = line;
                }
                taken?;
            }
        }
        self.line.extend_from_slice(rest);
        if self.line.len() > MAX_LINE_BYTES {
            self.line = Vec::new();
            on(SseItem::Overflow)?;
        }
        Ok(())
    }

    /// Ends the input: a last line without a newline and an event without its blank line
    /// are still delivered.
    pub fn finish<E>(&mut self, mut on: impl FnMut(SseItem<'_>) -> Result<(), E>) -> Result<(), E> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, &mut on)?;
        }
        self.dispatch(&mut on)
    }

    fn take_line<E>(
        &mut self,
        line: &[u8],
        on: &mut impl FnMut(SseItem<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(on);
        }
        // Valid UTF-8 (nearly every line) is checked by the fast check; only a line that
        // fails it pays the lossy decoding.
        let line = match std::str::from_utf8(line) {
            Ok(line) => std::borrow::Cow::Borrowed(line),
            Err(_) => String::from_utf8_lossy(line),
        };
        if line.starts_with(':') {
            return Ok(()); // comment (keep-alive)
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if std::mem::replace(&mut self.has_data, true) {
                    self.data.push('\n');
                }
                self.data.push_str(value);
            }
            "event" => self.event = Some(value.to_owned()),
            "id" | "retry" => {}
            _ => on(SseItem::Junk(&line))?,
        }
        Ok(())
    }

    fn dispatch<E>(&mut self, on: &mut impl FnMut(SseItem<'_>) -> Result<(), E>) -> Result<(), E> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let given = on(SseItem::Event {
            event: event.as_deref(),
            data: &self.data,
        });
        self.data.clear();
        if self.data.capacity() > KEPT_CAPACITY {
            self.data = String::new();
        }
        given
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An item as the tests keep it (the decoder lends its items).
    #[derive(Debug, PartialEq)]
    enum Got {
        Event { event: Option<String>, data: String },
        Junk(String),
        Overflow,
    }

    fn keep(out: &mut Vec<Got>) -> impl FnMut(SseItem<'_>) -> Result<(), ()> + '_ {
        |item| {
            out.push(match item {
                SseItem::Event { event, data } => Got::Event {
                    event: event.map(str::to_owned),
                    data: data.to_owned(),
                },
                SseItem::Junk(line) => Got::Junk(line.to_owned()),
                SseItem::Overflow => Got::Overflow,
            });
            Ok(())
        }
    }

    fn push(decoder: &mut SseDecoder, bytes: &[u8]) -> Vec<Got> {
        let mut out = Vec::new();
        decoder.push(bytes, keep(&mut out)).unwrap();
        out
    }

    fn finish(decoder: &mut SseDecoder) -> Vec<Got> {
        let mut out = Vec::new();
        decoder.finish(keep(&mut out)).unwrap();
        out
    }

    fn ev(data: &str) -> Got {
        Got::Event {
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
            Got::Event {
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
                    got.extend(push(&mut decoder, piece));
                }
                got.extend(finish(&mut decoder));
                assert_eq!(got, expected, "chunk size {chunk} of {text:?}");
            }
        }
    }

    #[test]
    fn table() {
        let cases: &[(&str, Vec<Got>)] = &[
            ("data:no-space\n\n", vec![ev("no-space")]),
            ("data: a\r\n\r\n", vec![ev("a")]),
            // bare CR ends lines too; CR then LF is one line end, not two
            (
                "data: a\rdata: b\r\rdata: c\r\n\r\n",
                vec![ev("a\nb"), ev("c")],
            ),
            (
                "<html>oops</html>\n",
                vec![Got::Junk("<html>oops</html>".into())],
            ),
            ("id: 3\nretry: 10\ndata: z\n\n", vec![ev("z")]),
            // an unterminated last event is still delivered at the end
            ("data: tail", vec![ev("tail")]),
            ("event: only\n\n", vec![]),
        ];
        for (input, expected) in cases {
            let mut decoder = SseDecoder::new();
            let mut got = push(&mut decoder, input.as_bytes());
            got.extend(finish(&mut decoder));
            assert_eq!(&got, expected, "input {input:?}");
        }
    }

    #[test]
    fn overlong_line_is_reported() {
        let mut decoder = SseDecoder::new();
        let big = vec![b'x'; MAX_LINE_BYTES + 1];
        assert_eq!(push(&mut decoder, &big), vec![Got::Overflow]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_dropped() {
        let mut decoder = SseDecoder::new();
        let mut got = push(&mut decoder, b"data: a\xffb\n\n\xfe oops\n");
        got.extend(finish(&mut decoder));
        assert_eq!(
            got,
            vec![ev("a\u{fffd}b"), Got::Junk("\u{fffd} oops".into())]
        );
    }

    #[test]
    fn an_error_from_the_caller_stops_the_decoding() {
        let mut decoder = SseDecoder::new();
        let mut seen = Vec::new();
        let stopped = decoder.push(b"data: 1\n\ndata: 2\n\ndata: 3\n\n", |item| {
            if let SseItem::Event { data, .. } = item {
                seen.push(data.to_owned());
            }
            if seen.len() == 2 {
                Err("enough")
            } else {
                Ok(())
            }
        });
        assert_eq!(stopped, Err("enough"));
        assert_eq!(seen, ["1", "2"]);
    }

    #[test]
    fn buffers_are_kept_between_events_but_not_after_a_huge_one() {
        let mut decoder = SseDecoder::new();
        // A line split across pushes goes through the line buffer; its data, through the
        // data buffer. Both stay for the next events.
        assert_eq!(push(&mut decoder, b"data: hel"), vec![]);
        assert_eq!(push(&mut decoder, b"lo\n\n"), vec![ev("hello")]);
        let (line, data) = (decoder.line.capacity(), decoder.data.capacity());
        assert!(line >= 9 && data >= 5, "kept: {line}, {data}");
        assert_eq!(push(&mut decoder, b"data: wor"), vec![]);
        assert_eq!(push(&mut decoder, b"ld\n\n"), vec![ev("world")]);
        assert_eq!(decoder.line.capacity(), line);
        assert_eq!(decoder.data.capacity(), data);
        // An event over the kept capacity is delivered whole, then its buffers go.
        let huge = "x".repeat(KEPT_CAPACITY + 1);
        assert_eq!(push(&mut decoder, b"data: "), vec![]);
        assert_eq!(
            push(&mut decoder, format!("{huge}\n\n").as_bytes()),
            vec![ev(&huge)]
        );
        assert!(decoder.line.capacity() <= KEPT_CAPACITY);
        assert!(decoder.data.capacity() <= KEPT_CAPACITY);
        assert_eq!(push(&mut decoder, b"data: after\n\n"), vec![ev("after")]);
    }
}
