//! Entry points of the fuzz targets (`fuzz/`, cargo-afl) and of the corpus replay test:
//! not an API. Each takes arbitrary bytes, must never panic, and checks what must hold
//! for any input.

use crate::line::{Frame, read_line};
use crate::sse::{SseEvent, SseParser};

/// The stdio line framer: the first byte picks the bound and the reader's buffer size
/// (so that lines straddle reads); the rest is the input. Every line kept is within the
/// bound and holds no newline, and every input byte is accounted for once.
pub fn line_framer(bytes: &[u8]) {
    let Some((&knob, input)) = bytes.split_first() else {
        return;
    };
    let max = usize::from(knob & 0x3f) + 1;
    let capacity = usize::from(knob >> 6) * 3 + 1;
    let mut reader = tokio::io::BufReader::with_capacity(capacity, input);
    let mut buf = Vec::new();
    let mut seen = 0usize;
    let newlines = input.iter().filter(|&&b| b == b'\n').count();
    futures::executor::block_on(async {
        loop {
            match read_line(&mut reader, &mut buf, max)
                .await
                .expect("reading a slice")
            {
                Frame::Line => {
                    assert!(buf.len() <= max, "a kept line is over the bound");
                    assert!(!buf.contains(&b'\n'), "a line holds a newline");
                    seen += buf.len();
                }
                Frame::TooLong(o) => {
                    assert!(
                        o.bytes > max,
                        "{} bytes reported too long for {max}",
                        o.bytes
                    );
                    seen += o.bytes;
                }
                Frame::Eof => break,
            }
        }
    });
    // Every newline ends one line; the bytes between them are all seen, but the `\r` of
    // a CRLF ending, which a kept line drops.
    let crlf = input.windows(2).filter(|w| w == b"\r\n").count();
    let missing = input.len().checked_sub(seen + newlines);
    assert!(
        missing.is_some_and(|m| m <= crlf),
        "bytes lost or counted twice"
    );
}

/// The SSE parser of the client: the input fed whole and fed in pieces (cut where the
/// first byte says) gives the same events, last event id and retry; a stream refused as
/// too large whole is refused in pieces too.
pub fn sse_parser(bytes: &[u8]) {
    let Some((&knob, input)) = bytes.split_first() else {
        return;
    };
    let max = 64 + usize::from(knob) * 4;
    let step = usize::from(knob % 7) + 1;
    let run = |pieces: &mut dyn Iterator<Item = &[u8]>| {
        let mut p = SseParser::new(max);
        let mut events: Vec<SseEvent> = Vec::new();
        for piece in pieces {
            events.extend(p.feed(piece)?);
        }
        for e in &events {
            assert!(
                e.data.len() <= max,
                "an event over the bound was dispatched"
            );
        }
        p.finish();
        Ok::<_, crate::sse::SseTooLarge>((events, p.last_event_id.clone(), p.retry))
    };
    let whole = run(&mut std::iter::once(input));
    let pieces = run(&mut input.chunks(step));
    match (&whole, &pieces) {
        (Ok(w), Ok(p)) => assert_eq!(w, p, "pieces of {step} bytes changed the events"),
        (Err(_), Ok(_)) => panic!("refused whole but accepted in pieces of {step}"),
        _ => {}
    }
}

/// The OAuth token and key parsing: the first `\n` splits the input into a JWKS document
/// and an access token. Neither may panic; every key kept is of an accepted algorithm.
#[cfg(feature = "http")]
pub fn jwt_jwks(bytes: &[u8]) {
    crate::http::fuzz_oauth(bytes);
}

/// The HTTP request router: a request built from the input (method, path, headers, body;
/// see the private `http::fuzz::request`) served by the endpoint's router with a handler that
/// answers every request. Nothing panics, and only a well-formed request is let through to
/// the handler.
#[cfg(feature = "http")]
pub fn http_router(bytes: &[u8]) {
    crate::http::fuzz_router(bytes);
}
