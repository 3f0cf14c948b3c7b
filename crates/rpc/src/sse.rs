//! The Server-Sent Events parser of the workspace (the WHATWG `text/event-stream`
//! interpretation rules the MCP Streamable HTTP transport uses), for the HTTP client
//! transport and the load generator alike.
//!
//! Fed with chunks as they arrive, split anywhere; lines end with LF, CRLF or CR; `:`
//! starts a comment; `data` lines are joined with LF; one space after the colon is
//! dropped; a blank line dispatches the event. It yields the events whose data buffer is
//! not empty, and keeps the stream's last event id and `retry` value, which outlive single
//! events: the priming event a server sends first (an id and an empty `data`) dispatches
//! nothing but still gives the client a point to resume from. One event (and one line) is
//! bounded: a stream that breaks the bound is refused with [`SseTooLarge`].

use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The event type (`message` when the stream named none).
    pub event: String,
    /// The data lines joined with `\n`.
    pub data: String,
    /// The stream's last event id when this event was dispatched.
    pub id: Option<String>,
}

/// The stream broke the parser's bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event exceeds {0} bytes")]
pub struct SseTooLarge(pub usize);

/// Incremental `text/event-stream` parser.
#[derive(Debug)]
pub struct SseParser {
    buf: Vec<u8>,
    data: String,
    event: String,
    has_data: bool,
    started: bool,
    max_event: usize,
    /// The last event id the stream set (kept across events, as the SSE standard says).
    pub last_event_id: Option<String>,
    /// The last `retry` the stream sent.
    pub retry: Option<Duration>,
}

impl SseParser {
    /// A parser holding at most `max_event` bytes of one event.
    pub fn new(max_event: usize) -> Self {
        Self {
            buf: Vec::new(),
            data: String::new(),
            event: String::new(),
            has_data: false,
            started: false,
            max_event,
            last_event_id: None,
            retry: None,
        }
    }

