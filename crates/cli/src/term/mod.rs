//! The CLI on a terminal.
//!
//! * [`Screen`]: stderr, with one *live line* at the bottom (a spinner, a task's status,
//!   its progress) that every other message is printed above, and that a prompt holds off
//!   while it is on screen;
//! * [`live`]: what the live line of `mcp-tasks call` shows;
//! * [`prompt`]: elicitation and sampling answered at prompts built from the request;
//! * [`input`]: lines typed on stdin, shared by every prompt;
//! * [`interrupt`]: Ctrl-C, counted (the first cancels a task, the second leaves);
//! * [`table`]: the live table of `mcp-tasks tasks watch`.
//!
//! Nothing here draws unless stderr is a terminal: piped output stays plain lines.
//! Drawing uses a handful of ANSI sequences (no terminal library): `\r` and "erase line"
//! to redraw in place, and auto-wrap turned off while a live line or table is drawn, so
//! that a line longer than the terminal is clipped instead of wrapped (which would break
//! redrawing in place).

pub(crate) mod input;
pub(crate) mod interrupt;
pub(crate) mod live;
pub(crate) mod prompt;
pub(crate) mod table;

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use parking_lot::Mutex;

/// Erase the current line and go to its start.
const ERASE_LINE: &str = "\r\x1b[2K";
/// Turn auto-wrap off / on (DECAWM).
const NO_WRAP: &str = "\x1b[?7l";
const WRAP: &str = "\x1b[?7h";

/// stderr, with a live line when it is a terminal.
pub(crate) struct Screen {
    tty: bool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The live line as last drawn (drawn now unless `held`).
    live: Option<String>,
    /// Prompts on screen: the live line stays off meanwhile.
    held: usize,
    /// Lines of the block drawn last by [`Screen::block`].
    block_lines: usize,
}

impl Screen {
    /// The process's screen: stderr.
    pub(crate) fn get() -> &'static Self {
        static SCREEN: OnceLock<Screen> = OnceLock::new();
        SCREEN.get_or_init(|| Self {
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new(State::default()),
        })
    }

    /// Whether stderr is a terminal (live drawing is on).
    pub(crate) fn is_tty(&self) -> bool {
        self.tty
    }

    /// Print `text` (one or more lines) on stderr, above the live line.
    pub(crate) fn line(&self, text: &str) {
        let st = self.state.lock();
        let mut err = std::io::stderr().lock();
        if self.tty && st.live.is_some() && st.held == 0 {
            let _ = write!(err, "{ERASE_LINE}");
        }
        let _ = writeln!(err, "{text}");
        if self.tty
            && st.held == 0
            && let Some(live) = &st.live
        {
            let _ = write!(err, "{NO_WRAP}{live}{WRAP}");
        }
        let _ = err.flush();
    }

    /// Write `text` as it is (a prompt, without a newline). Only while held.
    pub(crate) fn write(&self, text: &str) {
        let _st = self.state.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{text}");
        let _ = err.flush();
    }

    /// Draw (or redraw) the live line. Nothing on a non-terminal.
    pub(crate) fn live(&self, text: &str) {
        if !self.tty {
            return;
        }
        let mut st = self.state.lock();
        st.live = Some(text.to_owned());
        if st.held == 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE_LINE}{NO_WRAP}{text}{WRAP}");
            let _ = err.flush();
        }
    }

    /// Take the live line away.
    pub(crate) fn clear_live(&self) {
        let mut st = self.state.lock();
        if st.live.take().is_some() && self.tty && st.held == 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE_LINE}");
            let _ = err.flush();
        }
    }

    /// Keep the live line off the screen until the guard is dropped (a prompt is on).
    pub(crate) fn hold(&'static self) -> Hold {
        let mut st = self.state.lock();
        if st.held == 0 && st.live.is_some() && self.tty {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE_LINE}");
            let _ = err.flush();
        }
        st.held += 1;
        Hold(self)
    }

    /// Draw `lines` in place of the block drawn last (a table refreshed in place).
    pub(crate) fn block(&self, lines: &[String]) {
        let mut st = self.state.lock();
        let mut err = std::io::stderr().lock();
        let mut out = String::new();
        if st.block_lines > 0 {
            // To the start of the block's first line, and erase to the end of the screen.
            out.push_str(&format!("\x1b[{}F\x1b[J", st.block_lines));
        }
        out.push_str(NO_WRAP);
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
        out.push_str(WRAP);
        let _ = write!(err, "{out}");
        let _ = err.flush();
        st.block_lines = lines.len();
    }
}

/// Holds the live line off (see [`Screen::hold`]).
pub(crate) struct Hold(&'static Screen);

impl Drop for Hold {
    fn drop(&mut self) {
        let mut st = self.0.state.lock();
        st.held = st.held.saturating_sub(1);
        if st.held == 0
            && self.0.tty
            && let Some(live) = &st.live
        {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "{ERASE_LINE}{NO_WRAP}{live}{WRAP}");
            let _ = err.flush();
        }
    }
}

/// Log lines (tracing) for stderr, printed above the live line.
pub(crate) struct LogWriter;

/// One log event, printed whole when dropped.
pub(crate) struct LogLine(Vec<u8>);

impl Write for LogLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LogLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        let text = text.trim_end_matches('\n');
        if !text.is_empty() {
            Screen::get().line(text);
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogLine;

    fn make_writer(&'a self) -> LogLine {
        LogLine(Vec::new())
    }
}

/// Bold text (on a terminal).
pub(crate) fn bold(s: &str) -> String {
    format!("\x1b[1m{s}\x1b[0m")
}

/// Dim text (on a terminal).
pub(crate) fn dim(s: &str) -> String {
    format!("\x1b[2m{s}\x1b[0m")
}

/// A duration as `850ms`, `3.2s`, `2m05s` or `1h02m`.
pub(crate) fn duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    let s = d.as_secs();
    if ms < 1000 {
        format!("{ms}ms")
    } else if s < 60 {
        format!("{}.{}s", s, (ms % 1000) / 100)
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn durations_read_well() {
        assert_eq!(super::duration(Duration::from_millis(850)), "850ms");
        assert_eq!(super::duration(Duration::from_millis(3250)), "3.2s");
        assert_eq!(super::duration(Duration::from_secs(125)), "2m05s");
        assert_eq!(super::duration(Duration::from_secs(3720)), "1h02m");
    }
}
