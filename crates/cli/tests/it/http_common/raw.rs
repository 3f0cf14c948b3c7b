//! A small raw HTTP/1.1 client: tests see exactly what goes over the wire (status,
//! headers, chunked framing, SSE events).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader as TokioBufReader};
use tokio::net::TcpStream;

use super::{TIMEOUT, check};

enum Framing {
    Length(usize),
    Chunked,
    Eof,
    Empty,
}

pub struct BodyReader {
    io: TokioBufReader<TcpStream>,
    framing: Framing,
    done: bool,
}

impl BodyReader {
    /// The next piece of the body, `None` at its end.
    pub async fn chunk(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.done {
            return Ok(None);
        }
        match self.framing {
            Framing::Empty => {
                self.done = true;
                Ok(None)
            }
            Framing::Length(n) => {
                self.done = true;
                let mut buf = vec![0; n];
                self.io.read_exact(&mut buf).await?;
                Ok(Some(buf))
            }
            Framing::Eof => {
                let mut buf = vec![0; 16 * 1024];
                let n = self.io.read(&mut buf).await?;
                if n == 0 {
                    self.done = true;
                    return Ok(None);
                }
                buf.truncate(n);
                Ok(Some(buf))
            }
            Framing::Chunked => {
                let mut line = String::new();
                if self.io.read_line(&mut line).await? == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed inside a chunked body",
                    ));
                }
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap(), 16)
                    .map_err(|e| std::io::Error::other(format!("bad chunk size {line:?}: {e}")))?;
                if size == 0 {
                    loop {
                        let mut t = String::new();
                        if self.io.read_line(&mut t).await? == 0 || t.trim().is_empty() {
                            break;
                        }
                    }
                    self.done = true;
                    return Ok(None);
                }
                let mut buf = vec![0; size + 2];
                self.io.read_exact(&mut buf).await?;
                buf.truncate(size);
                Ok(Some(buf))
            }
        }
    }

    async fn all(&mut self) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(c) = self.chunk().await? {
            out.extend_from_slice(&c);
        }
        Ok(out)
    }
}

pub struct Resp {
    pub status: u16,
    /// Lower-case names.
    pub headers: Vec<(String, String)>,
    pub body: BodyReader,
}

impl std::fmt::Debug for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resp")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish()
    }
}

async fn read_head(mut io: TokioBufReader<TcpStream>, head_request: bool) -> std::io::Result<Resp> {
    let mut line = String::new();
    io.read_line(&mut line).await?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        io.read_line(&mut h).await?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let framing = if head_request || status == 204 || status == 304 || (100..200).contains(&status)
    {
        Framing::Empty
    } else if get("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        Framing::Chunked
    } else if let Some(n) = get("content-length") {
        Framing::Length(n.parse().unwrap())
    } else {
        Framing::Eof
    };
    Ok(Resp {
        status,
        headers,
        body: BodyReader {
            io,
            framing,
            done: false,
        },
    })
}

