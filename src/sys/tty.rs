//! Standard output's terminal width (TIOCGWINSZ), and waiting for input on the controlling
//! terminal with poll(2), so a terminal that has gone
//! away (window closed, tmux server killed, ssh dropped) is seen as such. crossterm's own poll
//! treats a hung-up terminal as readable-but-empty and loops inside itself without returning,
//! which left `iosat top` spinning at full CPU after its terminal closed. Must not import
//! anything above sys/.

use std::time::Duration;

/// What the terminal did within the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Bytes are waiting to be read.
    Ready,
    /// Nothing arrived.
    Timeout,
    /// The terminal hung up or its descriptor failed: no input will ever come.
    Gone,
}

/// True when standard output is a terminal (not a pipe or a file).
pub fn stdout_is_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdout().is_terminal()
}

/// Standard output's terminal width in columns; None when standard output is not a terminal
/// (a pipe, a file) or the terminal does not say (a pty whose size was never set).
pub fn stdout_columns() -> Option<usize> {
    if !stdout_is_terminal() {
        return None;
    }
    // SAFETY: winsize is plain integers; TIOCGWINSZ fills it for a terminal.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// Wait up to `timeout` for input on standard input (the terminal `iosat top` draws on).
/// Interrupted by a signal counts as a timeout (the caller checks its stop flag). None when
/// standard input is not a terminal (the UI then reads /dev/tty and waits its own way).
pub fn wait_input(timeout: Duration) -> Option<Input> {
    // SAFETY: isatty only inspects the descriptor.
    if unsafe { libc::isatty(libc::STDIN_FILENO) } != 1 {
        return None;
    }
    let mut fds = libc::pollfd {
        fd: libc::STDIN_FILENO,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut fds, 1, ms) };
    Some(if n <= 0 {
        Input::Timeout
    } else if fds.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Input::Gone
    } else {
        Input::Ready
    })
}