    /// Feed a chunk; returns the events it completed.
    ///
    /// # Errors
    /// When one line or event grows past the bound.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseTooLarge> {
        self.buf.extend_from_slice(chunk);
        if !self.started {
            // A UTF-8 byte order mark at the very start is skipped.
            if self.buf.len() < 3 && b"\xEF\xBB\xBF".starts_with(&self.buf) {
                return Ok(Vec::new());
            }
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.buf.drain(..3);
            }
            self.started = true;
        }
        let mut out = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            match self.buf[i] {
                b'\n' => {
                    self.bounded_line(start, i, &mut out)?;
                    i += 1;
                    start = i;
                }
                b'\r' => {
                    if i + 1 == self.buf.len() {
                        // Maybe the first half of a CRLF: wait for the next byte.
                        break;
                    }
                    self.bounded_line(start, i, &mut out)?;
                    i += if self.buf[i + 1] == b'\n' { 2 } else { 1 };
                    start = i;
                }
                _ => i += 1,
            }
        }
        self.buf.drain(..start);
        if self.buf.len() + self.data.len() > self.max_event {
            return Err(SseTooLarge(self.max_event));
        }
        Ok(out)
    }

    /// The stream ended: a trailing event without its blank line is discarded, as the
    /// standard says.
    pub fn finish(&mut self) {
        self.buf.clear();
        self.data.clear();
        self.event.clear();
        self.has_data = false;
    }

    /// [`Self::line`], within the bound: a line, or the event's data with it, larger than
    /// the bound is refused even when it arrived whole in one chunk (found by fuzzing: the
    /// bound was only checked at the end of each chunk, so an event of any size that
    /// arrived with its blank line in one chunk was dispatched).
    fn bounded_line(
        &mut self,
        start: usize,
        end: usize,
        out: &mut Vec<SseEvent>,
    ) -> Result<(), SseTooLarge> {
        if end - start > self.max_event {
            return Err(SseTooLarge(self.max_event));
        }
        self.line(start, end, out);
        if self.data.len() > self.max_event {
            return Err(SseTooLarge(self.max_event));
        }
        Ok(())
    }

    fn line(&mut self, start: usize, end: usize, out: &mut Vec<SseEvent>) {
        let line = String::from_utf8_lossy(&self.buf[start..end]).into_owned();
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line.as_str(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => value.clone_into(&mut self.event),
            "id" if !value.contains('\0') => {
                self.last_event_id = if value.is_empty() {
                    None
                } else {
                    Some(value.to_owned())
                };
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let data = std::mem::take(&mut self.data);
        let event = std::mem::take(&mut self.event);
        let had = std::mem::replace(&mut self.has_data, false);
        if !had || data.is_empty() {
            return;
        }
        out.push(SseEvent {
            event: if event.is_empty() {
                "message".into()
            } else {
                event
            },
            data,
            id: self.last_event_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &mut SseParser, chunks: &[&[u8]]) -> Vec<SseEvent> {
        chunks.iter().flat_map(|c| p.feed(c).unwrap()).collect()
    }

    #[test]
    fn priming_event_sets_the_id_without_dispatching() {
        let mut p = SseParser::new(1024);
        let ev = all(&mut p, &[b"id: 4-0\ndata:\n\n"]);
        assert!(ev.is_empty());
        assert_eq!(p.last_event_id.as_deref(), Some("4-0"));
    }

    #[test]
    fn events_split_across_chunks_and_line_endings() {
        let mut p = SseParser::new(1024);
        let ev = all(
            &mut p,
            &[
                b"\xEF\xBB",
                b"\xBFid: 1\r",
                b"\ndata: {\"a\":",
                b"1}\r\rdata: x\ndata: y\nevent: other\n\n: comment\nretry: 1500\n",
                b"retry: nope\n\n",
            ],
        );
        assert_eq!(
            ev,
            vec![
                SseEvent {
                    event: "message".into(),
                    data: "{\"a\":1}".into(),
                    id: Some("1".into())
                },
                SseEvent {
                    event: "other".into(),
                    data: "x\ny".into(),
                    id: Some("1".into())
                },
            ]
        );
        assert_eq!(p.retry, Some(Duration::from_millis(1500)));
    }

    #[test]
    fn an_empty_id_resets_and_unterminated_events_are_dropped() {
        let mut p = SseParser::new(1024);
        all(&mut p, &[b"id: 7\n\nid\ndata: a"]);
        assert_eq!(p.last_event_id, None);
        p.finish();
        assert!(all(&mut p, &[b"\n"]).is_empty());
    }

    #[test]
    fn oversized_events_are_refused() {
        let mut p = SseParser::new(8);
        assert!(p.feed(b"data: 0123456789").is_err());
    }

    #[test]
    fn an_event_over_the_bound_is_refused_even_in_one_chunk() {
        // Regression (fuzz/corpus/sse_parser/large): dispatched before the fix.
        let mut p = SseParser::new(16);
        assert_eq!(
            p.feed(b"data: 0123456789abcdefXYZ\n\n"),
            Err(SseTooLarge(16))
        );
        let mut p = SseParser::new(16);
        assert_eq!(
            p.feed(b"data: 0123456789\ndata: 0123456789\n\n"),
            Err(SseTooLarge(16))
        );
        let mut p = SseParser::new(16);
        assert_eq!(
            p.feed(b"event: 0123456789abcdefXYZ\n"),
            Err(SseTooLarge(16))
        );
        // At the bound it is still delivered.
        let mut p = SseParser::new(16);
        assert_eq!(p.feed(b"data: 0123456789\n\n").unwrap().len(), 1);
    }

    #[test]
    fn split_anywhere_gives_the_same_events() {
        let stream: &[u8] = b": comment\r\nretry: 2000\r\nevent: message\r\ndata: {\"a\":\r\ndata:1}\r\n\r\ndata: x\rdata: y\r\rdata:z\n\n";
        let parse = |chunks: &[&[u8]]| {
            let mut p = SseParser::new(1024);
            (all(&mut p, chunks), p.retry)
        };
        let (whole, retry) = parse(&[stream]);
        assert_eq!(
            whole.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(),
            vec!["{\"a\":\n1}", "x\ny", "z"]
        );
        assert_eq!(retry, Some(Duration::from_millis(2000)));
        for cut in 0..stream.len() {
            let (a, b) = stream.split_at(cut);
            assert_eq!(parse(&[a, b]).0, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse(&bytes).0, whole);
    }
}
