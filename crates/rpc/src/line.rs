//! Newline-delimited frames with a size bound.

use mcp_tasks_proto::RequestId;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without the newline) is in the buffer.
    Line,
    /// A line longer than the bound was skipped up to its newline; nothing of it is kept
    /// but what [`Oversized`] says.
    TooLong(Oversized),
    /// End of input (a final unterminated line, if any, was returned as `Line` before).
    Eof,
}

/// What is known of a line too long to keep: its size, and, read on the fly while it was
/// skipped, its top-level `id` and whether it has a top-level `method` (so that an answer
/// too large to read can fail the request it answers instead of leaving it waiting).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Oversized {
    /// The length of the line in bytes (without its newline).
    pub bytes: usize,
    /// Its top-level `id`, when it has one that is a string or an integer.
    pub id: Option<RequestId>,
    /// Whether it has a top-level `method` (a request or a notification).
    pub has_method: bool,
}

/// Reads the top-level `id` and `method` keys of a JSON object fed in pieces, keeping
/// nothing else (a few bytes of state).
#[derive(Default)]
struct Scan {
    depth: u32,
    in_str: bool,
    esc: bool,
    want_key: bool,
    in_key: bool,
    key: Vec<u8>,
    after_key: bool,
    capture: bool,
    value: Vec<u8>,
    id: Option<Vec<u8>>,
    has_method: bool,
    /// A top-level `result` or `error` key was read: the line is an answer.
    has_answer: bool,
}

/// The longest `id` value kept.
const MAX_ID_BYTES: usize = 256;

impl Scan {
    fn push_value(&mut self, b: u8) {
        if self.value.len() <= MAX_ID_BYTES {
            self.value.push(b);
        }
    }

    fn end_value(&mut self) {
        if self.capture {
            self.capture = false;
            if self.id.is_none() {
                self.id = Some(std::mem::take(&mut self.value));
            }
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.in_str {
                let closing = !self.esc && b == b'"';
                if self.capture {
                    self.push_value(b);
                }
                if self.in_key && !closing && self.key.len() < 8 {
                    self.key.push(b);
                }
                if self.esc {
                    self.esc = false;
                } else if b == b'\\' {
                    self.esc = true;
                } else if closing {
                    self.in_str = false;
                    if self.in_key {
                        self.in_key = false;
                        self.after_key = true;
                    }
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_str = true;
                    if self.depth == 1 && self.want_key {
                        self.want_key = false;
                        self.in_key = true;
                        self.key.clear();
                    } else if self.capture {
                        self.push_value(b);
                    }
                }
                b'{' | b'[' => {
                    if self.capture {
                        self.push_value(b);
                    }
                    self.depth += 1;
                    if self.depth == 1 && b == b'{' {
                        self.want_key = true;
                    }
                }
                b'}' | b']' => {
                    if self.depth == 1 {
                        self.end_value();
                    } else if self.capture {
                        self.push_value(b);
                    }
                    self.depth = self.depth.saturating_sub(1);
                }
                b',' if self.depth == 1 => {
                    self.end_value();
                    self.want_key = true;
                }
                b':' if self.depth == 1 && self.after_key => {
                    self.after_key = false;
                    match self.key.as_slice() {
                        b"id" => {
                            self.capture = true;
                            self.value.clear();
                        }
                        b"method" => self.has_method = true,
                        b"result" | b"error" => self.has_answer = true,
                        _ => {}
                    }
                }
                _ => {
                    if self.capture && !b.is_ascii_whitespace() {
                        self.push_value(b);
                    }
                }
            }
        }
    }

    /// The top-level `id` read so far.
    fn id(&self) -> Option<RequestId> {
        self.id
            .as_ref()
            .filter(|v| v.len() <= MAX_ID_BYTES)
            .and_then(|v| serde_json::from_slice::<RequestId>(v).ok())
    }

    /// The id of the request this line answers, once that is known before the line ends:
    /// its `id` and a `result` or `error` key were read, and no `method`.
    fn answers(&self) -> Option<RequestId> {
        if self.has_answer && !self.has_method {
            self.id()
        } else {
            None
        }
    }

    fn finish(self, bytes: usize) -> Oversized {
        Oversized {
            bytes,
            id: self.id(),
            has_method: self.has_method,
        }
    }
}

/// What [`read_line_watching`] reports of a line while it is still being skipped.
#[derive(Debug, PartialEq, Eq)]
pub enum Early {
    /// The line just went over the bound (`bytes` read of it so far).
    Over {
        /// Bytes of the line read so far.
        bytes: usize,
    },
    /// The line is an answer to request `id` (its `id` and `result`/`error` keys came
    /// before the bound was passed or while the line was skipped): that request can fail
    /// now, rather than when, if ever, the line ends.
    Answers(RequestId),
}

/// Read one line into `buf` (cleared first), keeping at most `max` bytes in memory.
///
/// An oversized line is consumed up to and including its newline and reported as
/// [`Frame::TooLong`]; it is never held in memory whole.
///
/// # Errors
/// I/O errors of the reader.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Frame> {
    read_line_watching(reader, buf, max, |_| {}).await
}