fn encode_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if method != "GET" || !body.is_empty() {
        req.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    req.push_str("\r\n");
    let mut bytes = req.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// One request on a fresh connection.
pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Resp {
    let fut = async {
        let mut stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        stream
            .write_all(&encode_request(addr, method, path, headers, body))
            .await?;
        read_head(TokioBufReader::new(stream), method == "HEAD").await
    };
    tokio::time::timeout(TIMEOUT, fut)
        .await
        .unwrap_or_else(|_| panic!("{method} {path}: no response within {TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

/// A kept-alive connection for many sequential requests with whole bodies.
pub struct Conn {
    addr: SocketAddr,
    io: Option<TokioBufReader<TcpStream>>,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        Self {
            addr,
            io: Some(TokioBufReader::new(s)),
        }
    }

    pub async fn roundtrip(
        &mut self,
        method: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, Vec<u8>) {
        let mut io = self.io.take().unwrap();
        io.get_mut()
            .write_all(&encode_request(self.addr, method, "/mcp", headers, body))
            .await
            .unwrap();
        let mut resp = read_head(io, false).await.unwrap();
        let bytes = tokio::time::timeout(TIMEOUT, resp.body.all())
            .await
            .expect("body in time")
            .unwrap();
        self.io = Some(resp.body.io);
        (resp.status, resp.headers, bytes)
    }
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    pub fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    pub fn is_json(&self) -> bool {
        self.content_type().starts_with("application/json")
    }

    pub async fn bytes(mut self) -> Vec<u8> {
        tokio::time::timeout(TIMEOUT, self.body.all())
            .await
            .expect("body in time")
            .expect("body")
    }

    /// The body as one JSON-RPC message (schema-checked).
    pub async fn json(self) -> Value {
        let status = self.status;
        let b = self.bytes().await;
        let v: Value = serde_json::from_slice(&b).unwrap_or_else(|e| {
            panic!(
                "status {status}: body is not JSON ({e}): {}",
                String::from_utf8_lossy(&b)
            )
        });
        check(&v);
        v
    }

    pub fn sse(self) -> Sse {
        assert!(self.is_sse(), "expected an SSE stream, got {self:?}");
        Sse {
            body: self.body,
            buf: Vec::new(),
            ended: false,
        }
    }
}

/// One SSE event block as sent (a `retry`-only block is reported too).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: Option<String>,
    pub data: Option<String>,
    pub retry: Option<u64>,
}

impl Event {
    /// The data as a JSON-RPC message (schema-checked); `None` for an empty data field.
    pub fn message(&self) -> Option<Value> {
        let d = self.data.as_deref()?;
        if d.is_empty() {
            return None;
        }
        let v: Value =
            serde_json::from_str(d).unwrap_or_else(|e| panic!("event data is not JSON ({e}): {d}"));
        check(&v);
        Some(v)
    }

    /// The priming event: an id and an empty data field.
    pub fn is_priming(&self) -> bool {
        self.id.is_some() && self.data.as_deref() == Some("")
    }

    /// The stream part of the id (`n` of `n-seq`).
    pub fn stream(&self) -> &str {
        self.id.as_deref().unwrap().split('-').next().unwrap()
    }
}

/// The responses among `events` (the messages with an id; a stream's notifications and
/// priming events passed over).
pub fn responses(events: &[Event]) -> Vec<Value> {
    events
        .iter()
        .filter_map(Event::message)
        .filter(|m| m.get("id").is_some())
        .collect()
}

pub struct Sse {
    body: BodyReader,
    buf: Vec<u8>,
    ended: bool,
}

fn parse_block(block: &str) -> Event {
    let mut e = Event {
        id: None,
        data: None,
        retry: None,
    };
    for line in block.split('\n') {
        if line.starts_with(':') || line.is_empty() {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "id" => e.id = Some(value.to_owned()),
            "data" => {
                let d = e.data.get_or_insert_with(String::new);
                if !d.is_empty() {
                    d.push('\n');
                }
                d.push_str(value);
            }
            "retry" => e.retry = Some(value.parse().expect("numeric retry")),
            _ => {}
        }
    }
    e
}

impl Sse {
    /// The next event, or `None` when the response ends. Panics after [`TIMEOUT`].
    pub async fn next(&mut self) -> Option<Event> {
        match self.next_within(TIMEOUT).await {
            Ok(e) => e,
            Err(()) => panic!("no SSE event within {TIMEOUT:?}"),
        }
    }

    /// The next event within `d` (`Err` on timeout; the stream stays usable).
    pub async fn next_within(&mut self, d: Duration) -> Result<Option<Event>, ()> {
        let deadline = tokio::time::Instant::now() + d;
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..pos + 2).collect();
                let text = String::from_utf8(block).expect("utf-8 event");
                let text = text.trim_end_matches('\n');
                if text.lines().all(|l| l.starts_with(':')) {
                    continue;
                }
                return Ok(Some(parse_block(text)));
            }
            if self.ended {
                assert!(
                    self.buf.iter().all(u8::is_ascii_whitespace),
                    "stream ended inside an event: {:?}",
                    String::from_utf8_lossy(&self.buf)
                );
                return Ok(None);
            }
            match tokio::time::timeout_at(deadline, self.body.chunk()).await {
                Err(_) => return Err(()),
                Ok(Ok(Some(c))) => self.buf.extend_from_slice(&c),
                Ok(Ok(None)) => self.ended = true,
                Ok(Err(e)) => panic!("SSE read failed: {e}"),
            }
        }
    }

    /// Every event until the response ends.
    pub async fn rest(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }

    /// The next message that is not a notification (a request or a response), passing
    /// over priming events; the notifications passed over are appended to `seen`. `None`
    /// when the response ends first.
    pub async fn next_non_notification(&mut self, seen: &mut Vec<Value>) -> Option<Value> {
        loop {
            let e = self.next().await?;
            let Some(m) = e.message() else { continue };
            if m.get("id").is_some() {
                return Some(m);
            }
            seen.push(m);
        }
    }

    /// Events until one carries a JSON-RPC response (included), or the stream ends.
    pub async fn until_response(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            let done = e
                .message()
                .is_some_and(|m| m.get("result").is_some() || m.get("error").is_some());
            out.push(e);
            if done {
                break;
            }
        }
        out
    }
}
