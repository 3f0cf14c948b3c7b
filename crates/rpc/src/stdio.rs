//! The stdio transport: newline-delimited JSON-RPC on a reader and a writer.

use mcp_tasks_proto::{ErrorObject, Message};
use tokio::io::{AsyncBufRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::error::TransportError;
use crate::line::{Early, Frame, read_line_watching};
use crate::peer::{Outbound, Peer, Route};

/// Default bound of one incoming line: 16 MiB.
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

/// Where a peer reads its messages, one a line, and writes them.
#[derive(Debug)]
pub struct LineIo<R, W> {
    /// Incoming lines.
    pub reader: R,
    /// Outgoing lines.
    pub writer: W,
    /// Longest incoming line accepted, in bytes ([`DEFAULT_MAX_LINE`] by default).
    pub max_line: usize,
}

impl<R, W> LineIo<R, W> {
    /// Lines read from `reader`, written to `writer`, of at most [`DEFAULT_MAX_LINE`]
    /// bytes.
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader,
            writer,
            max_line: DEFAULT_MAX_LINE,
        }
    }

    /// The same, accepting lines of at most `bytes`.
    #[must_use]
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }
}

/// Serve `peer` over `io` until its reader ends; then close the peer and flush what is
/// queued.
///
/// An oversized line is answered with -32600 (id null), skipped up to the next newline,
/// and never held in memory whole (an oversized answer, one with an `id` and no `method`,
/// instead fails the request it answers: [`crate::TransportError::too_large`]); a malformed
/// line gets -32700/-32600; serving goes on.
///
/// # Errors
/// I/O errors of the reader or writer.
pub async fn serve<R, W>(
    peer: Peer,
    outbound: mpsc::Receiver<Outbound>,
    io: LineIo<R, W>,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // Give in-flight replies to already-received requests a moment to be queued.
    serve_then(peer, outbound, io, tokio::task::yield_now()).await
}

/// [`serve`], but once the input has ended (or failed) nothing more is read (the requests
/// sent to the other side fail: see [`Peer::end_input`]) and `after_input` runs before the
/// peer is closed: requests in flight can still answer (their responses are written) until
/// it returns. A server bounds it by its shutdown grace, e.g.
/// `tokio::time::timeout(grace, peer.idle())`.
///
/// # Errors
/// I/O errors of the reader or writer.
pub async fn serve_then<R, W, F>(
    peer: Peer,
    mut outbound: mpsc::Receiver<Outbound>,
    io: LineIo<R, W>,
    after_input: F,
) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    F: std::future::Future<Output = ()>,
{
    let LineIo {
        mut reader,
        mut writer,
        max_line,
    } = io;
    let closed = peer.closed();
    let writer_task = tokio::spawn(async move {
        let mut buf = Vec::with_capacity(8192);
        loop {
            let first = tokio::select! {
                m = outbound.recv() => m,
                () = closed.cancelled() => None,
            };
            let Some(first) = first else { break };
            buf.clear();
            push(&mut buf, &first);
            while let Ok(next) = outbound.try_recv() {
                push(&mut buf, &next);
                if buf.len() > 1 << 20 {
                    break;
                }
            }
            writer.write_all(&buf).await?;
            writer.flush().await?;
        }
        // Flush whatever was queued before the close.
        buf.clear();
        while let Ok(next) = outbound.try_recv() {
            push(&mut buf, &next);
        }
        if !buf.is_empty() {
            writer.write_all(&buf).await?;
        }
        writer.flush().await?;
        Ok::<_, std::io::Error>(())
    });

    let mut line = Vec::with_capacity(8192);
    let result = loop {
        // An answer too large to read fails the request it answers as soon as its id is
        // read past the bound, even if the line never ends.
        let mut failed_early = None;
        let frame = read_line_watching(&mut reader, &mut line, max_line, |e| match e {
            Early::Over { bytes } => tracing::warn!(
                bytes,
                limit = max_line,
                "a message over the line bound is being skipped"
            ),
            Early::Answers(id) => {
                tracing::warn!(id = %id, limit = max_line, "an answer over the line bound: its request fails");
                peer.fail(id.clone(), TransportError::too_large(None, max_line as u64));
                failed_early = Some(id);
            }
        })
        .await;
        match frame {
            Ok(Frame::Eof) => break Ok(()),
            Ok(Frame::TooLong(big)) if !big.has_method && big.id.is_some() => {
                // An answer too large to read: the request it answers fails, saying so,
                // instead of waiting for ever (unless it failed already).
                if let Some(id) = big.id.filter(|id| failed_early.as_ref() != Some(id)) {
                    let error = TransportError::too_large(Some(big.bytes as u64), max_line as u64);
                    peer.fail(id, error);
                }
            }
            Ok(Frame::TooLong(_)) => {
                let err = ErrorObject::invalid_request(format!(
                    "message exceeds the {max_line}-byte line limit"
                ));
                let _ = peer.send(Message::reply_null(err), Route::Standalone).await;
            }
            Ok(Frame::Line) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match Message::parse(&line) {
                    Ok(m) => peer.receive(m).await,
                    Err(f) => {
                        let route = f.id.clone().map_or(Route::Standalone, Route::Request);
                        let _ = peer.send(f.into_response(), route).await;
                    }
                }
            }
            Err(e) => break Err(e),
        }
    };
    // Nothing more is read: requests sent to the other side can get no answer.
    peer.end_input();
    after_input.await;
    peer.close();
    match writer_task.await {
        Ok(Ok(())) => result,
        Ok(Err(e)) => result.and(Err(e)),
        Err(e) => result.and(Err(std::io::Error::other(e))),
    }
}

fn push(buf: &mut Vec<u8>, out: &Outbound) {
    buf.extend_from_slice(out.message.to_json().as_bytes());
    buf.push(b'\n');
}
