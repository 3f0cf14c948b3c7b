//! Newline-delimited frames with a size bound.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line (without the newline) is in the buffer.
    Line,
    /// A line longer than the bound was skipped up to its newline; nothing of it is kept.
    TooLong,
    /// End of input (a final unterminated line, if any, was returned as `Line` before).
    Eof,
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
    buf.clear();
    let mut too_long = false;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if too_long {
                Frame::TooLong
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
        if !too_long {
            if buf.len() + part.len() > max {
                too_long = true;
                buf.clear();
                buf.shrink_to(64 * 1024);
            } else {
                buf.extend_from_slice(part);
            }
        }
        reader.consume(used);
        if done {
            if too_long {
                return Ok(Frame::TooLong);
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
            Frame::TooLong
        );
        assert!(buf.is_empty());
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"xy");
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Line);
        assert_eq!(buf, b"last");
        assert_eq!(read_line(&mut r, &mut buf, 5).await.unwrap(), Frame::Eof);
    }
}
