//! The terminal side of `iosat top`: raw mode and the alternate screen behind a guard that
//! restores the terminal when dropped, on panic (a hook) and after a stop signal (the loop
//! polls sys::signal's flag); the event loop that feeds the app reports from the sampling
//! thread's channel and keys from the terminal, sleeps until either comes (the sampler rings
//! a sys::tty::Wake), and draws when something changed, writing only the cells that changed
//! (its own copy of ratatui's diff, [`Screen`]) through one buffered write per frame.
//! Must not import: cli/, config/, cmd/, exporter/.

use super::app::{App, Key, Pane};
use super::draw;
use crate::error::Error;
use crate::monitor::interval::IntervalReport;
use crate::sys::tty::{Input, Wake};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::buffer::{Buffer, Cell};
use ratatui::text::Span;
use ratatui::Terminal;
use std::io::{BufWriter, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

/// What the sampling thread sends.
pub enum Feed {
    Report(IntervalReport),
    /// The machine's CPU and pressure over the latest interval.
    Host(crate::sys::sched::SchedDelta),
    /// The busiest processes of the latest interval.
    Procs(crate::monitor::procs::ProcReport),
    /// A warning of the collector (a skipped diskstats line, a profile that didn't load).
    Warning(String),
    /// Sampling failed: the UI ends with this error.
    Failed(Error),
}

/// How reports are taken from the channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// As they come (live).
    Live,
    /// One per period while playing, one per step while paused (--replay).
    Replay(Duration),
}

/// Raw mode and the alternate screen; dropping it gives the terminal back.
pub struct TermGuard(());

fn restore() {
    let _ = terminal::disable_raw_mode();
    let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
}

impl TermGuard {
    pub fn enter() -> Result<TermGuard, Error> {
        let io = |e| Error::io("<terminal>", e);
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            prev(info);
        }));
        terminal::enable_raw_mode().map_err(io)?;
        let guard = TermGuard(());
        execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide).map_err(io)?;
        Ok(guard)
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// A terminal key as the app's key (None: a key the app ignores).
pub fn key(k: KeyEvent) -> Option<Key> {
    if k.kind == KeyEventKind::Release {
        return None;
    }
    if k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c') {
        return Some(Key::CtrlC);
    }
    Some(match k.code {
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Tab => Key::Tab,
        KeyCode::BackTab => Key::BackTab,
        KeyCode::Esc => Key::Esc,
        KeyCode::Enter => Key::Enter,
        KeyCode::Backspace => Key::Backspace,
        _ => return None,
    })
}

/// Take what is due from the channel into the app. Err when sampling failed.
fn take(app: &mut App, rx: &Receiver<Feed>, pace: Pace, due: &mut Instant) -> Result<bool, Error> {
    let mut changed = false;
    loop {
        let want = match pace {
            Pace::Live => true,
            // Paused: keep one report ready for the step key.
            Pace::Replay(_) if app.paused => app.backlog() == 0,
            Pace::Replay(_) => Instant::now() >= *due,
        };
        if !want || app.ended {
            return Ok(changed);
        }
        match rx.try_recv() {
            Ok(Feed::Report(r)) => {
                app.on_report(r);
                changed = true;
                if let Pace::Replay(period) = pace {
                    *due = Instant::now() + period;
                    return Ok(true);
                }
            }
            // Live, these come just before their interval's report, which draws them.
            Ok(Feed::Host(h)) => {
                app.host = Some(h);
                changed |= pace != Pace::Live;
            }
            Ok(Feed::Procs(p)) => {
                app.procs = Some(p);
                changed |= pace != Pace::Live;
            }
            Ok(Feed::Warning(w)) => {
                app.warning = Some(w);
                changed = true;
            }
            Ok(Feed::Failed(e)) => return Err(e),
            Err(TryRecvError::Empty) => return Ok(changed),
            Err(TryRecvError::Disconnected) => {
                app.ended = true;
                return Ok(true);
            }
        }
    }
}