/// As [`read_line`], telling `early` what is known of an oversized line while it is
/// skipped, so that a line that never ends (a peer writing without a newline) still fails
/// the request it answers: [`Early::Over`] once the line passes the bound, and
/// [`Early::Answers`] once (if ever) its id says which request it answers.
///
/// # Errors
/// I/O errors of the reader.
pub async fn read_line_watching<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
    mut early: impl FnMut(Early),
) -> std::io::Result<Frame> {
    buf.clear();
    let mut answered = false;
    // Set once the line is over the bound: what is read of it from then on.
    let mut too_long: Option<(Scan, usize)> = None;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if let Some((scan, bytes)) = too_long {
                Frame::TooLong(scan.finish(bytes))
            } else if buf.is_empty() {
                Frame::Eof
            } else {
                Frame::Line
            });
        }
        let (part, used, done) = match memchr(chunk) {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        match &mut too_long {
            Some((scan, bytes)) => {
                scan.feed(part);
                *bytes += part.len();
            }
            None if buf.len() + part.len() > max => {
                let mut scan = Scan::default();
                scan.feed(buf);
                scan.feed(part);
                let bytes = buf.len() + part.len();
                early(Early::Over { bytes });
                too_long = Some((scan, bytes));
                buf.clear();
                buf.shrink_to(64 * 1024);
            }
            None => buf.extend_from_slice(part),
        }
        if !answered
            && let Some((scan, _)) = &too_long
            && let Some(id) = scan.answers()
        {
            answered = true;
            early(Early::Answers(id));
        }
        reader.consume(used);
        if done {
            if let Some((scan, bytes)) = too_long {
                return Ok(Frame::TooLong(scan.finish(bytes)));
            }
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Frame::Line);
        }
    }
}

fn memchr(hay: &[u8]) -> Option<usize> {
    hay.iter().position(|&b| b == b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_bounds_and_recovers() {
        let data = b"ab\r\n0123456789\nxy\nlast".to_vec();
        let mut r = tokio::io::BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"ab");
        assert_eq!(
            read_line(&mut r, &mut buf, 5).await.unwrap(),
            Frame::TooLong(Oversized {
                bytes: 10,
                ..Oversized::default()
            })
        );
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"xy");
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Eof);
    }
}

#[cfg(test)]
mod scan_tests {
    use super::*;

    /// A line that never ends reports its id as soon as it is read, past the bound.
    #[tokio::test]
    async fn an_endless_answer_is_reported_before_its_end() {
        let (mut w, r) = tokio::io::duplex(64);
        let mut r = tokio::io::BufReader::with_capacity(16, r);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            w.write_all(br#"{"jsonrpc":"2.0","id":7,"result":{"text":""#)
                .await
                .unwrap();
            // Endless: the reader must not wait for the end.
            loop {
                if w.write_all(&[b'a'; 64]).await.is_err() {
                    return;
                }
            }
        });
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let reading = tokio::spawn(async move {
            let mut buf = Vec::new();
            let _ = read_line_watching(&mut r, &mut buf, 100, |e| {
                let _ = tx.send(e);
            })
            .await;
        });
        assert!(matches!(rx.recv().await, Some(Early::Over { bytes }) if bytes > 100));
        assert_eq!(rx.recv().await, Some(Early::Answers(RequestId::Number(7))));
        reading.abort();
    }

    #[tokio::test]
    async fn a_request_or_a_late_id_is_no_early_answer() {
        for line in [
            // A request with a large param: its id is its own, not one of ours.
            r#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{"x":"yyyyyyyyyyyyyyyyyyyy"}}"#,
            // The id after the result: known only at the end of the line.
            r#"{"result":{"x":"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"},"jsonrpc":"2.0","id":4}"#,
        ] {
            let data = format!("{line}\n");
            let mut r = tokio::io::BufReader::with_capacity(7, data.as_bytes());
            let mut seen = Vec::new();
            let frame = read_line_watching(&mut r, &mut Vec::new(), 10, |e| seen.push(e))
                .await
                .unwrap();
            assert!(matches!(frame, Frame::TooLong(_)), "{frame:?}");
            assert!(
                !seen
                    .iter()
                    .any(|e| matches!(e, Early::Answers(RequestId::Number(3)))),
                "{seen:?}"
            );
            assert!(matches!(seen[0], Early::Over { .. }), "{seen:?}");
        }
    }

    async fn oversized(line: &str) -> Oversized {
        let data = format!("{line}\n");
        let mut r = tokio::io::BufReader::with_capacity(7, data.as_bytes());
        let mut buf = Vec::new();
        match read_line(&mut r, &mut buf, 10).await.unwrap() {
            Frame::TooLong(o) => o,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn an_oversized_line_keeps_its_top_level_id_wherever_it_is() {
        let first = r#"{"jsonrpc":"2.0","id":"gw-7","result":{"id":1,"text":"a,\"}b"}}"#;
        let o = oversized(first).await;
        assert_eq!(o.bytes, first.len());
        assert_eq!(o.id, Some(RequestId::String("gw-7".into())));
        assert!(!o.has_method);
        // Last, after nested ids and strings that look like keys (the TypeScript SDK).
        let last =
            r#"{"result":{"content":[{"id":"x","text":"\"id\":9"}]},"jsonrpc":"2.0","id": 42 }"#;
        assert_eq!(oversized(last).await.id, Some(RequestId::Number(42)));
        let req = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"x":"yyyyyy"}}"#;
        let o = oversized(req).await;
        assert_eq!((o.id, o.has_method), (Some(RequestId::Number(3)), true));
        assert_eq!(
            oversized(r#"{"method":"m","params":"xxxxxxxx"}"#).await.id,
            None
        );
        assert_eq!(oversized(r#"["not","an","object","x"]"#).await.id, None);
    }
}
