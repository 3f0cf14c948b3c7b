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
//! Nothing here draws unless stderr is a terminal: piped output stays plain lines. The
//! live line is an [`indicatif`] spinner line, ticking on its own thread; the table is
//! drawn with a handful of ANSI sequences, auto-wrap turned off meanwhile so that a line
//! longer than the terminal is clipped instead of wrapped (which would break redrawing
//! in place).

pub(crate) mod input;
pub(crate) mod interrupt;
pub(crate) mod live;
pub(crate) mod prompt;
pub(crate) mod table;

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use parking_lot::Mutex;

/// How often the live line is redrawn (its spinner turns, its time goes on).
const TICK: Duration = Duration::from_millis(100);
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
    /// The live line (drawn now unless `held`).
    live: Option<LiveLine>,
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
        let print = || {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "{text}");
            let _ = err.flush();
        };
        match st.live.as_ref().and_then(|l| l.bar.as_ref()) {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }

    /// Write `text` as it is (a prompt, without a newline). Only while held.
    pub(crate) fn write(&self, text: &str) {
        let _st = self.state.lock();
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{text}");
        let _ = err.flush();
    }

    /// Show a live line drawn in `style` (its time counted from now), in place of any
    /// other. Nothing on a non-terminal.
    pub(crate) fn live(&self, style: ProgressStyle) {
        if !self.tty {
            return;
        }
        let mut st = self.state.lock();
        if let Some(mut old) = st.live.take() {
            old.erase();
        }
        let mut live = LiveLine {
            style,
            started: Instant::now(),
            bar: None,
        };
        if st.held == 0 {
            live.draw();
        }
        st.live = Some(live);
    }

    /// Take the live line away.
    pub(crate) fn clear_live(&self) {
        if let Some(mut live) = self.state.lock().live.take() {
            live.erase();
        }
    }

    /// Keep the live line off the screen until the guard is dropped (a prompt is on).
    pub(crate) fn hold(&'static self) -> Hold {
        let mut st = self.state.lock();
        if st.held == 0
            && let Some(live) = &mut st.live
        {
            live.erase();
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
            && let Some(live) = &mut st.live
        {
            live.draw();
        }
    }
}

/// The live line: an [`indicatif`] line redrawn every [`TICK`] on indicatif's thread.
/// While a prompt holds the screen it is cleared away, and drawn anew after (its time
/// running on).
struct LiveLine {
    style: ProgressStyle,
    started: Instant,
    /// On screen now.
    bar: Option<ProgressBar>,
}

impl LiveLine {
    fn draw(&mut self) {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(self.style.clone())
            .with_elapsed(self.started.elapsed());
        bar.enable_steady_tick(TICK);
        self.bar = Some(bar);
    }

    fn erase(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
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