/// Run the view until `q`, Ctrl-C or a stop signal (Err(Interrupted)). `wants_procs` tells
/// the sampling thread whether the processes pane is shown (it reads /proc/PID/io only then).
pub fn run(
    mut app: App,
    rx: Receiver<Feed>,
    pace: Pace,
    wants_procs: &AtomicBool,
    wake: &Wake,
) -> Result<(), Error> {
    let io = |e| Error::io("<terminal>", e);
    let _guard = TermGuard::enter()?;
    // Buffered: a frame's escape sequences leave in a few writes, not one per line of 1 KiB
    // (stdout's own LineWriter).
    let out = BufWriter::with_capacity(1 << 16, std::io::stdout());
    let mut term = Terminal::new(CrosstermBackend::new(out)).map_err(io)?;
    let mut screen = Screen::default();
    let mut due = Instant::now();
    let mut dirty = true;
    loop {
        if crate::sys::signal::stop_requested() {
            return Err(Error::Interrupted);
        }
        dirty |= take(&mut app, &rx, pace, &mut due)?;
        if dirty {
            screen.draw(&mut term, &app).map_err(io)?;
            dirty = false;
        }
        // Our own poll first: crossterm's spins without returning once the terminal hangs up.
        // crossterm may hold bytes it has already read (several keys in one read), so it is
        // asked too, without waiting, whenever the terminal is still there.
        // Live, the sampler rings `wake` with each report: the wait is long (a stop signal
        // may be taken by the sampling thread, so it is not forever). A replay is paced here.
        let wait = match pace {
            Pace::Live => Duration::from_millis(250),
            Pace::Replay(_) => Duration::from_millis(50),
        };
        let mut ready = match crate::sys::tty::wait_input(wait, Some(wake)) {
            Some(Input::Gone) => return Err(Error::Interrupted),
            Some(Input::Ready | Input::Timeout) => event::poll(Duration::ZERO).map_err(io)?,
            None => event::poll(Duration::from_millis(50)).map_err(io)?,
        };
        while ready {
            match event::read().map_err(io)? {
                Event::Key(k) => {
                    if let Some(k) = key(k) {
                        app.on_key(k);
                        dirty = true;
                    }
                }
                Event::Resize(..) => dirty = true,
                _ => {}
            }
            ready = !app.quit && event::poll(Duration::ZERO).map_err(io)?;
        }
        if app.quit {
            return Ok(());
        }
        wants_procs.store(app.pane == Pane::Processes, Ordering::Relaxed);
    }
}

type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// What is on the screen, for drawing only what changed. ratatui's own `Terminal::draw` does
/// the same, but its diff measures the display width of every cell three times through the
/// Unicode tables (40 % of a refresh's instructions at 160x48); [`diff`] takes the short way
/// for the symbols nearly every cell holds.
#[derive(Default)]
struct Screen {
    /// The frame on the terminal now.
    shown: Buffer,
    /// An empty buffer the next frame is rendered into (swapped with the terminal's).
    spare: Buffer,
    cursor_hidden: bool,
}

impl Screen {
    fn draw(&mut self, term: &mut Term, app: &App) -> std::io::Result<()> {
        // A new size: ratatui clears the screen and its buffers; so are ours.
        term.autoresize()?;
        let mut frame = term.get_frame();
        let area = frame.area();
        if self.shown.area != area {
            self.shown = Buffer::empty(area);
            self.spare = Buffer::empty(area);
        }
        draw::draw(&mut frame, app);
        // The rendered frame comes out, an empty one goes in for the next frame.
        std::mem::swap(term.current_buffer_mut(), &mut self.spare);
        let updates = diff(&self.shown, &self.spare);
        term.backend_mut().draw(updates.into_iter())?;
        if !self.cursor_hidden {
            term.hide_cursor()?;
            self.cursor_hidden = true;
        }
        std::mem::swap(&mut self.shown, &mut self.spare);
        self.spare.reset();
        Backend::flush(term.backend_mut())
    }
}

