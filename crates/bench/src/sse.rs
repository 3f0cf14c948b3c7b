//! An incremental `text/event-stream` parser (the WHATWG rules the MCP Streamable HTTP
//! transport uses): bytes go in as they arrive, split anywhere; complete events come out.
//!
//! Lines end with LF, CRLF or CR; `:` starts a comment; `data` lines are joined with LF;
//! one space after the colon is dropped; a blank line dispatches the event. An event whose
//! data is empty (the MCP "priming" event that carries only an `id`) is not dispatched,
//! but its `id` still becomes [`SseParser::last_event_id`].

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event` field (empty means `message`).
    pub event: String,
    /// The data lines, joined with `\n`.
    pub data: String,
    /// The last event id seen so far in the stream.
    pub id: Option<String>,
}

/// Incremental parser state.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    /// The previous byte was a CR (so a following LF belongs to the same line end).
    after_cr: bool,
    event: String,
    data: String,
    /// At least one `data` line was seen for the current event.
    has_data: bool,
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of the last event (for `Last-Event-ID` on reconnection).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last `retry` field, in ms.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feed the next bytes; push every event they complete onto `out`.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        for &b in bytes {
            match b {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out);
                    self.line = line;
                    self.line.clear();
                }
                _ => {
                    self.after_cr = false;
                    self.line.push(b);
                }
            }
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data && !self.data.is_empty() {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                    id: self.last_id.clone(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = value.into_owned(),
            b"id" if !value.contains('\0') => self.last_id = Some(value.into_owned()),
            b"retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(chunks: &[&[u8]]) -> (Vec<SseEvent>, SseParser) {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.feed(c, &mut out);
        }
        (out, p)
    }

    #[test]
    fn priming_event_then_a_message() {
        let stream = b"id: 0-1\ndata: \n\nid: 0-2\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n";
        let (events, p) = parse_all(&[stream]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].event, "message");
        assert_eq!(events[0].data, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        assert_eq!(events[0].id.as_deref(), Some("0-2"));
        assert_eq!(p.last_event_id(), Some("0-2"));
    }

    #[test]
    fn split_anywhere_gives_the_same_events() {
        let stream: &[u8] = b": comment\r\nretry: 2000\r\nevent: message\r\ndata: {\"a\":\r\ndata:1}\r\n\r\ndata: x\rdata: y\r\rdata:z\n\n";
        let (whole, p) = parse_all(&[stream]);
        assert_eq!(
            whole.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            vec!["{\"a\":\n1}", "x\ny", "z"]
        );
        assert_eq!(p.retry_ms(), Some(2000));
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            let (split, _) = parse_all(&[a, b]);
            assert_eq!(split, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        let (one_by_one, _) = parse_all(&bytes);
        assert_eq!(one_by_one, whole);
    }

    #[test]
    fn incomplete_event_is_not_dispatched() {
        let (events, _) = parse_all(&[b"data: {\"partial\": true}\n"]);
        assert!(events.is_empty());
        let (events, _) = parse_all(&[b"data: {}\n", b"\n"]);
        assert_eq!(events.len(), 1);
    }

    #[test]
    fn field_without_colon_and_unknown_fields() {
        let (events, p) = parse_all(&[b"id\nfoo: bar\ndata\ndata: a\n\n"]);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "\na");
        assert_eq!(p.last_event_id(), Some(""));
    }
}
