//! The terminal side of `iosat top`: raw mode and the alternate screen behind a guard that
//! restores the terminal when dropped, on panic (a hook) and after a stop signal (the loop
//! polls sys::signal's flag); the event loop that feeds the app reports from the sampling
//! thread's channel and keys from the terminal, and draws when something changed.

use super::app::{App, Key, Pane};
use super::draw;
use crate::error::Error;
use crate::monitor::interval::IntervalReport;
use crate::sys::tty::Input;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
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
            Ok(Feed::Host(h)) => {
                app.host = Some(h);
                changed = true;
            }
            Ok(Feed::Procs(p)) => {
                app.procs = Some(p);
                changed = true;
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
) -> Result<(), Error> {
    let io = |e| Error::io("<terminal>", e);
    let _guard = TermGuard::enter()?;
    let mut term = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(io)?;
    let mut due = Instant::now();
    let mut dirty = true;
    loop {
        if crate::sys::signal::stop_requested() {
            return Err(Error::Interrupted);
        }
        dirty |= take(&mut app, &rx, pace, &mut due)?;
        if dirty {
            term.draw(|f| draw::draw(f, &app)).map_err(io)?;
            dirty = false;
        }
        // Our own poll first: crossterm's spins without returning once the terminal hangs up.
        // crossterm may hold bytes it has already read (several keys in one read), so it is
        // asked too, without waiting, whenever the terminal is still there.
        let mut ready = match crate::sys::tty::wait_input(Duration::from_millis(50)) {
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