/// Display width of a cell's symbol, without asking the Unicode tables for what nearly every
/// cell holds: printable ASCII, U+2500–U+25BF (box drawing, block elements, the first
/// geometric shapes: borders, gauges) and braille (U+2800–U+28FF: the charts) are one column
/// wide (a unit test checks every one of them against the tables).
fn width(s: &str) -> usize {
    match s.as_bytes() {
        [b] if (0x20..0x7f).contains(b) => 1,
        // UTF-8 of U+2500–U+25BF and U+2800–U+28FF: E2 94..=96 xx and E2 A0..=A3 xx.
        [0xe2, 0x94..=0x96, _] | [0xe2, 0xa0..=0xa3, _] => 1,
        _ => Span::raw(s).width(),
    }
}

/// Two short strings equal, compared byte by byte in place (no call to memcmp).
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

/// The cells of `next` to write over `prev`: ratatui's `Buffer::diff`, rule for rule (a cell
/// after a wide one is skipped; cells a wide one covered are redrawn).
fn diff<'a>(prev: &Buffer, next: &'a Buffer) -> Vec<(u16, u16, &'a Cell)> {
    let mut updates = Vec::new();
    let mut invalidated: usize = 0;
    let mut to_skip: usize = 0;
    for (i, (cur, old)) in next.content.iter().zip(prev.content.iter()).enumerate() {
        // Each symbol read once and compared without a call (they are 1-4 bytes): this
        // loop runs for every cell of every frame.
        let (now, was) = (cur.symbol(), old.symbol());
        let same_symbol = same(now, was);
        // `cur != old` (Cell's derived PartialEq), from the symbols already compared.
        let changed = !same_symbol || cur.style() != old.style() || cur.skip != old.skip;
        if !cur.skip && (changed || invalidated > 0) && to_skip == 0 {
            let (x, y) = next.pos_of(i);
            updates.push((x, y, cur));
        }
        let w = width(now);
        let w_old = if same_symbol { w } else { width(was) };
        to_skip = w.saturating_sub(1);
        invalidated = w.max(w_old).max(invalidated).saturating_sub(1);
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::layout::Rect;
    use ratatui::style::{Color, Style};

    #[test]
    fn the_short_ways_agree_with_the_tables() {
        for c in (0x20u32..0x80).chain(0x2500..0x2600).chain(0x2800..0x2900) {
            let s = char::from_u32(c).unwrap().to_string();
            assert_eq!(width(&s), Span::raw(s.as_str()).width(), "U+{c:04X}");
        }
    }

    /// Buffers with ASCII, wide characters (CJK, emoji), combining marks, braille and styles,
    /// written over each other in every order: the same updates as ratatui's diff.
    #[test]
    fn diff_is_ratatuis() {
        let area = Rect::new(0, 0, 12, 3);
        let texts = [
            "",
            "hello world",
            "日本語 text",
            "a\u{301}bc ⣿⣀ x",
            "😀😀 ab",
            "      日",
            "\u{7f}x\ty",
        ];
        let bufs: Vec<Buffer> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut b = Buffer::empty(area);
                for y in 0..3u16 {
                    let style = Style::default().fg(if (i + y as usize) % 2 == 0 {
                        Color::Red
                    } else {
                        Color::Reset
                    });
                    b.set_string(y + i as u16 % 3, y, t, style);
                }
                if i == 3 {
                    b[(5, 1)].set_skip(true);
                    b[(0, 2)].set_symbol("\u{7f}");
                    b[(1, 2)].set_symbol("\u{1b}");
                }
                b
            })
            .collect();
        for a in &bufs {
            for b in &bufs {
                assert_eq!(diff(a, b), a.diff(b));
            }
        }
    }
}
